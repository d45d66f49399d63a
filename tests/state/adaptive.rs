//! `#[retry(mode = "adaptive")]` end to end, on tokio's paused clock: the client rate limiter
//! stays out of the way until the first throttling response, then every attempt waits for its
//! send tokens (1 for a first attempt, 5 for a retry, 10 for a retry after throttling), shared
//! by a partition or a `static RateLimiter`, and never past the call's deadline.
//!
//! Most limiters here have a minimum fill rate of 1 token per second, so that right after a
//! throttle the bucket holds at most 1 token and each one takes exactly one second. A cost above
//! that (5 or 10) goes when the bucket is full and the rest is owed, so it shows as the wait of
//! the next send. Each schedule is worked out by hand in the comments (fill rate after a
//! response: `max(min(cubic, 2 * measured), min_fill_rate)`).

use crate::util::{Fail, Script, Succeed, TestError};
use retry_runtime::{ErrorClass, Partition, RateLimiter, retry};
use std::time::Duration;
use tokio::time::Instant;

const THROTTLED: TestError = TestError::fault(ErrorClass::Throttling);

const fn one_token_per_second() -> RateLimiter {
    RateLimiter::adaptive().with_min_fill_rate(1.0)
}

// ---------------------------------------------------------------------------------------------

static QUIET_LIMITER: RateLimiter = one_token_per_second();

#[retry(mode = "adaptive", rate_limiter = QUIET_LIMITER, initial_backoff = "100ms", jitter = "none")]
async fn quiet(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn disabled_until_the_first_throttling_response() {
    let s = Script::new((0..50).map(|_| Succeed(1)).chain([
        Fail(ErrorClass::Throttling),
        Succeed(2),
        Succeed(0),
    ]));
    // Fifty successes and transient errors: nothing waits, at any rate.
    for _ in 0..50 {
        assert_eq!(quiet(&s).await, Ok(1));
    }
    assert!(!QUIET_LIMITER.is_enabled());
    assert_eq!(s.new_starts_ms(), [0; 50]);
    // The first throttling response turns the limiter on: the throttle at 0 was the 51st
    // response in the first half-second bucket, so the measured rate is still 0 and the fill
    // rate falls to the minimum, 1 token per second.
    // The retry after the throttle waited for a full bucket (1 token): 0.1 s of backoff, then
    // 0.9 s; it took its 10 tokens and owes 9.
    assert_eq!(quiet(&s).await, Ok(2));
    assert!(QUIET_LIMITER.is_enabled());
    assert_eq!(s.new_starts_ms(), [0, 1_000]);
    // Its success at 1.0 closed the first bucket: measured rate 0.8 * 52 = 41.6, CUBIC from
    // W_max = 0 gives 0.4 * 1^3 = 0.4, so the fill rate stays at the minimum, 1 per second.
    assert_eq!(QUIET_LIMITER.fill_rate(), 1.0);
    // From now on first attempts wait for their token too: 9 owed + 1, ten seconds.
    assert_eq!(quiet(&s).await, Ok(0));
    assert_eq!(s.new_starts_ms(), [11_000]);
}

// ---------------------------------------------------------------------------------------------

static COSTS_LIMITER: RateLimiter = one_token_per_second();

#[retry(
    mode = "adaptive",
    rate_limiter = COSTS_LIMITER,
    max_attempts = 4,
    initial_backoff = "100ms",
    multiplier = 1.0,
    jitter = "none"
)]
async fn costs(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn send_tokens_cost_1_then_5_then_10_after_throttling() {
    let s = Script::new([
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Transient),
        Succeed(7),
        Succeed(8),
    ]);
    assert_eq!(costs(&s).await, Ok(7));
    // 0: the first attempt (limiter off). Throttled: the fill rate is 1 per second, the bucket
    // holds at most 1 token and is empty. 0.1: the backoff ends; the retry after throttling
    // (10 tokens) goes when the bucket is full, at 1.0, and owes 9. Transient: 0.1 s of
    // backoff, then the retry (5 tokens) waits for 9 owed + 1: it goes at 11.0 and owes 4.
    assert_eq!(s.new_starts_ms(), [0, 1_000, 11_000]);
    // The next call's first attempt (1 token) pays the 4 owed first: 5 s.
    assert_eq!(costs(&s).await, Ok(8));
    assert_eq!(s.new_starts_ms(), [16_000]);
}

// ---------------------------------------------------------------------------------------------

#[retry(
    mode = "adaptive",
    partition = "adaptive-test-shared",
    max_attempts = 1
)]
async fn shared_write(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(
    mode = "adaptive",
    partition = "adaptive-test-shared",
    max_attempts = 1
)]
async fn shared_read(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_partition_shares_one_limiter() {
    let s = Script::new([Fail(ErrorClass::Throttling), Succeed(1), Succeed(2)]);
    let limiter = Partition::named("adaptive-test-shared").rate_limiter();
    assert!(!limiter.is_enabled());
    // A throttle seen by one function ...
    assert_eq!(shared_write(&s).await, Err(THROTTLED));
    assert!(limiter.is_enabled());
    // ... paces the other: the fill rate is the AWS minimum, 0.5 per second, so its token
    // comes at 2 s.
    assert_eq!(limiter.fill_rate(), 0.5);
    assert_eq!(shared_read(&s).await, Ok(1));
    // That success closes the buckets up to 2.0: 2 responses in 2 s, measured 0.8, fill rate
    // min(CUBIC 0.4 * 2^3, 2 * 0.8) = 1.6, so the next token takes 625 ms.
    assert_eq!(limiter.fill_rate(), 1.6);
    assert_eq!(shared_write(&s).await, Ok(2));
    assert_eq!(s.new_starts_ms(), [0, 2_000, 2_625]);
}

// ---------------------------------------------------------------------------------------------

static TABLE: RateLimiter = one_token_per_second();

#[retry(mode = "adaptive", rate_limiter = TABLE, max_attempts = 1)]
async fn put_item(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(mode = "adaptive", rate_limiter = TABLE, max_attempts = 1)]
async fn get_item(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(mode = "adaptive", max_attempts = 1)]
async fn elsewhere(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_static_rate_limiter_is_shared_by_the_functions_naming_it() {
    let s = Script::new([
        Fail(ErrorClass::Throttling),
        Succeed(1),
        Succeed(2),
        Succeed(3),
    ]);
    assert_eq!(get_item(&s).await, Err(THROTTLED));
    assert!(TABLE.is_enabled());
    // A function with its own limiter does not wait.
    assert_eq!(elsewhere(&s).await, Ok(1));
    // Both functions naming TABLE do, one token per second, in turn: one sends at 1.0; the
    // other lost that race and looks again after the next token's refill plus a random part
    // of another, so it sends between 2.0 and 3.0.
    let (a, b) = tokio::join!(put_item(&s), get_item(&s));
    let mut got = [a.unwrap(), b.unwrap()];
    got.sort_unstable();
    assert_eq!(got, [2, 3]);
    let starts = s.new_starts_ms();
    assert_eq!(starts[..3], [0, 0, 1_000]);
    assert!((2_000..=3_000).contains(&starts[3]), "{starts:?}");
}

// ---------------------------------------------------------------------------------------------

static LATE_LIMITER: RateLimiter = one_token_per_second();

#[retry(
    mode = "adaptive",
    rate_limiter = LATE_LIMITER,
    max_attempts = 5,
    initial_backoff = "100ms",
    jitter = "none",
    deadline = "500ms"
)]
async fn late(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_send_token_wait_never_passes_the_deadline() {
    let s = Script::new([Fail(ErrorClass::Throttling), Succeed(1)]);
    let start = Instant::now();
    // The retry after the throttle would get its token at 1.0, past the deadline at 0.5: the
    // call returns the throttling error at once, at 0.1, without waiting.
    assert_eq!(late(&s).await, Err(THROTTLED));
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(s.new_starts_ms(), [0]);
    // A call starting at 0.1 would get its first token at 1.0, past its own deadline at 0.6:
    // it ends at once with the deadline's error.
    let Err(TestError::TimedOut(t)) = late(&s).await else {
        panic!("the first attempt cannot start in time")
    };
    assert!(t.is_deadline());
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    // Nothing was taken: at 0.6 the bucket holds 0.6 of a token, and a call starting then
    // sends at 1.0, inside its deadline at 1.1.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(late(&s).await, Ok(1));
    assert_eq!(s.new_starts_ms(), [1_000]);
}

static CROWD_LIMITER: RateLimiter = one_token_per_second();

#[retry(mode = "adaptive", rate_limiter = CROWD_LIMITER, max_attempts = 1, deadline = "2500ms")]
async fn crowd(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn callers_give_up_when_their_next_token_would_come_after_the_deadline() {
    let s = Script::new([Fail(ErrorClass::Throttling), Succeed(0)]);
    assert_eq!(crowd(&s).await, Err(THROTTLED));
    assert_eq!(s.new_starts_ms(), [0]);
    let start = Instant::now();
    // Five callers at once with a 2.5 s deadline, one token per second at first: one sends at
    // 1.0. The four others lost that race; each looks again after the refill of the next token
    // plus a random part of another, and gives up at once if that look would come at or after
    // its deadline. Whoever looks first after 2.0 sends; its success raises the fill rate, and
    // so on. However the draws fall, nobody waits past the deadline, every caller that gives
    // up does so with the deadline's error, and the sends keep to the fill rate.
    let results = futures_join5(crowd(&s), crowd(&s), crowd(&s), crowd(&s), crowd(&s)).await;
    assert!(
        start.elapsed() <= Duration::from_millis(2_500),
        "{:?}",
        start.elapsed()
    );
    let sent = results.iter().filter(|r| r.is_ok()).count();
    let timed_out = results
        .iter()
        .filter(|r| matches!(r, Err(TestError::TimedOut(t)) if t.is_deadline()))
        .count();
    assert_eq!(sent + timed_out, 5);
    let starts = s.new_starts_ms();
    assert_eq!(starts.len(), sent);
    assert_eq!(starts[0], 1_000);
    // How many more send depends on the draws; what holds for every draw is checked here.
    for pair in starts.windows(2) {
        // Never two sends closer than the fastest fill rate reached here (2.24 per second).
        assert!(pair[1] - pair[0] >= 446, "{starts:?}");
    }
}

async fn futures_join5<F: std::future::Future>(a: F, b: F, c: F, d: F, e: F) -> [F::Output; 5] {
    let (a, b, c, d, e) = tokio::join!(a, b, c, d, e);
    [a, b, c, d, e]
}

static INSTANT_LIMITER: RateLimiter = RateLimiter::adaptive().with_min_fill_rate(1.0);

#[retry(
    mode = "adaptive",
    rate_limiter = INSTANT_LIMITER,
    max_attempts = 4,
    initial_backoff = "1s",
    jitter = "none"
)]
async fn instant_adaptive(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn instant_test_overrides_wait_for_no_send_token_either() {
    // Throttles switch the limiter on; with min fill rate 1 its waits are whole seconds. Inside
    // an instant scope neither the backoff nor the send tokens make the call wait.
    let s = Script::new([
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Transient),
        Succeed(9),
    ]);
    let instant = retry_runtime::testing::Overrides::new().instant();
    let out = retry_runtime::testing::scope(instant, instant_adaptive(&s)).await;
    assert_eq!(out, Ok(9));
    assert!(INSTANT_LIMITER.is_enabled());
    assert_eq!(s.new_starts_ms(), [0, 0, 0, 0]);
}
