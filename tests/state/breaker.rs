//! Circuit breakers (`breaker = STATIC` or `breaker = "50%"`), on tokio's paused clock: every
//! transition (closed to open at the failure ratio once `min_calls` attempts are counted, open
//! to half-open after the break, half-open to closed after its probes, half-open to open when
//! a probe fails), calls refused without running their body and with the function's own error,
//! retries refused with the call's last error, and which failures count.

use crate::util::TestError;
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{BreakerState, CircuitBreaker, ErrorClass, Partition, retry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::advance;

const MS: fn(u64) -> Duration = Duration::from_millis;
const S: fn(u64) -> Duration = Duration::from_secs;

/// Opens when half of at least 4 attempts failed; breaks for 5 s; one probe.
const fn breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_failure_ratio(0.5)
        .with_min_calls(4)
        .with_window(Duration::from_secs(10))
        .with_break(Duration::from_secs(5))
        .with_probes(1)
}

/// Plays `class` (or succeeds for `None`) and counts the bodies that ran in `runs`.
fn play(runs: &AtomicU32, class: Option<ErrorClass>) -> Result<u32, TestError> {
    runs.fetch_add(1, Ordering::Relaxed);
    match class {
        Some(class) => Err(TestError::fault(class)),
        None => Ok(7),
    }
}

static OPENS: CircuitBreaker = breaker();
static OPENS_RUNS: AtomicU32 = AtomicU32::new(0);

#[retry(max_attempts = 1, breaker = OPENS)]
async fn opens(class: Option<ErrorClass>) -> Result<u32, TestError> {
    play(&OPENS_RUNS, class)
}

#[tokio::test(start_paused = true)]
async fn it_opens_at_the_failure_ratio_and_refuses_calls_without_running_them() {
    // 2 successes, 1 failure: 3 attempts counted, below min_calls.
    opens(None).await.unwrap();
    opens(None).await.unwrap();
    assert!(opens(Some(ErrorClass::Transient)).await.is_err());
    assert_eq!(OPENS.window_counts(), (3, 1));
    assert_eq!(OPENS.state(), BreakerState::Closed);
    // 4 attempts, 2 failed: half. It opens.
    assert!(opens(Some(ErrorClass::Timeout)).await.is_err());
    assert_eq!(OPENS.state(), BreakerState::Open);
    assert_eq!(OPENS_RUNS.load(Ordering::Relaxed), 4);

    // Refused at once: the body does not run, the error is the function's own.
    advance(S(1)).await;
    let (out, record) = testing::record(Overrides::new(), opens(None)).await;
    let Err(TestError::CircuitOpen(open)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(open.by(), "CircuitBreaker");
    assert_eq!(open.retry_in(), S(4), "the break ends 5 s after it opened");
    assert_eq!(OPENS_RUNS.load(Ordering::Relaxed), 4);
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!((end.attempt, end.reason), (0, EarlyEnd::CircuitOpen));
    assert!(record.retries().is_empty());
}

static RETRIES: CircuitBreaker = breaker().with_min_calls(2);
static RETRIES_RUNS: AtomicU32 = AtomicU32::new(0);

#[retry(max_attempts = 5, initial_backoff = "100ms", jitter = "none", breaker = RETRIES)]
async fn retries() -> Result<u32, TestError> {
    play(&RETRIES_RUNS, Some(ErrorClass::Transient))
}

#[tokio::test(start_paused = true)]
async fn a_retry_the_open_breaker_refuses_ends_the_call_with_its_last_error() {
    let (out, record) = testing::record(Overrides::new(), retries()).await;
    // Attempt 2 fails: 2 of 2 attempts failed, the breaker opens, and the call ends there
    // instead of sleeping towards attempt 3.
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    assert_eq!(RETRIES_RUNS.load(Ordering::Relaxed), 2);
    assert_eq!(record.retries().len(), 1);
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(
        (end.attempt, end.class, end.reason),
        (2, Some(ErrorClass::Transient), EarlyEnd::CircuitOpen)
    );
}

static SLEEPER: CircuitBreaker = breaker().with_min_calls(2);

#[retry(max_attempts = 3, initial_backoff = "1s", jitter = "none", breaker = SLEEPER)]
async fn sleeper(class: ErrorClass) -> Result<u32, TestError> {
    Err(TestError::fault(class))
}

#[retry(max_attempts = 1, breaker = SLEEPER)]
async fn trips(class: ErrorClass) -> Result<u32, TestError> {
    Err(TestError::fault(class))
}

#[tokio::test(start_paused = true)]
async fn a_call_sleeping_towards_its_retry_is_refused_when_it_wakes_to_an_open_breaker() {
    let waiting = tokio::spawn(testing::record(
        Overrides::new(),
        sleeper(ErrorClass::Transient),
    ));
    // The first attempt failed (1 of 1, below min_calls); the call sleeps 1 s.
    tokio::task::yield_now().await;
    advance(MS(500)).await;
    assert_eq!(SLEEPER.state(), BreakerState::Closed);
    // Another call's failure makes 2 of 2: open.
    assert!(trips(ErrorClass::Throttling).await.is_err());
    assert_eq!(SLEEPER.state(), BreakerState::Open);
    let (out, record) = waiting.await.unwrap();
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!((end.attempt, end.reason), (1, EarlyEnd::CircuitOpen));
}

static PROBED: CircuitBreaker = breaker();

#[retry(max_attempts = 1, breaker = PROBED)]
async fn probed(class: Option<ErrorClass>) -> Result<u32, TestError> {
    match class {
        Some(class) => Err(TestError::fault(class)),
        None => Ok(7),
    }
}

#[tokio::test(start_paused = true)]
async fn after_the_break_a_probe_goes_through_and_its_outcome_decides() {
    for _ in 0..4 {
        assert!(probed(Some(ErrorClass::Transient)).await.is_err());
    }
    assert_eq!(PROBED.state(), BreakerState::Open);

    // 1 ms before the break ends: refused, a probe in 1 ms.
    advance(MS(4999)).await;
    let Err(TestError::CircuitOpen(open)) = probed(None).await else {
        panic!()
    };
    assert_eq!(open.retry_in(), MS(1));

    // The break is over: the next call is a probe. It fails: open again, for another break.
    advance(MS(1)).await;
    assert_eq!(PROBED.state(), BreakerState::HalfOpen);
    assert_eq!(
        probed(Some(ErrorClass::Timeout)).await,
        Err(TestError::fault(ErrorClass::Timeout))
    );
    assert_eq!(PROBED.state(), BreakerState::Open);
    let Err(TestError::CircuitOpen(open)) = probed(None).await else {
        panic!()
    };
    assert_eq!(open.retry_in(), S(5));

    // After it, a probe that succeeds closes the breaker, with an empty window.
    advance(S(5)).await;
    assert_eq!(probed(None).await, Ok(7));
    assert_eq!(PROBED.state(), BreakerState::Closed);
    assert_eq!(PROBED.window_counts(), (0, 0));
    assert_eq!(probed(None).await, Ok(7));
    assert_eq!(PROBED.window_counts(), (1, 0));
}

static HALF: CircuitBreaker = breaker();

#[retry(max_attempts = 1, breaker = HALF)]
async fn half(delay: Duration) -> Result<u32, TestError> {
    if delay.is_zero() {
        return Err(TestError::fault(ErrorClass::Transient));
    }
    tokio::time::sleep(delay).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_half_open_breaker_lets_one_probe_through_per_break() {
    for _ in 0..4 {
        assert!(half(Duration::ZERO).await.is_err());
    }
    advance(S(5)).await;
    // A slow probe (2 s) is out; the call beside it is refused at once.
    let probe = tokio::spawn(half(S(2)));
    tokio::task::yield_now().await;
    let Err(TestError::CircuitOpen(open)) = half(S(2)).await else {
        panic!()
    };
    assert_eq!(
        open.retry_in(),
        Duration::ZERO,
        "half-open: its probe is out"
    );
    assert_eq!(HALF.state(), BreakerState::HalfOpen);
    assert_eq!(probe.await.unwrap(), Ok(1));
    assert_eq!(HALF.state(), BreakerState::Closed);
}

static ABANDONED: CircuitBreaker = breaker();

#[retry(max_attempts = 1, breaker = ABANDONED)]
async fn abandoned(delay: Duration) -> Result<u32, TestError> {
    if delay.is_zero() {
        return Err(TestError::fault(ErrorClass::Transient));
    }
    tokio::time::sleep(delay).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_probe_whose_call_is_dropped_frees_its_place_after_a_break() {
    for _ in 0..4 {
        assert!(abandoned(Duration::ZERO).await.is_err());
    }
    advance(S(5)).await;
    // The probe's call is dropped mid-attempt: it never reports.
    let dropped = tokio::time::timeout(S(1), abandoned(S(60))).await;
    assert!(dropped.is_err());
    assert!(matches!(
        abandoned(MS(1)).await,
        Err(TestError::CircuitOpen(_))
    ));
    // A break after the lost probe went out, the next call probes; it succeeds and closes.
    advance(S(4)).await;
    assert_eq!(abandoned(MS(1)).await, Ok(1));
    assert_eq!(ABANDONED.state(), BreakerState::Closed);
}

static COUNTS: CircuitBreaker = breaker();

#[retry(max_attempts = 1, breaker = COUNTS)]
async fn counts(class: ErrorClass) -> Result<u32, TestError> {
    Err(TestError::fault(class))
}

#[tokio::test(start_paused = true)]
async fn only_transient_timeout_and_throttling_failures_count() {
    // A request the server rejected as wrong, or one that never reached it, says nothing of
    // the server's health: counted as attempts that did not fail.
    for class in [ErrorClass::Permanent, ErrorClass::NotSent] {
        for _ in 0..10 {
            assert!(counts(class).await.is_err());
        }
    }
    assert_eq!(COUNTS.window_counts(), (20, 0));
    assert_eq!(COUNTS.state(), BreakerState::Closed);
    // 20 more, each of the three classes that count: 20 of 40 failed, half: open.
    for class in [
        ErrorClass::Transient,
        ErrorClass::Timeout,
        ErrorClass::Throttling,
    ]
    .into_iter()
    .cycle()
    .take(19)
    {
        assert!(counts(class).await.is_err());
    }
    assert_eq!(COUNTS.window_counts(), (39, 19));
    assert_eq!(COUNTS.state(), BreakerState::Closed);
    assert!(counts(ErrorClass::Transient).await.is_err());
    assert_eq!(COUNTS.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn failures_that_left_the_window_do_not_open_it() {
    static SLIDING: CircuitBreaker = breaker();
    #[retry(max_attempts = 1, breaker = SLIDING)]
    async fn sliding() -> Result<u32, TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }
    for _ in 0..3 {
        assert!(sliding().await.is_err());
    }
    // 10 s later those three have left the window: the fourth failure is 1 of 1.
    advance(S(10)).await;
    assert!(sliding().await.is_err());
    assert_eq!(SLIDING.window_counts(), (1, 1));
    assert_eq!(SLIDING.state(), BreakerState::Closed);
}

#[retry(max_attempts = 1, partition = "breaker-shared", breaker = "50%")]
async fn shared_reads() -> Result<u32, TestError> {
    Err(TestError::fault(ErrorClass::Transient))
}

#[retry(max_attempts = 1, partition = "breaker-shared", breaker = "50%")]
async fn shared_writes() -> Result<u32, TestError> {
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn functions_of_a_partition_share_its_breaker() {
    // The default breaker: 20 attempts at least, half of them failed.
    for _ in 0..20 {
        assert!(shared_reads().await.is_err());
    }
    let partition = Partition::named("breaker-shared");
    let breaker = partition.circuit_breaker().expect("made by the first call");
    assert_eq!(breaker.state(), BreakerState::Open);
    // The other function of the partition is refused too.
    let Err(TestError::CircuitOpen(open)) = shared_writes().await else {
        panic!()
    };
    assert_eq!(open.by(), "CircuitBreaker");
    // Readable for metrics among every partition.
    assert!(Partition::all().iter().any(|p| p.name() == "breaker-shared"
        && p.circuit_breaker().map(CircuitBreaker::state) == Some(BreakerState::Open)));
}

#[tokio::test(start_paused = true)]
async fn an_io_error_carries_the_refusal_and_classifies_as_permanent() {
    use retry_runtime::Classify;
    static IO: CircuitBreaker = breaker().with_min_calls(1);
    #[retry(max_attempts = 1, breaker = IO)]
    async fn read() -> std::io::Result<u32> {
        Err(std::io::ErrorKind::ConnectionReset.into())
    }
    assert!(read().await.is_err());
    let err = read().await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
    assert!(
        err.to_string()
            .starts_with("refused by guard `CircuitBreaker`: the call was not made")
    );
    assert_eq!(err.classify(), ErrorClass::Permanent);
}
