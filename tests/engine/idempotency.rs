//! A function that is not idempotent is retried only when the server did not act on the
//! request: after `Throttling` and `NotSent`, never after `Transient` or `Timeout`.

use crate::util::{Fail, Hang, Script, Succeed, TestError};
use retry_runtime::{ErrorClass, InvocationId, Policy, TokenBucket, attempt, retry};
use std::cell::Cell;
use std::sync::Mutex;
use std::time::Duration;

#[retry(
    idempotent = false,
    max_attempts = 4,
    initial_backoff = "1ms",
    attempt_timeout = "1s"
)]
async fn create_order(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn not_idempotent_stops_after_transient() {
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    assert_eq!(
        create_order(&s).await,
        Err(TestError::Fault(ErrorClass::Transient, None))
    );
    assert_eq!(s.attempts(), 1);
}

#[tokio::test(start_paused = true)]
async fn not_idempotent_stops_after_timeout() {
    let s = Script::new([Hang, Succeed(1)]);
    let err = create_order(&s).await.unwrap_err();
    assert!(matches!(err, TestError::TimedOut(t) if t.attempt() == 1));
    assert_eq!(s.attempts(), 1);
    assert_eq!(s.now_ms(), 1000);
}

#[tokio::test(start_paused = true)]
async fn not_idempotent_retries_throttling() {
    let s = Script::new([
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Throttling),
        Succeed(3),
    ]);
    assert_eq!(create_order(&s).await, Ok(3));
    assert_eq!(s.attempts(), 3);
}

#[tokio::test(start_paused = true)]
async fn not_idempotent_retries_not_sent() {
    let s = Script::new([Fail(ErrorClass::NotSent), Succeed(4)]);
    assert_eq!(create_order(&s).await, Ok(4));
    assert_eq!(s.attempts(), 2);
}

#[tokio::test(start_paused = true)]
async fn not_idempotent_stops_at_the_first_unsafe_error_after_safe_retries() {
    let s = Script::new([
        Fail(ErrorClass::NotSent),
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Transient),
        Succeed(5),
    ]);
    assert_eq!(
        create_order(&s).await,
        Err(TestError::Fault(ErrorClass::Transient, None))
    );
    assert_eq!(s.attempts(), 3);
}

static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(100);

#[retry(idempotent = false, bucket = BUCKET, max_attempts = 3, initial_backoff = "1ms")]
async fn charge(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_unsafe_error_takes_no_retry_cost() {
    // The bucket is this function's: a safe retry that fails keeps its cost.
    let s = Script::new([Fail(ErrorClass::Throttling), Fail(ErrorClass::Transient)]);
    assert!(charge(&s).await.is_err());
    assert_eq!(s.attempts(), 2);
    let level = 100 - TokenBucket::standard().cost(ErrorClass::Throttling);
    assert_eq!(BUCKET.available(), level);
    // An unsafe error is not retried and takes nothing.
    let s = Script::new([Fail(ErrorClass::Transient)]);
    assert!(charge(&s).await.is_err());
    assert_eq!(s.attempts(), 1);
    assert_eq!(BUCKET.available(), level);
}

thread_local! {
    /// How many times this test's thread evaluated an `idempotent_if` condition.
    static EVALUATIONS: Cell<u32> = const { Cell::new(0) };
}

fn counted(v: bool) -> bool {
    EVALUATIONS.with(|n| n.set(n.get() + 1));
    v
}

fn evaluations() -> u32 {
    EVALUATIONS.with(Cell::get)
}

/// Conditional idempotency (Cloud Storage): an update is idempotent when it carries a
/// precondition (an ETag), and only then.
#[retry(idempotent_if = counted(if_match.is_some()), max_attempts = 4, initial_backoff = "1ms")]
async fn update(if_match: Option<&str>, script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn conditional_idempotency_follows_the_arguments() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Timeout),
        Succeed(6),
    ]);
    assert_eq!(update(Some("etag-1"), &s).await, Ok(6));
    assert_eq!(s.attempts(), 3);

    let s = Script::new([Fail(ErrorClass::Transient), Succeed(6)]);
    assert!(update(None, &s).await.is_err());
    assert_eq!(s.attempts(), 1);

    let s = Script::new([Fail(ErrorClass::Throttling), Succeed(7)]);
    assert_eq!(
        update(None, &s).await,
        Ok(7),
        "throttling is safe either way"
    );
}

#[tokio::test(start_paused = true)]
async fn the_condition_is_evaluated_once_per_call() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Succeed(1),
    ]);
    let before = evaluations();
    assert_eq!(update(Some("e"), &s).await, Ok(1));
    assert_eq!(s.attempts(), 4);
    assert_eq!(evaluations() - before, 1, "once before the first attempt");
}

struct Store {
    writes: u32,
}

impl Store {
    /// `&mut self` with a condition over `self`.
    #[retry(idempotent_if = self.writes == 0, max_attempts = 3, initial_backoff = "1ms")]
    async fn put(&mut self, script: &Script) -> Result<u32, TestError> {
        self.writes += 1;
        script.attempt().await
    }
}

#[tokio::test(start_paused = true)]
async fn the_condition_sees_self() {
    let mut store = Store { writes: 0 };
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(2)]);
    assert_eq!(store.put(&s).await, Ok(2));
    assert_eq!(store.writes, 2);

    let s = Script::new([Fail(ErrorClass::Transient), Succeed(2)]);
    assert!(
        store.put(&s).await.is_err(),
        "writes != 0 now: not idempotent"
    );
    assert_eq!(store.writes, 3);
}

/// The headers of a request built in an attempt, with the attempt written into them as
/// `with_attempt` writes it (so the idempotency key of a call that sends keys).
fn request_headers() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    retry_runtime::wire::insert_attempt_headers(&mut headers);
    headers
}

/// A function that is not idempotent but sends an idempotency key with every attempt
/// (`idempotency_key = true`, the key written into each attempt's request): retried as an
/// idempotent one, after `Transient` and `Timeout` too.
#[retry(
    idempotent = false,
    idempotency_key = true,
    max_attempts = 4,
    initial_backoff = "1ms",
    attempt_timeout = "1s"
)]
async fn create_keyed(
    script: &Script,
    keys: &Mutex<Vec<Option<InvocationId>>>,
) -> Result<u32, TestError> {
    let a = attempt().unwrap();
    assert_eq!(a.idempotency_key(), Some(a.invocation_id()));
    let sent = request_headers()[retry_runtime::wire::IDEMPOTENCY_KEY]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(sent, a.invocation_id().to_string());
    keys.lock().unwrap().push(a.idempotency_key());
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_idempotency_key_makes_a_call_idempotent() {
    let keys = Mutex::new(Vec::new());
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Hang,
        Fail(ErrorClass::Throttling),
        Succeed(8),
    ]);
    assert_eq!(create_keyed(&s, &keys).await, Ok(8));
    assert_eq!(s.attempts(), 4);
    let keys = keys.into_inner().unwrap();
    assert!(
        keys[0].is_some() && keys.iter().all(|k| *k == keys[0]),
        "{keys:?}"
    );

    // A function without it has no key.
    let s = Script::new([Succeed(1)]);
    assert_eq!(no_key(&s).await, Ok(None));
}

/// The same function whose body forgets to write its key: its requests carry none, so they
/// are not safe to repeat, and it is retried only as a function that is not idempotent.
#[retry(
    idempotency_key = true,
    max_attempts = 4,
    initial_backoff = "1ms",
    attempt_timeout = "1s"
)]
async fn create_forgetting_the_key(script: &Script) -> Result<u32, TestError> {
    // The key is there to be written, but nothing writes it.
    assert!(attempt().unwrap().idempotency_key().is_some());
    script.attempt().await
}

/// Says it is idempotent: retried after any failure, key or not.
#[retry(
    idempotent = true,
    idempotency_key = true,
    max_attempts = 4,
    initial_backoff = "1ms"
)]
async fn put_forgetting_the_key(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_wrote_no_key_is_retried_as_one_that_is_not_idempotent() {
    // Never a second request without its key after one that may have reached the server.
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    assert_eq!(
        create_forgetting_the_key(&s).await,
        Err(TestError::Fault(ErrorClass::Transient, None))
    );
    assert_eq!(s.attempts(), 1);
    let s = Script::new([Hang, Succeed(1)]);
    assert!(matches!(
        create_forgetting_the_key(&s).await,
        Err(TestError::TimedOut(_))
    ));
    assert_eq!(s.attempts(), 1);
    // What provably did not reach the server is still retried.
    let s = Script::new([
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::NotSent),
        Succeed(2),
    ]);
    assert_eq!(create_forgetting_the_key(&s).await, Ok(2));
    assert_eq!(s.attempts(), 3);
    // A function that says it is idempotent is retried all the same.
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(3)]);
    assert_eq!(put_forgetting_the_key(&s).await, Ok(3));
    assert_eq!(s.attempts(), 2);
}

/// Its own function: the warning is once per function for the whole process.
#[retry(idempotency_key = true, max_attempts = 4, initial_backoff = "1ms")]
async fn warned_once(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_function_that_forgets_its_key_is_warned_about_once() {
    let capture = crate::capture::Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    for _ in 0..3 {
        let s = Script::new([Fail(ErrorClass::Throttling), Fail(ErrorClass::Transient)]);
        assert!(warned_once(&s).await.is_err());
        // Retried after throttling (never sent), not after the 5xx.
        assert_eq!(s.attempts(), 2);
    }
    let warnings: Vec<_> = capture
        .of("retry", tracing::Level::WARN)
        .into_iter()
        .filter(|e| e.field("message").contains("idempotency key"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].field("function"), "warned_once");
    assert_eq!(warnings[0].field("attempt"), "1");
    assert!(
        warnings[0].field("message").contains("with_attempt"),
        "{warnings:?}"
    );
    // A function that writes its key is never warned about.
    let keys = Mutex::new(Vec::new());
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    assert_eq!(create_keyed(&s, &keys).await, Ok(1));
    assert_eq!(
        capture
            .of("retry", tracing::Level::WARN)
            .iter()
            .filter(|e| e.field("function") == "create_keyed")
            .count(),
        0
    );
}

/// A hedged function that sends keys: a hedge is another copy of the request, safe only when
/// the attempt it doubles wrote its key.
#[retry(idempotency_key = true, max_attempts = 3, hedge_after = "10ms")]
async fn hedged_keyed(script: &Script, write_key: bool) -> Result<u32, TestError> {
    if write_key {
        let _ = request_headers();
    }
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_hedge_doubles_only_an_attempt_that_wrote_its_key() {
    let s = Script::new([crate::util::Slow(Duration::from_millis(100))]);
    assert_eq!(hedged_keyed(&s, true).await, Ok(0));
    assert_eq!(
        s.attempts(),
        2,
        "hedged after 10 ms (two in flight at most)"
    );
    let s = Script::new([crate::util::Slow(Duration::from_millis(100))]);
    assert_eq!(hedged_keyed(&s, false).await, Ok(0));
    assert_eq!(s.attempts(), 1, "no copy of a request without its key");
}

/// An attempt that wrote its key and one that did not, in one call: the retry follows what the
/// failed attempt did.
#[retry(idempotency_key = true, max_attempts = 4, initial_backoff = "1ms")]
async fn keyed_on_odd_attempts(script: &Script) -> Result<u32, TestError> {
    if attempt().unwrap().number() % 2 == 1 {
        let _ = request_headers();
    }
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn the_retry_follows_what_the_failed_attempt_wrote() {
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Succeed(5),
    ]);
    // Attempt 1 wrote its key: retried. The mark stays with the call (its attempts run the
    // same body), so attempt 2's failure is retried as well.
    assert_eq!(keyed_on_odd_attempts(&s).await, Ok(5));
    assert_eq!(s.attempts(), 3);
}

#[retry(max_attempts = 2)]
async fn no_key(script: &Script) -> Result<Option<InvocationId>, TestError> {
    let key = attempt().unwrap().idempotency_key();
    script.attempt().await.map(|_| key)
}

/// `Policy::idempotency_key(true)` makes the attempts of a policy that says
/// `idempotent(false)` that write their key idempotent, whichever is written first, and lets
/// it hedge; its serde key is the same. One that writes none is retried as `idempotent` says,
/// `false` unless set.
#[tokio::test(start_paused = true)]
async fn a_policy_with_idempotency_keys_is_idempotent() {
    for policy in [
        Policy::new().idempotent(false).idempotency_key(true),
        Policy::new().idempotency_key(true).idempotent(false),
        Policy::new().idempotency_key(true),
        toml::from_str("idempotent = false\nidempotency_key = true").unwrap(),
    ] {
        let policy = policy
            .max_attempts(3)
            .initial_backoff(Duration::from_millis(1));
        let s = Script::new([Fail(ErrorClass::Transient), Succeed(9)]);
        let out = policy
            .retry(|| async {
                let a = attempt().unwrap();
                assert_eq!(a.idempotency_key(), Some(a.invocation_id()));
                let _ = request_headers();
                s.attempt().await
            })
            .await;
        assert_eq!(out, Ok(9));
        assert_eq!(s.attempts(), 2);
        // A closure that forgets the key.
        let s = Script::new([Fail(ErrorClass::Transient), Succeed(9)]);
        let out = policy.retry(|| s.attempt()).await;
        assert!(out.is_err());
        assert_eq!(s.attempts(), 1);
        assert!(policy.hedge_after(Duration::from_millis(5)).build().is_ok());
    }
    // Said idempotent: retried without its key too.
    let policy = Policy::new()
        .idempotency_key(true)
        .idempotent(true)
        .initial_backoff(Duration::from_millis(1));
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(9)]);
    assert_eq!(policy.retry(|| s.attempt()).await, Ok(9));
    // Turned off again: the policy is as `idempotent` says.
    let policy = Policy::new()
        .idempotent(false)
        .idempotency_key(true)
        .idempotency_key(false);
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(9)]);
    let out = policy
        .retry(|| async {
            assert_eq!(attempt().unwrap().idempotency_key(), None);
            s.attempt().await
        })
        .await;
    assert!(out.is_err());
    assert_eq!(s.attempts(), 1);
    let hedged = policy.hedge_after(Duration::from_millis(5)).build();
    assert!(
        hedged
            .unwrap_err()
            .to_string()
            .contains("idempotency_key(true)")
    );
}
