//! Clients offering twice what the server can take.
//!
//! The server serves C requests per second (a token bucket holding a tenth of a second's
//! worth) and answers 429 above it. The fleet offers 2C with Poisson arrivals, spread over
//! client processes that each have their own retry state. Every call has a 10 s deadline, so a
//! client whose rate limiter holds it back gives up on calls it cannot send in time instead of
//! queueing them forever. Policies: AWS standard settings with no bucket, with the standard
//! bucket, in adaptive mode, with a retry budget instead of the bucket, and with a circuit
//! breaker (which counts throttling as failure).

use crate::fleet::{Arrivals, Engine, Fleet, Run};
use crate::sim::{self, Policy, Strategy};
use crate::world::Server;
use std::time::Duration;

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server's capacity C, requests per second.
    pub capacity: f64,
    /// Client processes sharing the offered 2C.
    pub clients: usize,
    /// Seconds simulated.
    pub horizon: f64,
    /// Steady state is measured from this second to the horizon.
    pub steady_from: f64,
    /// The seed.
    pub seed: u64,
}

impl Config {
    /// C = 1,000 per second, 20 clients offering 100 per second each, 120 s, steady state
    /// over the last 60 s.
    pub fn full() -> Config {
        Config {
            capacity: 1000.0,
            clients: 20,
            horizon: 120.0,
            steady_from: 60.0,
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`: C = 100, 5 clients, 60 s.
    pub fn quick() -> Config {
        Config {
            capacity: 100.0,
            clients: 5,
            horizon: 60.0,
            steady_from: 30.0,
            seed: 1,
        }
    }

    /// The server of the scenario.
    pub fn server(&self) -> Server {
        Server {
            outage: None,
            capacity: Some(self.capacity),
            queue: None,
            transient_rate: None,
        }
    }

    /// The fleet of the scenario under `strategy`, with the retry loop of `engine`.
    pub fn fleet(&self, strategy: Strategy, engine: Engine) -> Fleet {
        Fleet {
            clients: self.clients,
            rate_per_client: 2.0 * self.capacity / self.clients as f64,
            arrivals: Arrivals::Poisson,
            horizon: self.horizon,
            policy: sim::aws_standard(),
            deadline: Some(Duration::from_secs(10)),
            engine,
            strategy,
            guards: &[],
            seed: self.seed,
        }
    }
}

/// The figures of one policy.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The policy.
    pub policy: Policy,
    /// Successful calls per second at steady state, over C.
    pub goodput: f64,
    /// Throttled attempts over all attempts at steady state.
    pub throttled: f64,
    /// Attempts per second at steady state, over C.
    pub load: f64,
    /// The per-second counters.
    pub run: Run,
}

/// Runs one policy.
pub fn run_one(config: &Config, strategy: Strategy) -> Summary {
    run_engine(config, strategy, Engine::Ours)
}

/// Runs one policy with the retry loop of `engine`.
pub fn run_engine(config: &Config, strategy: Strategy, engine: Engine) -> Summary {
    let run = config.fleet(strategy, engine).run(&config.server());
    summarize(config, Policy::of(strategy), run)
}

/// Runs one policy, guards included, on our engine.
pub fn run_policy(config: &Config, policy: Policy) -> Summary {
    let fleet = Fleet {
        guards: policy.guards,
        ..config.fleet(policy.strategy, Engine::Ours)
    };
    summarize(config, policy, fleet.run(&config.server()))
}

fn summarize(config: &Config, policy: Policy, run: Run) -> Summary {
    let steady = run.series.total(config.steady_from, config.horizon);
    let secs = config.horizon - config.steady_from;
    Summary {
        policy,
        goodput: steady.succeeded as f64 / secs / config.capacity,
        throttled: sim::ratio(steady.throttled, steady.attempts),
        load: steady.attempts as f64 / secs / config.capacity,
        run,
    }
}

/// Runs the AWS SDKs' three policies, the two budgets and the two breakers.
pub fn run(config: &Config) -> Vec<Summary> {
    Strategy::COMPARED
        .iter()
        .map(|&s| run_one(config, s))
        .collect()
}
