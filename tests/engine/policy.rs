//! `retry_runtime::Policy`: the engine without the attribute, on tokio's paused clock. The
//! same keys, plugs and shared state as `#[retry]` (the timelines agree to the millisecond in
//! `timelines.rs`); here, what is particular to a policy value.

use crate::util::{self, TestError};
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{
    CircuitOpen, ErrorClass, Jitter, Partition, Policy, RetryEvent, TimedOut, TokenBucket, attempt,
    retry,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn instant() -> Overrides {
    Overrides::new().instant()
}

/// Fails with `class` until `fails` attempts have failed, then answers the attempt number.
fn flaky(
    calls: &AtomicU32,
    fails: u32,
    class: ErrorClass,
) -> impl Future<Output = Result<u32, TestError>> + use<> {
    let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
    async move {
        if n <= fails {
            Err(TestError::fault(class))
        } else {
            Ok(n)
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_closure_is_retried_with_the_attributes_schedule() {
    let policy = Policy::new()
        .max_attempts(4)
        .initial_backoff(MS(100))
        .jitter(Jitter::None);
    let calls = AtomicU32::new(0);
    let (out, record) = testing::record(
        instant(),
        policy.retry(|| flaky(&calls, 2, ErrorClass::Transient)),
    )
    .await;
    assert_eq!(out, Ok(3));
    assert_eq!(record.delays(), [MS(100), MS(200)]);
}

#[tokio::test(start_paused = true)]
async fn the_closure_reads_its_attempt() {
    let policy = Policy::new()
        .name("fetch")
        .max_attempts(2)
        .jitter(Jitter::None);
    let seen = std::sync::Mutex::new(Vec::new());
    let out: Result<(), TestError> = policy
        .retry(|| async {
            let a = attempt().expect("inside the closure's attempt");
            seen.lock()
                .unwrap()
                .push((a.number(), a.max_attempts(), a.function()));
            Err(TestError::fault(ErrorClass::Transient))
        })
        .await;
    assert!(out.is_err());
    assert_eq!(*seen.lock().unwrap(), [(1, 2, "fetch"), (2, 2, "fetch")]);
}

#[tokio::test(start_paused = true)]
async fn classify_retry_after_retry_if_ok_and_on_retry_plug_in() {
    // A message error, classified by a function returning `bool`, with a hint of 3 s.
    let hooked = AtomicU32::new(0);
    let policy = Policy::new()
        .max_attempts(3)
        .max_backoff(Duration::from_secs(10))
        .classify(|e: &String| e.starts_with("busy"))
        .retry_after(|_: &String| Some(Duration::from_secs(3)))
        .on_retry(|e: &RetryEvent<'_, String>| {
            assert_eq!(e.class(), ErrorClass::Transient);
            hooked.fetch_add(1, Ordering::SeqCst);
        });
    let (out, record) = testing::record(
        instant(),
        policy.retry(|| async { Err::<(), _>("busy: try later".to_string()) }),
    )
    .await;
    assert_eq!(out, Err("busy: try later".to_string()));
    assert_eq!(record.delays(), [Duration::from_secs(3); 2]);
    assert_eq!(hooked.load(Ordering::SeqCst), 2);
    // `false` is permanent: one attempt.
    let calls = AtomicU32::new(0);
    let out = Policy::new()
        .classify(|_: &String| false)
        .retry(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>("no such key".to_string()) }
        })
        .await;
    assert!(out.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Polling: repeat while the job is pending.
    let polls = AtomicU32::new(0);
    let policy = Policy::new()
        .max_attempts(5)
        .initial_backoff(MS(10))
        .retry_if_ok(|done: &bool| !done);
    let out: Result<bool, TestError> = testing::scope(
        instant(),
        policy.retry(|| {
            let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(n >= 3) }
        }),
    )
    .await;
    assert_eq!(out, Ok(true));
    assert_eq!(polls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_policy_that_is_not_idempotent_repeats_only_what_never_left() {
    let policy = Policy::new().max_attempts(5).idempotent(false);
    let calls = AtomicU32::new(0);
    let (_, record) = testing::record(
        instant(),
        policy.retry(|| flaky(&calls, 10, ErrorClass::Transient)),
    )
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
    let calls = AtomicU32::new(0);
    let out = testing::scope(
        instant(),
        policy.retry(|| flaky(&calls, 2, ErrorClass::NotSent)),
    )
    .await;
    assert_eq!(out, Ok(3));
}

#[retry(max_attempts = 2, initial_backoff = "1ms", partition = "policy-shared")]
async fn shared_by_attribute() -> Result<(), TestError> {
    Err(TestError::fault(ErrorClass::Transient))
}

#[tokio::test(start_paused = true)]
async fn a_policy_shares_a_partitions_bucket_with_functions() {
    let bucket = || Partition::named("policy-shared").bucket().available();
    let policy = Policy::new().max_attempts(2).partition("policy-shared");
    let _ = testing::scope(
        instant(),
        policy.retry(|| async { Err::<(), _>(TestError::fault(ErrorClass::Timeout)) }),
    )
    .await;
    assert_eq!(bucket(), 490);
    let _ = testing::scope(instant(), shared_by_attribute()).await;
    assert_eq!(bucket(), 485);
    // A name read at run time finds the same partition.
    let name = String::from("policy-shared");
    let policy = Policy::new().max_attempts(2).partition_named(&name);
    let _ = testing::scope(
        instant(),
        policy.retry(|| async { Err::<(), _>(TestError::fault(ErrorClass::Transient)) }),
    )
    .await;
    assert_eq!(bucket(), 480);
}

#[tokio::test(start_paused = true)]
async fn a_policy_kept_for_many_calls_keeps_one_bucket() {
    static SMALL: TokenBucket = TokenBucket::standard().with_capacity(10);
    let policy = Arc::new(Policy::new().max_attempts(3).bucket(&SMALL));
    // Each failing call spends two retries of 5 until the bucket is short.
    let (_, first) = testing::record(
        instant(),
        policy.retry(|| async { Err::<(), _>(TestError::fault(ErrorClass::Transient)) }),
    )
    .await;
    assert!(first.early_ends().is_empty());
    assert_eq!(SMALL.available(), 0);
    let (_, second) = testing::record(
        instant(),
        policy.retry(|| async { Err::<(), _>(TestError::fault(ErrorClass::Transient)) }),
    )
    .await;
    assert_eq!(second.early_ends()[0].reason, EarlyEnd::BucketEmpty);
}

#[test]
fn build_reports_every_incoherence_at_once() {
    let err = Policy::new()
        .max_attempts(0)
        .initial_backoff(Duration::from_secs(5))
        .max_backoff(Duration::from_secs(1))
        .max_attempt_timeout(Duration::from_secs(3))
        .deadline(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems(),
        [
            "max_attempts must be at least 1",
            "max_backoff (1s) is below initial_backoff (5s)",
            "deadline must be above zero",
            "max_attempt_timeout needs attempt_timeout",
        ]
    );
    assert!(Policy::new().max_attempts(5).build().is_ok());
}

/// `tokio::spawn` asks for a `Send + 'static` future: a policy's call is one when its
/// closure and outputs are.
#[tokio::test(start_paused = true)]
async fn a_policys_future_can_be_spawned() {
    static SPAWNED: Policy = Policy::new().max_attempts(2);
    let out = tokio::spawn(SPAWNED.retry(|| async { Ok::<_, std::io::Error>(7) }))
        .await
        .unwrap();
    assert_eq!(out.unwrap(), 7);
    let shared = Arc::new(Policy::new().max_attempts(2));
    let out =
        tokio::spawn(async move { shared.retry(|| async { Ok::<_, std::io::Error>(8) }).await })
            .await
            .unwrap();
    assert_eq!(out.unwrap(), 8);
}

#[test]
fn a_policy_comes_from_a_configuration_file() {
    let policy: Policy<TimedOut> = toml::from_str(
        r#"
        mode = "adaptive"
        max_attempts = 5
        initial_backoff = "200ms"
        multiplier = 1.5
        jitter = "none"
        attempt_timeout = "1s"
        deadline = "10s"
        idempotent = false
        partition = "policy-from-toml"
        "#,
    )
    .unwrap();
    let text = format!("{policy:?}");
    assert!(text.contains("idempotent: false"), "{text}");
    assert!(
        text.contains("partition: Some(\"policy-from-toml\")"),
        "{text}"
    );
    let rt = util::paused_runtime();
    let (out, record) = rt.block_on(testing::record(
        instant(),
        policy.retry(|| async { Err::<(), _>(TestError::fault(ErrorClass::Throttling)) }),
    ));
    assert!(out.is_err());
    // Throttling is retried even by a function that is not idempotent: 4 retries, 200 ms
    // growing by 1.5, without jitter.
    assert_eq!(record.delays(), [MS(200), MS(300), MS(450), MS(675)]);

    // Every mistake is an error that says what is wrong, never a panic.
    let unknown = toml::from_str::<Policy>("max_retries = 3").unwrap_err();
    assert!(
        unknown.to_string().contains("unknown field `max_retries`"),
        "{unknown}"
    );
    let unit = toml::from_str::<Policy<TimedOut>>("deadline = 10").unwrap_err();
    assert!(unit.to_string().contains("deadline needs a unit"), "{unit}");
    // A misspelt value says which one it most likely meant, as the attribute and the
    // environment do.
    for (text, meant) in [
        (
            "jitter = \"ful\"",
            "did you mean \"full\"? jitter is \"full\", \"equal\"",
        ),
        (
            "mode = \"standrd\"",
            "did you mean \"standard\"? mode is \"standard\" or",
        ),
        (
            "hedge_after = \"p955\"",
            "did you mean \"p95\"? hedge_after is a duration",
        ),
        (
            "hedge_after = \"95th\"",
            "did you mean \"p95\"? hedge_after is a duration",
        ),
    ] {
        let misspelt = toml::from_str::<Policy>(text).unwrap_err();
        assert!(misspelt.to_string().contains(meant), "{text}: {misspelt}");
    }
    let unknown_mode = toml::from_str::<Policy>("mode = \"turbo\"").unwrap_err();
    assert!(
        !unknown_mode.to_string().contains("did you mean"),
        "{unknown_mode}"
    );
    let incoherent =
        toml::from_str::<Policy<TimedOut>>("attempt_timeout = \"5s\"\ndeadline = \"1s\"")
            .unwrap_err();
    assert!(
        incoherent
            .to_string()
            .contains("attempt_timeout (5s) is longer than deadline (1s)"),
        "{incoherent}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_policy_puts_its_calls_behind_a_breaker() {
    use retry_runtime::{BreakerState, CircuitBreaker};
    static BREAKER: CircuitBreaker = CircuitBreaker::new().with_min_calls(2);
    let policy = Policy::new().max_attempts(1).breaker(&BREAKER);
    let calls = AtomicU32::new(0);
    for _ in 0..2 {
        let out = policy
            .retry(|| flaky(&calls, 10, ErrorClass::Transient))
            .await;
        assert!(matches!(out, Err(TestError::Fault(..))));
    }
    assert_eq!(BREAKER.state(), BreakerState::Open);
    // Refused without running the closure's attempt, with the error's own type.
    let out = policy
        .retry(|| flaky(&calls, 10, ErrorClass::Transient))
        .await;
    assert!(matches!(out, Err(TestError::CircuitOpen(_))), "{out:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // A message error takes the refusal's description.
    let out: Result<(), String> = Policy::new()
        .breaker(&BREAKER)
        .classify(|_: &String| true)
        .retry(|| async { Ok(()) })
        .await;
    assert!(
        out.as_ref()
            .unwrap_err()
            .starts_with("refused by guard `CircuitBreaker`: the call was not made"),
        "{out:?}"
    );
}

/// The crate's own error type: no `Classify`, no `From<TimedOut>`, no `From<CircuitOpen>`.
#[derive(Debug, PartialEq)]
struct ApiError {
    status: u16,
}

/// Answers `status` errors until `fails` attempts have failed, then the attempt number.
fn api(
    calls: &AtomicU32,
    fails: u32,
    status: u16,
) -> impl Future<Output = Result<u32, ApiError>> + use<> {
    let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
    async move {
        if n <= fails {
            Err(ApiError { status })
        } else {
            Ok(n)
        }
    }
}

/// backon's one line, over an error type that knows nothing of retries: the classifier's
/// argument is inferred from the closure's `Result`, and an untimed policy asks nothing more.
#[tokio::test(start_paused = true)]
async fn any_error_type_in_one_line() {
    let calls = AtomicU32::new(0);
    let (out, record) = testing::record(
        instant(),
        Policy::new()
            .max_attempts(4)
            .retry(|| api(&calls, 2, 503))
            .classify(|e| e.status >= 500),
    )
    .await;
    assert_eq!(out, Ok(3));
    assert_eq!(record.attempts("policy"), 3);
    // A 404 is permanent: one attempt, its own error back.
    let calls = AtomicU32::new(0);
    let out = Policy::new()
        .retry(|| api(&calls, 5, 404))
        .classify(|e| e.status >= 500)
        .await;
    assert_eq!(out, Err(ApiError { status: 404 }));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The call's own classifier may return an `ErrorClass`, and its hook and polling
    // predicate are inferred too.
    let calls = AtomicU32::new(0);
    let hooked = std::sync::Mutex::new(Vec::new());
    let out = Policy::new()
        .max_attempts(5)
        .retry(|| api(&calls, 1, 429))
        .classify(|e| {
            if e.status == 429 {
                ErrorClass::Throttling
            } else {
                ErrorClass::Permanent
            }
        })
        .on_retry(|event| {
            let status = event.error().map(|e| e.status);
            hooked.lock().unwrap().push((event.class(), status));
        })
        .retry_if_ok(|n| *n < 3)
        .await;
    assert_eq!(out, Ok(3));
    // The throttled attempt, then the poll of the success that `retry_if_ok` repeats.
    assert_eq!(
        *hooked.lock().unwrap(),
        [
            (ErrorClass::Throttling, Some(429)),
            (ErrorClass::Transient, None)
        ]
    );
}

/// A policy with a classifier is a `static`: `classify` takes a function, and the static's
/// type names the error, which infers the closure's argument.
#[tokio::test(start_paused = true)]
async fn a_static_policy_with_a_classifier() {
    static API: Policy<fn(&ApiError) -> bool> = Policy::new()
        .max_attempts(3)
        .initial_backoff(Duration::from_millis(10))
        .classify(|e| e.status >= 500);
    let calls = AtomicU32::new(0);
    let (out, record) = testing::record(instant(), API.retry(|| api(&calls, 1, 502))).await;
    assert_eq!(out, Ok(2));
    assert_eq!(record.attempts("policy"), 2);
    // A static with a hint reader beside its classifier, and timeouts.
    type ClassAndHint = (
        fn(&ErrorClass) -> ErrorClass,
        fn(&ErrorClass) -> Option<Duration>,
    );
    static TIMED: Policy<ClassAndHint> = Policy::new()
        .deadline(Duration::from_secs(1))
        .classify(|e| *e)
        .retry_after(|_| Some(Duration::from_millis(300)));
    let calls = AtomicU32::new(0);
    let (out, record) = testing::record(
        instant(),
        TIMED.retry(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(ErrorClass::Transient) }
        }),
    )
    .await;
    assert_eq!(out, Err(ErrorClass::Transient));
    assert_eq!(record.delays(), [MS(300), MS(300)]);
}

/// `ErrorClass` is an error type a timed policy can use: a timed-out attempt becomes
/// `ErrorClass::Timeout`.
#[tokio::test(start_paused = true)]
async fn error_class_is_the_error_of_a_timed_policy() {
    let policy = Policy::new()
        .max_attempts(2)
        .attempt_timeout(Duration::from_secs(1))
        .deadline(Duration::from_secs(5));
    let calls = AtomicU32::new(0);
    let (out, record) = testing::record(
        instant(),
        policy.retry(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok::<(), ErrorClass>(())
            }
        }),
    )
    .await;
    assert_eq!(out, Err(ErrorClass::Timeout));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(record.attempts("policy"), 2);
}

/// The keys whose attribute value takes several forms take them on `Policy` too, and a
/// string that does not parse is a problem `build` reports.
#[test]
fn the_builders_take_the_attributes_value_forms() {
    let ok = Policy::new()
        .hedge_after("p95")
        .min_hedge_after(MS(5))
        .max_hedge_after(MS(500))
        .max_in_flight(3)
        .budget("20%")
        .breaker("50%")
        .build();
    assert!(ok.is_ok(), "{:?}", ok.err());
    let fixed = Policy::new().hedge_after("50ms").build();
    assert!(fixed.is_ok(), "{:?}", fixed.err());
    let bad = Policy::new()
        .hedge_after("p955")
        .budget("twenty")
        .breaker("150%")
        .build()
        .unwrap_err();
    let problems = bad.problems().join("\n");
    assert!(problems.contains("did you mean \"p95\""), "{problems}");
    assert!(
        problems.contains("budget: \"twenty\" is not a share"),
        "{problems}"
    );
    assert!(
        problems.contains("breaker: \"150%\" is not a failure ratio"),
        "{problems}"
    );
}

/// A policy from configuration takes every key whose value is not code; a `Policy` without
/// timeouts refuses a timeout, and one without a breaker refuses a breaker.
#[test]
fn the_serde_form_takes_every_value_key() {
    let policy: Policy<TimedOut> = toml::from_str(
        r#"
        max_attempts = 4
        deadline = "10s"
        budget = "20%"
        bucket = "none"
        profile = "billing-eu"
        hedge_after = "p90"
        max_hedge_after = "200ms"
        "#,
    )
    .unwrap();
    let text = format!("{policy:?}");
    assert!(text.contains("max_attempts: Some(4)"), "{text}");
    let untimed = toml::from_str::<Policy>("deadline = \"10s\"").unwrap_err();
    assert!(
        untimed.to_string().contains("read a `Policy<TimedOut>`"),
        "{untimed}"
    );
    let breaker = toml::from_str::<Policy>("breaker = \"50%\"").unwrap_err();
    assert!(
        breaker.to_string().contains("read a `Policy<Refused>`"),
        "{breaker}"
    );
    let ratio = toml::from_str::<Policy<CircuitOpen>>("breaker = \"150%\"").unwrap_err();
    assert!(
        ratio.to_string().contains("is not a failure ratio"),
        "{ratio}"
    );
    let bucket = toml::from_str::<Policy>("bucket = \"shared\"").unwrap_err();
    assert!(bucket.to_string().contains("is not \"none\""), "{bucket}");
    let profile = toml::from_str::<Policy>("profile = \"a b\"").unwrap_err();
    assert!(
        profile.to_string().contains("is not a profile name"),
        "{profile}"
    );
    let share = toml::from_str::<Policy>("budget = \"lots\"").unwrap_err();
    assert!(share.to_string().contains("is not a share"), "{share}");
}

/// A breaker read from configuration guards the calls as `Policy::breaker("50%")` does: after
/// its 20 calls of a window all fail, the next ones are refused without running the closure.
#[tokio::test(start_paused = true)]
async fn a_breaker_from_configuration_opens_and_refuses() {
    let policy: Policy<CircuitOpen> =
        toml::from_str("max_attempts = 1\nbreaker = \"50%\"").unwrap();
    let runs = AtomicU32::new(0);
    let mut refused = 0;
    for _ in 0..30 {
        let out = policy
            .retry(|| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(TestError::fault(ErrorClass::Transient))
            })
            .await;
        if matches!(out, Err(TestError::CircuitOpen(_))) {
            refused += 1;
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 20);
    assert_eq!(refused, 10);
    // Without the key, the same type has no breaker: every call runs.
    let open: Policy<CircuitOpen> = toml::from_str("max_attempts = 1").unwrap();
    runs.store(0, Ordering::SeqCst);
    for _ in 0..30 {
        let _ = open
            .retry(|| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(TestError::fault(ErrorClass::Transient))
            })
            .await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 30);
}

/// `bucket(TokenBucket::none())` in code, as `bucket = "none"` in the attribute: no bucket bounds the
/// retries, where the policy's own bucket (500 tokens, 5 a retry) runs short after 50 calls
/// of two retries each.
#[tokio::test(start_paused = true)]
async fn bucket_none_never_runs_short() {
    async fn calls(policy: &Policy) -> (u32, usize) {
        let runs = AtomicU32::new(0);
        let mut short = 0;
        for _ in 0..60 {
            let (_, record) = testing::record(
                instant(),
                policy.retry(|| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Err::<(), _>(TestError::fault(ErrorClass::Transient))
                }),
            )
            .await;
            short += record
                .early_ends()
                .iter()
                .filter(|e| e.reason == EarlyEnd::BucketEmpty)
                .count();
        }
        (runs.load(Ordering::SeqCst), short)
    }
    let own = Policy::new().max_attempts(3);
    assert_eq!(calls(&own).await, (50 * 3 + 10, 10));
    static NONE: Policy = Policy::new().max_attempts(3).bucket(TokenBucket::none());
    assert_eq!(calls(&NONE).await, (60 * 3, 0));
    // The same from configuration.
    let read: Policy = toml::from_str("max_attempts = 3\nbucket = \"none\"").unwrap();
    assert_eq!(calls(&read).await, (60 * 3, 0));
}

/// A task that builds a policy and awaits its call can be spawned, and so can a boxed
/// future of a generic function.
#[tokio::test(start_paused = true)]
async fn a_call_with_its_own_classifier_can_be_spawned() {
    fn boxed<E>(
        err: E,
        transient: fn(&E) -> bool,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<u32, E>> + Send>>
    where
        E: Clone + Send + Sync + 'static,
    {
        Box::pin(async move {
            let policy = Policy::new().max_attempts(2).initial_backoff(MS(1));
            policy
                .retry(|| {
                    let err = err.clone();
                    async move { Err(err) }
                })
                .classify(transient)
                .await
        })
    }
    let out = tokio::spawn(async move {
        let policy = Policy::new().max_attempts(3).initial_backoff(MS(1));
        let calls = AtomicU32::new(0);
        policy
            .retry(|| api(&calls, 2, 500))
            .classify(|e| e.status >= 500)
            .await
    })
    .await
    .unwrap();
    assert_eq!(out, Ok(3));
    let out = tokio::spawn(boxed("down".to_string(), |_| true))
        .await
        .unwrap();
    assert_eq!(out, Err("down".to_string()));
}

/// A service that builds its policy per request, with its caller's time left as the deadline,
/// resolves 10,000 policies of distinct settings: `config::explain()` lists the first 16 of
/// the name, and the list does not grow with the requests (nor each resolution's scan of it).
#[tokio::test(start_paused = true)]
async fn policies_built_per_request_keep_explain_to_sixteen_entries_a_name() {
    for i in 0..10_000_u64 {
        let policy = Policy::new()
            .name("per_request_deadline")
            .deadline(Duration::from_millis(1_000 + i));
        let out = policy.retry(|| async { Ok::<_, std::io::Error>(i) }).await;
        assert_eq!(out.unwrap(), i);
    }
    let listed: Vec<_> = retry_runtime::config::explain()
        .into_iter()
        .filter(|e| e.function == "per_request_deadline")
        .collect();
    assert_eq!(listed.len(), 16);
    assert_eq!(
        listed[0].get("deadline").map(|e| e.value.as_str()),
        Some("1s"),
        "the first ones are kept: {}",
        listed[0]
    );
}
