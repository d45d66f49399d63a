//! `retry_runtime::tower::RetryLayer` over hyper-util's client and over a tonic `Channel`,
//! against the real loopback servers of `http.rs` and `grpc.rs`: 503s,
//! 429s and their hints, `UNAVAILABLE` and `RESOURCE_EXHAUSTED`, reset and refused connections,
//! hangs past the attempt timeout, a streaming body, a shared bucket, adaptive mode.
//!
//! As there, the assertions are the servers' counters (requests that arrived, requests
//! executed) and what the retry loop recorded (`testing::record`, instant retries), never
//! elapsed time.

use crate::faults::refused_addr;
use crate::util::{classes, instant};
use crate::{grpc_server, http_server};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use retry_runtime::testing::{self, EarlyEnd};
use retry_runtime::tower::{BoxError, Cloning, Failure, RetryLayer};
use retry_runtime::{
    BreakerState, CircuitBreaker, CircuitOpen, Classify, ErrorClass, Jitter, Mode, Policy,
    RateLimiter, RetryEvent, TimedOut, TimeoutKind, TokenBucket,
};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Five attempts, 10 ms doubling, no jitter: the recorded delays are exact.
fn policy() -> Policy {
    Policy::new()
        .max_attempts(5)
        .initial_backoff(MS(10))
        .jitter(Jitter::None)
}

/// hyper-util's client for bodies of type `B`.
fn client<B>() -> Client<HttpConnector, B>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    Client::builder(TokioExecutor::new()).build_http()
}

fn request(method: Method, url: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap()
}

async fn text(response: Response<Incoming>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn a_get_is_retried_through_503s() {
    let server = http_server::Server::start().await;
    server.script(&[
        http_server::Fault::Unavailable,
        http_server::Fault::Unavailable,
    ]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(client());
    let get = request(Method::GET, &server.url("/items/1"));
    let (out, record) = testing::record(instant(), svc.oneshot(get)).await;
    let response = out.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response).await, "GET /items/1");
    assert_eq!(server.executed("/items/1"), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
    assert_eq!(record.delays(), [MS(10), MS(20)]);
}

/// When the retries end, the last response is the caller's, as the server sent it.
#[tokio::test]
async fn the_last_503_is_the_callers_response() {
    let server = http_server::Server::start().await;
    server.script(&[http_server::Fault::Unavailable; 3]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().max_attempts(3)))
        .service(client());
    let get = request(Method::GET, &server.url("/items/2"));
    let (out, record) = testing::record(instant(), svc.oneshot(get)).await;
    let response = out.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(text(response).await, "try again");
    assert_eq!(server.executed("/items/2"), 3);
    assert_eq!(record.retries().len(), 2);
}

#[tokio::test]
async fn a_429s_retry_after_is_the_delay() {
    use crate::http_server::{Fault, Hint};
    let server = http_server::Server::start().await;
    server.script(&[
        Fault::Throttle(Hint::Seconds(1)),
        Fault::Throttle(Hint::AmzMillis(250)),
        Fault::Throttle(Hint::None),
    ]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(client());
    let get = request(Method::GET, &server.url("/items/3"));
    let (out, record) = testing::record(instant(), svc.oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(server.arrivals().len(), 4);
    assert_eq!(server.executed("/items/3"), 1);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 3]);
    // The hints, then the computed backoff (10 ms doubling, third retry: 40 ms).
    assert_eq!(record.delays(), [MS(1000), MS(250), MS(40)]);
}

#[tokio::test]
async fn a_post_is_not_repeated_after_a_503_or_a_reset() {
    use crate::http_server::Fault;
    let server = http_server::Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Reset]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(client());

    let post = request(Method::POST, &server.url("/orders/1"));
    let (out, record) = testing::record(instant(), svc.clone().oneshot(post)).await;
    assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.executed("/orders/1"), 1);
    assert!(record.retries().is_empty());

    let post = request(Method::POST, &server.url("/orders/2"));
    let (out, record) = testing::record(instant(), svc.oneshot(post)).await;
    let err = out.unwrap_err();
    assert!(
        err.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some(),
        "{err:?}"
    );
    assert_eq!(
        err.classify(),
        ErrorClass::Transient,
        "a GET would retry it"
    );
    assert_eq!(server.executed("/orders/2"), 1);
    assert!(record.retries().is_empty());
    assert_eq!(server.arrivals().len(), 2);
}

/// A 429 is refused before the server acts on the request: a POST is retried after it.
#[tokio::test]
async fn a_post_is_repeated_after_429s_it_was_not_executed_for() {
    use crate::http_server::{Fault, Hint};
    let server = http_server::Server::start().await;
    server.script(&[Fault::Throttle(Hint::None), Fault::Throttle(Hint::None)]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .map_request(|mut r: Request<Full<Bytes>>| {
            retry_runtime::wire::insert_attempt_headers(r.headers_mut());
            r
        })
        .service(client());
    let post = request(Method::POST, &server.url("/orders/3"));
    let (out, record) = testing::record(instant(), svc.oneshot(post)).await;
    let response = out.unwrap();
    assert_eq!(text(response).await, "POST /orders/3");
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(server.executed("/orders/3"), 1);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
    // Each attempt says it is one of the policy's five.
    let sent: Vec<String> = server
        .arrivals()
        .iter()
        .map(|a| a.headers["amz-sdk-request"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sent,
        ["attempt=1; max=5", "attempt=2; max=5", "attempt=3; max=5"]
    );
}

/// An `Idempotency-Key` makes a POST safe to repeat; the layer can say every request is (or
/// none is), whatever its method.
#[tokio::test]
async fn idempotency_from_the_request_or_the_layer() {
    use crate::http_server::Fault;
    let server = http_server::Server::start().await;
    let by_method = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(client());

    server.script(&[Fault::Unavailable]);
    let mut keyed = request(Method::POST, &server.url("/orders/4"));
    keyed.headers_mut().insert(
        "idempotency-key",
        "4b1d3f1e-8e4a-4c1a-9d7e-2f0c6a5b9e10".parse().unwrap(),
    );
    let response = by_method.oneshot(keyed).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.executed("/orders/4"), 2);

    server.script(&[Fault::Unavailable]);
    let all = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).idempotent(true))
        .service(client());
    let post = request(Method::POST, &server.url("/orders/5"));
    let (out, _) = testing::record(instant(), all.oneshot(post)).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(server.executed("/orders/5"), 2);

    server.script(&[Fault::Unavailable]);
    let none = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).idempotent(false))
        .service(client());
    let get = request(Method::GET, &server.url("/items/5"));
    let (out, _) = testing::record(instant(), none.oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.executed("/items/5"), 1);
}

/// A body whose chunks each come after one `Pending` (it wakes its task at once): a stream
/// still being produced when the request is made.
struct Trickle(VecDeque<&'static str>, bool);

impl Body for Trickle {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if !std::mem::replace(&mut self.1, false) {
            self.1 = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.0.pop_front().map(|s| Ok(Frame::data(Bytes::from(s)))))
    }
}

/// A PUT is idempotent, but a body still streaming when the request is made cannot be sent
/// twice: the request is sent once. The same PUT with a body that is whole is retried.
#[tokio::test]
async fn a_streaming_body_is_sent_once() {
    use crate::http_server::Fault;
    let server = http_server::Server::start().await;
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(client::<BoxBody<Bytes, BoxError>>());
    let put =
        |body: BoxBody<Bytes, BoxError>| Request::put(server.url("/items/6")).body(body).unwrap();

    server.script(&[Fault::Unavailable]);
    let streaming = BoxBody::new(Trickle(VecDeque::from(["{\"name\":", "\"six\"}"]), false));
    let (out, record) = testing::record(instant(), svc.clone().oneshot(put(streaming))).await;
    assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.arrivals().len(), 1);
    assert!(record.retries().is_empty());

    server.script(&[Fault::Unavailable]);
    let whole = Full::new(Bytes::from_static(b"{\"name\":\"six\"}"))
        .map_err(|never| match never {})
        .boxed();
    let (out, record) = testing::record(instant(), svc.oneshot(put(whole))).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(server.executed("/items/6"), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient]);
}

/// A refused connection never carried the request: `NotSent`, retried even for a POST.
#[tokio::test]
async fn a_refused_connection_is_retried_even_for_a_post() {
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().max_attempts(4)))
        .service(client());
    let post = request(Method::POST, &format!("http://{}/orders/7", refused_addr()));
    let (out, record) = testing::record(instant(), svc.oneshot(post)).await;
    let err = out.unwrap_err();
    let cause = err
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .unwrap();
    assert!(cause.is_connect(), "{cause:?}");
    assert_eq!(err.classify(), ErrorClass::NotSent);
    assert_eq!(classes(&record), [ErrorClass::NotSent; 3]);
}

/// The policy is the layer's: every service it wraps, and every clone of them, draws retries
/// from one bucket.
#[tokio::test]
async fn services_and_their_clones_share_one_bucket() {
    static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(10);
    let server = http_server::Server::start().await;
    server.script(&[http_server::Fault::Unavailable; 5]);
    let layer = RetryLayer::new(policy().max_attempts(3).bucket(&BUCKET));
    let first = layer.layer(client());
    let clone = first.clone();
    let other = layer.layer(client());

    // Two retries of 5 tokens each empty the bucket of 10.
    let get = request(Method::GET, &server.url("/items/8"));
    let (out, record) = testing::record(instant(), first.oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(record.retries().len(), 2);
    assert_eq!(BUCKET.available(), 0);

    for (svc, path) in [(clone, "/items/9"), (other, "/items/10")] {
        let get = request(Method::GET, &server.url(path));
        let (out, record) = testing::record(instant(), svc.oneshot(get)).await;
        assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(server.executed(path), 1);
        assert_eq!(record.early_ends()[0].reason, EarlyEnd::BucketEmpty);
    }
}

/// A POST's 503s are not retried, but they are failures all the same: the policy's breaker
/// counts them and opens, and the next order is refused without reaching the server.
#[tokio::test]
async fn a_breaker_counts_the_failures_of_requests_it_does_not_retry() {
    static BREAKER: CircuitBreaker = CircuitBreaker::new()
        .with_failure_ratio(0.5)
        .with_min_calls(2)
        .with_window(Duration::from_secs(60))
        .with_break(Duration::from_secs(60))
        .with_probes(1);
    let server = http_server::Server::start().await;
    server.script(&[http_server::Fault::Unavailable; 2]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().breaker(&BREAKER)))
        .service(client());
    for id in [20, 21] {
        let path = format!("/orders/{id}");
        let post = request(Method::POST, &server.url(&path));
        let response = svc.clone().oneshot(post).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(server.executed(&path), 1);
    }
    assert_eq!(BREAKER.state(), BreakerState::Open);
    let post = request(Method::POST, &server.url("/orders/22"));
    let err = svc.oneshot(post).await.unwrap_err();
    assert!(err.downcast_ref::<CircuitOpen>().is_some(), "{err:?}");
    assert_eq!(server.arrivals().len(), 2);
}

/// A policy's guards are asked about each request's attempts: a bulkhead of one place refuses
/// a request while another holds it (without reaching the server, with a `Refused` in the
/// error), and the place comes back when the request holding it is dropped.
#[tokio::test]
async fn a_policys_guard_refuses_a_request_beyond_its_places() {
    static ONE: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(1);
    let server = http_server::Server::start().await;
    server.script(&[http_server::Fault::Hang]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().guard(&ONE)))
        .service(client());
    let hanging = tokio::spawn(
        svc.clone()
            .oneshot(request(Method::GET, &server.url("/items/1"))),
    );
    while server.executed("/items/1") == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(ONE.in_flight(), 1);
    let err = svc
        .clone()
        .oneshot(request(Method::GET, &server.url("/items/2")))
        .await
        .unwrap_err();
    let refused = err.downcast_ref::<retry_runtime::Refused>();
    assert_eq!(
        refused.map(retry_runtime::Refused::by),
        Some("bulkhead"),
        "{err:?}"
    );
    assert_eq!(server.executed("/items/2"), 0);
    hanging.abort();
    let _ = hanging.await;
    assert_eq!(
        ONE.in_flight(),
        0,
        "the dropped request gave its place back"
    );
    let ok = svc
        .oneshot(request(Method::GET, &server.url("/items/3")))
        .await;
    assert_eq!(ok.unwrap().status(), StatusCode::OK);
}

/// Adaptive mode: throttling responses turn the policy's rate limiter on.
#[tokio::test]
async fn adaptive_mode_learns_from_throttling_responses() {
    use crate::http_server::{Fault, Hint};
    static LIMITER: RateLimiter = RateLimiter::adaptive();
    let server = http_server::Server::start().await;
    server.script(&[Fault::Throttle(Hint::None), Fault::Throttle(Hint::None)]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(
            policy().mode(Mode::Adaptive).rate_limiter(&LIMITER),
        ))
        .service(client());
    assert!(!LIMITER.is_enabled());
    let get = request(Method::GET, &server.url("/items/11"));
    let (out, record) = testing::record(instant(), svc.oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
    assert_eq!(server.arrivals().len(), 3);
    assert!(LIMITER.is_enabled());
    assert!(LIMITER.fill_rate() > 0.0);
}

/// The attempts run inside the loop's frame: a layer below this one writes the attempt into
/// each request, and the policy's `on_retry` hook sees each failed response.
#[tokio::test]
async fn layers_below_see_the_attempt_and_the_hook_sees_the_failures() {
    use crate::http_server::{Fault, Hint};
    let server = http_server::Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Throttle(Hint::Seconds(2))]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let policy = policy().on_retry(move |e: &RetryEvent<'_, Failure<Response<Incoming>>>| {
        let status = e.error().and_then(Failure::response).map(Response::status);
        log.lock().unwrap().push((e.attempt(), status, e.delay()));
    });
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy))
        .map_request(|mut r: Request<Full<Bytes>>| {
            retry_runtime::wire::insert_attempt_headers(r.headers_mut());
            r
        })
        .service(client());
    let get = request(Method::GET, &server.url("/items/12"));
    let (out, _) = testing::record(instant(), svc.oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1, Some(StatusCode::SERVICE_UNAVAILABLE), MS(10)),
            (2, Some(StatusCode::TOO_MANY_REQUESTS), MS(2000)),
        ]
    );
    let sent: Vec<String> = server
        .arrivals()
        .iter()
        .map(|a| a.headers["amz-sdk-request"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sent,
        ["attempt=1; max=5", "attempt=2; max=5", "attempt=3; max=5"]
    );
    let ids: Vec<_> = server
        .arrivals()
        .iter()
        .map(|a| a.headers["amz-sdk-invocation-id"].clone())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one call, one id");
}

/// A request past its attempt timeout: a GET is retried (the second attempt has more time);
/// a POST is ended by the layer before the policy's timer would retry it, and is executed
/// once. (The hang takes the first attempt's 200 ms of real time.)
#[tokio::test]
async fn a_post_past_its_attempt_timeout_is_not_sent_again() {
    use crate::http_server::Fault;
    let server = http_server::Server::start().await;
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(
            policy()
                .attempt_timeout(MS(200))
                .attempt_timeout_multiplier(25.0)
                .max_attempt_timeout(MS(5000)),
        ))
        .service(client());

    server.script(&[Fault::Hang]);
    let get = request(Method::GET, &server.url("/items/13"));
    let (out, record) = testing::record(instant(), svc.clone().oneshot(get)).await;
    assert_eq!(out.unwrap().status(), StatusCode::OK);
    assert_eq!(server.executed("/items/13"), 2);
    assert_eq!(classes(&record), [ErrorClass::Timeout]);

    server.script(&[Fault::Hang]);
    let post = request(Method::POST, &server.url("/orders/13"));
    let (out, record) = testing::record(instant(), svc.oneshot(post)).await;
    let err = out.unwrap_err();
    let timed_out = err.downcast_ref::<TimedOut>().expect("a timeout");
    assert_eq!(timed_out.kind(), TimeoutKind::Attempt);
    assert_eq!(timed_out.limit(), MS(200));
    assert_eq!(timed_out.attempt(), 1);
    assert_eq!(server.executed("/orders/13"), 1);
    assert!(record.retries().is_empty());
}

/// The response future is `Send` and `'static`: it can be spawned.
#[tokio::test]
async fn a_call_can_be_spawned() {
    let server = http_server::Server::start().await;
    server.script(&[http_server::Fault::Unavailable]);
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().initial_backoff(MS(1))))
        .service(client());
    let get = request(Method::GET, &server.url("/items/14"));
    let call = Service::call(svc.ready().await.unwrap(), get);
    let response = tokio::spawn(call).await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.executed("/items/14"), 2);
}

/// Any service whose requests are `Clone`: its errors are classified by their causes.
#[tokio::test]
async fn a_service_of_clone_requests() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let echo = tower::service_fn(move |line: String| {
        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if n < 3 {
                Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
            } else {
                Ok(format!("{line} (attempt {n})"))
            }
        }
    });
    let layer = RetryLayer::new(policy()).exchange(Cloning);
    let (out, record) = testing::record(
        instant(),
        layer.layer(echo.clone()).oneshot("ping".to_owned()),
    )
    .await;
    assert_eq!(out.unwrap(), "ping (attempt 3)");
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);

    calls.store(0, Ordering::SeqCst);
    let once = layer.idempotent(false).layer(echo);
    let err = once.oneshot("pong".to_owned()).await.unwrap_err();
    let io = err.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// gRPC through a tonic `Channel` wrapped by the layer, with a client built on it as generated
// code builds one.

use crate::grpc_server::{GetItem, Item, PlaceOrder, Receipt, unary_over as unary};
use tonic::Code;

#[tokio::test]
async fn a_unary_call_is_retried_on_unavailable_when_the_layer_says_it_is_idempotent() {
    use crate::grpc_server::Fault;
    let server = grpc_server::Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).idempotent(true))
        .service(server.channel());
    let get = unary::<_, _, Item>(channel, "/shop.Orders/Get", GetItem { id: 1 });
    let (out, record) = testing::record(instant(), get).await;
    assert_eq!(out.unwrap().name, "item 1");
    assert_eq!(server.executed("Get", 1), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
}

/// gRPC calls are POSTs: without being told, the layer does not repeat one the server may
/// have executed.
#[tokio::test]
async fn a_call_that_is_not_idempotent_is_not_repeated() {
    use crate::grpc_server::Fault;
    let server = grpc_server::Server::start().await;
    server.script(&[Fault::Unavailable]);
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(server.channel());
    let place = unary::<_, _, Receipt>(channel, "/shop.Orders/Place", PlaceOrder { id: 1 });
    let (out, record) = testing::record(instant(), place).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(server.executed("Place", 1), 1);
    assert_eq!(server.arrivals().len(), 1);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn resource_exhausted_waits_the_pushback_and_retries_even_an_order() {
    use crate::grpc_server::Fault;
    let server = grpc_server::Server::start().await;
    server.script(&[Fault::Exhausted(Some("250")), Fault::Exhausted(None)]);
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(server.channel());
    let place = unary::<_, _, Receipt>(channel, "/shop.Orders/Place", PlaceOrder { id: 2 });
    let (out, record) = testing::record(instant(), place).await;
    assert_eq!(out.unwrap().id, 2);
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(server.executed("Place", 2), 1);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
    assert_eq!(record.delays(), [MS(250), MS(20)]);
}

/// A negative pushback: the server asks not to retry.
#[tokio::test]
async fn a_negative_pushback_is_not_retried() {
    use crate::grpc_server::Fault;
    let server = grpc_server::Server::start().await;
    server.script(&[Fault::Exhausted(Some("-1"))]);
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).idempotent(true))
        .service(server.channel());
    let get = unary::<_, _, Item>(channel, "/shop.Orders/Get", GetItem { id: 3 });
    let (out, record) = testing::record(instant(), get).await;
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 1);
    assert!(record.retries().is_empty());
}

/// A channel that cannot connect never sent the call: `NotSent`, retried even for an order.
#[tokio::test]
async fn a_refused_channel_is_not_sent() {
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(grpc_server::channel_to(refused_addr()));
    let place = unary::<_, _, Receipt>(channel, "/shop.Orders/Place", PlaceOrder { id: 4 });
    let (out, record) = testing::record(instant(), place).await;
    let status = out.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(classes(&record), [ErrorClass::NotSent; 4]);
}

/// Orders under random faults are executed at most once; reads get through.
#[tokio::test]
async fn orders_execute_at_most_once_under_random_faults() {
    use crate::grpc_server::Fault;
    let server = grpc_server::Server::start().await;
    let faults = [
        Fault::Unavailable,
        Fault::Exhausted(Some("10")),
        Fault::Exhausted(None),
    ];
    server.random_faults(7, 0.3, &faults);
    let orders = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()))
        .service(server.channel());
    let reads = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).idempotent(true))
        .service(server.channel());
    let (mut placed, mut read) = (0, 0);
    for id in 0..100 {
        let place = unary::<_, _, Receipt>(orders.clone(), "/shop.Orders/Place", PlaceOrder { id });
        let (out, _) = testing::record(instant(), place).await;
        let executed = server.executed("Place", id);
        assert!(executed <= 1, "order {id} placed {executed} times");
        if out.is_ok() {
            assert_eq!(executed, 1);
            placed += 1;
        }
        let get = unary::<_, _, Item>(reads.clone(), "/shop.Orders/Get", GetItem { id });
        let (out, _) = testing::record(instant(), get).await;
        read += u32::from(out.is_ok());
    }
    assert!(placed > 50 && placed < 100, "{placed} of 100 orders placed");
    assert!(read >= 98, "{read} of 100 reads");
    server.assert_each_injected(&faults);
}
