//! Overload: a queueing server offered more than it can serve.
//!
//! The metastable section's server (one FIFO queue served at C = 1,000 requests a second,
//! 1 ms each, no request refused, work done even for a client that has gone) is offered 2 C
//! and 4 C from the start, by clients of 5, 100 or 1,000 calls a second (the same load in
//! fewer and bigger clients), with the metastable section's policy (AWS standard settings, a
//! 1 s attempt timeout). Without a limit the queue grows without end: every answer comes after
//! its caller's timeout, and goodput falls to nothing. A limit on the attempts in flight keeps
//! the queue short, refuses the excess at the client, and keeps the server busy. The goal:
//! goodput at least 95 % of C, and the p99 of successful calls at most twice the unloaded
//! p99, from 10 s after the overload's start. The same overload also comes after 30 s of
//! normal operation at half of C ([`Config::after_normal`]), from which a limit learns what
//! the server's latency is when it is not loaded.

use crate::fleet::{Arrivals, Engine, Fleet, Run};
use crate::sim::{self, Policy, Strategy};
use crate::world::Server;
use std::time::Duration;

/// The server's rate, requests per second.
pub const CAPACITY: f64 = 1000.0;
/// The load of the unloaded runs, as a fraction of C: where the p99 goal is measured from.
pub const UNLOADED: f64 = 0.5;
/// What is measured starts this many seconds after the overload's start.
pub const SETTLED_AFTER: f64 = 10.0;

/// The goal: goodput at least this share of C...
pub const GOODPUT_GOAL: f64 = 0.95;
/// ...and the p99 of successful calls at most this many times the unloaded p99.
pub const P99_GOAL: f64 = 2.0;

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// The offered loads, as multiples of C.
    pub factors: Vec<f64>,
    /// The client sizes, calls per second each.
    pub sizes: Vec<f64>,
    /// Seconds of the overload, which lasts to the end.
    pub horizon: f64,
    /// Seconds of normal operation (at [`UNLOADED`] x C) before the overload (0: overloaded
    /// from the start).
    pub normal_before: f64,
    /// The seed.
    pub seed: u64,
}

impl Config {
    /// 2 C and 4 C, clients of 5, 100 and 1,000 calls a second, 40 s.
    pub fn full() -> Config {
        Config {
            factors: vec![2.0, 4.0],
            sizes: vec![5.0, 100.0, 1000.0],
            horizon: 40.0,
            normal_before: 0.0,
            seed: 1,
        }
    }

    /// [`Config::full`] after 30 s of normal operation.
    pub fn after_normal() -> Config {
        Config {
            normal_before: 30.0,
            ..Config::full()
        }
    }

    /// [`Config::quick`] after 30 s of normal operation.
    pub fn after_normal_quick() -> Config {
        Config {
            normal_before: 30.0,
            ..Config::quick()
        }
    }

    /// The tests' size: 2 C from clients of 100 calls a second, 20 s.
    pub fn quick() -> Config {
        Config {
            factors: vec![2.0],
            sizes: vec![100.0],
            horizon: 20.0,
            normal_before: 0.0,
            seed: 1,
        }
    }
}

fn server() -> Server {
    Server {
        outage: None,
        capacity: None,
        queue: Some(|_| CAPACITY),
        transient_rate: None,
    }
}

/// The fleet offering `factor` x C in clients of `size` calls a second (at least one client;
/// the load is kept, the size rounded), after `config.normal_before` seconds at [`UNLOADED`]
/// x C from the same clients.
pub fn fleet(config: &Config, policy: Policy, factor: f64, size: f64) -> Fleet {
    let load = factor * CAPACITY;
    let clients = (load / size).round().max(1.0) as usize;
    let (rate, arrivals) = if config.normal_before > 0.0 {
        let arrivals = Arrivals::Surge {
            at: config.normal_before,
            factor: factor / UNLOADED,
        };
        (UNLOADED * CAPACITY / clients as f64, arrivals)
    } else {
        (load / clients as f64, Arrivals::Poisson)
    };
    Fleet {
        clients,
        rate_per_client: rate,
        arrivals,
        horizon: config.normal_before + config.horizon,
        policy: sim::aws_standard().attempt_timeout(Duration::from_secs(1)),
        deadline: None,
        engine: Engine::Ours,
        strategy: policy.strategy,
        guards: policy.guards,
        seed: config.seed,
    }
}

/// What one policy did at one load and client size.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The policy.
    pub policy: Policy,
    /// The offered load, a multiple of C.
    pub factor: f64,
    /// Calls per second per client.
    pub size: f64,
    /// Successful calls per second from [`SETTLED_AFTER`] on, over C.
    pub goodput: f64,
    /// The p99 of the latency of successful calls offered from [`SETTLED_AFTER`] on, seconds
    /// (`NaN`: none succeeded).
    pub p99: f64,
    /// Calls that failed (refused at the client included), over the calls offered.
    pub failed_fraction: f64,
    /// Attempts reaching the server per second, over C.
    pub load: f64,
    /// The per-second counters.
    pub run: Run,
}

/// The `q` quantile of `xs` (nearest rank; `NaN` for none).
pub fn quantile(xs: &mut [f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let i = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}

/// Runs `policy` at `factor` x C in clients of `size`.
pub fn run_policy(config: &Config, policy: Policy, factor: f64, size: f64) -> Summary {
    let run = fleet(config, policy, factor, size).run(&server());
    let start = config.normal_before;
    let (from, to) = (start + SETTLED_AFTER, start + config.horizon);
    let window = run.series.total(from, to);
    let mut latencies: Vec<f64> = run
        .succeeded
        .iter()
        .filter(|(at, _)| (from..to).contains(at))
        .map(|&(_, l)| l)
        .collect();
    let all = run.series.total(start, f64::INFINITY);
    Summary {
        policy,
        factor,
        size,
        goodput: window.succeeded as f64 / (to - from) / CAPACITY,
        p99: quantile(&mut latencies, 0.99),
        failed_fraction: sim::ratio(all.failed, all.failed + all.succeeded),
        load: window.attempts as f64 / (to - from) / CAPACITY,
        run,
    }
}

/// The unloaded p99 at client size `size`: AWS standard mode at half of C, seconds.
pub fn unloaded_p99(config: &Config, size: f64) -> f64 {
    let unloaded = Config {
        normal_before: 0.0,
        ..config.clone()
    };
    run_policy(&unloaded, Policy::of(Strategy::Standard), UNLOADED, size).p99
}

/// Whether `s` meets the goal against the unloaded p99 `unloaded`.
pub fn meets(s: &Summary, unloaded: f64) -> bool {
    s.goodput >= GOODPUT_GOAL && s.p99 <= P99_GOAL * unloaded
}
