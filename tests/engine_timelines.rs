//! The attempt timelines of seed 002 (Google Cloud client libraries, "RetrySettings"), to the
//! millisecond, on tokio's paused clock.
//!
//! Each body never answers, so every attempt runs until its timeout; the test records when each
//! attempt started and what it was given, and when the call returned.

use retry_runtime::{Classify, ErrorClass, TimedOut, TimeoutKind, retry};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
enum RpcError {
    TimedOut(TimedOut),
}

impl From<TimedOut> for RpcError {
    fn from(t: TimedOut) -> Self {
        RpcError::TimedOut(t)
    }
}

impl Classify for RpcError {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Timeout
    }
}

/// Milliseconds since `t0` at which each attempt started.
struct Log {
    t0: Mutex<Option<Instant>>,
    starts: Mutex<Vec<u64>>,
}

impl Log {
    const fn new() -> Log {
        Log {
            t0: Mutex::new(None),
            starts: Mutex::new(Vec::new()),
        }
    }

    fn begin(&self) {
        *self.t0.lock().unwrap() = Some(Instant::now());
        self.starts.lock().unwrap().clear();
    }

    fn ms(&self) -> u64 {
        let t0 = self.t0.lock().unwrap().expect("begin() first");
        u64::try_from(t0.elapsed().as_millis()).unwrap()
    }

    fn attempt(&self) {
        let ms = self.ms();
        self.starts.lock().unwrap().push(ms);
    }

    fn starts(&self) -> Vec<u64> {
        self.starts.lock().unwrap().clone()
    }
}

async fn hang() -> Result<(), RpcError> {
    std::future::pending().await
}

/// Runs `call` and returns (attempt starts, end time, the last error).
async fn timeline<F: std::future::Future<Output = Result<(), RpcError>>>(
    log: &Log,
    call: F,
) -> (Vec<u64>, u64, TimedOut) {
    log.begin();
    let Err(RpcError::TimedOut(t)) = call.await else {
        panic!("the call cannot succeed")
    };
    (log.starts(), log.ms(), t)
}

static NO_RETRY: Log = Log::new();

/// "Kein Wiederholungsversuch": total timeout 5000 ms, maxAttempts 1. One attempt, whose RPC
/// timeout is the whole 5000 ms.
#[retry(max_attempts = 1, deadline = "5000ms", jitter = "none")]
async fn no_retry() -> Result<(), RpcError> {
    NO_RETRY.attempt();
    hang().await
}

#[tokio::test(start_paused = true)]
async fn seed_002_no_retry() {
    let (starts, end, err) = timeline(&NO_RETRY, no_retry()).await;
    assert_eq!(starts, [0]);
    assert_eq!(end, 5000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
}

static RETRY: Log = Log::new();

/// "Beispiel für Wiederholen": delays 200 ms x2 up to 500 ms, RPC timeout 1500 ms x2 up to
/// 3000 ms, total 5000 ms.
///
/// | attempt | RPC timeout | delay | called | ended |
/// |---|---|---|---|---|
/// | 1 | 1500 | 0 | 0 | 1500 |
/// | 2 | 3000 | 200 | 1700 | 4700 |
/// | 3 (not attempted) | - | 400 | - | - |
#[retry(
    max_attempts = 100,
    initial_backoff = "200ms",
    multiplier = 2.0,
    max_backoff = "500ms",
    jitter = "none",
    attempt_timeout = "1500ms",
    attempt_timeout_multiplier = 2.0,
    max_attempt_timeout = "3000ms",
    deadline = "5000ms"
)]
async fn retry_example() -> Result<(), RpcError> {
    RETRY.attempt();
    hang().await
}

#[tokio::test(start_paused = true)]
async fn seed_002_retry_example() {
    let (starts, end, err) = timeline(&RETRY, retry_example()).await;
    assert_eq!(starts, [0, 1700]);
    // Attempt 2 ends at 4700; the third would start at 4700 + 400 = 5100, past the deadline,
    // so the call returns at 4700 without sleeping.
    assert_eq!(end, 4700);
    assert_eq!(err.kind(), TimeoutKind::Attempt);
    assert_eq!(err.limit(), Duration::from_millis(3000));
    assert_eq!(err.attempt(), 2);
}

static LONGER: Log = Log::new();

/// "Wiederholung: längere Gesamtauszeit": the same, with a total timeout of 10000 ms.
///
/// The seed's table:
///
/// | attempt | RPC timeout | delay | called | ended |
/// |---|---|---|---|---|
/// | 1 | 1500 | 0 | 0 | 1500 |
/// | 2 | 3000 | 200 | 1700 | 4700 |
/// | 3 | 4900 | 400 | 5100 | 10000 |
///
/// Its third row contradicts its own settings: it grows the RPC timeout to 6000 ms and clamps
/// it only by the time left (4900 ms), ignoring the max RPC timeout of 3000 ms it set. DESIGN's
/// formula, `T_n = min(attempt_timeout * m^(n-1), max_attempt_timeout, deadline remaining)`,
/// gives `min(6000, 3000, 4900) = 3000` instead, so attempt 3 runs 5100..8100; then the
/// backoff is `min(200 * 2^2, 500) = 500`, attempt 4 starts at 8600 with
/// `min(12000, 3000, 1400) = 1400` ms and ends at the deadline, 10000.
#[retry(
    max_attempts = 100,
    initial_backoff = "200ms",
    multiplier = 2.0,
    max_backoff = "500ms",
    jitter = "none",
    attempt_timeout = "1500ms",
    attempt_timeout_multiplier = 2.0,
    max_attempt_timeout = "3000ms",
    deadline = "10000ms"
)]
async fn longer_total() -> Result<(), RpcError> {
    LONGER.attempt();
    hang().await
}

#[tokio::test(start_paused = true)]
async fn seed_002_longer_total_timeout() {
    let (starts, end, err) = timeline(&LONGER, longer_total()).await;
    assert_eq!(starts, [0, 1700, 5100, 8600]);
    assert_eq!(end, 10_000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
    assert_eq!(err.attempt(), 4);
}

static CAPPED: Log = Log::new();

/// "Wiederholung: Begrenztes RPC-Zeitlimit": delays as above, RPC timeout 500 ms x2 up to
/// 2000 ms, total 4000 ms.
///
/// | attempt | RPC timeout | delay | called | ended |
/// |---|---|---|---|---|
/// | 1 | 500 | 0 | 0 | 500 |
/// | 2 | 1000 | 200 | 700 | 1700 |
/// | 3 | 1900 | 400 | 2100 | 4000 |
///
/// Attempt 3's timeout, `min(2000, 2000, 4000 - 2100) = 1900`, is clamped by the deadline.
#[retry(
    max_attempts = 100,
    initial_backoff = "200ms",
    multiplier = 2.0,
    max_backoff = "500ms",
    jitter = "none",
    attempt_timeout = "500ms",
    attempt_timeout_multiplier = 2.0,
    max_attempt_timeout = "2000ms",
    deadline = "4000ms"
)]
async fn capped_rpc_timeout() -> Result<(), RpcError> {
    CAPPED.attempt();
    hang().await
}

#[tokio::test(start_paused = true)]
async fn seed_002_capped_rpc_timeout() {
    let (starts, end, err) = timeline(&CAPPED, capped_rpc_timeout()).await;
    assert_eq!(starts, [0, 700, 2100]);
    assert_eq!(end, 4000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
    assert_eq!(err.attempt(), 3);
}
