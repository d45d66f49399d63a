//! The attempt timelines of the Google Cloud client libraries' documentation of
//! "RetrySettings", to the millisecond, on tokio's paused clock.
//!
//! Each body never answers, so every attempt runs until its timeout; the test records when each
//! attempt started and what it was given, and when the call returned.

use crate::util::{Hang, Script, TestError};
use retry_runtime::{TimedOut, TimeoutKind, retry};
use std::time::Duration;

/// A script of attempts that never answer.
fn hanging() -> Script {
    Script::new([Hang])
}

/// Runs `call` (of `script`); returns (attempt starts, end time, the last error).
async fn timeline(
    script: &Script,
    call: impl std::future::Future<Output = Result<u32, TestError>>,
) -> (Vec<u64>, u64, TimedOut) {
    let Err(TestError::TimedOut(t)) = call.await else {
        panic!("the call cannot succeed")
    };
    (script.starts_ms(), script.now_ms(), t)
}

/// "Kein Wiederholungsversuch": total timeout 5000 ms, maxAttempts 1. One attempt, whose RPC
/// timeout is the whole 5000 ms.
#[retry(max_attempts = 1, deadline = "5000ms", jitter = "none")]
async fn no_retry(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn without_retries_one_attempt_gets_the_whole_deadline() {
    let s = hanging();
    let (starts, end, err) = timeline(&s, no_retry(&s)).await;
    assert_eq!(starts, [0]);
    assert_eq!(end, 5000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
}

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
async fn retry_example(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn the_retry_example_stops_before_a_sleep_past_the_deadline() {
    let s = hanging();
    let (starts, end, err) = timeline(&s, retry_example(&s)).await;
    assert_eq!(starts, [0, 1700]);
    // Attempt 2 ends at 4700; the third would start at 4700 + 400 = 5100, past the deadline,
    // so the call returns at 4700 without sleeping.
    assert_eq!(end, 4700);
    assert_eq!(err.kind(), TimeoutKind::Attempt);
    assert_eq!(err.limit(), Duration::from_millis(3000));
    assert_eq!(err.attempt(), 2);
}

/// "Wiederholung: längere Gesamtauszeit": the same, with a total timeout of 10000 ms.
///
/// The documentation's table:
///
/// | attempt | RPC timeout | delay | called | ended |
/// |---|---|---|---|---|
/// | 1 | 1500 | 0 | 0 | 1500 |
/// | 2 | 3000 | 200 | 1700 | 4700 |
/// | 3 | 4900 | 400 | 5100 | 10000 |
///
/// Its third row contradicts its own settings: it grows the RPC timeout to 6000 ms and clamps
/// it only by the time left (4900 ms), ignoring the max RPC timeout of 3000 ms it set. The
/// README's attempt timeout ("One call", step 2),
/// `T_n = min(attempt_timeout * m^(n-1), max_attempt_timeout, deadline remaining)`, gives
/// `min(6000, 3000, 4900) = 3000` instead, so attempt 3 runs 5100..8100; then the
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
async fn longer_total(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_longer_total_timeout_keeps_the_max_rpc_timeout() {
    let s = hanging();
    let (starts, end, err) = timeline(&s, longer_total(&s)).await;
    assert_eq!(starts, [0, 1700, 5100, 8600]);
    assert_eq!(end, 10_000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
    assert_eq!(err.attempt(), 4);
}

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
async fn capped_rpc_timeout(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn the_deadline_clamps_the_last_rpc_timeout() {
    let s = hanging();
    let (starts, end, err) = timeline(&s, capped_rpc_timeout(&s)).await;
    assert_eq!(starts, [0, 700, 2100]);
    assert_eq!(end, 4000);
    assert_eq!(err.kind(), TimeoutKind::Deadline);
    assert_eq!(err.attempt(), 3);
}

/// The four timelines through a `retry_runtime::Policy` with the same keys: the closure API
/// runs the same loop, so every attempt starts at the same millisecond, the call ends at the
/// same one, with the same error.
#[tokio::test(start_paused = true)]
async fn a_policy_with_the_same_keys_agrees_to_the_millisecond() {
    use retry_runtime::{Jitter, Policy};
    let ms = Duration::from_millis;
    let google = |timeout: u64, max_timeout: u64, deadline: u64| {
        Policy::new()
            .max_attempts(100)
            .initial_backoff(ms(200))
            .multiplier(2.0)
            .max_backoff(ms(500))
            .jitter(Jitter::None)
            .attempt_timeout(ms(timeout))
            .attempt_timeout_multiplier(2.0)
            .max_attempt_timeout(ms(max_timeout))
            .deadline(ms(deadline))
    };
    let policy = |i: usize| match i {
        0 => Policy::new()
            .max_attempts(1)
            .deadline(ms(5000))
            .jitter(Jitter::None),
        1 => google(1500, 3000, 5000),
        2 => google(1500, 3000, 10_000),
        _ => google(500, 2000, 4000),
    };
    for i in 0..4 {
        let policy = policy(i).build().expect("coherent");
        let s = hanging();
        let by_attribute = match i {
            0 => timeline(&s, no_retry(&s)).await,
            1 => timeline(&s, retry_example(&s)).await,
            2 => timeline(&s, longer_total(&s)).await,
            _ => timeline(&s, capped_rpc_timeout(&s)).await,
        };
        let s = hanging();
        let by_policy = timeline(&s, policy.retry(|| s.attempt())).await;
        assert_eq!(by_policy, by_attribute, "timeline {i} through a Policy");
    }
}
