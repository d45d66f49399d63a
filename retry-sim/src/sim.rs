//! What every scenario shares: a paused-clock runtime, the simulated error type, the retry
//! engine driven through `retry_runtime::__private` with fresh state per client, seeded
//! randomness, and per-second counters.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
pub use retry_runtime::__private::Keys;
use retry_runtime::__private::{Call, Fns, Latency, Mode, Site, Timed, Untimed};
use retry_runtime::testing::{self, Overrides, Record};
use retry_runtime::{
    Behavior, CircuitBreaker, CircuitOpen, Classify, ErrorClass, Guard, RateLimiter, Refused,
    RetryBudget, TimedOut, TokenBucket,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// Runs `fut` on a single-threaded tokio runtime whose clock is paused: time moves only when
/// every task waits, straight to the next timer, so a simulated hour takes as long as the work
/// in it, and the same seed gives the same run.
pub fn run<F: Future>(fut: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, fut)
}

/// What a simulated server answers, as the client sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// A 5xx: the request failed on the server.
    Unavailable,
    /// A 429 / throttling error.
    Throttled,
    /// An optimistic-concurrency conflict: someone else wrote first.
    Conflict,
    /// The attempt timeout or the deadline.
    TimedOut(TimedOut),
    /// The client's circuit breaker refused the call: no attempt was sent.
    CircuitOpen(CircuitOpen),
    /// One of the client's guards refused the call's first attempt: no attempt was sent.
    Refused(Refused),
    /// A 5xx that says not to retry it (`x-should-retry: false`): the server's own calls gave
    /// up retrying, so a retry of this request would only add load to what already failed.
    DoNotRetry,
}

impl Classify for SimError {
    fn classify(&self) -> ErrorClass {
        match self {
            SimError::Unavailable | SimError::Conflict => ErrorClass::Transient,
            SimError::Throttled => ErrorClass::Throttling,
            SimError::TimedOut(_) => ErrorClass::Timeout,
            SimError::CircuitOpen(open) => open.classify(),
            SimError::Refused(refused) => refused.classify(),
            SimError::DoNotRetry => ErrorClass::Permanent,
        }
    }
}

/// The client's breaker's refusal, or one of its guards'.
impl From<Refused> for SimError {
    fn from(r: Refused) -> Self {
        if r.by() == "CircuitBreaker" {
            SimError::CircuitOpen(r)
        } else {
            SimError::Refused(r)
        }
    }
}

impl From<TimedOut> for SimError {
    fn from(t: TimedOut) -> Self {
        SimError::TimedOut(t)
    }
}

/// The retry policy a simulated client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Standard mode's backoff and attempts, with a bucket that never empties.
    NoBucket,
    /// AWS standard mode: the retry token bucket (500, costs 5 / 10 / 5).
    Standard,
    /// AWS adaptive mode: the standard bucket plus the CUBIC client rate limiter.
    Adaptive,
    /// A retry budget instead of the bucket: retries at most 20 % of the client's first
    /// attempts of the last 10 s, no floor (`budget = B, bucket = "none"`).
    Budget,
    /// gRPC retry throttling instead of the bucket (gRFC A6, `maxTokens` 10,
    /// `tokenRatio` 0.1).
    GrpcThrottling,
    /// The standard bucket and a circuit breaker per client with the runtime's defaults
    /// (`CircuitBreaker::new()`: opens at 50 % of the attempts of the last 10 s failing, once
    /// there were 20; breaks for 5 s; one probe).
    Breaker,
    /// That breaker and the 20 % budget in place of the bucket (as [`Strategy::Budget`]).
    BreakerBudget,
    /// [`Strategy::Breaker`] with a 1 s break instead of 5 s (the outage's trade-off: sooner
    /// back, more probes into a dead server).
    BreakerShortBreak,
    /// AWS standard mode under the SDKs' 2026 rules (`behavior = "2026"`): the same bucket of
    /// 500, a retry costing 14 (a timeout too) or 5 after throttling, the backoff from 50 ms
    /// (1 s after throttling).
    Standard2026,
    /// AWS adaptive mode under the 2026 rules: [`Strategy::Standard2026`] and the rate
    /// limiter, a retry taking one send token.
    Adaptive2026,
}

impl Strategy {
    /// The three of the AWS SDKs, in report order.
    pub const ALL: [Strategy; 3] = [Strategy::NoBucket, Strategy::Standard, Strategy::Adaptive];

    /// Those, the budgets and the breakers, in report order: the policies of the outage,
    /// throttling, metastable and normal-operation scenarios.
    pub const COMPARED: [Strategy; 7] = [
        Strategy::NoBucket,
        Strategy::Standard,
        Strategy::Adaptive,
        Strategy::Budget,
        Strategy::GrpcThrottling,
        Strategy::Breaker,
        Strategy::BreakerBudget,
    ];

    /// The AWS SDKs' standard and adaptive modes before and after their 2026 update, in
    /// report order: the policies of the `aws2026` comparison.
    pub const AWS_2026: [Strategy; 4] = [
        Strategy::Standard,
        Strategy::Standard2026,
        Strategy::Adaptive,
        Strategy::Adaptive2026,
    ];

    /// The name in CSV files and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::NoBucket => "no-bucket",
            Strategy::Standard => "standard",
            Strategy::Adaptive => "adaptive",
            Strategy::Budget => "budget-20%",
            Strategy::GrpcThrottling => "grpc-throttling",
            Strategy::Breaker => "breaker",
            Strategy::BreakerBudget => "breaker+budget-20%",
            Strategy::BreakerShortBreak => "breaker-1s-break",
            Strategy::Standard2026 => "standard-2026",
            Strategy::Adaptive2026 => "adaptive-2026",
        }
    }

    /// The mode of the policy: adaptive (with the rate limiter) or standard.
    pub const fn mode(self) -> Mode {
        match self {
            Strategy::Adaptive | Strategy::Adaptive2026 => Mode::Adaptive,
            _ => Mode::Standard,
        }
    }

    /// Which generation of the AWS SDKs' rules the policy follows: the 2026 update's for
    /// [`Strategy::Standard2026`] and [`Strategy::Adaptive2026`], the classic ones for every
    /// other.
    pub const fn behavior(self) -> Behavior {
        match self {
            Strategy::Standard2026 | Strategy::Adaptive2026 => Behavior::Aws2026,
            _ => Behavior::Classic,
        }
    }

    /// Whether the policy puts a circuit breaker in front of the server.
    pub const fn has_breaker(self) -> bool {
        matches!(
            self,
            Strategy::Breaker | Strategy::BreakerBudget | Strategy::BreakerShortBreak
        )
    }

    /// The circuit breaker of one client under this policy, if it has one.
    fn breaker(self) -> Option<CircuitBreaker> {
        match self {
            Strategy::Breaker | Strategy::BreakerBudget => Some(default_breaker()),
            Strategy::BreakerShortBreak => {
                Some(default_breaker().with_break(Duration::from_secs(1)))
            }
            _ => None,
        }
    }
}

/// Makes the guard one simulated client asks about its attempts: called once per client, so
/// that each client starts with fresh guard state, as it starts with a fresh bucket. The
/// client owns it, and releases it when it is dropped.
pub type GuardFactory = fn() -> Arc<dyn Guard>;

/// What a simulated client runs: a [`Strategy`] (bucket, rate limiter, budget, breaker) and
/// the guards it adds, asked in order after the strategy's own protections, as
/// `guard = [G1, G2]` on a `#[retry]` function asks them. Any [`Guard`] fits, a user's own
/// included: a factory is all it takes.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// The name in CSV files and tables.
    pub name: &'static str,
    /// The protections the engine keeps itself.
    pub strategy: Strategy,
    /// The guards, one factory each, in the order they are asked.
    pub guards: &'static [GuardFactory],
}

impl Policy {
    /// `strategy` alone, under its own name.
    pub const fn of(strategy: Strategy) -> Policy {
        Policy {
            name: strategy.name(),
            strategy,
            guards: &[],
        }
    }

    /// `strategy` with `guards`, called `name`.
    pub const fn guarded(
        name: &'static str,
        strategy: Strategy,
        guards: &'static [GuardFactory],
    ) -> Policy {
        Policy {
            name,
            strategy,
            guards,
        }
    }

    /// Whether the policy adds guards to its strategy.
    pub const fn has_guards(&self) -> bool {
        !self.guards.is_empty()
    }
}

impl From<Strategy> for Policy {
    fn from(strategy: Strategy) -> Policy {
        Policy::of(strategy)
    }
}

/// A bucket that never runs out: retries cost nothing.
static UNLIMITED: TokenBucket = TokenBucket::unlimited();

/// One simulated client process: its own retry state (bucket, limiter), as one SDK client
/// has, created fresh for each run.
pub struct Client {
    site: Site,
    /// Whether calls turn a refusal of a first attempt by the site's breaker or one of its
    /// guards into the error type (`SimError::CircuitOpen`, `SimError::Refused`).
    refuses: bool,
    /// Whether the calls' attempts run under a timer, as a `#[retry]` function's do when its
    /// attribute writes `attempt_timeout` or `deadline` (a timeout from outside applies only
    /// then).
    timed: bool,
}

impl Client {
    /// A client running `policy` (mode, behavior and max_attempts are set here, so the
    /// environment of the machine running the simulation cannot change them) under
    /// `strategy` (a [`Strategy`], or a [`Policy`] that adds guards to one; each client calls
    /// the policy's guard factories once, for guards of its own).
    pub fn new(name: &'static str, policy: Keys, strategy: impl Into<Policy>) -> Client {
        Client::build(name, policy, strategy.into(), None)
    }

    /// A client as [`Client::new`] builds it whose calls made with [`Client::call_hedged`]
    /// hedge as `policy`'s hedging keys say (`hedge_after = ...` on a `#[retry]` function),
    /// a percentile with `latency`.
    pub fn hedged(
        name: &'static str,
        policy: Keys,
        strategy: impl Into<Policy>,
        latency: Option<&'static Latency>,
    ) -> Client {
        Client::build(name, policy, strategy.into(), latency)
    }

    fn build(
        name: &'static str,
        policy: Keys,
        guarded: Policy,
        latency: Option<&'static Latency>,
    ) -> Client {
        let strategy = guarded.strategy;
        let site = Site::new(
            name,
            policy.mode(strategy.mode()).behavior(strategy.behavior()),
        );
        // Each client its own budget and breaker, as each process has its own.
        let budget = |b: RetryBudget| Arc::new(b);
        let breaker = strategy.breaker().map(Arc::new);
        let ratio_budget = || {
            budget(
                RetryBudget::ratio(0.2)
                    .with_floor_per_sec(0)
                    .with_window(Duration::from_secs(10)),
            )
        };
        let site = match strategy {
            Strategy::NoBucket => site.bucket(&UNLIMITED),
            // The 2026 costs apply in the bucket the site makes itself.
            Strategy::Standard
            | Strategy::Adaptive
            | Strategy::Standard2026
            | Strategy::Adaptive2026 => site,
            Strategy::Budget => site.bucket(&UNLIMITED).budget_shared(ratio_budget()),
            Strategy::GrpcThrottling => site
                .bucket(&UNLIMITED)
                .budget_shared(budget(RetryBudget::grpc_throttling(10, 0.1))),
            Strategy::Breaker | Strategy::BreakerShortBreak => site,
            Strategy::BreakerBudget => site.bucket(&UNLIMITED).budget_shared(ratio_budget()),
        };
        let site = match breaker {
            Some(b) => site.breaker_shared(b),
            None => site,
        };
        let site = match latency {
            Some(l) => site.latency(l),
            None => site,
        };
        let site = guarded
            .guards
            .iter()
            .fold(site, |site, make| site.guard_shared(make()));
        // One site per client, which owns what its protections keep (a `#[retry]` function's
        // is a `static`).
        Client {
            site,
            refuses: strategy.has_breaker() || guarded.has_guards(),
            timed: true,
        }
    }

    /// A client of `site`, a site built by the caller (a policy read from a user's files:
    /// `whatif`), owned by the client. `refuses`: the site has a circuit breaker or guards,
    /// whose refusal of a first attempt ends a call with `Refused`; `timed`: its
    /// calls run their attempts under a timer (the site's keys write `attempt_timeout` or
    /// `deadline`), else they run as a `#[retry]` function without timeouts does, untouched by a
    /// timeout from the environment.
    pub fn of_site(site: Site, refuses: bool, timed: bool) -> Client {
        Client {
            site,
            refuses,
            timed,
        }
    }

    /// The client's retry token bucket.
    pub fn bucket(&self) -> &TokenBucket {
        self.site.token_bucket()
    }

    /// The client's rate limiter (used in adaptive mode).
    pub fn limiter(&self) -> &RateLimiter {
        self.site.limiter()
    }

    /// One call, retried by the runtime's engine exactly as a `#[retry]` function's body would
    /// be: `attempt` makes one attempt. Jitter draws from a generator seeded with `seed`.
    pub async fn call<Fut, A>(&self, seed: u64, attempt: A) -> Result<(), SimError>
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        testing::scope(Overrides::new().seed(seed), self.drive(attempt)).await
    }

    /// One call of a hedged client, run by the engine's hedged loop (what a `#[retry]`
    /// function with `hedge_after` expands to): attempts of the call run side by side, the
    /// first `Ok` wins and the others are dropped. Returns, with the call's result, what the
    /// engine recorded of it (its hedges). Jitter draws from a generator seeded with `seed`.
    pub async fn call_hedged<Fut, A>(&self, seed: u64, attempt: A) -> (Result<(), SimError>, Record)
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        testing::record(Overrides::new().seed(seed), self.drive_with(attempt, true)).await
    }

    /// One call as [`call`](Self::call) or [`call_hedged`](Self::call_hedged) (`hedged`)
    /// makes it, and what the engine recorded of it: its retries, hedges and early ends (the
    /// protection that refused a retry, the deadline).
    pub async fn call_recorded<Fut, A>(
        &self,
        seed: u64,
        hedged: bool,
        attempt: A,
    ) -> (Result<(), SimError>, Record)
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        testing::record(
            Overrides::new().seed(seed),
            self.drive_with(attempt, hedged),
        )
        .await
    }

    async fn drive<Fut, A>(&self, attempt: A) -> Result<(), SimError>
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        self.drive_with(attempt, false).await
    }

    async fn drive_with<Fut, A>(&self, attempt: A, hedged: bool) -> Result<(), SimError>
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        // The same steps the expansion of `#[retry]` takes (`breaker = ...` and `guard = ...`
        // add the conversion of a refused call into the error type, `hedge_after = ...` the
        // hedged loop; `attempt_timeout` or `deadline` the timer).
        let refused: fn(Refused) -> Result<(), SimError> = |r| Err(SimError::from(r));
        macro_rules! drive {
            ($timer:expr) => {{
                let call: Call<Result<(), SimError>, _, _, _> = Call::new(
                    &self.site,
                    true,
                    $timer,
                    Fns(|e: &SimError| e.classify(), |_: &SimError| None),
                    |_: &()| false,
                    |_: &retry_runtime::RetryEvent<'_, SimError>| {},
                );
                match (self.refuses, hedged) {
                    (true, false) => call.on_stop(refused).run(attempt).await,
                    (true, true) => call.on_stop(refused).run_hedged(attempt).await,
                    (false, false) => call.run(attempt).await,
                    (false, true) => call.run_hedged(attempt).await,
                }
            }};
        }
        if self.timed {
            let timed_out: fn(TimedOut) -> SimError = SimError::from;
            drive!(Timed(timed_out))
        } else {
            drive!(Untimed)
        }
    }
}

/// The breaker of the breaker policies: the runtime's defaults, spelled out.
const fn default_breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_failure_ratio(0.5)
        .with_min_calls(20)
        .with_window(Duration::from_secs(10))
        .with_break(Duration::from_secs(5))
        .with_probes(1)
}

/// Standard mode's AWS defaults: 3 attempts, backoff 1 s doubling to 20 s, full jitter.
pub fn aws_standard() -> Keys {
    Keys::new().max_attempts(3)
}

/// Seeded randomness for the simulated world (latencies, arrivals).
pub struct Rng(StdRng);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(StdRng::seed_from_u64(seed))
    }

    /// A draw from `U[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }

    /// A fresh 64-bit seed.
    pub fn seed(&mut self) -> u64 {
        self.0.random::<u64>()
    }

    /// `|Normal(mean, sd)|` (Box-Muller).
    pub fn abs_normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mean + sd * z).abs()
    }

    /// A draw from the log-normal distribution of median `median` whose logarithm has
    /// standard deviation `sigma` (Box-Muller).
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (sigma * z).exp()
    }

    /// A uniform draw from `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n - 1)
    }

    /// An exponential inter-arrival time for `rate` events per second.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -(1.0 - self.uniform()).ln() / rate
    }
}

/// A shared generator (behind a mutex, so a simulated HTTP connector, which must be `Send`,
/// can hold it; the runtime has one thread, so it is never contended).
pub type SharedRng = Arc<Mutex<Rng>>;

/// Seconds as a `Duration` (negative as zero).
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

/// Seconds since `t0` on the simulated clock.
pub fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// Counters of one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bin {
    /// Calls started (first attempts wanted by the application).
    pub offered: u64,
    /// Attempts that reached the server.
    pub attempts: u64,
    /// Attempts the server served successfully.
    pub served: u64,
    /// Successful answers that reached their client in time (the rest of `served` arrived after
    /// the client had given up on the attempt: wasted work).
    pub delivered: u64,
    /// Attempts answered with throttling.
    pub throttled: u64,
    /// Calls that returned `Ok` (goodput).
    pub succeeded: u64,
    /// Calls that returned an error.
    pub failed: u64,
    /// Seconds queued at the server, summed over the attempts that arrived (queue scenario).
    pub queue_s: f64,
    /// Attempts the server dropped from its queue unserved, their deadline passed (a queue
    /// behind `tower::ServerLayer`: the call graph's answering rules).
    pub shed: u64,
    /// Attempts sent by the calls offered in this bin, whenever they were sent (booked when
    /// the call ends, in the bin it was offered in; our engine's calls only).
    pub call_attempts: u64,
    /// Of the calls offered in this bin, those that returned `Ok` (booked when the call ends,
    /// in the bin it was offered in).
    pub offered_succeeded: u64,
}

/// Counters per time bin.
#[derive(Debug, Clone)]
pub struct Series {
    /// Seconds per bin.
    pub width: f64,
    /// The bins, from time 0.
    pub bins: Vec<Bin>,
}

impl Series {
    /// `n` empty bins of `width` seconds.
    pub fn new(width: f64, n: usize) -> Series {
        Series {
            width,
            bins: vec![Bin::default(); n],
        }
    }

    /// The bin of time `t` (seconds), if inside the series.
    pub fn at(&mut self, t: f64) -> Option<&mut Bin> {
        let i = (t / self.width).floor();
        if i < 0.0 {
            return None;
        }
        self.bins.get_mut(i as usize)
    }

    /// The sum of the bins covering `[from, to)` seconds.
    pub fn total(&self, from: f64, to: f64) -> Bin {
        let mut sum = Bin::default();
        for (i, b) in self.bins.iter().enumerate() {
            let t = i as f64 * self.width;
            if t >= from && t < to {
                sum.offered += b.offered;
                sum.attempts += b.attempts;
                sum.served += b.served;
                sum.delivered += b.delivered;
                sum.throttled += b.throttled;
                sum.succeeded += b.succeeded;
                sum.failed += b.failed;
                sum.queue_s += b.queue_s;
                sum.shed += b.shed;
                sum.call_attempts += b.call_attempts;
                sum.offered_succeeded += b.offered_succeeded;
            }
        }
        sum
    }
}

/// A shared series (see [`SharedRng`]).
pub type SharedSeries = Arc<Mutex<Series>>;

/// Locks a simulation mutex (never poisoned: a panic ends the run).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A request's answer in a simulation of tiers, boxed (requests of any tier are one type).
pub type Answer = Pin<Box<dyn Future<Output = Result<(), SimError>>>>;

/// Calls made side by side: `Ok` once all succeeded, the first error as soon as one fails
/// (the others are dropped with it, as `try_join_all` drops them). `F`: the calls' future, an
/// [`Answer`]'s or one borrowing the caller's state.
pub struct AllOk<F: ?Sized>(pub Vec<Option<Pin<Box<F>>>>);

impl<F: Future<Output = Result<(), SimError>> + ?Sized> Future for AllOk<F> {
    type Output = Result<(), SimError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let calls = &mut self.get_mut().0;
        let mut pending = false;
        let mut failed = None;
        for slot in calls.iter_mut() {
            let Some(call) = slot else { continue };
            match call.as_mut().poll(cx) {
                Poll::Ready(Ok(())) => *slot = None,
                Poll::Ready(Err(e)) => {
                    failed = Some(e);
                    break;
                }
                Poll::Pending => pending = true,
            }
        }
        if let Some(e) = failed {
            calls.clear();
            return Poll::Ready(Err(e));
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }
}
