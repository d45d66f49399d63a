//! A what-if run as it is simulated: the users, the tiers of services and their replicas, each
//! process's retry policy, and the faults, all checked and resolved from the user's files
//! ([`load`](super::load)).

use retry_keys::Values;
use retry_runtime::{
    AdaptiveConcurrency, AdaptiveThrottle, Bulkhead, ConcurrencyBudget, Guard, Quota,
};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// How the processes of one tier retry their calls.
#[derive(Debug, Clone)]
pub enum PolicyPlan {
    /// The engine's keys, as a `#[retry]` function or a `Policy` writes them: every key of
    /// `values` written (its defaults included, so that nothing from the environment of the
    /// simulation changes them), with the protections the attribute names by a string.
    Keys(KeysPlan),
    /// A gRPC service config's policy for one method, run by the runtime's
    /// `retry_runtime::grpc` (gRFC A6: its attempts, backoff, retryable codes, hedging,
    /// timeout and retry throttling; nothing else applies).
    Grpc(GrpcPlan),
}

impl PolicyPlan {
    /// The policy in one line, with where each part came from.
    pub fn describe(&self) -> &str {
        match self {
            PolicyPlan::Keys(k) => &k.describe,
            PolicyPlan::Grpc(g) => &g.describe,
        }
    }
}

/// A policy of the engine's keys.
#[derive(Debug, Clone)]
pub struct KeysPlan {
    /// The values of the keys written from every source (without the defaults).
    pub values: Values,
    /// `bucket = "none"`: no retry token bucket.
    pub no_bucket: bool,
    /// `budget = "N%"`: a retry budget of that share per process.
    pub budget: Option<f64>,
    /// `breaker = "N%"`: a circuit breaker of that failure ratio per process.
    pub breaker: Option<f64>,
    /// `guard = [...]`: the guards each process asks, in order, after the rest.
    pub guards: Vec<GuardPlan>,
    /// The policy in one line: each key with its value and source.
    pub describe: String,
}

/// One of the crate's guards, as a policy's `guard = [...]` writes it: each process makes its
/// own (`retry_runtime::Policy::guard_shared`), as each process of a fleet has its own
/// `static`s.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardPlan {
    /// `{ bulkhead = N, max_wait = "D" }`: `Bulkhead::new(N)`, with its wait if written.
    Bulkhead {
        /// Attempts in flight at most.
        max_concurrent: u32,
        /// How long an attempt waits for a place.
        max_wait: Option<Duration>,
    },
    /// `{ concurrency_budget = R, min_concurrency = N }`: `ConcurrencyBudget::ratio(R)`.
    ConcurrencyBudget {
        /// Retries and hedges in flight, as a share of the attempts in flight.
        ratio: f64,
        /// The floor (Envoy's 3 unless written).
        min_concurrency: Option<u32>,
    },
    /// `{ adaptive_throttle = K, window = "D", first_attempts = B }`:
    /// `AdaptiveThrottle::new(K)`.
    AdaptiveThrottle {
        /// The SRE book's `k`.
        k: f64,
        /// The window (2 minutes unless written).
        window: Option<Duration>,
        /// Whether first attempts are gated too.
        first_attempts: bool,
    },
    /// `{ adaptive_concurrency = true }`: `AdaptiveConcurrency::new()`.
    AdaptiveConcurrency,
    /// `{ quota = N, per = "D", burst = B, max_wait = "D" }`: `Quota::new(N, per)`.
    Quota {
        /// Attempts per `per`.
        n: u32,
        /// The period (a second unless written).
        per: Duration,
        /// Attempts at once after a quiet spell (`n` unless written).
        burst: Option<u32>,
        /// How long an attempt waits for its turn.
        max_wait: Option<Duration>,
    },
}

impl GuardPlan {
    /// A guard of this plan, fresh.
    pub fn make(&self) -> Arc<dyn Guard> {
        match *self {
            GuardPlan::Bulkhead {
                max_concurrent,
                max_wait,
            } => {
                let b = Bulkhead::new(max_concurrent);
                Arc::new(match max_wait {
                    Some(d) => b.with_max_wait(d),
                    None => b,
                })
            }
            GuardPlan::ConcurrencyBudget {
                ratio,
                min_concurrency,
            } => {
                let b = ConcurrencyBudget::ratio(ratio);
                Arc::new(match min_concurrency {
                    Some(n) => b.with_min_concurrency(n),
                    None => b,
                })
            }
            GuardPlan::AdaptiveThrottle {
                k,
                window,
                first_attempts,
            } => {
                let t = AdaptiveThrottle::new(k).with_first_attempts(first_attempts);
                Arc::new(match window {
                    Some(d) => t.with_window(d),
                    None => t,
                })
            }
            GuardPlan::AdaptiveConcurrency => Arc::new(AdaptiveConcurrency::new()),
            GuardPlan::Quota {
                n,
                per,
                burst,
                max_wait,
            } => {
                let mut q = Quota::new(n, per);
                if let Some(b) = burst {
                    q = q.with_burst(b);
                }
                if let Some(d) = max_wait {
                    q = q.with_max_wait(d);
                }
                Arc::new(q)
            }
        }
    }

    /// The guard as a policy table writes it.
    pub fn describe(&self) -> String {
        // A duration in the largest unit that writes it whole.
        let ms = |d: Duration| {
            let ns = d.as_nanos();
            let (n, unit) = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
                .into_iter()
                .find(|(per, _)| ns % per == 0)
                .map_or((ns, "ns"), |(per, unit)| (ns / per, unit));
            format!("\"{n}{unit}\"")
        };
        let mut s = String::from("{ ");
        match *self {
            GuardPlan::Bulkhead {
                max_concurrent,
                max_wait,
            } => {
                let _ = write!(s, "bulkhead = {max_concurrent}");
                if let Some(d) = max_wait {
                    let _ = write!(s, ", max_wait = {}", ms(d));
                }
            }
            GuardPlan::ConcurrencyBudget {
                ratio,
                min_concurrency,
            } => {
                let _ = write!(s, "concurrency_budget = \"{}%\"", ratio * 100.0);
                if let Some(n) = min_concurrency {
                    let _ = write!(s, ", min_concurrency = {n}");
                }
            }
            GuardPlan::AdaptiveThrottle {
                k,
                window,
                first_attempts,
            } => {
                let _ = write!(s, "adaptive_throttle = {k:?}");
                if let Some(d) = window {
                    let _ = write!(s, ", window = {}", ms(d));
                }
                if first_attempts {
                    s.push_str(", first_attempts = true");
                }
            }
            GuardPlan::AdaptiveConcurrency => s.push_str("adaptive_concurrency = true"),
            GuardPlan::Quota {
                n,
                per,
                burst,
                max_wait,
            } => {
                let _ = write!(s, "quota = {n}, per = {}", ms(per));
                if let Some(b) = burst {
                    let _ = write!(s, ", burst = {b}");
                }
                if let Some(d) = max_wait {
                    let _ = write!(s, ", max_wait = {}", ms(d));
                }
            }
        }
        s.push_str(" }");
        s
    }
}

/// A gRPC service config's policy.
#[derive(Debug, Clone)]
pub struct GrpcPlan {
    /// The service config's JSON (each process reads its own, so that each has its own retry
    /// throttle, as each client channel has).
    pub json: String,
    /// Read as Google's published configs are (`ServiceConfig::from_google_json`).
    pub google: bool,
    /// The service of the method.
    pub service: String,
    /// The method.
    pub method: String,
    /// The policy in one line.
    pub describe: String,
}

/// Calls to a tier: `count` requests side by side per request (or user call) that makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// The tier called (an index into [`Plan::tiers`]).
    pub tier: usize,
    /// Requests made side by side; all must succeed.
    pub count: usize,
}

/// How the users offer their calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Each client offers `rate` calls per second (Poisson arrivals, an open loop) until the
    /// run's duration.
    Poisson {
        /// Calls per second per client.
        rate: f64,
    },
    /// Each client makes `calls` calls one after the other (a closed loop), from time 0.
    Sequential {
        /// Calls per client.
        calls: u64,
    },
}

/// The users: client processes, each with its own retry state.
#[derive(Debug, Clone)]
pub struct Users {
    /// Processes.
    pub clients: usize,
    /// How they offer their calls.
    pub load: Load,
    /// Their policy.
    pub policy: PolicyPlan,
    /// What each user call calls (one attempt of the call sends every request of it).
    pub calls: Vec<Edge>,
}

/// The time a replica spends on a request (beside its queue): a fixed time, or a log-normal
/// one of that median and this 99th percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// The median, seconds.
    pub median: f64,
    /// The 99th percentile, seconds (`median` when fixed).
    pub p99: f64,
}

/// A tier of replicas.
#[derive(Debug, Clone)]
pub struct Tier {
    /// Its name in the topology.
    pub name: String,
    /// Replica processes; a request goes to one drawn uniformly.
    pub replicas: usize,
    /// How its replicas retry their calls (a tier that calls nothing has none).
    pub policy: Option<PolicyPlan>,
    /// What each request it serves calls, side by side; all must succeed.
    pub calls: Vec<Edge>,
    /// Its replicas run behind `retry_runtime::tower::ServerLayer`: each handler runs under
    /// its caller's deadline (a request still queued when it passes is dropped unserved), and
    /// an error answer after its calls gave up retrying says not to retry it.
    pub server_layer: bool,
    /// Each request's own work.
    pub work: Work,
    /// Requests per second one replica works through, one at a time from a FIFO queue.
    pub capacity: Option<f64>,
    /// Requests per second above which a replica answers 429 (a token bucket holding a tenth
    /// of a second's worth).
    pub throttle: Option<f64>,
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// Every request fails at once (a 5xx).
    Outage,
    /// Each request's work takes `factor` times as long.
    Brownout {
        /// The factor (10 unless set).
        factor: f64,
    },
    /// The replica works through its queue at `factor` times its capacity (the metastable
    /// section's trigger: 0.5).
    Overload {
        /// The factor.
        factor: f64,
    },
    /// The replica answers 429 above `capacity` requests per second.
    Throttling {
        /// Requests per second.
        capacity: f64,
    },
    /// Each request fails on its own (a 5xx) with probability `rate`.
    Transient {
        /// The probability.
        rate: f64,
    },
}

impl FaultKind {
    /// The kind's name in the topology.
    pub const fn name(&self) -> &'static str {
        match self {
            FaultKind::Outage => "outage",
            FaultKind::Brownout { .. } => "brownout",
            FaultKind::Overload { .. } => "overload",
            FaultKind::Throttling { .. } => "throttling",
            FaultKind::Transient { .. } => "transient",
        }
    }

    /// The kinds, in the documentation's order.
    pub const NAMES: [&'static str; 5] =
        ["outage", "brownout", "overload", "throttling", "transient"];
}

/// A fault of a tier (or of one of its replicas) over `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    /// The tier.
    pub tier: usize,
    /// The replica, or every replica.
    pub replica: Option<usize>,
    /// What goes wrong.
    pub kind: FaultKind,
    /// Seconds from the start of the run.
    pub start: f64,
    /// Seconds from the start of the run (`f64::INFINITY`: to the end).
    pub end: f64,
}

impl Fault {
    /// Whether the fault applies to `replica` of `tier` at `t`.
    pub fn hits(&self, tier: usize, replica: usize, t: f64) -> bool {
        self.tier == tier
            && self.replica.is_none_or(|r| r == replica)
            && t >= self.start
            && t < self.end
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The topology file, as given.
    pub topology: String,
    /// Seconds during which the users offer calls (Poisson load); the run goes on until every
    /// call has ended.
    pub duration: f64,
    /// The seed.
    pub seed: u64,
    /// The mean of one network hop, seconds: each hop takes |Normal(mean, mean / 5)|.
    pub network: f64,
    /// The users.
    pub users: Users,
    /// The tiers, in the order of the file.
    pub tiers: Vec<Tier>,
    /// The faults, in the order of the file.
    pub faults: Vec<Fault>,
}

impl Plan {
    /// Requests each tier receives per user call when nothing fails: the product of the counts
    /// along every path from the users, summed over the paths.
    pub fn nominal(&self) -> Vec<f64> {
        let mut per_call = vec![0.0; self.tiers.len()];
        for e in &self.users.calls {
            per_call[e.tier] += e.count as f64;
        }
        // The tiers in an order where every caller comes before its callees (the topology has
        // no cycle).
        for t in self.callers_first() {
            let here = per_call[t];
            for e in &self.tiers[t].calls {
                per_call[e.tier] += here * e.count as f64;
            }
        }
        per_call
    }

    /// The tiers, each after every tier that calls it.
    pub fn callers_first(&self) -> Vec<usize> {
        let n = self.tiers.len();
        let mut callers = vec![0usize; n];
        for t in &self.tiers {
            for e in &t.calls {
                callers[e.tier] += 1;
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&t| callers[t] == 0).collect();
        let mut out = Vec::with_capacity(n);
        while let Some(t) = ready.pop() {
            out.push(t);
            for e in &self.tiers[t].calls {
                callers[e.tier] -= 1;
                if callers[e.tier] == 0 {
                    ready.push(e.tier);
                }
            }
        }
        out
    }

    /// The span from the first fault's start to the last one's end, if there are faults.
    pub fn fault_window(&self) -> Option<(f64, f64)> {
        let start = self.faults.iter().map(|f| f.start).reduce(f64::min)?;
        let end = self.faults.iter().map(|f| f.end).reduce(f64::max)?;
        Some((start, end))
    }
}
