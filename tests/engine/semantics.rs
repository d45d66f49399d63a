//! The steps of one call (the README's "One call") on the paused clock: deadlines, server hints,
//! polling with `retry_if_ok`, the `on_retry` hook, seeded jitter, and what the caller gets.

use crate::util::{Fail, Hang, Hint, Script, Slow, Succeed, TestError};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retry_runtime::{ErrorClass, RetryEvent, TimeoutKind, retry, testing};
use std::sync::Mutex;
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

// --- Deadlines -------------------------------------------------------------------------------

#[retry(
    max_attempts = 10,
    initial_backoff = "1s",
    jitter = "none",
    deadline = "2500ms"
)]
async fn bounded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn no_sleep_crosses_the_deadline() {
    let s = Script::always(ErrorClass::Transient);
    let err = bounded(&s).await.unwrap_err();
    // Attempts at 0 and 1000; the next sleep (2 s) would end at 3000 > 2500, so the call
    // returns the last error at 1000 without sleeping.
    assert_eq!(s.starts_ms(), [0, 1000]);
    assert_eq!(s.now_ms(), 1000);
    assert_eq!(err, TestError::Fault(ErrorClass::Transient, None));
}

#[tokio::test(start_paused = true)]
async fn no_attempt_runs_past_the_deadline() {
    let s = Script::new([Fail(ErrorClass::Transient), Hang]);
    let err = bounded(&s).await.unwrap_err();
    assert_eq!(s.starts_ms(), [0, 1000]);
    assert_eq!(
        s.now_ms(),
        2500,
        "the hanging attempt is cut at the deadline"
    );
    let TestError::TimedOut(t) = err else {
        panic!("{err:?}")
    };
    assert_eq!(t.kind(), TimeoutKind::Deadline);
    assert_eq!(t.limit(), MS(2500));
}

/// Elapsed time never exceeds the deadline, whatever the jitter, the attempt durations and
/// the policy: a seeded sweep over 300 calls of four differently configured functions.
#[tokio::test(start_paused = true)]
async fn elapsed_never_exceeds_the_deadline() {
    #[retry(
        max_attempts = 50,
        initial_backoff = "20ms",
        jitter = "full",
        deadline = "1s"
    )]
    async fn full(script: &Script) -> Result<u32, TestError> {
        script.attempt().await
    }
    #[retry(
        max_attempts = 50,
        initial_backoff = "30ms",
        jitter = "decorrelated",
        deadline = "1200ms",
        attempt_timeout = "200ms"
    )]
    async fn decorrelated(script: &Script) -> Result<u32, TestError> {
        script.attempt().await
    }
    #[retry(
        max_attempts = 50,
        initial_backoff = "10ms",
        multiplier = 3,
        jitter = "equal",
        deadline = "700ms",
        attempt_timeout = "90ms",
        attempt_timeout_multiplier = 1.5,
        max_attempt_timeout = "400ms"
    )]
    async fn equal(script: &Script) -> Result<u32, TestError> {
        script.attempt().await
    }
    #[retry(
        max_attempts = 50,
        initial_backoff = "15ms",
        jitter = 0.3,
        deadline = "900ms"
    )]
    async fn fraction(script: &Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let mut rng = StdRng::seed_from_u64(2026);
    // Calls that ran until their deadline: the sweep reaches the bound it checks.
    let mut at_the_deadline = 0;
    for round in 0..75u64 {
        let steps: Vec<_> = (0..20)
            .map(|_| match rng.random_range(0..4) {
                0 => Slow(MS(rng.random_range(0..300))),
                1 => Hang,
                2 => Fail(ErrorClass::Timeout),
                _ => Fail(ErrorClass::Transient),
            })
            .chain([Fail(ErrorClass::Transient)])
            .collect();
        let limits = [1000, 1200, 700, 900];
        for (which, limit) in limits.into_iter().enumerate() {
            let s = Script::new(steps.clone());
            let seeded = testing::Overrides::new().seed(round * 4 + which as u64);
            let _ = match which {
                0 => testing::scope(seeded, full(&s)).await,
                1 => testing::scope(seeded, decorrelated(&s)).await,
                2 => testing::scope(seeded, equal(&s)).await,
                _ => testing::scope(seeded, fraction(&s)).await,
            };
            assert!(
                s.now_ms() <= limit,
                "round {round}, fn {which}: {} ms > {limit} ms (starts {:?})",
                s.now_ms(),
                s.starts_ms()
            );
            at_the_deadline += u32::from(s.now_ms() == limit);
        }
    }
    assert!(at_the_deadline >= 30, "{at_the_deadline} of 300 calls");
}

#[retry(max_attempts = 3, initial_backoff = "1s", deadline = "5s")]
async fn quick(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_success_under_a_deadline_returns_at_once() {
    let s = Script::new([Slow(MS(300))]);
    assert_eq!(quick(&s).await, Ok(0));
    assert_eq!(s.now_ms(), 300);
}

// --- Server hints ----------------------------------------------------------------------------

static HINTS: Mutex<Vec<(u32, Duration, ErrorClass)>> = Mutex::new(Vec::new());

fn record_hint(ev: &RetryEvent<'_, TestError>) {
    HINTS
        .lock()
        .unwrap()
        .push((ev.attempt(), ev.delay(), ev.class()));
}

#[retry(max_attempts = 4, initial_backoff = "1s", max_backoff = "5s", jitter = "full", on_retry = record_hint)]
async fn hinted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_server_hint_replaces_the_backoff_without_jitter() {
    let s = Script::new([
        Hint(ErrorClass::Throttling, MS(3000)),
        Hint(ErrorClass::Transient, MS(1250)),
        Succeed(8),
    ]);
    assert_eq!(hinted(&s).await, Ok(8));
    assert_eq!(s.starts_ms(), [0, 3000, 4250]);
    assert_eq!(
        *HINTS.lock().unwrap(),
        [
            (1, MS(3000), ErrorClass::Throttling),
            (2, MS(1250), ErrorClass::Transient)
        ]
    );
}

#[retry(
    max_attempts = 4,
    initial_backoff = "1s",
    max_backoff = "5s",
    jitter = "full"
)]
async fn hinted_and_recorded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_recorded_retry_says_whether_its_delay_was_the_servers_hint() {
    let s = Script::new([
        Hint(ErrorClass::Throttling, MS(700)),
        Fail(ErrorClass::Transient),
        Succeed(3),
    ]);
    let (out, record) = retry_runtime::testing::record(
        retry_runtime::testing::Overrides::new().instant(),
        hinted_and_recorded(&s),
    )
    .await;
    assert_eq!(out, Ok(3));
    let retries = record.retries();
    assert_eq!(
        (retries[0].delay, retries[0].hint),
        (MS(700), Some(MS(700)))
    );
    assert_eq!(retries[1].hint, None, "the backoff: {:?}", retries[1].delay);
}

static HINT_BUCKET: retry_runtime::TokenBucket = retry_runtime::TokenBucket::standard();

#[retry(bucket = HINT_BUCKET, max_attempts = 4, max_backoff = "5s")]
async fn hint_too_long(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_hint_longer_than_max_backoff_ends_the_retries() {
    let s = Script::new([Hint(ErrorClass::Throttling, MS(5001)), Succeed(1)]);
    assert_eq!(
        hint_too_long(&s).await,
        Err(TestError::Fault(ErrorClass::Throttling, Some(MS(5001))))
    );
    assert_eq!(s.attempts(), 1);
    assert_eq!(s.now_ms(), 0);
    assert_eq!(HINT_BUCKET.available(), 500, "the retry's cost went back");

    // The bucket is this function's: a retry that failed keeps its cost; the retry the long
    // hint ended gives its own back.
    let s = Script::new([
        Fail(ErrorClass::Transient),
        Hint(ErrorClass::Throttling, MS(5001)),
    ]);
    assert_eq!(
        hint_too_long(&s).await,
        Err(TestError::Fault(ErrorClass::Throttling, Some(MS(5001))))
    );
    assert_eq!(s.attempts(), 2);
    assert_eq!(HINT_BUCKET.available(), 495);
}

fn retry_everything(_: &TestError) -> bool {
    true
}

fn hint_from_error(e: &TestError) -> Option<Duration> {
    match e {
        TestError::Fault(_, h) => h.map(|h| h * 2),
        TestError::TimedOut(_) | TestError::CircuitOpen(_) | TestError::Refused(_) => None,
    }
}

#[retry(retry_on = retry_everything, retry_after = hint_from_error, max_attempts = 2, jitter = "none")]
async fn custom_hint(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(retry_on = retry_everything, max_attempts = 2, jitter = "none")]
async fn predicate_without_hint(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn retry_after_goes_with_retry_on() {
    let s = Script::new([Hint(ErrorClass::Permanent, MS(100)), Succeed(2)]);
    assert_eq!(
        custom_hint(&s).await,
        Ok(2),
        "retry_on says retry, even a Permanent"
    );
    assert_eq!(s.starts_ms(), [0, 200], "retry_after's hint, doubled");

    // retry_on replaces Classify, hints included: without retry_after, the backoff applies.
    let s = Script::new([Hint(ErrorClass::Permanent, MS(100)), Succeed(2)]);
    assert_eq!(predicate_without_hint(&s).await, Ok(2));
    assert_eq!(s.starts_ms(), [0, 1000]);
}

// --- Polling ---------------------------------------------------------------------------------

fn not_ready(v: &u32) -> bool {
    *v == 0
}

static POLL_BUCKET: retry_runtime::TokenBucket =
    retry_runtime::TokenBucket::standard().with_capacity(50);

#[retry(retry_if_ok = not_ready, bucket = POLL_BUCKET, max_attempts = 5, initial_backoff = "100ms", jitter = "none", deadline = "2s")]
async fn poll(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn polling_repeats_while_the_predicate_holds() {
    let s = Script::new([
        Succeed(0),
        Succeed(0),
        Fail(ErrorClass::Transient),
        Succeed(42),
    ]);
    assert_eq!(poll(&s).await, Ok(42));
    // Backoff 100, 200, 400 between the attempts: the increasing poll delay.
    assert_eq!(s.starts_ms(), [0, 100, 300, 700]);
    // Repeats take no retry cost; the error's retry took 5 and its success refunded them.
    assert_eq!(POLL_BUCKET.available(), 50);
}

#[tokio::test(start_paused = true)]
async fn polling_returns_the_last_ok_when_attempts_run_out() {
    let s = Script::new([Succeed(0)]);
    assert_eq!(poll(&s).await, Ok(0));
    assert_eq!(s.attempts(), 5);
    assert_eq!(s.starts_ms(), [0, 100, 300, 700, 1500]);
}

#[tokio::test(start_paused = true)]
async fn polling_returns_the_last_ok_when_the_deadline_cuts_an_attempt() {
    // Each attempt takes 600 ms and answers "not ready": 0..600, sleep 100, 700..1300,
    // sleep 200, then 1500..2100 would pass the 2 s deadline, which cuts it at 2000. The
    // caller gets the last status, not a timeout.
    let s = Script::new([Slow(MS(600))]);
    assert_eq!(poll(&s).await, Ok(0));
    assert_eq!(s.starts_ms(), [0, 700, 1500]);
    assert_eq!(s.now_ms(), 2000);
}

#[tokio::test(start_paused = true)]
async fn polling_returns_the_last_ok_when_the_deadline_refuses_a_sleep() {
    // 0..900, sleep 100, 1000..1900: the next sleep (200 ms) would reach 2100.
    let s = Script::new([Slow(MS(900))]);
    assert_eq!(poll(&s).await, Ok(0));
    assert_eq!(s.starts_ms(), [0, 1000]);
    assert_eq!(s.now_ms(), 1900);
}

// --- The on_retry hook and seeded schedules -------------------------------------------------

/// (attempt, delay, class of the error, repeat) of each event.
type Seen = (u32, Duration, Option<ErrorClass>, bool);

static EVENTS: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

fn record(ev: &RetryEvent<'_, TestError>) {
    let class = ev.error().map(retry_runtime::Classify::classify);
    EVENTS
        .lock()
        .unwrap()
        .push((ev.attempt(), ev.delay(), class, ev.is_repeat()));
    assert_eq!(ev.function(), "observed");
    assert_eq!(ev.partition(), Some("semantics-observed"));
}

#[retry(on_retry = record, partition = "semantics-observed", max_attempts = 6, initial_backoff = "100ms", max_backoff = "1s")]
async fn observed(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn on_retry_sees_each_retry_before_its_sleep_and_seeds_fix_the_schedule() {
    let run = |seed| async move {
        EVENTS.lock().unwrap().clear();
        let s = Script::new([
            Fail(ErrorClass::Transient),
            Fail(ErrorClass::Throttling),
            Fail(ErrorClass::NotSent),
            Succeed(1),
        ]);
        let out = testing::scope(testing::Overrides::new().seed(seed), observed(&s)).await;
        assert_eq!(out, Ok(1));
        (s.starts_ms(), EVENTS.lock().unwrap().clone())
    };
    let (starts, events) = run(7).await;
    assert_eq!(events.len(), 3);
    let mut at = 0;
    for (i, ((attempt, delay, class, repeat), start)) in events.iter().zip(&starts[1..]).enumerate()
    {
        let n = u32::try_from(i).unwrap() + 1;
        assert_eq!(*attempt, n);
        assert!(!repeat);
        // Full jitter: U[0, 100 ms * 2^(n-1)].
        assert!(*delay <= MS(100) * 2u32.pow(n - 1), "{delay:?}");
        at += u64::try_from(delay.as_millis()).unwrap();
        assert!(
            start.abs_diff(at) <= 1,
            "attempt {} at {start}, slept {at}",
            n + 1
        );
        at = *start;
        assert!(class.is_some());
    }
    assert_eq!(
        events.iter().map(|e| e.2.unwrap()).collect::<Vec<_>>(),
        [
            ErrorClass::Transient,
            ErrorClass::Throttling,
            ErrorClass::NotSent
        ]
    );
    // The same seed gives the same schedule; another seed another one.
    assert_eq!(run(7).await, (starts.clone(), events.clone()));
    assert_ne!(run(8).await.1, events);
}

#[tokio::test(start_paused = true)]
async fn instant_overrides_skip_the_sleeps_and_caps_limit_attempts() {
    let s = Script::always(ErrorClass::Transient);
    let instant = testing::Overrides::new().instant();
    assert!(testing::scope(instant, observed(&s)).await.is_err());
    assert_eq!(s.attempts(), 6);
    assert_eq!(s.now_ms(), 0, "no time passed");

    let s = Script::always(ErrorClass::Transient);
    let capped = testing::Overrides::new().instant().max_attempts(2);
    assert!(testing::scope(capped, observed(&s)).await.is_err());
    assert_eq!(s.attempts(), 2);
}

// --- What callers get ------------------------------------------------------------------------

#[retry(max_attempts = 3, initial_backoff = "1ms")]
async fn aliased(script: &Script) -> std::io::Result<u32> {
    script
        .attempt()
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

#[tokio::test(start_paused = true)]
async fn the_caller_gets_the_last_real_error_through_an_alias() {
    let s = Script::always(ErrorClass::Transient);
    let err = aliased(&s).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(s.attempts(), 3);
}

#[retry(max_attempts = 3, initial_backoff = "1ms")]
async fn question_mark(script: &Script, early: bool) -> Result<u32, TestError> {
    if early {
        return Ok(99);
    }
    let v = script.attempt().await?;
    Ok(v + 1)
}

#[tokio::test(start_paused = true)]
async fn question_mark_and_return_end_one_attempt() {
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    assert_eq!(question_mark(&s, false).await, Ok(2));
    assert_eq!(s.attempts(), 2);
    assert_eq!(question_mark(&s, true).await, Ok(99));
}

#[retry(
    max_attempts = 3,
    initial_backoff = "1ms",
    deadline = "10s",
    clone(body)
)]
async fn consumes(body: Vec<u8>, script: &Script) -> Result<usize, TestError> {
    let owned: Vec<u8> = body; // moved: each attempt gets its own clone
    script.attempt().await?;
    Ok(owned.len())
}

#[tokio::test(start_paused = true)]
async fn cloned_arguments_are_fresh_for_each_attempt() {
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(0)]);
    assert_eq!(consumes(vec![1, 2, 3], &s).await, Ok(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_future_is_send() {
    #[retry(max_attempts = 2, initial_backoff = "1ms", attempt_timeout = "5s")]
    async fn remote(script: std::sync::Arc<Script>) -> Result<u32, TestError> {
        script.attempt().await
    }
    let s = std::sync::Arc::new(Script::new([Fail(ErrorClass::Transient), Succeed(5)]));
    let handle = tokio::spawn(remote(s.clone()));
    assert_eq!(handle.await.unwrap(), Ok(5));
    assert_eq!(s.attempts(), 2);
}

static PREDICATE_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn counted_not_ready(v: &u32) -> bool {
    PREDICATE_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    *v == 0
}

#[retry(retry_if_ok = counted_not_ready, max_attempts = 4, initial_backoff = "10ms", jitter = "none")]
async fn poll_counted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn the_polling_predicate_runs_once_per_successful_attempt() {
    let s = Script::new([
        Succeed(0),
        Fail(ErrorClass::Transient),
        Succeed(0),
        Succeed(5),
    ]);
    assert_eq!(poll_counted(&s).await, Ok(5));
    assert_eq!(s.attempts(), 4);
    assert_eq!(
        PREDICATE_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "three Ok outcomes, one call each"
    );
}
