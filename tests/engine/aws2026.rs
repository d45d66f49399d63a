//! `behavior = "2026"`: the AWS SDKs' updated standard mode ("retry behavior 2.1" in
//! smithy-rs, `AWS_NEW_RETRIES_2026=true` in every SDK), checked against the scenarios the SDKs
//! test it with (aws-sdk-go-v2's `retry2026_test.go`, aws-sdk-java-v2's
//! `StandardRetryStrategyTest`, smithy-rs's `standard.rs` tests): a retry after a throttling
//! error costs 5 tokens and after any other error 14; the backoff is `min(base * 2^(n-1), 20 s)`
//! with a base of 1 s after a throttling error and 50 ms after any other; a server's hint is
//! kept within [the backoff, the backoff + 5 s].
//!
//! The SDKs' scenarios fix the jitter's draw at 1 (the whole backoff); here `jitter = "none"`
//! does the same. Each function names a partition of its own, to read its bucket's level.

use crate::util::{Script, Step, TestError};
use Step::{Fail, Hint};
use retry_runtime::{Behavior, ErrorClass, Partition, Policy, TokenBucket, retry};
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn level(partition: &'static str) -> u32 {
    Partition::named(partition).bucket().available()
}

#[retry(behavior = "2026", jitter = "none", partition = "aws2026-transient")]
async fn transient(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// Go's "retry then succeed" and "max attempts exceeded": 50 ms then 100 ms, 14 tokens a
/// retry, the last retry's cost back when it succeeds.
#[tokio::test(start_paused = true)]
async fn a_transient_retry_costs_14_and_backs_off_from_50ms() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Step::Ok(7),
    ]);
    assert_eq!(transient(&s).await.unwrap(), 7);
    assert_eq!(s.starts_ms(), [0, 50, 150]);
    assert_eq!(level("aws2026-transient"), 486);

    let s = Script::always(ErrorClass::Transient);
    assert!(transient(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 50, 150]);
    assert_eq!(level("aws2026-transient"), 486 - 28);
}

#[retry(
    behavior = "2026",
    jitter = "none",
    max_attempts = 5,
    max_backoff = "200ms",
    partition = "aws2026-capped"
)]
async fn capped(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// "max backoff": 50, 100, 200, then 200 again; four retries of 14.
#[tokio::test(start_paused = true)]
async fn the_backoff_doubles_up_to_max_backoff() {
    let s = Script::always(ErrorClass::Transient);
    assert!(capped(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 50, 150, 350, 550]);
    assert_eq!(level("aws2026-capped"), 444);
}

#[retry(behavior = "2026", jitter = "none", partition = "aws2026-throttling")]
async fn throttled(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// "throttling": the retry waits 1 s and costs 5, given back when it succeeds.
#[tokio::test(start_paused = true)]
async fn a_throttling_retry_costs_5_and_backs_off_from_1s() {
    let s = Script::new([Fail(ErrorClass::Throttling), Step::Ok(1)]);
    assert_eq!(throttled(&s).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 1000]);
    assert_eq!(level("aws2026-throttling"), 500);

    let s = Script::always(ErrorClass::Throttling);
    assert!(throttled(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 1000, 3000]);
    assert_eq!(level("aws2026-throttling"), 490);
}

#[retry(behavior = "2026", jitter = "none", partition = "aws2026-timeout")]
async fn timed_out(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// A timeout is no longer dearer than another transient error: 14, as in every SDK.
#[tokio::test(start_paused = true)]
async fn a_timeout_costs_what_another_transient_error_costs() {
    let s = Script::new([Fail(ErrorClass::Timeout), Fail(ErrorClass::Permanent)]);
    assert!(timed_out(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(level("aws2026-timeout"), 486);
}

/// DynamoDB's settings in the SDKs under the 2026 behavior: a 25 ms base and 4 attempts; the
/// throttling base stays 1 s.
#[retry(
    behavior = "2026",
    jitter = "none",
    initial_backoff = "25ms",
    max_attempts = 4,
    partition = "aws2026-dynamodb"
)]
async fn dynamodb(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn the_dynamodb_settings_start_at_25ms_and_keep_1s_for_throttling() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Step::Ok(1),
    ]);
    assert_eq!(dynamodb(&s).await.unwrap(), 1);
    // smithy-rs's dynamodb test: 4 requests, 175 ms of sleep in all.
    assert_eq!(s.starts_ms(), [0, 25, 75, 175]);
    assert_eq!(level("aws2026-dynamodb"), 500 - 28);

    let s = Script::new([Fail(ErrorClass::Throttling), Step::Ok(1)]);
    assert_eq!(dynamodb(&s).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 1000]);
}

#[retry(behavior = "2026", jitter = "none", partition = "aws2026-hints")]
async fn hinted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// `x-amz-retry-after` in the SDKs' scenarios: 1500 ms is obeyed, 0 gives the backoff, 10 s
/// gives the backoff + 5 s; and a hint above `max_backoff` is clamped, not a reason to stop.
#[tokio::test(start_paused = true)]
async fn a_hint_is_kept_within_five_seconds_above_the_backoff() {
    for (hint, second) in [
        (1500, 1500),
        (0, 50),
        (10, 50),
        (10_000, 5050),
        (60_000, 5050),
    ] {
        let s = Script::new([Hint(ErrorClass::Transient, MS(hint)), Step::Ok(1)]);
        assert_eq!(hinted(&s).await.unwrap(), 1, "hint {hint} ms");
        assert_eq!(s.starts_ms(), [0, second], "hint {hint} ms");
    }
    // After a throttling error the backoff is 1 s: a shorter hint waits 1 s.
    let s = Script::new([Hint(ErrorClass::Throttling, MS(200)), Step::Ok(1)]);
    assert_eq!(hinted(&s).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 1000]);
}

#[retry(
    max_attempts = 2,
    behavior = "2026",
    jitter = "none",
    partition = "aws2026-drain"
)]
async fn drained(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// The quota at 14 a retry: 35 retries take 490 of the 500 tokens, and the 36th call finds 10
/// and makes one attempt.
#[tokio::test(start_paused = true)]
async fn the_quota_runs_out_after_35_transient_retries() {
    let s = Script::always(ErrorClass::Transient);
    for call in 1..=36 {
        assert!(drained(&s).await.is_err(), "call {call}");
    }
    assert_eq!(s.attempts(), 35 * 2 + 1);
    assert_eq!(level("aws2026-drain"), 10);
}

static OWN_COSTS: TokenBucket = TokenBucket::standard();

#[retry(behavior = "2026", jitter = "none", bucket = OWN_COSTS)]
async fn with_a_static_bucket(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// A `static` bucket keeps the costs it was built with; the backoff is still the 2026 one.
#[tokio::test(start_paused = true)]
async fn a_static_bucket_keeps_its_own_costs() {
    let s = Script::new([Fail(ErrorClass::Transient), Fail(ErrorClass::Permanent)]);
    assert!(with_a_static_bucket(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(OWN_COSTS.available(), 495);
}

#[retry(jitter = "none", partition = "aws2026-classic")]
async fn classic(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// Without the key, standard mode is as it was: 1 s, 5 tokens, and a hint above
/// `max_backoff` ends the call.
#[tokio::test(start_paused = true)]
async fn the_classic_behavior_is_unchanged() {
    let s = Script::new([Fail(ErrorClass::Transient), Step::Ok(1)]);
    assert_eq!(classic(&s).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 1000]);
    let s = Script::new([Fail(ErrorClass::Transient), Fail(ErrorClass::Permanent)]);
    assert!(classic(&s).await.is_err());
    assert_eq!(level("aws2026-classic"), 495);
    let s = Script::new([Hint(ErrorClass::Transient, MS(60_000)), Step::Ok(1)]);
    assert!(classic(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0]);
}

static POLICY_2026: Policy = Policy::new()
    .behavior(Behavior::Aws2026)
    .jitter(retry_runtime::Jitter::None)
    .partition("aws2026-policy");

/// `Policy::behavior` is the attribute's key, and its serde form takes `behavior = "2026"`.
#[tokio::test(start_paused = true)]
async fn a_policy_takes_the_behavior_in_code_and_from_a_file() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Step::Ok(7),
    ]);
    assert_eq!(POLICY_2026.retry(|| s.attempt()).await.unwrap(), 7);
    assert_eq!(s.starts_ms(), [0, 50, 150]);
    assert_eq!(level("aws2026-policy"), 486);

    let read: Policy = toml::from_str("behavior = \"2026\"\njitter = \"none\"").unwrap();
    let s = Script::new([Fail(ErrorClass::Throttling), Step::Ok(1)]);
    assert_eq!(read.retry(|| s.attempt()).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 1000]);
    let s = Script::new([Fail(ErrorClass::Transient), Step::Ok(1)]);
    assert_eq!(read.retry(|| s.attempt()).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 50]);

    let misspelt = toml::from_str::<Policy>("behavior = \"2025\"").unwrap_err();
    assert!(
        misspelt.to_string().contains("did you mean \"2026\"?"),
        "{misspelt}"
    );
}

// --- Long polling ---------------------------------------------------------------------------

/// A bucket that is empty from the start (capacity 0).
static EMPTY: TokenBucket = TokenBucket::standard().with_capacity(0);

#[retry(behavior = "2026", jitter = "none", long_polling = true, bucket = EMPTY)]
async fn receive_message(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// SQS `ReceiveMessage` in the SDKs' scenarios: the quota is empty, so the retry is refused;
/// the call sleeps the backoff the retry would have had (50 ms, or 1 s after throttling) and
/// returns the error, instead of coming back at once to poll again.
#[tokio::test(start_paused = true)]
async fn a_long_polling_call_backs_off_before_it_returns_a_refused_retry() {
    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Transient);
    assert!(receive_message(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(t0.elapsed(), MS(50));

    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Throttling);
    assert!(receive_message(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(t0.elapsed(), MS(1000));

    // Nothing to retry, nothing to wait for.
    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Permanent);
    assert!(receive_message(&s).await.is_err());
    assert_eq!(t0.elapsed(), Duration::ZERO);

    // A hint is the delay, as it would have been the retry's.
    let t0 = tokio::time::Instant::now();
    let s = Script::new([Hint(ErrorClass::Transient, MS(700))]);
    assert!(receive_message(&s).await.is_err());
    assert_eq!(t0.elapsed(), MS(700));
    assert_eq!(EMPTY.available(), 0);
}

#[retry(
    behavior = "2026",
    jitter = "none",
    long_polling = true,
    max_attempts = 2,
    partition = "aws2026-long-polling"
)]
async fn long_poll_with_tokens(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// With tokens, a long-polling call retries as any other, and its last attempt's failure
/// returns at once (no extra sleep).
#[tokio::test(start_paused = true)]
async fn a_long_polling_call_with_tokens_retries_as_any_other() {
    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Transient);
    assert!(long_poll_with_tokens(&s).await.is_err());
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(t0.elapsed(), MS(50));
    assert_eq!(level("aws2026-long-polling"), 486);
}

#[retry(jitter = "none", long_polling = true, bucket = EMPTY, deadline = "500ms")]
async fn classic_long_poll(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(jitter = "none", long_polling = true, bucket = EMPTY)]
async fn classic_long_poll_no_deadline(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// The key works in the classic behavior too (its backoff starts at 1 s); a backoff that
/// would reach the deadline is not slept.
#[tokio::test(start_paused = true)]
async fn long_polling_backs_off_by_the_behavior_and_within_the_deadline() {
    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Transient);
    assert!(classic_long_poll_no_deadline(&s).await.is_err());
    assert_eq!(t0.elapsed(), MS(1000));

    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Transient);
    assert!(classic_long_poll(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

/// `Policy::long_polling` and its serde key.
#[tokio::test(start_paused = true)]
async fn a_policy_long_polls_in_code_and_from_a_file() {
    static POLL: Policy = Policy::new()
        .behavior(Behavior::Aws2026)
        .jitter(retry_runtime::Jitter::None)
        .long_polling(true)
        .bucket(&EMPTY);
    let t0 = tokio::time::Instant::now();
    let s = Script::always(ErrorClass::Throttling);
    assert!(POLL.retry(|| s.attempt()).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(t0.elapsed(), MS(1000));

    let read: Policy = toml::from_str(
        "behavior = \"2026\"\njitter = \"none\"\nlong_polling = true\nbucket = \"none\"",
    )
    .unwrap();
    let s = Script::new([Fail(ErrorClass::Transient), Step::Ok(1)]);
    assert_eq!(read.retry(|| s.attempt()).await.unwrap(), 1);
    assert_eq!(s.starts_ms(), [0, 50]);
}
