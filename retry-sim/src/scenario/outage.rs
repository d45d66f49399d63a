//! A fleet at a fixed offered load through a total outage.
//!
//! Each client process offers Poisson arrivals at a fixed rate and has its own retry state, as
//! one SDK client does. The server can serve 1.5 times the offered load (above that it
//! throttles) and fails every request for 30 s. Policies: AWS standard settings (3 attempts,
//! backoff 1 s doubling to 20 s, full jitter) with no bucket, with the standard retry token
//! bucket, in adaptive mode, with a retry budget (20 %, or gRPC's throttling) instead of the
//! bucket, and with a circuit breaker per client (alone, with the 20 % budget, or with a 1 s
//! break instead of the default 5 s).

use crate::fleet::{Arrivals, Engine, Fleet, Run};
use crate::sim::{self, Bin, Policy, Strategy};
use crate::world::Server;

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// Client processes.
    pub clients: usize,
    /// Requests per second each client offers.
    pub rate_per_client: f64,
    /// How each client's calls are spaced (Poisson arrivals in the reported runs).
    pub arrivals: Arrivals,
    /// When the outage starts, in seconds.
    pub outage_start: f64,
    /// How long it lasts.
    pub outage_len: f64,
    /// Seconds simulated.
    pub horizon: f64,
    /// The seed.
    pub seed: u64,
}

impl Config {
    /// 1,000 clients at 5 requests per second each (5,000 per second), 30 s of outage from
    /// t = 20 s, 90 s in all.
    pub fn full() -> Config {
        Config {
            clients: 1000,
            rate_per_client: 5.0,
            arrivals: Arrivals::Poisson,
            outage_start: 20.0,
            outage_len: 30.0,
            horizon: 90.0,
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`: 50 clients, 21 s of outage.
    pub fn quick() -> Config {
        Config {
            clients: 50,
            rate_per_client: 5.0,
            arrivals: Arrivals::Poisson,
            outage_start: 5.0,
            outage_len: 21.0,
            horizon: 36.0,
            seed: 1,
        }
    }

    fn outage_end(&self) -> f64 {
        self.outage_start + self.outage_len
    }

    /// The server of the scenario.
    pub fn server(&self) -> Server {
        Server {
            outage: Some((self.outage_start, self.outage_end())),
            capacity: Some(1.5 * self.clients as f64 * self.rate_per_client),
            queue: None,
            transient_rate: None,
        }
    }

    /// The fleet of the scenario under `strategy`, with the retry loop of `engine`.
    pub fn fleet(&self, strategy: Strategy, engine: Engine) -> Fleet {
        Fleet {
            clients: self.clients,
            rate_per_client: self.rate_per_client,
            arrivals: self.arrivals,
            horizon: self.horizon,
            policy: sim::aws_standard(),
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
    /// Attempts per offered request over the whole outage.
    pub amplification_outage: f64,
    /// Attempts per offered request over the last third of the outage (the bucket has drained
    /// by then).
    pub amplification_drained: f64,
    /// Attempts per offered request over the 10 s after the outage.
    pub amplification_after: f64,
    /// Seconds from the end of the outage to the first second from which on every second has
    /// at most 1.05 attempts per offered request and serves at least 99% of its attempts.
    pub time_to_recover: f64,
    /// Attempts that reached the server during the outage (each one failed).
    pub outage_attempts: u64,
    /// Attempts of the calls offered during the outage, whenever sent, per call offered during
    /// the outage: the amplification of those calls alone (calls offered before it whose
    /// retries land in it are left out; retries sent after it by calls offered in it are in).
    pub amplification_per_call: f64,
    /// Seconds from the end of the outage to the first second from which on, in every second,
    /// at least 99% of the calls offered in it succeed.
    pub goodput_recovery: f64,
    /// Calls that failed, over all calls.
    pub failed_fraction: f64,
    /// The per-second counters.
    pub run: Run,
}

impl Summary {
    /// How many fewer attempts reached the server during the outage than under `baseline`:
    /// 0.9 is a cut of 90%.
    pub fn cut_against(&self, baseline: &Summary) -> f64 {
        1.0 - sim::ratio(self.outage_attempts, baseline.outage_attempts)
    }
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

/// The policies of the scenario: [`Strategy::COMPARED`], and the breaker with a shorter break.
pub const POLICIES: [Strategy; 8] = [
    Strategy::NoBucket,
    Strategy::Standard,
    Strategy::Adaptive,
    Strategy::Budget,
    Strategy::GrpcThrottling,
    Strategy::Breaker,
    Strategy::BreakerBudget,
    Strategy::BreakerShortBreak,
];

/// Runs the AWS SDKs' three policies, the two budgets and the breakers.
pub fn run(config: &Config) -> Vec<Summary> {
    POLICIES.iter().map(|&s| run_one(config, s)).collect()
}

fn amplification(b: Bin) -> f64 {
    sim::ratio(b.attempts, b.offered)
}

fn summarize(config: &Config, policy: Policy, run: Run) -> Summary {
    let s = &run.series;
    let (start, end) = (config.outage_start, config.outage_end());
    let drained_from = end - config.outage_len / 3.0;
    let (mut recovered_at, mut goodput_back_at) = (end, end);
    for (i, b) in s.bins.iter().enumerate() {
        let t = i as f64 * s.width;
        if t < end || t >= config.horizon {
            continue;
        }
        let healthy = b.attempts as f64 <= 1.05 * b.offered as f64
            && b.served as f64 >= 0.99 * b.attempts as f64;
        if !healthy {
            recovered_at = t + s.width;
        }
        // A breaker that refuses calls sends no attempts, which the figure above counts as
        // healthy: this one asks for the calls themselves, by the second they were offered in.
        if (b.offered_succeeded as f64) < 0.99 * b.offered as f64 {
            goodput_back_at = t + s.width;
        }
    }
    let all = s.total(0.0, f64::INFINITY);
    let outage = s.total(start, end);
    Summary {
        policy,
        amplification_outage: amplification(outage),
        amplification_drained: amplification(s.total(drained_from, end)),
        amplification_after: amplification(s.total(end, end + 10.0)),
        time_to_recover: recovered_at - end,
        outage_attempts: outage.attempts,
        amplification_per_call: sim::ratio(outage.call_attempts, outage.offered),
        goodput_recovery: goodput_back_at - end,
        failed_fraction: sim::ratio(all.failed, all.failed + all.succeeded),
        run,
    }
}
