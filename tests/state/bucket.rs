//! The retry token bucket as the engine uses it: exact costs per class, refunds of a successful
//! retry's cost, +1 for a first-attempt success, no retry from an empty bucket, shared
//! partitions, and no tokens lost by dropped or panicking calls.

use crate::util::{Fail, Hang, Panic, Script, Succeed, TestError};
use retry_runtime::{ErrorClass, Partition, TokenBucket, retry};
use std::time::Duration;

// One bucket per test: statics are shared by every test of the file, which run in parallel.

static DRAIN: TokenBucket = TokenBucket::standard().with_capacity(100);

#[retry(bucket = DRAIN, max_attempts = 3, initial_backoff = "1ms", jitter = "none")]
async fn drain(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn each_class_pays_its_cost() {
    // Two retries after Transient: 2 x 5.
    let s = Script::always(ErrorClass::Transient);
    assert!(drain(&s).await.is_err());
    assert_eq!(s.attempts(), 3);
    assert_eq!(DRAIN.available(), 90);
    // Two retries after Throttling: 2 x 5.
    let s = Script::always(ErrorClass::Throttling);
    assert!(drain(&s).await.is_err());
    assert_eq!(DRAIN.available(), 80);
    // Two retries after NotSent: 2 x 5.
    let s = Script::always(ErrorClass::NotSent);
    assert!(drain(&s).await.is_err());
    assert_eq!(DRAIN.available(), 70);
    // Two retries after Timeout: 2 x 10.
    let s = Script::always(ErrorClass::Timeout);
    assert!(drain(&s).await.is_err());
    assert_eq!(DRAIN.available(), 50);
    // A permanent error is never retried and costs nothing.
    let s = Script::always(ErrorClass::Permanent);
    assert!(drain(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(DRAIN.available(), 50);
}

static KOTLIN: TokenBucket = TokenBucket::standard()
    .with_capacity(100)
    .with_costs(5, 10, 10);

#[retry(bucket = KOTLIN, max_attempts = 2, initial_backoff = "1ms")]
async fn kotlin_costs(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn custom_costs_apply() {
    let s = Script::always(ErrorClass::Throttling);
    assert!(kotlin_costs(&s).await.is_err());
    assert_eq!(
        KOTLIN.available(),
        90,
        "throttling costs 10 in the Kotlin SDK"
    );
}

static REFUND: TokenBucket = TokenBucket::standard().with_capacity(100);

#[retry(bucket = REFUND, max_attempts = 4, initial_backoff = "1ms", on_retry = note_level)]
async fn refund(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// The level of the function's bucket when each of its retries' hooks ran, by function. The
/// hook runs after the retry's cost is taken.
static LEVELS: std::sync::Mutex<Vec<(&str, u32)>> = std::sync::Mutex::new(Vec::new());

fn note_level(ev: &retry_runtime::RetryEvent<'_, TestError>) {
    let bucket = match ev.function() {
        "refund" => &REFUND,
        "panics" => &PANICS,
        "classifier_panics" => &CLASSIFIER,
        other => unreachable!("no bucket noted for {other}"),
    };
    LEVELS
        .lock()
        .unwrap()
        .push((ev.function(), bucket.available()));
}

/// The levels `note_level` saw for `function`'s retries.
fn levels(function: &str) -> Vec<u32> {
    let levels = LEVELS.lock().unwrap();
    levels
        .iter()
        .filter(|(f, _)| *f == function)
        .map(|(_, level)| *level)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_successful_retry_refunds_its_own_cost_only() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Timeout),
        Succeed(7),
    ]);
    assert_eq!(refund(&s).await, Ok(7));
    // The hook runs after the cost is taken: 100 - 5, then 95 - 10.
    assert_eq!(levels("refund"), [95, 85]);
    // The first retry failed: its 5 stay out. The second succeeded: its 10 come back.
    assert_eq!(REFUND.available(), 95);

    // A first-attempt success adds 1, up to capacity.
    let s = Script::new([Succeed(1)]);
    assert_eq!(refund(&s).await, Ok(1));
    assert_eq!(REFUND.available(), 96);
    for _ in 0..10 {
        refund(&Script::new([Succeed(1)])).await.unwrap();
    }
    assert_eq!(REFUND.available(), 100);
}

static SMALL: TokenBucket = TokenBucket::standard().with_capacity(12);

#[retry(bucket = SMALL, max_attempts = 5, initial_backoff = "1ms")]
async fn small(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_empty_bucket_stops_retries_but_never_first_attempts() {
    let s = Script::always(ErrorClass::Transient);
    assert!(small(&s).await.is_err());
    assert_eq!(s.attempts(), 3, "12 tokens pay for two retries of 5");
    assert_eq!(SMALL.available(), 2);

    let s = Script::always(ErrorClass::Transient);
    assert!(small(&s).await.is_err());
    assert_eq!(
        s.attempts(),
        1,
        "the first attempt runs; no retry is affordable"
    );

    let s = Script::new([Succeed(3)]);
    assert_eq!(
        small(&s).await,
        Ok(3),
        "first attempts never wait for the bucket"
    );
    assert_eq!(SMALL.available(), 3);
}

#[retry(
    partition = "bucket-tests-shared",
    max_attempts = 3,
    initial_backoff = "1ms"
)]
async fn shared_a(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(
    partition = "bucket-tests-shared",
    max_attempts = 2,
    initial_backoff = "1ms"
)]
async fn shared_b(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn functions_naming_one_partition_drain_one_bucket() {
    let bucket = Partition::named("bucket-tests-shared").bucket();
    assert_eq!(bucket.available(), 500);
    assert!(
        shared_a(&Script::always(ErrorClass::Transient))
            .await
            .is_err()
    );
    assert_eq!(bucket.available(), 490);
    assert!(
        shared_b(&Script::always(ErrorClass::Timeout))
            .await
            .is_err()
    );
    assert_eq!(bucket.available(), 480);
}

#[retry(max_attempts = 200, initial_backoff = "1ms", max_backoff = "1ms")]
async fn generic<T: Default + Send>(script: &Script) -> Result<T, TestError> {
    script.attempt().await.map(|_| T::default())
}

#[tokio::test(start_paused = true)]
async fn generic_instantiations_share_the_function_bucket() {
    // 100 retries of 5 empty the function's own bucket of 500...
    let s = Script::always(ErrorClass::Transient);
    assert!(generic::<u8>(&s).await.is_err());
    assert_eq!(s.attempts(), 101);
    // ...and another instantiation finds it empty.
    let s = Script::always(ErrorClass::Transient);
    assert!(generic::<String>(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
}

static DROPPED: TokenBucket = TokenBucket::standard().with_capacity(50);

#[retry(bucket = DROPPED, max_attempts = 5, initial_backoff = "10s", jitter = "none")]
async fn dropped(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_sleep_gives_its_tokens_back() {
    let s = Script::always(ErrorClass::Transient);
    let mut call = Box::pin(dropped(&s));
    let cut = tokio::time::timeout(Duration::from_secs(5), call.as_mut()).await;
    assert!(cut.is_err(), "the call is still in its 10 s sleep");
    assert_eq!(s.attempts(), 1);
    assert_eq!(DROPPED.available(), 45, "the sleeping retry holds its cost");
    drop(call);
    assert_eq!(DROPPED.available(), 50);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_attempt_gives_its_tokens_back() {
    static MID: TokenBucket = TokenBucket::standard().with_capacity(50);
    #[retry(bucket = MID, max_attempts = 5, initial_backoff = "1s", jitter = "none")]
    async fn mid(script: &Script) -> Result<u32, TestError> {
        script.attempt().await
    }
    let s = Script::new([Fail(ErrorClass::Transient), Hang]);
    let mut call = Box::pin(mid(&s));
    let cut = tokio::time::timeout(Duration::from_secs(5), call.as_mut()).await;
    assert!(cut.is_err(), "the call's second attempt still hangs");
    assert_eq!(s.attempts(), 2);
    assert_eq!(MID.available(), 45, "the running retry holds its cost");
    drop(call);
    assert_eq!(MID.available(), 50);
}

static PANICS: TokenBucket = TokenBucket::standard().with_capacity(50);

#[retry(bucket = PANICS, max_attempts = 5, initial_backoff = "1s", jitter = "none", on_retry = note_level)]
async fn panics(script: std::sync::Arc<Script>) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_panicking_attempt_propagates_and_gives_its_tokens_back() {
    let s = std::sync::Arc::new(Script::new([Fail(ErrorClass::Transient), Panic]));
    let joined = tokio::spawn(panics(s.clone())).await;
    assert!(joined.expect_err("the panic reaches the caller").is_panic());
    assert_eq!(s.attempts(), 2);
    assert_eq!(
        levels("panics"),
        [45],
        "the retry that panicked held its cost"
    );
    assert_eq!(PANICS.available(), 50);
    // The bucket still works for the next call.
    let s = std::sync::Arc::new(Script::new([Fail(ErrorClass::Transient), Succeed(9)]));
    assert_eq!(panics(s).await, Ok(9));
    assert_eq!(levels("panics"), [45, 45], "its retry took its cost...");
    assert_eq!(
        PANICS.available(),
        50,
        "...and got it back when it succeeded"
    );
}

static CLASSIFIER: TokenBucket = TokenBucket::standard().with_capacity(50);

fn picky(e: &TestError) -> ErrorClass {
    match e {
        TestError::Fault(ErrorClass::Permanent, _) => panic!("classifier panics"),
        other => retry_runtime::Classify::classify(other),
    }
}

#[retry(bucket = CLASSIFIER, retry_on = picky, max_attempts = 5, initial_backoff = "1s", on_retry = note_level)]
async fn classifier_panics(script: std::sync::Arc<Script>) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_panicking_classifier_propagates_without_leaking_tokens() {
    let s = std::sync::Arc::new(Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Permanent),
    ]));
    let joined = tokio::spawn(classifier_panics(s.clone())).await;
    assert!(joined.expect_err("the panic reaches the caller").is_panic());
    assert_eq!(s.attempts(), 2);
    assert_eq!(
        levels("classifier_panics"),
        [45],
        "the retry whose error the classifier panicked on held its cost"
    );
    assert_eq!(CLASSIFIER.available(), 50);
}

static WAITING: TokenBucket = TokenBucket::standard()
    .with_capacity(10)
    .with_refill_rate(5)
    .wait_when_empty();

#[retry(bucket = WAITING, max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
async fn waiting(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_waiting_bucket_delays_the_retry_until_the_refill_covers_it() {
    let s = Script::always(ErrorClass::Timeout);
    assert!(waiting(&s).await.is_err());
    // Retry 1: 10 tokens there, take them, sleep 100 ms. Retry 2 needs 10 more: 2 s of refill
    // at 5/s (the 100 ms already slept count), so it takes them at 2000 and sleeps 200 ms.
    // Retry 3: 1 token came back during that sleep, 9 more take 1.8 s (4000), then 400 ms.
    assert_eq!(s.starts_ms(), [0, 100, 2200, 4400]);
    // Retry 3 took the bucket to 0 at 4000; the 400 ms backoff since refilled 2 tokens.
    assert_eq!(WAITING.available(), 2);
}

static WAIT_DEADLINE: TokenBucket = TokenBucket::standard()
    .with_capacity(10)
    .with_refill_rate(1)
    .wait_when_empty();

#[retry(
    bucket = WAIT_DEADLINE,
    max_attempts = 4,
    initial_backoff = "100ms",
    jitter = "none",
    deadline = "3s"
)]
async fn wait_deadline(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_tokens_never_passes_the_deadline() {
    let s = Script::always(ErrorClass::Timeout);
    assert!(wait_deadline(&s).await.is_err());
    // After the first retry the bucket needs 10 s of refill: more than the deadline allows,
    // so the call returns at once instead of waiting.
    assert_eq!(s.starts_ms(), [0, 100]);
    assert_eq!(s.now_ms(), 100);
}
