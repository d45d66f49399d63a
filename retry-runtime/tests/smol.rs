//! The engine on smol, without tokio: every call below runs under `smol::block_on`, its waits
//! on async-io's timers and `std`'s clock. Exact where a `testing` scope makes the schedule
//! exact (instant, seeded); within generous bounds where the real clock runs.
//!
//! ```text
//! cargo test -p retry-runtime --no-default-features --features smol --test smol
//! ```
//!
//! (The workspace's `tests/workspace/runtimes.rs` runs it, with the test build's target directory.)

use async_io::Timer;
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{
    BreakerState, CircuitBreaker, CircuitOpen, Classify, ErrorClass, Jitter, Policy, TimedOut,
    TimeoutKind, TokenBucket, attempt, retry,
};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Real-clock bounds are this loose: the machine may be busy with other builds.
const SLACK: Duration = Duration::from_secs(2);

#[derive(Debug)]
enum Error {
    Busy,
    Throttled,
    TimedOut(TimedOut),
    Open(CircuitOpen),
    Refused(retry_runtime::Refused),
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Error::Busy => ErrorClass::Transient,
            Error::Throttled => ErrorClass::Throttling,
            Error::TimedOut(_) => ErrorClass::Timeout,
            Error::Open(open) => open.classify(),
            Error::Refused(refused) => refused.classify(),
        }
    }
}

impl From<TimedOut> for Error {
    fn from(t: TimedOut) -> Self {
        Error::TimedOut(t)
    }
}

/// The breaker's refusal (`CircuitOpen` is `Refused`, by `"CircuitBreaker"`) or a guard's.
impl From<CircuitOpen> for Error {
    fn from(refused: CircuitOpen) -> Self {
        if refused.by() == "CircuitBreaker" {
            Error::Open(refused)
        } else {
            Error::Refused(refused)
        }
    }
}

/// Fails with `Busy` until the `ok_at`-th call of `runs`, which returns its number.
fn play(runs: &AtomicU32, ok_at: u32) -> Result<u32, Error> {
    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
    if n >= ok_at { Ok(n) } else { Err(Error::Busy) }
}

async fn hang() {
    Timer::after(Duration::from_secs(3600)).await;
}

#[retry(max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
async fn always_busy() -> Result<(), Error> {
    Err(Error::Busy)
}

#[retry(max_attempts = 4, initial_backoff = "100ms", max_backoff = "1s")]
async fn jittered() -> Result<(), Error> {
    Err(Error::Busy)
}

#[test]
fn the_backoff_schedule_is_exact_in_an_instant_seeded_scope() {
    smol::block_on(async {
        let start = Instant::now();
        let overrides = Overrides::new().instant().seed(7);
        let (out, record) = testing::record(overrides, always_busy()).await;
        assert!(matches!(out, Err(Error::Busy)), "{out:?}");
        assert_eq!(record.attempts("always_busy"), 4);
        assert_eq!(record.delays(), [100, 200, 400].map(MS));
        // Full jitter, seeded: the same draws on every run, each within its cap.
        let (_, a) = testing::record(overrides, jittered()).await;
        let (_, b) = testing::record(overrides, jittered()).await;
        assert_eq!(a.delays(), b.delays());
        assert_eq!(a.delays().len(), 3);
        for (delay, cap) in a.delays().iter().zip([100, 200, 400].map(MS)) {
            assert!(*delay <= cap, "{delay:?} above {cap:?}");
        }
        // Nothing was slept.
        assert!(start.elapsed() < SLACK);
        // A capped scope.
        let (_, capped) =
            testing::record(Overrides::new().instant().max_attempts(2), always_busy()).await;
        assert_eq!(capped.attempts("always_busy"), 2);
    });
}

#[retry(max_attempts = 3, initial_backoff = "40ms", jitter = "none")]
async fn twice_busy(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3)
}

#[test]
fn retries_sleep_on_async_io_timers() {
    smol::block_on(async {
        let runs = AtomicU32::new(0);
        let start = Instant::now();
        assert_eq!(twice_busy(&runs).await.unwrap(), 3);
        let took = start.elapsed();
        // 40 ms then 80 ms of backoff, really slept.
        assert!(took >= MS(120), "{took:?}");
        assert!(took < MS(120) + SLACK, "{took:?}");
    });
}

#[retry(
    max_attempts = 2,
    attempt_timeout = "50ms",
    initial_backoff = "10ms",
    jitter = "none"
)]
async fn hangs(runs: &AtomicU32) -> Result<u32, Error> {
    runs.fetch_add(1, Ordering::SeqCst);
    hang().await;
    Ok(0)
}

#[test]
fn an_attempt_timeout_cuts_a_hanging_attempt_off() {
    smol::block_on(async {
        let runs = AtomicU32::new(0);
        let start = Instant::now();
        let out = hangs(&runs).await;
        let took = start.elapsed();
        let Err(Error::TimedOut(t)) = out else {
            panic!("{out:?}")
        };
        assert_eq!(
            (t.kind(), t.attempt(), t.limit()),
            (TimeoutKind::Attempt, 2, MS(50))
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert!(took >= MS(110), "{took:?}");
        assert!(took < MS(110) + SLACK, "{took:?}");
    });
}

#[retry(
    max_attempts = 10,
    deadline = "150ms",
    initial_backoff = "40ms",
    jitter = "none"
)]
async fn busy_until_the_deadline(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, u32::MAX)
}

#[retry(max_attempts = 3, deadline = "100ms")]
async fn hangs_past_the_deadline() -> Result<u32, Error> {
    hang().await;
    Ok(0)
}

#[test]
fn a_deadline_ends_the_call() {
    smol::block_on(async {
        // Sleeps of 40 and 80 ms; the next (160 ms) would reach the deadline: the call ends.
        let runs = AtomicU32::new(0);
        let start = Instant::now();
        let (out, record) = testing::record(Overrides::new(), busy_until_the_deadline(&runs)).await;
        let took = start.elapsed();
        assert!(matches!(out, Err(Error::Busy)), "{out:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(record.delays(), [40, 80].map(MS));
        let [end] = record.early_ends() else {
            panic!("{:?}", record.early_ends())
        };
        assert_eq!((end.attempt, end.reason), (3, EarlyEnd::Deadline));
        assert!(took >= MS(120) && took < MS(150) + SLACK, "{took:?}");

        // An attempt in flight at the deadline is cut off there.
        let start = Instant::now();
        let out = hangs_past_the_deadline().await;
        let took = start.elapsed();
        let Err(Error::TimedOut(t)) = out else {
            panic!("{out:?}")
        };
        assert_eq!((t.kind(), t.attempt()), (TimeoutKind::Deadline, 1));
        assert!(took >= MS(100) && took < MS(100) + SLACK, "{took:?}");
    });
}

static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(100);

#[retry(bucket = BUCKET, max_attempts = 3, initial_backoff = "1ms", jitter = "none")]
async fn metered(runs: &AtomicU32, ok_at: u32) -> Result<u32, Error> {
    play(runs, ok_at)
}

#[test]
fn the_bucket_keeps_exact_levels() {
    smol::block_on(async {
        let instant = Overrides::new().instant();
        // Two retries of a transient error: 2 x 5.
        let runs = AtomicU32::new(0);
        let out = testing::scope(instant, metered(&runs, u32::MAX)).await;
        assert!(out.is_err());
        assert_eq!(BUCKET.available(), 90);
        // A retry that succeeds gets its cost back.
        let runs = AtomicU32::new(0);
        let out = testing::scope(instant, metered(&runs, 2)).await;
        assert_eq!(out.unwrap(), 2);
        assert_eq!(BUCKET.available(), 90);
        // A first-attempt success adds one.
        let runs = AtomicU32::new(0);
        assert_eq!(metered(&runs, 1).await.unwrap(), 1);
        assert_eq!(BUCKET.available(), 91);
    });
}

#[retry(max_attempts = 3, hedge_after = "30ms")]
async fn hedged(runs: &AtomicU32) -> Result<u32, Error> {
    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
    if n == 1 {
        hang().await;
    }
    Ok(n)
}

#[test]
fn a_slow_attempt_is_hedged() {
    smol::block_on(async {
        let runs = AtomicU32::new(0);
        let start = Instant::now();
        let (out, record) = testing::record(Overrides::new(), hedged(&runs)).await;
        let took = start.elapsed();
        // The first attempt hangs; the hedge started after 30 ms wins.
        assert_eq!(out.unwrap(), 2);
        let [hedge] = record.hedges() else {
            panic!("{:?}", record.hedges())
        };
        assert_eq!((hedge.attempt, hedge.in_flight, hedge.class), (2, 2, None));
        assert!(took >= MS(30) && took < MS(30) + SLACK, "{took:?}");
    });
}

static BREAKER: CircuitBreaker = CircuitBreaker::new().with_min_calls(2);

#[retry(max_attempts = 1, breaker = BREAKER)]
async fn guarded(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, u32::MAX)
}

#[test]
fn a_breaker_opens_and_refuses_calls_without_running_them() {
    smol::block_on(async {
        let runs = AtomicU32::new(0);
        assert!(matches!(guarded(&runs).await, Err(Error::Busy)));
        assert!(matches!(guarded(&runs).await, Err(Error::Busy)));
        assert_eq!(BREAKER.state(), BreakerState::Open);
        let out = guarded(&runs).await;
        assert!(
            matches!(&out, Err(Error::Open(open)) if open.by() == "CircuitBreaker"),
            "{out:?}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    });
}

#[retry(
    max_attempts = 3,
    mode = "adaptive",
    budget = "50%",
    initial_backoff = "1ms"
)]
async fn adaptive(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3).map_err(|_| Error::Throttled)
}

#[test]
fn the_adaptive_limiter_and_a_budget_take_part() {
    smol::block_on(async {
        // Throttled twice: the limiter turns on and sends the retries (instantly, in the
        // scope); the budget's floor lets both through.
        let runs = AtomicU32::new(0);
        let (out, record) = testing::record(Overrides::new().instant(), adaptive(&runs)).await;
        assert_eq!(out.unwrap(), 3);
        assert_eq!(record.attempts("adaptive"), 3);
        assert!(record.early_ends().is_empty());
    });
}

#[test]
fn a_policy_retries_a_closure() {
    smol::block_on(async {
        let policy = Policy::new()
            .max_attempts(4)
            .initial_backoff(MS(10))
            .jitter(Jitter::None);
        let runs = AtomicU32::new(0);
        let start = Instant::now();
        let (out, record) =
            testing::record(Overrides::new(), policy.retry(|| async { play(&runs, 3) })).await;
        assert_eq!(out.unwrap(), 3);
        assert_eq!(record.delays(), [10, 20].map(MS));
        assert!(start.elapsed() >= MS(30));

        // With a timeout: a hanging attempt is cut off.
        let timed = Policy::new()
            .max_attempts(2)
            .attempt_timeout(MS(40))
            .initial_backoff(MS(1));
        let out: Result<u32, Error> = timed
            .retry(|| async {
                hang().await;
                Ok(0)
            })
            .await;
        assert!(matches!(out, Err(Error::TimedOut(_))), "{out:?}");
    });
}

#[retry(
    max_attempts = 2,
    attempt_timeout = "1s",
    initial_backoff = "1ms",
    jitter = "none"
)]
async fn looks_at_its_attempt(seen: &Mutex<Vec<retry_runtime::Attempt>>) -> Result<u32, Error> {
    let a = attempt().expect("inside a #[retry] body");
    seen.lock().unwrap().push(a);
    if a.is_retry() {
        Ok(a.number())
    } else {
        Err(Error::Busy)
    }
}

#[test]
fn the_body_reads_its_attempt_on_stds_clock() {
    smol::block_on(async {
        let seen = Mutex::new(Vec::new());
        let start = Instant::now();
        assert_eq!(looks_at_its_attempt(&seen).await.unwrap(), 2);
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.iter().map(|a| a.number()).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(seen[0].invocation_id(), seen[1].invocation_id());
        for a in &seen {
            let cutoff = a.cutoff().expect("an attempt timeout");
            assert!(cutoff >= start + MS(1000) && cutoff < start + MS(1000) + SLACK);
            assert_eq!(a.deadline(), None);
        }
        assert!(attempt().is_none(), "outside the body");
    });
}

#[retry(max_attempts = 3, initial_backoff = "10ms", jitter = "none")]
fn blocking(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3)
}

#[test]
fn a_blocking_function_runs_in_a_sync_scope() {
    let runs = AtomicU32::new(0);
    let (out, record) = testing::record_sync(Overrides::new().instant(), || blocking(&runs));
    assert_eq!(out.unwrap(), 3);
    assert_eq!(record.delays(), [10, 20].map(MS));
}

#[test]
fn a_scope_follows_its_future_and_not_other_tasks() {
    // Two tasks on one executor: only the scoped one's retries are instant and recorded.
    let ex = smol::LocalExecutor::new();
    smol::block_on(ex.run(async {
        let other = ex.spawn(async {
            let start = Instant::now();
            let _ = always_busy().await;
            start.elapsed()
        });
        let (_, record) = testing::record(Overrides::new().instant(), always_busy()).await;
        assert_eq!(record.delays(), [100, 200, 400].map(MS));
        // The unscoped call slept its 700 ms.
        assert!(other.await >= MS(700));
    }));
}

/// One attempt at a time, of whichever function names it.
static ONE: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(1);

#[retry(max_attempts = 1, guard = ONE)]
async fn inner() -> Result<u32, Error> {
    Ok(1)
}

/// Its attempt holds the bulkhead's one place while it calls `inner`, which is refused.
#[retry(max_attempts = 2, initial_backoff = "10ms", guard = ONE)]
async fn outer() -> Result<u32, Error> {
    match inner().await {
        Err(Error::Refused(refused)) => Ok(u32::from(refused.by() == "bulkhead")),
        other => other.map(|_| 0),
    }
}

#[test]
fn a_bulkhead_refuses_an_attempt_beyond_its_place_and_frees_it_after() {
    smol::block_on(async {
        assert_eq!(
            outer().await.unwrap(),
            1,
            "inner was refused by the bulkhead"
        );
        assert_eq!(ONE.in_flight(), 0, "the place was given back");
        assert_eq!(inner().await.unwrap(), 1);
    });
}
