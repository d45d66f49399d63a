//! A server with a queue, clients with timeouts, and a 10 s trigger.
//!
//! The server works through a FIFO queue at C requests per second and never refuses work;
//! work whose client has timed out and gone is still done. The fleet offers 0.8 C (Poisson),
//! with a 1 s attempt timeout. For 10 s the server slows to half its rate (the trigger), a
//! queue builds, attempts time out and are retried. Does goodput come back once the server is
//! healthy again? Policies: AWS standard settings with no bucket, with the standard bucket
//! (a timeout costs 10), in adaptive mode, with a retry budget instead of the bucket, and with
//! a circuit breaker (which counts timeouts as failures).

use crate::fleet::{Arrivals, Engine, Fleet, Run};
use crate::sim::{self, Policy, Strategy};
use crate::world::Server;
use std::time::Duration;

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// Client processes sharing the offered load.
    pub clients: usize,
    /// Seconds simulated.
    pub horizon: f64,
    /// The seed.
    pub seed: u64,
}

/// The server's rate, requests per second, when healthy.
pub const CAPACITY: f64 = 1000.0;
/// The offered load, as a fraction of the capacity.
pub const LOAD: f64 = 0.8;
/// The trigger: from this second ...
pub const TRIGGER_START: f64 = 20.0;
/// ... to this one, the server runs at half its rate.
pub const TRIGGER_END: f64 = 30.0;

/// The server's rate at second `t`, requests per second: [`CAPACITY`], halved during the
/// trigger.
pub fn service_rate(t: f64) -> f64 {
    if (TRIGGER_START..TRIGGER_END).contains(&t) {
        CAPACITY / 2.0
    } else {
        CAPACITY
    }
}

impl Config {
    /// 100 clients offering 8 requests per second each, 150 s.
    pub fn full() -> Config {
        Config {
            clients: 100,
            horizon: 150.0,
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`: 100 clients, 100 s.
    pub fn quick() -> Config {
        Config {
            clients: 100,
            horizon: 100.0,
            seed: 1,
        }
    }

    /// The server of the scenario.
    pub fn server(&self) -> Server {
        Server {
            outage: None,
            capacity: None,
            queue: Some(service_rate),
            transient_rate: None,
        }
    }

    /// The fleet of the scenario under `strategy`, with the retry loop of `engine`.
    pub fn fleet(&self, strategy: Strategy, engine: Engine) -> Fleet {
        Fleet {
            clients: self.clients,
            rate_per_client: LOAD * CAPACITY / self.clients as f64,
            arrivals: Arrivals::Poisson,
            horizon: self.horizon,
            policy: sim::aws_standard().attempt_timeout(Duration::from_secs(1)),
            deadline: None,
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
    /// Successful calls per second over the 10 s before the trigger, over the offered load.
    pub goodput_before: f64,
    /// The same over the last 10 s of the run.
    pub goodput_end: f64,
    /// Attempts per offered request over the last 10 s of the run.
    pub amplification_end: f64,
    /// Seconds from the end of the trigger until, in every second of the rest of the run, 95%
    /// or more of the calls offered in it succeed; `None` if that never holds for the last
    /// 10 s.
    pub recovered_after: Option<f64>,
    /// Calls that failed, over all calls.
    pub failed_fraction: f64,
    /// The per-second counters.
    pub run: Run,
}

/// Runs one policy.
pub fn run_one(config: &Config, strategy: Strategy) -> Summary {
    run_policy(config, Policy::of(strategy))
}

/// Runs one policy, guards included.
pub fn run_policy(config: &Config, policy: Policy) -> Summary {
    let fleet = Fleet {
        guards: policy.guards,
        ..config.fleet(policy.strategy, Engine::Ours)
    };
    let run = fleet.run(&config.server());
    let s = &run.series;
    let offered = LOAD * CAPACITY;
    let end = config.horizon;
    let mut last_bad = None;
    for (i, b) in s.bins.iter().enumerate() {
        let t = i as f64;
        // Against the calls offered in that second, not the mean load: a second with fewer
        // arrivals than the mean is not a failure to recover.
        if t >= TRIGGER_END && t < end && (b.offered_succeeded as f64) < 0.95 * b.offered as f64 {
            last_bad = Some(t);
        }
    }
    let all = s.total(0.0, f64::INFINITY);
    let recovered_after = match last_bad {
        None => Some(0.0),
        Some(t) if t + 1.0 < end - 10.0 => Some(t + 1.0 - TRIGGER_END),
        Some(_) => None,
    };
    let before = s.total(TRIGGER_START - 10.0, TRIGGER_START);
    let tail = s.total(end - 10.0, end);
    Summary {
        policy,
        goodput_before: before.succeeded as f64 / 10.0 / offered,
        goodput_end: tail.succeeded as f64 / 10.0 / offered,
        amplification_end: sim::ratio(tail.attempts, tail.offered),
        recovered_after,
        failed_fraction: sim::ratio(all.failed, all.failed + all.succeeded),
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
