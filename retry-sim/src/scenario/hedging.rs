//! Hedged requests against a fan-out, after "The Tail at Scale" (Dean and Barroso, CACM 2013).
//!
//! Each user request fans out to [`Config::fan_out`] leaf requests, each to a server drawn at
//! random from a pool, and completes when every leaf has answered: one slow leaf makes the
//! whole request slow. A leaf's service time is drawn on its own for every request, a hedge's
//! too: most are quick (log-normal), 1 in 100 falls into a slow mode 125 times longer, about
//! 1 s ([`Service`]). Each server runs a fixed number of workers over a FIFO queue; a request
//! holds a worker for its whole service time, and a request whose client stopped waiting for
//! it (a hedge lost the race, or the original did) is still served: hedges are load.
//!
//! The frontends issuing the leaf requests run the engine's loop without hedging, with a
//! fixed hedge delay near a leaf's 95th percentile, with `hedge_after = "p95"` (the delay
//! follows the estimated 95th percentile of the frontend's own successful leaf attempts), the
//! same with two hedges (`max_in_flight = 3`), and with a delay far too early, with the token
//! bucket and without. Every frontend is its own client: its own site, token bucket and
//! latency estimate. [`Config::shifted`] slows the servers down halfway through a run, to set
//! a fixed delay against a percentile that follows.
//!
//! A leaf's servers and service times come from a generator of its own, so that every policy's
//! run draws the same first attempts: two runs differ by what their hedges do. Time is
//! tokio's paused clock, whose timers fire on whole milliseconds: every latency is a whole
//! number of milliseconds, rounded up.
//!
//! Every run also checks the engine's hedging against the simulation's own bookkeeping: every
//! attempt that lost is dropped by the time its call returns, exactly one attempt per leaf
//! completes, no hedge starts before its delay or beyond `max_in_flight`, none is missing
//! under a fixed delay while the bucket could pay for it, the hedges the engine records are
//! the extra attempts the servers saw, and each frontend's token bucket holds what a replay
//! of the bucket's rules over the leaves' events says it should, after every hedge and every
//! leaf ([`Faults`]).

use crate::sim::{self, Client, Rng, SimError, Strategy};
use retry_runtime::__private::{HedgeSpec, Keys, Latency};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// What the bucket takes for a hedge (a retry's cost), given back if the hedge wins.
const HEDGE_COST: u32 = 5;
/// What a success on a first attempt gives back to the bucket.
const FIRST_SUCCESS_REWARD: u32 = 1;
/// The runtime's defaults for a percentile's delay: never below 1 ms, never above 1 s, and
/// 1 s until the estimate has enough samples.
const MIN_HEDGE_AFTER: Duration = Duration::from_millis(1);
const MAX_HEDGE_AFTER: Duration = Duration::from_secs(1);

/// When a leaf request is hedged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hedge {
    /// Never: one attempt per leaf, the engine's sequential loop.
    Never,
    /// `hedge_after = "N ms"`: a copy after a fixed delay.
    Fixed(Duration),
    /// `hedge_after = "pNN"`: a copy after the frontend's estimated NN-th percentile of its
    /// successful leaf attempts, within the runtime's default bounds (1 ms, 1 s).
    Percentile(u8),
}

/// One hedging policy of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// When a leaf is hedged.
    pub hedge: Hedge,
    /// At most this many attempts of one leaf at once (`max_in_flight`; the runtime's
    /// default is 2: the attempt and one hedge).
    pub max_in_flight: u32,
    /// The frontends' bucket: `Standard` (500 tokens, the runtime's default) or `NoBucket`
    /// (a bucket that never runs out, so nothing bounds the hedges).
    pub bucket: Strategy,
    /// `hedge_budget`, in tenths of a percent of the leaves (20: 2 %), if any.
    pub budget: Option<u32>,
}

impl Variant {
    /// No hedging.
    pub const NEVER: Variant = Variant {
        hedge: Hedge::Never,
        max_in_flight: 1,
        bucket: Strategy::Standard,
        budget: None,
    };

    /// Hedges after `ms` milliseconds, one hedge at most.
    pub const fn fixed(ms: u64) -> Variant {
        Variant {
            hedge: Hedge::Fixed(Duration::from_millis(ms)),
            max_in_flight: 2,
            bucket: Strategy::Standard,
            budget: None,
        }
    }

    /// Hedges after the estimated `p`-th percentile, one hedge at most.
    pub const fn percentile(p: u8) -> Variant {
        Variant {
            hedge: Hedge::Percentile(p),
            max_in_flight: 2,
            bucket: Strategy::Standard,
            budget: None,
        }
    }

    /// The same with at most `n` attempts of a leaf at once.
    pub const fn in_flight(mut self, n: u32) -> Variant {
        self.max_in_flight = n;
        self
    }

    /// The same with a hedge budget of `tenths` tenths of a percent of the leaves
    /// (`hedge_budget`).
    pub const fn budget(mut self, tenths: u32) -> Variant {
        self.budget = Some(tenths);
        self
    }

    /// The same with a bucket that never runs out.
    pub const fn unbounded(mut self) -> Variant {
        self.bucket = Strategy::NoBucket;
        self
    }

    /// The name in tables and CSV files.
    pub fn name(&self) -> String {
        let mut name = match self.hedge {
            Hedge::Never => "no hedging".to_string(),
            Hedge::Fixed(d) => format!("hedge_after = {} ms", d.as_millis()),
            Hedge::Percentile(p) => format!("hedge_after = p{p}"),
        };
        if self.hedge != Hedge::Never && self.max_in_flight != 2 {
            name.push_str(&format!(", max_in_flight = {}", self.max_in_flight));
        }
        if self.bucket == Strategy::NoBucket {
            name.push_str(", no bucket");
        }
        if let Some(tenths) = self.budget {
            name.push_str(&format!(", hedge_budget = {}%", f64::from(tenths) / 10.0));
        }
        name
    }

    /// The name as a CSV field (quoted: it may hold a comma).
    pub fn csv_name(&self) -> String {
        format!("\"{}\"", self.name())
    }

    /// `policy` with this variant's hedging keys, and for a percentile or a budget the
    /// frontend's latency estimate (which keeps the budget's delay); `None` for no hedging.
    fn hedging(&self, policy: Keys) -> Option<(Keys, Option<&'static Latency>)> {
        let (policy, latency) = match self.hedge {
            Hedge::Never => return None,
            Hedge::Fixed(d) => {
                let latency: Option<&'static Latency> =
                    self.budget.map(|_| &*Box::leak(Box::new(Latency::new())));
                (policy.hedge_after(HedgeSpec::Fixed(d)), latency)
            }
            Hedge::Percentile(p) => {
                // One estimate per frontend, for the life of the simulation (a `#[retry]`
                // function's is a `static`).
                let latency: &'static Latency = Box::leak(Box::new(Latency::new()));
                let policy = policy
                    .hedge_after(HedgeSpec::Percentile(p))
                    .min_hedge_after(MIN_HEDGE_AFTER)
                    .max_hedge_after(MAX_HEDGE_AFTER);
                (policy, Some(latency))
            }
        };
        let policy = match self.budget {
            Some(tenths) => policy.hedge_budget(f64::from(tenths) / 1000.0),
            None => policy,
        };
        Some((policy.max_in_flight(self.max_in_flight), latency))
    }
}

/// A leaf request's service time at a server, drawn on its own for every request (a hedge
/// included): log-normal with median `median` seconds and `sigma` the standard deviation of
/// its logarithm; with probability `slow_fraction` the draw is multiplied by `slow_factor`
/// (the slow mode: same shape, `slow_factor` times longer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Service {
    /// The median of the quick mode, seconds.
    pub median: f64,
    /// The standard deviation of the logarithm.
    pub sigma: f64,
    /// The probability of the slow mode.
    pub slow_fraction: f64,
    /// How much longer the slow mode is.
    pub slow_factor: f64,
}

impl Service {
    /// The paper's example: 1 in 100 requests takes about 1 s. The rest: median 8 ms, the
    /// logarithm's standard deviation 0.25 (95 % of them under 12.1 ms, 99 % under 14.3 ms).
    pub const TAIL_AT_SCALE: Service = Service {
        median: 0.008,
        sigma: 0.25,
        slow_fraction: 0.01,
        slow_factor: 125.0,
    };

    /// The mean service time, seconds.
    pub fn mean(&self) -> f64 {
        let quick = self.median * (self.sigma * self.sigma / 2.0).exp();
        quick * (1.0 - self.slow_fraction + self.slow_fraction * self.slow_factor)
    }
}

/// From `at` seconds on, every service time of the quick mode is `factor` times as long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// When, seconds.
    pub at: f64,
    /// How much longer.
    pub factor: f64,
}

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// Leaf requests per user request.
    pub fan_out: usize,
    /// Servers in the pool; each attempt of a leaf goes to one drawn at random, never to one
    /// an earlier attempt of the same leaf went to.
    pub servers: usize,
    /// Requests a server serves at once; the rest wait in its FIFO queue.
    pub workers: usize,
    /// Frontends issuing the leaf requests, each its own client (site, bucket, estimate).
    pub frontends: usize,
    /// User requests per second, over all frontends (Poisson arrivals at each).
    pub rate: f64,
    /// Seconds of arrivals; the run ends when the last user request has completed.
    pub horizon: f64,
    /// User requests that arrive sooner than this, seconds, are served but not counted: the
    /// first user request of each frontend finds its latency estimate empty (fewer than 20
    /// samples) and hedges only after `max_hedge_after` (1 s).
    pub warmup: f64,
    /// The servers' service times.
    pub service: Service,
    /// A change of the servers' speed during the run, if any.
    pub shift: Option<Shift>,
    /// One network hop (frontend to server, or back), seconds.
    pub hop: f64,
    /// The policies compared, each in a run of its own with the same seed.
    pub variants: Vec<Variant>,
    /// The seed.
    pub seed: u64,
}

impl Config {
    /// 10 frontends sending 50 user requests per second between them, each to 100 leaves over
    /// 100 servers of 4 workers (23 % busy without hedging), for 300 s: about 15,000 user
    /// requests and 1.5 million leaves per policy.
    pub fn full() -> Config {
        Config {
            fan_out: 100,
            servers: 100,
            workers: 4,
            frontends: 10,
            rate: 50.0,
            horizon: 300.0,
            warmup: 1.0,
            service: Service::TAIL_AT_SCALE,
            shift: None,
            hop: 0.0005,
            variants: vec![
                Variant::NEVER,
                Variant::fixed(FIXED_MS),
                Variant::percentile(95),
                Variant::percentile(95).in_flight(3),
                Variant::fixed(EARLY_MS),
                Variant::fixed(EARLY_MS).unbounded(),
            ],
            seed: 1,
        }
    }

    /// The smallest case, for `cargo test`: the same world for 10 s (about 500 user
    /// requests), no hedging, the fixed delay and p95 with one hedge and with two.
    pub fn quick() -> Config {
        Config {
            horizon: 10.0,
            variants: vec![
                Variant::NEVER,
                Variant::fixed(FIXED_MS),
                Variant::percentile(95),
                Variant::percentile(95).in_flight(3),
            ],
            ..Config::full()
        }
    }

    /// The servers slow down halfway: from 60 s of a 120 s run every quick-mode service time
    /// is twice as long (median 16 ms: a slower release, a noisy neighbour; the slow mode
    /// stays at about 1 s). The fixed delay chosen for the first half against a percentile
    /// that follows; no hedging for reference.
    pub fn shifted() -> Config {
        Config {
            horizon: 120.0,
            shift: Some(Shift {
                at: 60.0,
                factor: 2.0,
            }),
            variants: vec![
                Variant::NEVER,
                Variant::fixed(FIXED_MS),
                Variant::percentile(95),
            ],
            ..Config::full()
        }
    }

    /// The hedge budget: no hedging, then one hedge at the p95 and a second
    /// (`max_in_flight = 3`, the cut the fan-out's table shows), without and with
    /// `hedge_budget = "2%"`.
    pub fn budget() -> Config {
        Config {
            variants: vec![
                Variant::NEVER,
                Variant::percentile(95).in_flight(3),
                Variant::percentile(95).in_flight(3).budget(20),
            ],
            ..Config::full()
        }
    }

    /// The smallest case of [`Config::budget`]: 10 s.
    pub fn budget_quick() -> Config {
        Config {
            horizon: 10.0,
            ..Config::budget()
        }
    }

    /// The servers' slowdown of [`Config::shifted`] with the policies of [`Config::budget`].
    pub fn budget_shifted() -> Config {
        Config {
            variants: Config::budget().variants,
            ..Config::shifted()
        }
    }

    /// The smallest case of [`Config::budget_shifted`]: 16 s, the shift at 8 s.
    pub fn budget_shifted_quick() -> Config {
        Config {
            variants: Config::budget().variants,
            ..Config::shifted_quick()
        }
    }

    /// The smallest case of [`Config::shifted`]: 16 s, the shift at 8 s.
    pub fn shifted_quick() -> Config {
        Config {
            horizon: 16.0,
            shift: Some(Shift {
                at: 8.0,
                factor: 2.0,
            }),
            ..Config::shifted()
        }
    }

    /// The mean fraction of a server's workers busy without hedging (before any shift).
    pub fn utilization(&self) -> f64 {
        self.rate * self.fan_out as f64 * self.service.mean() / (self.servers * self.workers) as f64
    }
}

/// The fixed hedge delay compared, near a leaf's 95th percentile without hedging.
pub const FIXED_MS: u64 = 16;
/// A fixed delay far too early (below a leaf's median), to show what hedging costs.
pub const EARLY_MS: u64 = 5;

/// Nearest-rank quantiles of a set of latencies, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Quantiles {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 95th.
    pub p95: f64,
    /// The 99th.
    pub p99: f64,
    /// The 99.9th.
    pub p999: f64,
    /// The slowest.
    pub max: f64,
}

/// The nearest-rank `q` quantile of `sorted` (ascending), 0 if empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The share of `sorted` (ascending) above `x`.
pub fn share_above(sorted: &[f64], x: f64) -> f64 {
    let above = sorted.len() - sorted.partition_point(|&v| v <= x);
    sim::ratio(above as u64, sorted.len() as u64)
}

impl Quantiles {
    fn of(sorted: &[f64]) -> Quantiles {
        Quantiles {
            p50: quantile(sorted, 0.5),
            p90: quantile(sorted, 0.9),
            p95: quantile(sorted, 0.95),
            p99: quantile(sorted, 0.99),
            p999: quantile(sorted, 0.999),
            max: sorted.last().copied().unwrap_or(0.0),
        }
    }
}

/// What the simulation's bookkeeping found of the engine's hedging: all zero when it behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Leaves whose call returned while an attempt of theirs was still alive (not dropped).
    pub alive_after_return: u64,
    /// Leaves that did not see exactly one attempt complete.
    pub not_one_winner: u64,
    /// Leaves whose call did not return `Ok` (no server ever fails).
    pub failed: u64,
    /// Checks at which a frontend's bucket did not hold the replayed level.
    pub bucket_mismatches: u64,
    /// Hedges recorded by the engine minus extra attempts sent (either sign: its absolute
    /// value).
    pub record_mismatch: u64,
    /// Hedges sent sooner after the leaf's attempt before them than the delay allows (a fixed
    /// delay; for a percentile, its lower bound).
    pub early_hedges: u64,
    /// Attempts started while `max_in_flight` of the same leaf were already in flight.
    pub over_in_flight: u64,
    /// Under a fixed delay, leaves that ran past it on their first attempt alone although
    /// the bucket never ran short of a hedge's cost.
    pub missed_hedges: u64,
}

impl Faults {
    /// Whether every check held.
    pub fn none(&self) -> bool {
        *self == Faults::default()
    }
}

/// Counters of one second of a run (by the time a leaf or hedge was sent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    /// Leaves started.
    pub leaves: u64,
    /// Hedges sent.
    pub hedges: u64,
    /// The hedge delay in effect at the end of the second, seconds, averaged over the
    /// frontends (a percentile's estimate, clamped as the engine clamps it).
    pub delay: f64,
    /// The lowest level a frontend's bucket was seen at in the second (`u32::MAX` if none
    /// was looked at, or the bucket never runs out).
    pub bucket_low: u32,
}

impl Default for Second {
    fn default() -> Second {
        Second {
            leaves: 0,
            hedges: 0,
            delay: 0.0,
            bucket_low: u32::MAX,
        }
    }
}

/// The figures of one policy.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The policy.
    pub variant: Variant,
    /// User requests completed.
    pub user_requests: u64,
    /// Leaf requests (first attempts).
    pub leaves: u64,
    /// Hedges sent (attempts beyond a leaf's first; no server fails, so none is a retry).
    pub hedges: u64,
    /// Hedges the engine recorded (`Record::hedges`).
    pub hedges_recorded: u64,
    /// Leaves answered by a hedge rather than by their first attempt.
    pub hedges_won: u64,
    /// Attempts the frontends dropped before their answer (a losing copy): served anyway.
    pub cancelled: u64,
    /// Fan-out (user request) latency.
    pub fan_out: Quantiles,
    /// Leaf latency (from the leaf's first attempt to its call's return).
    pub leaf: Quantiles,
    /// Worker-seconds the servers spent.
    pub work: f64,
    /// Mean seconds an attempt waited in a server's queue.
    pub mean_queue: f64,
    /// The lowest level any frontend's bucket (500 tokens) fell to (`u32::MAX` for a bucket
    /// that never runs out).
    pub bucket_low: u32,
    /// Tokens taken by hedges that lost (never given back; 0 for a bucket that never runs
    /// out).
    pub tokens_lost: u64,
    /// The engine checks.
    pub faults: Faults,
    /// Every fan-out latency, ascending.
    pub fan_out_sorted: Vec<f64>,
    /// Every leaf latency, ascending.
    pub leaf_sorted: Vec<f64>,
    /// Every user request's start and latency, seconds, in the order they completed.
    pub fan_out_timed: Vec<(f64, f64)>,
    /// Per-second counters.
    pub seconds: Vec<Second>,
}

impl Summary {
    /// Hedges over leaf requests.
    pub fn extra_requests(&self) -> f64 {
        sim::ratio(self.hedges, self.leaves)
    }

    /// The latencies of the user requests that started in `[from, to)` seconds, ascending.
    pub fn fan_out_between(&self, from: f64, to: f64) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .fan_out_timed
            .iter()
            .filter(|&&(start, _)| start >= from && start < to)
            .map(|&(_, l)| l)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// Hedges over leaf requests sent in `[from, to)` seconds (whole seconds).
    pub fn extra_between(&self, from: f64, to: f64) -> f64 {
        let (mut leaves, mut hedges) = (0, 0);
        for (i, b) in self.seconds.iter().enumerate() {
            if (i as f64) >= from && (i as f64) < to {
                leaves += b.leaves;
                hedges += b.hedges;
            }
        }
        sim::ratio(hedges, leaves)
    }

    /// The lowest level a frontend's bucket was seen at in `[from, to)` seconds.
    pub fn bucket_low_between(&self, from: f64, to: f64) -> u32 {
        self.seconds
            .iter()
            .enumerate()
            .filter(|(i, _)| (*i as f64) >= from && (*i as f64) < to)
            .map(|(_, b)| b.bucket_low)
            .min()
            .unwrap_or(u32::MAX)
    }

    /// The servers' work over `base`'s (the same world without hedging), minus one.
    pub fn work_added(&self, base: &Summary) -> f64 {
        self.work / base.work - 1.0
    }
}

/// One frontend: a client of the engine and the simulation's replay of its bucket.
struct Frontend {
    client: Client,
    hedged: bool,
    latency: Option<&'static Latency>,
    /// Whether the bucket is the standard one (whose level is replayed).
    bounded: bool,
    /// When the frontend hedges.
    hedge: Hedge,
    /// No hedge may start sooner than this after the attempt before it.
    min_delay: Duration,
    /// Attempts of one leaf at once.
    max_in_flight: u32,
    /// The level the bucket should hold, replayed from the leaves' events.
    replay: Cell<u32>,
}

impl Frontend {
    fn check_bucket(&self, world: &World) {
        if !self.bounded {
            // A bucket that never runs out keeps no level to replay.
            return;
        }
        let level = self.client.bucket().available();
        let mut s = world.state.borrow_mut();
        if level != self.replay.get() {
            s.faults.bucket_mismatches += 1;
            // Follow the bucket, so one mismatch is not counted again at every check.
            self.replay.set(level);
        }
        s.bucket_low = s.bucket_low.min(level);
        let second = sim::since(world.t0).floor() as usize;
        if let Some(b) = s.seconds.get_mut(second) {
            b.bucket_low = b.bucket_low.min(level);
        }
    }

    fn deposit(&self, tokens: u32) {
        let cap = self.client.bucket().capacity();
        let level = self.replay.get();
        if level < cap {
            self.replay.set(level.saturating_add(tokens).min(cap));
        }
    }
}

/// The servers and the counters, shared by every task of a run (one thread).
struct World {
    t0: Instant,
    config: Config,
    state: RefCell<State>,
}

struct State {
    /// When each worker of each server is next free, seconds since `t0`.
    free: Vec<Vec<f64>>,
    work: f64,
    queued: f64,
    sent: u64,
    hedges: u64,
    hedges_recorded: u64,
    hedges_won: u64,
    cancelled: u64,
    bucket_low: u32,
    tokens_lost: u64,
    /// Leaves that ran past a fixed delay with one attempt.
    unhedged_past_delay: u64,
    faults: Faults,
    /// When each user request started and how long it took, seconds.
    fan_out: Vec<(f64, f64)>,
    leaf: Vec<f64>,
    seconds: Vec<Second>,
}

impl World {
    /// Sends an attempt now to a server none of the leaf's attempts went to yet: returns when its answer reaches
    /// the frontend, seconds since `t0`. The server takes it into its queue on arrival
    /// whatever becomes of the frontend's wait for it.
    fn send(&self, draws: &mut Draws, hedge: bool) -> f64 {
        let now = sim::since(self.t0);
        let c = &self.config;
        let server = loop {
            let k = draws.rng.below(c.servers);
            if !draws.used.contains(&k) || draws.used.len() >= c.servers {
                break k;
            }
        };
        draws.used.push(server);
        let slow = draws.rng.uniform() < c.service.slow_fraction;
        let mut service = draws.rng.log_normal(c.service.median, c.service.sigma);
        if slow {
            service *= c.service.slow_factor;
        } else if let Some(shift) = c.shift.filter(|shift| now >= shift.at) {
            service *= shift.factor;
        }
        let mut s = self.state.borrow_mut();
        let arrival = now + c.hop;
        let workers = &mut s.free[server];
        let (i, _) = workers
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .expect("a server has workers");
        let start = workers[i].max(arrival);
        workers[i] = start + service;
        s.work += service;
        s.queued += start - arrival;
        s.sent += 1;
        let second = now.floor() as usize;
        if let Some(b) = s.seconds.get_mut(second) {
            if hedge {
                b.hedges += 1;
            } else {
                b.leaves += 1;
            }
        }
        start + service + c.hop
    }
}

/// A leaf's own draws (its attempts' servers and service times), from a generator of its
/// own: the leaves of every policy's run draw the same first attempts, and a policy's runs
/// differ only by what its hedges do.
struct Draws {
    rng: Rng,
    /// The servers the leaf's attempts went to.
    used: Vec<usize>,
}

/// An attempt in flight: marks its leaf's count of live attempts, and counts itself
/// cancelled if dropped before its answer.
struct Flight<'a> {
    world: &'a World,
    counted: bool,
    alive: &'a Cell<u32>,
    done: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.alive.set(self.alive.get() - 1);
        if !self.done && self.counted {
            self.world.state.borrow_mut().cancelled += 1;
        }
    }
}

/// One leaf request from `fe`, counted in the figures if `counted`: returns its latency,
/// seconds.
async fn leaf(world: Rc<World>, fe: Rc<Frontend>, seeds: (u64, u64), counted: bool) -> f64 {
    let (seed, world_seed) = seeds;
    let t0 = Instant::now();
    let attempts = Cell::new(0u32);
    let alive = Cell::new(0u32);
    let winner = Cell::new(0u32);
    let completed = Cell::new(0u32);
    let last_sent = Cell::new(t0);
    let draws = RefCell::new(Draws {
        rng: Rng::new(world_seed),
        used: Vec::with_capacity(3),
    });
    let (w, f) = (&*world, &*fe);
    let attempt = || {
        let n = attempts.get() + 1;
        attempts.set(n);
        let hedge = n > 1;
        let now = Instant::now();
        if hedge {
            // The engine took the hedge's cost before starting it.
            f.replay.set(f.replay.get().wrapping_sub(HEDGE_COST));
            f.check_bucket(w);
            let mut s = w.state.borrow_mut();
            s.faults.early_hedges += u64::from(now < last_sent.get() + f.min_delay);
            s.faults.over_in_flight += u64::from(alive.get() >= f.max_in_flight);
        }
        last_sent.set(now);
        let answer = w.send(&mut draws.borrow_mut(), hedge);
        alive.set(alive.get() + 1);
        let flight = Flight {
            world: w,
            counted,
            alive: &alive,
            done: false,
        };
        let (winner, completed) = (&winner, &completed);
        async move {
            // The whole guard, not only the field written below, lives in the future.
            let mut flight = flight;
            sleep_until(w.t0 + sim::secs(answer)).await;
            flight.done = true;
            completed.set(completed.get() + 1);
            winner.set(n);
            // What the engine gives back for the winner, in the same poll.
            f.deposit(if n > 1 {
                HEDGE_COST
            } else {
                FIRST_SUCCESS_REWARD
            });
            Ok::<(), SimError>(())
        }
    };
    let ok = if f.hedged {
        let (out, record) = f.client.call_hedged(seed, attempt).await;
        if counted {
            w.state.borrow_mut().hedges_recorded += record.hedges().len() as u64;
        }
        out.is_ok()
    } else {
        f.client.call(seed, attempt).await.is_ok()
    };
    let latency = sim::since(t0);
    f.check_bucket(w);
    let mut s = w.state.borrow_mut();
    s.faults.failed += u64::from(!ok);
    s.faults.alive_after_return += u64::from(alive.get() != 0);
    s.faults.not_one_winner += u64::from(completed.get() != 1);
    if let Hedge::Fixed(d) = f.hedge {
        let past = t0.elapsed() > d;
        s.unhedged_past_delay += u64::from(past && attempts.get() == 1);
    }
    if counted {
        let hedges = attempts.get().saturating_sub(1);
        let lost = hedges - u32::from(winner.get() > 1);
        s.hedges += u64::from(hedges);
        s.hedges_won += u64::from(winner.get() > 1);
        if f.bounded {
            s.tokens_lost += u64::from(lost * HEDGE_COST);
        }
        s.leaf.push(latency);
    }
    latency
}

/// Runs one policy.
pub fn run_one(config: &Config, variant: Variant) -> Summary {
    let config = config.clone();
    sim::run(async move { simulate(config, variant).await })
}

async fn simulate(config: Config, variant: Variant) -> Summary {
    let t0 = Instant::now();
    let mut rng = Rng::new(config.seed);
    let seconds = config.horizon.ceil() as usize + 10;
    let world = Rc::new(World {
        t0,
        state: RefCell::new(State {
            free: vec![vec![0.0; config.workers]; config.servers],
            work: 0.0,
            queued: 0.0,
            sent: 0,
            hedges: 0,
            hedges_recorded: 0,
            hedges_won: 0,
            cancelled: 0,
            bucket_low: u32::MAX,
            tokens_lost: 0,
            unhedged_past_delay: 0,
            faults: Faults::default(),
            fan_out: Vec::new(),
            leaf: Vec::new(),
            seconds: vec![Second::default(); seconds],
        }),
        config: config.clone(),
    });
    let frontends: Vec<Rc<Frontend>> = (0..config.frontends)
        .map(|_| {
            let policy = sim::aws_standard();
            let (client, latency) = match variant.hedging(policy) {
                None => (Client::new("leaf", policy, variant.bucket), None),
                Some((policy, latency)) => (
                    Client::hedged("leaf", policy, variant.bucket, latency),
                    latency,
                ),
            };
            let full = client.bucket().available();
            Rc::new(Frontend {
                client,
                hedged: variant.hedge != Hedge::Never,
                latency,
                min_delay: match variant.hedge {
                    Hedge::Never => Duration::ZERO,
                    Hedge::Fixed(d) => d,
                    Hedge::Percentile(_) => MIN_HEDGE_AFTER,
                },
                max_in_flight: variant.max_in_flight,
                bounded: variant.bucket != Strategy::NoBucket,
                hedge: variant.hedge,
                replay: Cell::new(full),
            })
        })
        .collect();

    // The hedge delay in effect, sampled at the end of every second.
    let sampler = {
        let (world, frontends) = (world.clone(), frontends.clone());
        let horizon = config.horizon;
        tokio::task::spawn_local(async move {
            let mut t = 1.0;
            while t <= horizon {
                sleep_until(t0 + sim::secs(t)).await;
                let delay = frontends
                    .iter()
                    .map(|fe| delay_in_effect(variant, fe.latency))
                    .sum::<f64>()
                    / frontends.len() as f64;
                if let Some(b) = world.state.borrow_mut().seconds.get_mut(t as usize - 1) {
                    b.delay = delay;
                }
                t += 1.0;
            }
        })
    };

    let mut arrivals = Vec::new();
    for fe in frontends {
        let own_seed = rng.seed();
        let world = world.clone();
        let rate = config.rate / config.frontends as f64;
        let (horizon, warmup, fan_out) = (config.horizon, config.warmup, config.fan_out);
        arrivals.push(tokio::task::spawn_local(async move {
            let mut own = Rng::new(own_seed);
            let mut requests = Vec::new();
            let mut t = own.exponential(rate);
            while t < horizon {
                sleep_until(t0 + sim::secs(t)).await;
                let seeds: Vec<(u64, u64)> =
                    (0..fan_out).map(|_| (own.seed(), own.seed())).collect();
                let (world, fe) = (world.clone(), fe.clone());
                let counted = t >= warmup;
                requests.push(tokio::task::spawn_local(async move {
                    let started = Instant::now();
                    let leaves: Vec<_> = seeds
                        .into_iter()
                        .map(|seeds| {
                            let (world, fe) = (world.clone(), fe.clone());
                            tokio::task::spawn_local(leaf(world, fe, seeds, counted))
                        })
                        .collect();
                    for l in leaves {
                        l.await.expect("a leaf task");
                    }
                    if counted {
                        let start = started.duration_since(t0).as_secs_f64();
                        world
                            .state
                            .borrow_mut()
                            .fan_out
                            .push((start, sim::since(started)));
                    }
                }));
                t += own.exponential(rate);
            }
            for r in requests {
                r.await.expect("a user request task");
            }
        }));
    }
    for a in arrivals {
        a.await.expect("a frontend task");
    }
    sampler.await.expect("the sampler");

    let mut s = world.state.replace(State {
        free: Vec::new(),
        work: 0.0,
        queued: 0.0,
        sent: 0,
        hedges: 0,
        hedges_recorded: 0,
        hedges_won: 0,
        cancelled: 0,
        bucket_low: 0,
        tokens_lost: 0,
        unhedged_past_delay: 0,
        faults: Faults::default(),
        fan_out: Vec::new(),
        leaf: Vec::new(),
        seconds: Vec::new(),
    });
    let mut fan_out: Vec<f64> = s.fan_out.iter().map(|&(_, l)| l).collect();
    fan_out.sort_by(f64::total_cmp);
    s.leaf.sort_by(f64::total_cmp);
    let leaves = s.leaf.len() as u64;
    // A leaf may go unhedged past the delay only when its bucket could not pay for a hedge.
    if variant.bucket == Strategy::NoBucket || s.bucket_low >= HEDGE_COST {
        s.faults.missed_hedges = s.unhedged_past_delay;
    }
    s.faults.record_mismatch = if variant.hedge == Hedge::Never {
        0
    } else {
        s.hedges_recorded.abs_diff(s.hedges)
    };
    Summary {
        variant,
        user_requests: fan_out.len() as u64,
        leaves,
        hedges: s.hedges,
        hedges_recorded: s.hedges_recorded,
        hedges_won: s.hedges_won,
        cancelled: s.cancelled,
        fan_out: Quantiles::of(&fan_out),
        leaf: Quantiles::of(&s.leaf),
        work: s.work,
        mean_queue: s.queued / s.sent.max(1) as f64,
        bucket_low: s.bucket_low,
        tokens_lost: s.tokens_lost,
        faults: s.faults,
        fan_out_sorted: fan_out,
        fan_out_timed: s.fan_out,
        leaf_sorted: s.leaf,
        seconds: s.seconds,
    }
}

/// The delay after which a frontend under `variant` hedges now, seconds (0 without hedging):
/// a percentile's estimate, clamped as the engine clamps it, raised by the budget's delay as
/// the engine raises it.
fn delay_in_effect(variant: Variant, latency: Option<&'static Latency>) -> f64 {
    let base = match variant.hedge {
        Hedge::Never => return 0.0,
        Hedge::Fixed(d) => Some(d),
        Hedge::Percentile(p) => latency
            .and_then(|l| l.quantile(p))
            .map(|d| d.clamp(MIN_HEDGE_AFTER, MAX_HEDGE_AFTER)),
    };
    let budget = latency
        .filter(|_| variant.budget.is_some())
        .and_then(Latency::budget_delay);
    match (base, budget) {
        (Some(base), Some(b)) => b.min(MAX_HEDGE_AFTER).max(base),
        (Some(base), None) => base,
        (None, _) => MAX_HEDGE_AFTER,
    }
    .as_secs_f64()
}

/// Runs every policy of `config`.
pub fn run(config: &Config) -> Vec<Summary> {
    config
        .variants
        .iter()
        .map(|&v| run_one(config, v))
        .collect()
}
