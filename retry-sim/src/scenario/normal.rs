//! Normal operation: no outage, no overload, each attempt failing on its own (a 5xx) with a
//! small probability. What does each policy cost in calls that fail, and in load?
//!
//! A policy that bounds retries (a bucket, a budget) or refuses calls (a breaker) must not fail
//! calls a plain retry would have saved when nothing is wrong but the usual noise.

use crate::fleet::{Arrivals, Engine, Fleet, Run};
use crate::sim::{self, Policy, Strategy};
use crate::world::Server;

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// Client processes.
    pub clients: usize,
    /// Requests per second each client offers.
    pub rate_per_client: f64,
    /// Seconds simulated.
    pub horizon: f64,
    /// The probabilities of an attempt failing, one run each.
    pub error_rates: Vec<f64>,
    /// The seed.
    pub seed: u64,
}

impl Config {
    /// 200 clients at 5 requests per second each, 60 s, at 1 %, 3 % and 5 % of attempts
    /// failing.
    pub fn full() -> Config {
        Config {
            clients: 200,
            rate_per_client: 5.0,
            horizon: 60.0,
            error_rates: vec![0.01, 0.03, 0.05],
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`: 20 clients for 20 s at 5 %.
    pub fn quick() -> Config {
        Config {
            clients: 20,
            rate_per_client: 5.0,
            horizon: 20.0,
            error_rates: vec![0.05],
            seed: 1,
        }
    }

    /// The server of the scenario at `error_rate`.
    pub fn server(&self, error_rate: f64) -> Server {
        Server {
            outage: None,
            capacity: None,
            queue: None,
            transient_rate: Some(error_rate),
        }
    }

    /// The fleet of the scenario under `strategy`.
    pub fn fleet(&self, strategy: Strategy) -> Fleet {
        Fleet {
            clients: self.clients,
            rate_per_client: self.rate_per_client,
            arrivals: Arrivals::Poisson,
            horizon: self.horizon,
            policy: sim::aws_standard(),
            deadline: None,
            engine: Engine::Ours,
            strategy,
            guards: &[],
            seed: self.seed,
        }
    }
}

/// The figures of one policy at one error rate.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The policy.
    pub policy: Policy,
    /// The probability of an attempt failing.
    pub error_rate: f64,
    /// Calls that failed, over all calls.
    pub failed_fraction: f64,
    /// Attempts per call offered.
    pub amplification: f64,
    /// The per-second counters and the calls that met an error.
    pub run: Run,
}

/// Runs one policy at one error rate.
pub fn run_one(config: &Config, strategy: Strategy, error_rate: f64) -> Summary {
    run_policy(config, Policy::of(strategy), error_rate)
}

/// Runs one policy, guards included, at one error rate.
pub fn run_policy(config: &Config, policy: Policy, error_rate: f64) -> Summary {
    let fleet = Fleet {
        guards: policy.guards,
        ..config.fleet(policy.strategy)
    };
    let run = fleet.run(&config.server(error_rate));
    let all = run.series.total(0.0, f64::INFINITY);
    Summary {
        policy,
        error_rate,
        failed_fraction: sim::ratio(all.failed, all.failed + all.succeeded),
        amplification: sim::ratio(all.attempts, all.offered),
        run,
    }
}

/// Runs every policy at every error rate.
pub fn run(config: &Config) -> Vec<Summary> {
    config
        .error_rates
        .iter()
        .flat_map(|&p| {
            Strategy::COMPARED
                .iter()
                .map(move |&s| run_one(config, s, p))
        })
        .collect()
}
