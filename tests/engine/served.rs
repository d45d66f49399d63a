//! A server's handlers behind `tower::ServerLayer`, on the paused clock: which of the calls a
//! handler makes give up retrying (and so make its error answer say "do not retry"), which
//! leave the retry to the caller, and what the handler's calls take from the request (the
//! caller's deadline; its attempt).

use crate::util::{Fail, Script, Succeed, TestError};
use http::{HeaderValue, Request, Response, StatusCode};
use retry_runtime::tower::ServerLayer;
use retry_runtime::{ErrorClass, Policy, TokenBucket, attempt, retry};
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;
use tower::{Layer, ServiceExt, service_fn};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Serves one request whose handler runs `calls` (the handler's work: its calls to what it
/// depends on) and answers `status` if they fail, 200 if they succeed; returns the answer.
async fn serve<F, Fut>(headers: &[(&'static str, &str)], status: u16, calls: F) -> Response<String>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<u32, TestError>>,
{
    let mut request = Request::get("/").body(String::new()).unwrap();
    for (name, value) in headers {
        request
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).unwrap());
    }
    let calls = std::cell::Cell::new(Some(calls));
    let handler = service_fn(|_: Request<String>| {
        let calls = calls.take().expect("one request");
        async move {
            let mut response = Response::new(String::new());
            match calls().await {
                Ok(v) => *response.body_mut() = v.to_string(),
                Err(e) => {
                    *response.body_mut() = format!("{e:?}");
                    *response.status_mut() = StatusCode::from_u16(status).unwrap();
                }
            }
            Ok::<_, Infallible>(response)
        }
    });
    ServerLayer::new()
        .layer(handler)
        .oneshot(request)
        .await
        .unwrap()
}

/// Whether the answer tells its caller not to retry.
fn says_stop(response: &Response<String>) -> bool {
    match response.headers().get(retry_runtime::wire::SHOULD_RETRY) {
        Some(v) => {
            assert_eq!(v, "false");
            true
        }
        None => false,
    }
}

#[retry(max_attempts = 3, initial_backoff = "10ms")]
async fn three(s: &Script) -> Result<u32, TestError> {
    s.attempt().await
}

#[retry(max_attempts = 1)]
async fn once(s: &Script) -> Result<u32, TestError> {
    s.attempt().await
}

#[retry(max_attempts = 3, idempotent = false, initial_backoff = "10ms")]
async fn create(s: &Script) -> Result<u32, TestError> {
    s.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_retries_are_spent_makes_the_error_answer_say_do_not_retry() {
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || three(&s)).await;
    assert_eq!(s.attempts(), 3);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(says_stop(&response));
    // Throttling and timeouts alike.
    let s = Script::always(ErrorClass::Throttling);
    assert!(says_stop(&serve(&[], 503, || three(&s)).await));
}

#[tokio::test(start_paused = true)]
async fn a_call_that_may_not_retry_leaves_the_retry_to_the_caller() {
    // One attempt allowed: the caller's retry is the one retry.
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || once(&s)).await;
    assert_eq!(s.attempts(), 1);
    assert!(!says_stop(&response));
    // Not idempotent, failed after the request may have reached the server.
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || create(&s)).await;
    assert_eq!(s.attempts(), 1);
    assert!(!says_stop(&response));
}

#[tokio::test(start_paused = true)]
async fn an_error_no_retry_fixes_says_do_not_retry() {
    let s = Script::always(ErrorClass::Permanent);
    let response = serve(&[], 500, || once(&s)).await;
    assert_eq!(s.attempts(), 1);
    assert!(says_stop(&response));
}

#[tokio::test(start_paused = true)]
async fn only_an_error_answer_is_marked() {
    // Recovered by its retry: nothing gave up.
    let s = Script::new([Fail(ErrorClass::Transient), Succeed(7)]);
    let response = serve(&[], 503, || three(&s)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!says_stop(&response));
    // A call gave up, but the handler answers well all the same (a fallback).
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || async {
        let _ = three(&s).await;
        Ok(0)
    })
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!says_stop(&response));
    // An error answer with no call behind it.
    let response = serve(&[], 503, || async {
        Err(TestError::fault(ErrorClass::Transient))
    })
    .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!says_stop(&response));
}

static EMPTY: TokenBucket = TokenBucket::standard().with_capacity(0);

#[retry(max_attempts = 3, bucket = EMPTY)]
async fn refused_by_the_bucket(s: &Script) -> Result<u32, TestError> {
    s.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_retry_refused_by_a_protection_says_do_not_retry() {
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || refused_by_the_bucket(&s)).await;
    assert_eq!(s.attempts(), 1);
    assert!(says_stop(&response));
}

#[retry(max_attempts = 1)]
async fn outer(s: &Script) -> Result<u32, TestError> {
    three(s).await
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_that_gave_up_makes_its_outer_call_give_up() {
    // The outer call allows one attempt, which would leave the retry to the caller; but the
    // call nested in its attempt retried and gave up.
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || outer(&s)).await;
    assert_eq!(s.attempts(), 3);
    assert!(says_stop(&response));
}

#[tokio::test(start_paused = true)]
async fn a_policy_call_and_the_callers_deadline() {
    // The caller gave the request 250 ms (its attempt's time left); the handler's policy would
    // back off 1 s: no retry fits, and the call ends after its one attempt, which leaves the
    // retry to the caller, whose next attempt has a deadline of its own.
    let s = Script::always(ErrorClass::Transient);
    let policy = Policy::new()
        .max_attempts(3)
        .jitter(retry_runtime::Jitter::None);
    let t0 = tokio::time::Instant::now();
    let response = serve(&[("grpc-timeout", "250m")], 503, || {
        policy.retry(|| async {
            assert_eq!(attempt().unwrap().time_left(), Some(MS(250)));
            s.attempt().await
        })
    })
    .await;
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(s.attempts(), 1);
    assert!(!says_stop(&response));

    // Backing off 100 ms, then 200 ms: one retry fits, the next would cross the deadline. The
    // call retried, and gave up.
    let s = Script::always(ErrorClass::Transient);
    let policy = Policy::new()
        .max_attempts(3)
        .initial_backoff(MS(100))
        .jitter(retry_runtime::Jitter::None);
    let t0 = tokio::time::Instant::now();
    let response = serve(&[("grpc-timeout", "250m")], 503, || {
        policy.retry(|| s.attempt())
    })
    .await;
    assert_eq!(t0.elapsed(), MS(100));
    assert_eq!(s.attempts(), 2);
    assert!(says_stop(&response));
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_the_deadline_is_answered_by_the_layer() {
    let s = Script::new([crate::util::Hang]);
    let response = serve(&[("x-envoy-expected-rq-timeout-ms", "300")], 503, || {
        three(&s)
    })
    .await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_retried_request_s_calls_retry_as_the_rule_says() {
    // The caller's second attempt, as the AWS SDKs, Envoy and gRPC write it.
    let single = retry_runtime::__private::CHAIN_STOP;
    for header in [
        ("amz-sdk-request", "attempt=2; max=3"),
        ("x-envoy-attempt-count", "2"),
        ("grpc-previous-rpc-attempts", "1"),
    ] {
        let s = Script::always(ErrorClass::Transient);
        let response = serve(&[header], 503, || three(&s)).await;
        assert_eq!(s.attempts(), if single { 1 } else { 3 }, "{header:?}");
        assert!(says_stop(&response), "{header:?}");
    }
    // A first attempt, or no header: the calls retry.
    for headers in [&[("amz-sdk-request", "attempt=1; max=3")][..], &[]] {
        let s = Script::always(ErrorClass::Transient);
        serve(headers, 503, || three(&s)).await;
        assert_eq!(s.attempts(), 3);
    }
}

#[tokio::test(start_paused = true)]
async fn malformed_headers_are_never_read_as_do_not_retry_or_a_retry() {
    for headers in [
        &[("amz-sdk-request", "attempt=9; max=3")][..],
        &[("x-envoy-attempt-count", "-2")],
        &[("grpc-previous-rpc-attempts", "99999999999999999999")],
        &[
            ("x-envoy-attempt-count", "2"),
            ("x-envoy-attempt-count", "2"),
        ],
        &[("grpc-timeout", "-1S")],
        &[("x-envoy-expected-rq-timeout-ms", "1.5")],
    ] {
        let s = Script::new([Fail(ErrorClass::Transient), Succeed(4)]);
        let response = serve(headers, 503, || three(&s)).await;
        // The call retried as if the header were absent, and recovered.
        assert_eq!(response.into_body(), "4", "{headers:?}");
        assert_eq!(s.attempts(), 2);
    }
}

#[retry(max_attempts = 3, hedge_after = "20ms", initial_backoff = "10ms")]
async fn hedged(s: &Script) -> Result<u32, TestError> {
    s.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_that_gave_up_says_do_not_retry() {
    let s = Script::always(ErrorClass::Transient);
    let response = serve(&[], 503, || hedged(&s)).await;
    assert_eq!(s.attempts(), 3);
    assert!(says_stop(&response));
}

#[tokio::test(start_paused = true)]
async fn a_grpc_answer_gets_a_negative_pushback() {
    let s = Script::always(ErrorClass::Transient);
    let mut request = Request::post("/shop.Orders/Get")
        .header("content-type", "application/grpc")
        .body(String::new())
        .unwrap();
    request
        .headers_mut()
        .insert("te", HeaderValue::from_static("trailers"));
    let handler = service_fn(|_: Request<String>| {
        let s = &s;
        async move {
            let failed = three(s).await.is_err();
            // A trailers-only answer: the status in the headers.
            let code = if failed { "14" } else { "0" };
            let response = Response::builder()
                .header("content-type", "application/grpc")
                .header("grpc-status", code)
                .body(String::new())
                .unwrap();
            Ok::<_, Infallible>(response)
        }
    });
    let response = ServerLayer::new()
        .layer(handler)
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.headers()["grpc-status"], "14");
    assert_eq!(response.headers()["grpc-retry-pushback-ms"], "-1");
    assert!(!response.headers().contains_key("x-should-retry"));
}

#[tokio::test(start_paused = true)]
async fn outside_a_served_request_a_call_that_gives_up_changes_nothing() {
    let s = Script::always(ErrorClass::Transient);
    assert!(three(&s).await.is_err());
    assert_eq!(s.attempts(), 3);
}
