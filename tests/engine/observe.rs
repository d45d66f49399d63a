//! What the retry loop tells a tracing subscriber and a metrics exporter, on tokio's paused
//! clock: one DEBUG event per retry (and per hedge), one WARN event for each way of giving up early, one event
//! per circuit breaker transition, and the levels of the buckets, limiters and breakers.

use crate::capture::Capture;
use crate::util::{self, TestError};
use retry_runtime::{BreakerState, CircuitBreaker, ErrorClass, Partition, TokenBucket, retry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use tracing::Level;

fn capture() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let guard = tracing::subscriber::set_default(capture.clone());
    (capture, guard)
}

#[tokio::test(start_paused = true)]
async fn one_debug_event_per_retry() {
    #[retry(
        max_attempts = 3,
        initial_backoff = "100ms",
        jitter = "none",
        partition = "observe-orders"
    )]
    async fn list_orders() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }

    let (capture, _guard) = capture();
    assert!(list_orders().await.is_err());
    let events = capture.of("retry", Level::DEBUG);
    assert_eq!(events.len(), 2);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.field("function"), "list_orders");
        assert_eq!(e.field("partition"), "observe-orders");
        assert_eq!(e.field("attempt"), (i + 1).to_string());
        assert_eq!(e.field("class"), "transient");
        assert_eq!(e.field("message"), "attempt failed, retrying");
        assert!(!e.fields.contains_key("fill_rate"));
    }
    assert_eq!(events[0].field("delay_ms"), "100.0");
    assert_eq!(events[1].field("delay_ms"), "200.0");
    // The bucket after each retry's cost: 500 - 5, then - 5 more.
    assert_eq!(events[0].field("tokens"), "495");
    assert_eq!(events[1].field("tokens"), "490");
    // Exhausting max_attempts is not giving up early.
    assert!(capture.of("retry", Level::WARN).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_function_without_a_partition_leaves_the_field_out() {
    #[retry(max_attempts = 2, initial_backoff = "100ms", jitter = "none")]
    async fn list_carts() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }

    let (capture, _guard) = capture();
    assert!(list_carts().await.is_err());
    let events = capture.of("retry", Level::DEBUG);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].field("function"), "list_carts");
    // Absent, as OpenTelemetry leaves an attribute without a value out (not `partition=""`).
    assert!(!events[0].fields.contains_key("partition"));
}

#[retry(
    max_attempts = 2,
    partition = "observe-shares",
    budget = "20%",
    breaker = "50%"
)]
async fn first_of_the_partition() -> Result<(), TestError> {
    Ok(())
}

#[retry(
    max_attempts = 2,
    partition = "observe-shares",
    budget = "50%",
    breaker = "90%"
)]
async fn second_of_the_partition() -> Result<(), TestError> {
    Ok(())
}

/// A partition has one budget and one breaker, made by the first of its functions to run: a
/// function that writes another share uses the partition's, and says so once for each key.
#[tokio::test(start_paused = true)]
async fn a_share_the_partition_does_not_use_is_one_warning() {
    let (capture, _guard) = capture();
    first_of_the_partition().await.unwrap();
    for _ in 0..3 {
        second_of_the_partition().await.unwrap();
    }
    let warned: Vec<String> = capture
        .of("retry::config", Level::WARN)
        .iter()
        .map(|e| e.field("message").to_owned())
        .filter(|m| m.contains("observe-shares"))
        .collect();
    assert_eq!(
        warned,
        [
            "`second_of_the_partition` writes budget = \"50%\", but partition `observe-shares` \
             shares one budget, made with \"20%\" by the first of its functions to run, which \
             `second_of_the_partition` uses: write the same share on each function of the \
             partition, or give `second_of_the_partition` a `static` of its own",
            "`second_of_the_partition` writes breaker = \"90%\", but partition `observe-shares` \
             shares one breaker, made with \"50%\" by the first of its functions to run, which \
             `second_of_the_partition` uses: write the same share on each function of the \
             partition, or give `second_of_the_partition` a `static` of its own",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn adaptive_mode_events_carry_the_fill_rate() {
    #[retry(
        mode = "adaptive",
        max_attempts = 2,
        initial_backoff = "100ms",
        partition = "observe-adaptive"
    )]
    async fn put_item() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Throttling))
    }

    let (capture, _guard) = capture();
    assert!(put_item().await.is_err());
    let events = capture.of("retry", Level::DEBUG);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].field("class"), "throttling");
    let limiter = Partition::named("observe-adaptive").rate_limiter();
    assert!(limiter.is_enabled());
    let traced: f64 = events[0].field("fill_rate").parse().unwrap();
    // The limiter's rate after the first throttle: its minimum, 0.5 per second.
    assert_eq!(traced, 0.5);
}

static SMALL: TokenBucket = TokenBucket::standard().with_capacity(7);

#[tokio::test(start_paused = true)]
async fn a_warning_for_each_way_of_giving_up_early() {
    #[retry(max_attempts = 5, initial_backoff = "10ms", bucket = SMALL)]
    async fn drains() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }
    #[retry(
        max_attempts = 5,
        initial_backoff = "2s",
        jitter = "none",
        deadline = "1s"
    )]
    async fn late() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }
    #[retry(max_attempts = 5, idempotent = false, partition = "observe-pay")]
    async fn pay() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }
    #[retry(max_attempts = 5, max_backoff = "10s")]
    async fn patient() -> Result<(), TestError> {
        Err(TestError::Fault(
            ErrorClass::Throttling,
            Some(Duration::from_secs(60)),
        ))
    }
    // One attempt: ending after it is not giving up early.
    #[retry(max_attempts = 1, idempotent = false)]
    async fn once() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }

    let (capture, _guard) = capture();
    let _ = drains().await;
    let _ = late().await;
    let _ = pay().await;
    let _ = patient().await;
    let _ = once().await;
    let warnings = capture.of("retry", Level::WARN);
    let seen: Vec<(&str, Option<&str>, &str, &str, &str)> = warnings
        .iter()
        .map(|w| {
            (
                w.field("function"),
                w.fields.get("partition").map(String::as_str),
                w.field("attempt"),
                w.field("class"),
                w.field("reason"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("drains", None, "2", "transient", "retry token bucket empty"),
            ("late", None, "1", "transient", "deadline reached"),
            (
                "pay",
                Some("observe-pay"),
                "1",
                "transient",
                "not idempotent"
            ),
            (
                "patient",
                None,
                "1",
                "throttling",
                "server retry hint longer than max_backoff"
            ),
        ]
    );
    // 7 - 5 for the first retry: too few for the second.
    assert_eq!(warnings[0].field("tokens"), "2");
    assert_eq!(SMALL.available(), 2);
    for w in &warnings {
        assert_eq!(w.field("message"), "giving up before max_attempts");
    }
}

/// Refuses every retry, and every first attempt of the call named `shut_out`.
struct Doorman;

impl retry_runtime::Guard for Doorman {
    fn admit(&self, cx: &retry_runtime::GuardContext<'_>) -> retry_runtime::Admit {
        if cx.kind() == retry_runtime::AttemptKind::First && cx.function() != "shut_out" {
            retry_runtime::Admit::Go
        } else {
            retry_runtime::Admit::Refuse
        }
    }
    fn settle(&self, _: &retry_runtime::GuardContext<'_>, _: retry_runtime::GuardOutcome) {}
    fn name(&self) -> &'static str {
        "doorman"
    }
}

static DOORMAN: Doorman = Doorman;

#[tokio::test(start_paused = true)]
async fn a_guards_refusal_is_reported_with_its_name() {
    #[retry(max_attempts = 3, guard = DOORMAN)]
    async fn let_in_once() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }
    #[retry(max_attempts = 3, guard = DOORMAN)]
    async fn shut_out() -> Result<(), TestError> {
        Ok(())
    }

    let (capture, _guard) = capture();
    assert!(let_in_once().await.is_err());
    let warnings = capture.of("retry", Level::WARN);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].field("reason"), "refused by a guard");
    assert_eq!(warnings[0].field("guard"), "doorman");
    assert!(matches!(shut_out().await, Err(TestError::Refused(_))));
    let refused: Vec<_> = capture
        .of("retry", Level::DEBUG)
        .into_iter()
        .filter(|e| e.field("message") == "refused by a guard: call refused")
        .collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].field("function"), "shut_out");
    assert_eq!(refused[0].field("guard"), "doorman");
}

#[tokio::test(start_paused = true)]
async fn levels_for_metrics() {
    #[retry(
        max_attempts = 2,
        initial_backoff = "10ms",
        partition = "observe-metrics"
    )]
    async fn flaky() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Timeout))
    }

    let _ = flaky().await;
    // What an exporter reads: every named partition, its bucket and its limiter.
    let gauges: Vec<(&str, u32, u32, f64)> = Partition::all()
        .into_iter()
        .filter(|p| p.name() == "observe-metrics")
        .map(|p| {
            (
                p.name(),
                p.bucket().available(),
                p.bucket().capacity(),
                p.rate_limiter().fill_rate(),
            )
        })
        .collect();
    assert_eq!(gauges.len(), 1);
    let (_, available, capacity, _) = gauges[0];
    // A timeout's retry costs 10.
    assert_eq!((available, capacity), (490, 500));
}

static OBSERVED: CircuitBreaker = CircuitBreaker::new()
    .with_min_calls(2)
    .with_break(Duration::from_secs(5));

#[tokio::test(start_paused = true)]
async fn one_event_per_breaker_transition() {
    #[retry(max_attempts = 1, partition = "observe-breaker", breaker = OBSERVED)]
    async fn fetch(fail: bool) -> Result<(), TestError> {
        if fail {
            Err(TestError::fault(ErrorClass::Transient))
        } else {
            Ok(())
        }
    }

    let (capture, _guard) = capture();
    let transitions = || -> Vec<(Level, String, String, String)> {
        capture
            .events()
            .into_iter()
            .filter(|e| e.target == "retry" && e.fields.contains_key("to"))
            .map(|e| {
                assert_eq!(e.field("function"), "fetch");
                assert_eq!(e.field("partition"), "observe-breaker");
                let (from, to) = (e.field("from").to_owned(), e.field("to").to_owned());
                (e.level, from, to, e.field("message").to_owned())
            })
            .collect()
    };
    // Two failures open it; refused calls while open are DEBUG events, not transitions.
    let _ = fetch(true).await;
    let _ = fetch(true).await;
    assert_eq!(OBSERVED.state(), BreakerState::Open);
    for _ in 0..3 {
        let _ = fetch(false).await;
    }
    let refused = capture.of("retry", Level::DEBUG);
    assert_eq!(refused.len(), 3);
    assert_eq!(
        refused[0].field("message"),
        "circuit breaker open: call refused"
    );
    // A failed probe, then a probe that closes it.
    tokio::time::advance(Duration::from_secs(5)).await;
    let _ = fetch(true).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    let _ = fetch(false).await;
    let s = |x: &str| x.to_owned();
    assert_eq!(
        transitions(),
        [
            (
                Level::WARN,
                s("closed"),
                s("open"),
                s("circuit breaker opened")
            ),
            (
                Level::INFO,
                s("open"),
                s("half-open"),
                s("circuit breaker half-open: probing")
            ),
            (
                Level::WARN,
                s("half-open"),
                s("open"),
                s("circuit breaker opened")
            ),
            (
                Level::INFO,
                s("open"),
                s("half-open"),
                s("circuit breaker half-open: probing")
            ),
            (
                Level::INFO,
                s("half-open"),
                s("closed"),
                s("circuit breaker closed")
            ),
        ]
    );
    // A refused call is not a WARN of its own: the transition to open was.
    assert_eq!(capture.of("retry", Level::WARN).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn one_debug_event_per_hedge() {
    #[retry(hedge_after = "10ms", max_attempts = 3, partition = "observe-hedged")]
    async fn slow_read(script: &util::Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let s = util::Script::new([util::Hang, util::LateOk(Duration::from_millis(5), 2)]);
    assert_eq!(slow_read(&s).await, Ok(2));
    let events = capture.of("retry", Level::DEBUG);
    assert_eq!(events.len(), 1, "one hedge, no retry");
    let e = &events[0];
    assert_eq!(e.field("message"), "hedging: another attempt in flight");
    assert_eq!(e.field("function"), "slow_read");
    assert_eq!(e.field("partition"), "observe-hedged");
    assert_eq!(e.field("attempt"), "2");
    assert_eq!(e.field("in_flight"), "2");
    assert_eq!(e.field("class"), "none");
    assert_eq!(e.field("delay_ms"), "10.0");
    // The partition's bucket after the hedge's cost.
    assert_eq!(e.field("tokens"), "495");
}

// --- Spans -----------------------------------------------------------------------------------

/// The only `retry` span, and its `retry.attempt` children.
fn call_span(
    capture: &Capture,
) -> (
    crate::capture::CapturedSpan,
    Vec<crate::capture::CapturedSpan>,
) {
    let calls = capture.spans_named("retry");
    let [call] = &calls[..] else {
        panic!("one call span: {calls:#?}")
    };
    let attempts = capture.children(call.id);
    assert!(attempts.iter().all(|a| a.name == "retry.attempt"));
    (call.clone(), attempts)
}

#[tokio::test(start_paused = true)]
async fn a_retried_call_is_one_span_with_a_child_span_per_attempt_and_its_waits_between() {
    #[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none")]
    async fn get_report(script: &util::Script) -> Result<u32, TestError> {
        // The body's own spans (its client's) nest under the attempt's.
        let _body = tracing::info_span!("http.client").entered();
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let t0 = tokio::time::Instant::now();
    let s = util::Script::new([
        util::Fail(ErrorClass::Transient),
        util::LateFail(Duration::from_millis(50), ErrorClass::Throttling),
        util::Succeed(7),
    ]);
    assert_eq!(get_report(&s).await, Ok(7));
    let (call, attempts) = call_span(&capture);
    assert_eq!(call.level, Level::INFO);
    assert_eq!(call.target, "retry");
    assert_eq!(call.field("otel.name"), "get_report");
    assert_eq!(call.field("retry.function"), "get_report");
    assert_eq!(call.field("retry.invocation_id").len(), 36, "a UUID");
    assert_eq!(call.field("retry.attempts"), "3");
    assert!(
        !call.fields.contains_key("error.type"),
        "the call succeeded"
    );
    assert_eq!(call.ms(t0), (0, Some(350)));

    let numbers: Vec<_> = attempts.iter().map(|a| a.field("retry.attempt")).collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    let resends: Vec<_> = attempts
        .iter()
        .map(|a| {
            a.fields
                .get("http.request.resend_count")
                .map(String::as_str)
        })
        .collect();
    assert_eq!(resends, [None, Some("1"), Some("2")]);
    let errors: Vec<_> = attempts
        .iter()
        .map(|a| a.fields.get("error.type").map(String::as_str))
        .collect();
    assert_eq!(errors, [Some("transient"), Some("throttling"), None]);
    // A failed attempt's span is an error for OpenTelemetry; the call, which recovered, is not.
    let statuses: Vec<_> = attempts
        .iter()
        .map(|a| a.fields.get("otel.status_code").map(String::as_str))
        .collect();
    assert_eq!(statuses, [Some("ERROR"), Some("ERROR"), None]);
    assert!(!call.fields.contains_key("otel.status_code"));
    // Each attempt's span covers its attempt only: the backoffs (100 ms, then 200 ms) are the
    // call span's time between its children.
    let times: Vec<_> = attempts.iter().map(|a| a.ms(t0)).collect();
    assert_eq!(times, [(0, Some(0)), (100, Some(150)), (350, Some(350))]);
    assert!(
        attempts
            .iter()
            .all(|a| !a.fields.contains_key("retry.hedge"))
    );
    for a in &attempts {
        let body = capture.children(a.id);
        assert_eq!(body.len(), 1);
        assert_eq!(body[0].name, "http.client");
    }
    // The retries' events are the call span's, with nothing reported twice.
    let retries: Vec<_> = call
        .events
        .iter()
        .map(|e| (e.field("attempt"), e.field("delay_ms")))
        .collect();
    assert_eq!(retries, [("1", "100.0"), ("2", "200.0")]);
    assert_eq!(capture.events().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_records_its_last_errors_class_and_a_server_hint_in_its_event() {
    #[retry(max_attempts = 2, initial_backoff = "100ms", jitter = "none")]
    async fn put_object(script: &util::Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let s = util::Script::new([
        util::Hint(ErrorClass::Throttling, Duration::from_millis(300)),
        util::Fail(ErrorClass::Timeout),
    ]);
    assert!(put_object(&s).await.is_err());
    let (call, attempts) = call_span(&capture);
    assert_eq!(call.field("error.type"), "timeout");
    assert_eq!(call.field("otel.status_code"), "ERROR");
    assert_eq!(call.field("retry.attempts"), "2");
    assert_eq!(attempts.len(), 2);
    assert!(
        attempts
            .iter()
            .all(|a| a.field("otel.status_code") == "ERROR")
    );
    let [retry] = &call.events[..] else {
        panic!("{:?}", call.events)
    };
    assert_eq!(
        retry.field("message"),
        "attempt failed, retrying after the server's hint"
    );
    assert_eq!(retry.field("retry_after_ms"), "300.0");
    assert_eq!(retry.field("delay_ms"), "300.0");
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_has_sibling_attempt_spans_the_hedge_marked() {
    #[retry(hedge_after = "10ms", max_attempts = 3)]
    async fn read_replica(script: &util::Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let t0 = tokio::time::Instant::now();
    let s = util::Script::new([util::Hang, util::LateOk(Duration::from_millis(5), 2)]);
    assert_eq!(read_replica(&s).await, Ok(2));
    let (call, attempts) = call_span(&capture);
    assert_eq!(call.field("retry.attempts"), "2");
    let hedges: Vec<_> = attempts
        .iter()
        .map(|a| {
            (
                a.field("retry.attempt"),
                a.fields.get("retry.hedge").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(hedges, [("1", None), ("2", Some("true"))]);
    // The first attempt was cancelled, not failed: neither span is an error.
    assert!(
        attempts
            .iter()
            .chain([&call])
            .all(|s| !s.fields.contains_key("otel.status_code"))
    );
    // The first attempt, still in flight, is cancelled when the hedge wins.
    let times: Vec<_> = attempts.iter().map(|a| a.ms(t0)).collect();
    assert_eq!(times, [(0, Some(15)), (10, Some(15))]);
    assert_eq!(call.events.len(), 1, "the hedge's event");
    assert_eq!(
        call.events[0].field("message"),
        "hedging: another attempt in flight"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hedge_that_fails_while_another_attempt_runs_is_the_failed_calls_error() {
    #[retry(hedge_after = "10ms", max_attempts = 3)]
    async fn read_primary(script: &util::Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let s = util::Script::new([util::Hang, util::Fail(ErrorClass::Permanent)]);
    assert!(read_primary(&s).await.is_err());
    let (call, attempts) = call_span(&capture);
    let seen: Vec<_> = attempts
        .iter()
        .map(|a| {
            (
                a.field("retry.attempt"),
                a.fields.get("error.type").map(String::as_str),
                a.fields.get("otel.status_code").map(String::as_str),
            )
        })
        .collect();
    // The hedge's failure ends the call; the first attempt, still in flight, is cancelled.
    assert_eq!(
        seen,
        [("1", None, None), ("2", Some("permanent"), Some("ERROR"))]
    );
    assert_eq!(call.field("error.type"), "permanent");
    assert_eq!(call.field("otel.status_code"), "ERROR");
}

#[tokio::test(start_paused = true)]
async fn a_call_refused_by_a_guard_or_a_breaker_is_a_span_without_attempts() {
    #[retry(max_attempts = 3, guard = DOORMAN)]
    async fn shut_out() -> Result<(), TestError> {
        Ok(())
    }
    static OPEN: CircuitBreaker = CircuitBreaker::new()
        .with_min_calls(1)
        .with_break(Duration::from_secs(60));
    #[retry(max_attempts = 1, breaker = OPEN)]
    async fn behind_breaker() -> Result<(), TestError> {
        Err(TestError::fault(ErrorClass::Transient))
    }

    let (capture, _guard) = capture();
    assert!(matches!(shut_out().await, Err(TestError::Refused(_))));
    let (call, attempts) = call_span(&capture);
    assert!(attempts.is_empty(), "no attempt was sent");
    assert_eq!(call.field("error.type"), "permanent");
    assert_eq!(call.field("otel.status_code"), "ERROR");
    assert!(!call.fields.contains_key("retry.attempts"));
    let [refused] = &call.events[..] else {
        panic!("{:?}", call.events)
    };
    assert_eq!(refused.field("message"), "refused by a guard: call refused");
    assert_eq!(refused.field("guard"), "doorman");

    assert!(behind_breaker().await.is_err());
    assert!(matches!(
        behind_breaker().await,
        Err(TestError::CircuitOpen(_))
    ));
    let calls = capture.spans_named("retry");
    let refused = calls.last().unwrap();
    assert!(capture.children(refused.id).is_empty());
    assert_eq!(refused.field("error.type"), "permanent");
    let messages: Vec<_> = refused.events.iter().map(|e| e.field("message")).collect();
    assert_eq!(messages, ["circuit breaker open: call refused"]);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_ends_on_its_deadline_says_so_in_its_span() {
    #[retry(
        max_attempts = 5,
        initial_backoff = "400ms",
        jitter = "none",
        deadline = "1s"
    )]
    async fn slow_list(script: &util::Script) -> Result<u32, TestError> {
        script.attempt().await
    }

    let (capture, _guard) = capture();
    let t0 = tokio::time::Instant::now();
    let s = util::Script::new([util::LateFail(
        Duration::from_millis(400),
        ErrorClass::Transient,
    )]);
    assert!(slow_list(&s).await.is_err());
    let (call, attempts) = call_span(&capture);
    // 0-400 fails, sleeps 400; the second attempt, from 800, is cut by the deadline at 1000.
    assert_eq!(call.field("retry.attempts"), "2");
    assert_eq!(call.field("error.type"), "timeout");
    let errors: Vec<_> = attempts.iter().map(|a| a.field("error.type")).collect();
    assert_eq!(errors, ["transient", "timeout"]);
    assert_eq!(call.ms(t0), (0, Some(1000)));
    let warned: Vec<_> = call
        .events
        .iter()
        .filter(|e| e.level == Level::WARN)
        .map(|e| e.field("reason"))
        .collect();
    assert_eq!(warned, ["deadline reached"]);
}

// --- Spans beside other threads' subscribers ------------------------------------------------
//
// `tracing-core` caches each callsite's interest for the process, and while one dispatcher is
// registered it asks the thread that registers a callsite, not that dispatcher. These tests run
// calls on a thread with a subscriber of its own (`set_default`) beside a thread without one,
// in every order, and with a global subscriber set after the first call; the cases that need a
// process of their own (the first call of the process, the one global subscriber) run this
// binary again as a child.

/// Calls `flaky_thrice` `calls` times, one after the other, on a paused runtime of its own.
fn flaky_calls(calls: usize) {
    util::paused_runtime().block_on(async {
        for _ in 0..calls {
            let failures = AtomicU32::new(0);
            assert_eq!(flaky_thrice(&failures).await, Ok(3));
        }
    });
}

/// Fails its first two attempts and succeeds on its third.
#[retry(
    max_attempts = 3,
    initial_backoff = "1ms",
    jitter = "none",
    bucket = "none"
)]
async fn flaky_thrice(failures: &AtomicU32) -> Result<u32, TestError> {
    let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
    if n < 3 {
        Err(TestError::fault(ErrorClass::Transient))
    } else {
        Ok(n)
    }
}

/// Every one of `calls` calls of `flaky_thrice` is a call span with its three attempt spans,
/// and `spans` hold nothing else.
fn assert_every_call_traced(spans: &[crate::capture::CapturedSpan], calls: usize) {
    let roots: Vec<_> = spans.iter().filter(|s| s.name == "retry").collect();
    assert_eq!(roots.len(), calls, "one call span per call");
    let mut children = std::collections::BTreeMap::<u64, Vec<_>>::new();
    for s in spans.iter().filter(|s| s.name == "retry.attempt") {
        children
            .entry(s.parent.expect("an attempt's parent"))
            .or_default()
            .push(s);
    }
    for call in &roots {
        assert_eq!(call.field("otel.name"), "flaky_thrice");
        assert_eq!(call.field("retry.attempts"), "3");
        assert!(!call.fields.contains_key("error.type"), "{call:?}");
        let attempts = children.remove(&call.id).unwrap_or_default();
        let seen: Vec<_> = attempts
            .iter()
            .map(|a| {
                (
                    a.field("retry.attempt"),
                    a.fields.get("error.type").map(String::as_str),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("1", Some("transient")),
                ("2", Some("transient")),
                ("3", None)
            ],
            "the attempt spans of call span {}",
            call.id
        );
    }
    assert!(children.is_empty(), "attempt spans without their call's");
    assert_eq!(spans.len(), 4 * calls, "nothing but the calls' spans");
}

#[test]
fn a_thread_with_a_subscriber_records_every_span_beside_a_thread_without_one() {
    const CALLS: usize = 200;
    let start = Arc::new(Barrier::new(2));
    let without = {
        let start = start.clone();
        std::thread::spawn(move || {
            start.wait();
            flaky_calls(CALLS);
        })
    };
    let capture = Capture::default();
    let guard = tracing::subscriber::set_default(capture.clone());
    start.wait();
    flaky_calls(CALLS);
    drop(guard);
    without.join().expect("the thread without a subscriber");
    assert_every_call_traced(&capture.spans(), CALLS);
}

/// What the child process of [`spans_in_a_process_of_their_own`] runs.
const SPANS_CHILD: &str = "RETRY_SPANS_TEST_CHILD";

/// Runs [`child`] in a new process of this binary with `case`.
fn in_a_process_of_its_own(case: &str) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "observe::child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SPANS_CHILD, case)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{case}:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("CHECKED {case}")),
        "{case} checked nothing:\n{stdout}"
    );
}

#[test]
fn the_first_call_of_the_process_on_a_thread_without_a_subscriber() {
    in_a_process_of_its_own("without-first");
}

#[test]
fn a_call_span_without_attempts_then_a_thread_without_a_subscriber() {
    in_a_process_of_its_own("refused-first");
}

#[test]
fn a_subscriber_made_before_the_first_call_and_set_after_it() {
    in_a_process_of_its_own("made-then-set");
}

#[test]
fn a_global_subscriber_set_after_the_first_call() {
    in_a_process_of_its_own("global-after");
}

/// The child process of the tests above, which run it with `--ignored --exact` and the case
/// in `RETRY_SPANS_TEST_CHILD`; it starts with no subscriber and no callsite registered. Run
/// any other way it fails, so that it never passes without having checked anything.
#[test]
#[ignore = "the child process of the tests above, which run it themselves"]
fn child() {
    const CALLS: usize = 100;
    let case = std::env::var(SPANS_CHILD)
        .expect("`child` runs only as the child process of the tests above");
    let capture = Capture::default();
    match case.as_str() {
        // A thread sets its subscriber; the process's first call is another thread's, which
        // has none; then both call.
        "without-first" | "refused-first" | "made-then-set" => {
            let (first, then) = (Barrier::new(2), Barrier::new(2));
            std::thread::scope(|s| {
                s.spawn(|| {
                    first.wait();
                    // The process's first call of a `#[retry]` function whose spans open, on
                    // a thread without a subscriber.
                    flaky_calls(1);
                    then.wait();
                    flaky_calls(CALLS);
                });
                let dispatch = tracing::Dispatch::new(capture.clone());
                let mut guard = None;
                if case != "made-then-set" {
                    guard = Some(tracing::dispatcher::set_default(&dispatch));
                }
                if case == "refused-first" {
                    // A call span without attempt spans: the gate refuses its first attempt.
                    #[retry(max_attempts = 3, guard = DOORMAN)]
                    async fn shut_out() -> Result<(), TestError> {
                        Ok(())
                    }
                    let refused = util::paused_runtime().block_on(shut_out());
                    assert!(matches!(refused, Err(TestError::Refused(_))));
                }
                first.wait();
                then.wait();
                let _guard = guard.unwrap_or_else(|| tracing::dispatcher::set_default(&dispatch));
                flaky_calls(CALLS);
            });
            let mut spans = capture.spans();
            if case == "refused-first" {
                // The refused call's span, the first, and no attempt span under it.
                let refused = spans.remove(0);
                assert_eq!(refused.field("otel.name"), "shut_out");
                assert!(spans.iter().all(|s| s.parent != Some(refused.id)));
            }
            assert_every_call_traced(&spans, CALLS);
        }
        // The process's first call has no subscriber; then one is set for the process.
        "global-after" => {
            flaky_calls(1);
            tracing::subscriber::set_global_default(capture.clone()).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| flaky_calls(CALLS));
                flaky_calls(CALLS);
            });
            assert_every_call_traced(&capture.spans(), 2 * CALLS);
        }
        other => panic!("no case {other}"),
    }
    println!("CHECKED {case}");
}
