//! Contention on one optimistic-concurrency row, after the AWS Architecture Blog post
//! "Exponential Backoff And Jitter" (Marc Brooker, 2015).
//!
//! N clients start together; each wants one successful conditional write. An attempt reads
//! the row's version (a round trip), then writes conditionally on it (a round trip); the write
//! fails with a conflict if another write landed in between. Every network hop takes
//! |Normal(10 ms, 2 ms)|. A conflict is retried until the write succeeds, with backoff base
//! 5 ms and cap 2 s, under one of five strategies.

use crate::sim::{self, Client, Policy, Rng, SimError, Strategy};
use retry_runtime::__private::{Jitter, Keys};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use tokio::time::{Instant, sleep};

/// A backoff strategy of the blog post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// Retry at once.
    None,
    /// `min(cap, base * 2^n)`, no jitter.
    Exponential,
    /// `U[0, min(cap, base * 2^n)]`.
    Full,
    /// Half the exponential delay plus a random half.
    Equal,
    /// `min(cap, U[base, 3 * previous])`.
    Decorrelated,
}

impl Backoff {
    /// The five, in report order.
    pub const ALL: [Backoff; 5] = [
        Backoff::None,
        Backoff::Exponential,
        Backoff::Full,
        Backoff::Equal,
        Backoff::Decorrelated,
    ];

    /// The name in CSV files and plots.
    pub const fn name(self) -> &'static str {
        match self {
            Backoff::None => "no backoff",
            Backoff::Exponential => "exponential",
            Backoff::Full => "full jitter",
            Backoff::Equal => "equal jitter",
            Backoff::Decorrelated => "decorrelated jitter",
        }
    }

    /// The runtime policy: unlimited attempts, base 5 ms, cap 2 s, multiplier 2.
    pub fn policy(self) -> Keys {
        let base = Duration::from_millis(5);
        let p = Keys::new()
            .max_attempts(u32::MAX)
            .initial_backoff(base)
            .multiplier(2.0)
            .max_backoff(Duration::from_secs(2));
        match self {
            Backoff::None => p.initial_backoff(Duration::ZERO).jitter(Jitter::None),
            Backoff::Exponential => p.jitter(Jitter::None),
            Backoff::Full => p.jitter(Jitter::Full),
            Backoff::Equal => p.jitter(Jitter::Equal),
            Backoff::Decorrelated => p.jitter(Jitter::Decorrelated),
        }
    }
}

/// The sizes to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The numbers of clients.
    pub clients: Vec<usize>,
    /// Runs (seeds) averaged per point.
    pub runs: u64,
    /// The first seed.
    pub seed: u64,
}

impl Config {
    /// N = 10, 20, ..., 200, 20 runs each.
    pub fn full() -> Config {
        Config {
            clients: (1..=20).map(|i| i * 10).collect(),
            runs: 20,
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`.
    pub fn quick() -> Config {
        Config {
            clients: vec![20],
            runs: 3,
            seed: 1,
        }
    }
}

/// One run's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Attempts (each one read and one conditional write).
    pub attempts: u64,
    /// Calls to the server: two per attempt.
    pub calls: u64,
    /// When the last client's write landed (or its call gave up), in milliseconds.
    pub time_ms: f64,
    /// Clients whose call ended without a write: a retry refused by the policy's bucket,
    /// budget, breaker or guards ends the call with the conflict (never with the backoff
    /// strategies alone, whose attempts are unlimited).
    pub gave_up: u64,
}

/// The average of `runs` runs for one N and one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Clients.
    pub clients: usize,
    /// Strategy.
    pub backoff: Backoff,
    /// Mean calls per run.
    pub calls: f64,
    /// Mean time to finish, milliseconds.
    pub time_ms: f64,
}

/// Runs one contention round: `clients` clients, one strategy, one seed.
pub fn run_once(clients: usize, backoff: Backoff, seed: u64) -> Outcome {
    let outcome = run_with(clients, backoff, Policy::of(Strategy::NoBucket), seed);
    assert_eq!(
        outcome.gave_up, 0,
        "conflicts are retried until the write lands"
    );
    outcome
}

/// Runs one contention round of `clients` clients with `backoff` under `policy` (each client
/// its own bucket, budget, breaker and guards, as each process has its own), one seed.
pub fn run_with(clients: usize, backoff: Backoff, policy: Policy, seed: u64) -> Outcome {
    sim::run(async move {
        let rng = Rc::new(RefCell::new(Rng::new(seed)));
        let version = Rc::new(Cell::new(0u64));
        let attempts = Rc::new(Cell::new(0u64));
        let t0 = Instant::now();
        let mut tasks = Vec::with_capacity(clients);
        for _ in 0..clients {
            let jitter_seed = rng.borrow_mut().seed();
            let (rng, version, attempts) = (rng.clone(), version.clone(), attempts.clone());
            tasks.push(tokio::task::spawn_local(async move {
                let client = Client::new("brooker", backoff.policy(), policy);
                let hop = || sim::secs(rng.borrow_mut().abs_normal(0.010, 0.002));
                let written = client
                    .call(jitter_seed, || {
                        attempts.set(attempts.get() + 1);
                        let (h1, h2, h3, h4) = (hop(), hop(), hop(), hop());
                        let version = version.clone();
                        async move {
                            sleep(h1).await;
                            let seen = version.get();
                            sleep(h2 + h3).await;
                            let won = version.get() == seen;
                            if won {
                                version.set(seen + 1);
                            }
                            sleep(h4).await;
                            if won { Ok(()) } else { Err(SimError::Conflict) }
                        }
                    })
                    .await;
                (sim::since(t0), written.is_ok())
            }));
        }
        let (mut last, mut gave_up) = (0.0_f64, 0);
        for t in tasks {
            let (at, written) = t.await.expect("a client task");
            last = last.max(at);
            gave_up += u64::from(!written);
        }
        assert_eq!(
            version.get() + gave_up,
            clients as u64,
            "every client wrote once or gave up"
        );
        Outcome {
            attempts: attempts.get(),
            calls: 2 * attempts.get(),
            time_ms: last * 1000.0,
            gave_up,
        }
    })
}

/// Runs every size and strategy of `config`.
pub fn run(config: &Config) -> Vec<Point> {
    let mut out = Vec::new();
    for &n in &config.clients {
        for backoff in Backoff::ALL {
            let (mut calls, mut time) = (0.0, 0.0);
            for r in 0..config.runs {
                let o = run_once(n, backoff, config.seed + r);
                calls += o.calls as f64;
                time += o.time_ms;
            }
            let runs = config.runs as f64;
            out.push(Point {
                clients: n,
                backoff,
                calls: calls / runs,
                time_ms: time / runs,
            });
        }
    }
    out
}

/// The mean of `runs` runs for one N and one policy, on full jitter.
#[derive(Debug, Clone)]
pub struct PolicyPoint {
    /// Clients.
    pub clients: usize,
    /// The policy.
    pub policy: Policy,
    /// Mean calls per run.
    pub calls: f64,
    /// Mean time to finish, milliseconds.
    pub time_ms: f64,
    /// Mean clients per run whose call gave up without writing.
    pub gave_up: f64,
}

/// Runs `policy` on full jitter (the runtime's default) at every size of `config`: what a
/// policy's protections, not its backoff, do to contention.
pub fn run_policy(config: &Config, policy: Policy) -> Vec<PolicyPoint> {
    config
        .clients
        .iter()
        .map(|&n| {
            let (mut calls, mut time, mut gave_up) = (0.0, 0.0, 0.0);
            for r in 0..config.runs {
                let o = run_with(n, Backoff::Full, policy, config.seed + r);
                calls += o.calls as f64;
                time += o.time_ms;
                gave_up += o.gave_up as f64;
            }
            let runs = config.runs as f64;
            PolicyPoint {
                clients: n,
                policy,
                calls: calls / runs,
                time_ms: time / runs,
                gave_up: gave_up / runs,
            }
        })
        .collect()
}
