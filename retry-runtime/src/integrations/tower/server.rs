//! [`ServerLayer`]: the server side of a hop, so that retries do not multiply from hop to hop.

use super::caller;
use crate::classify::TimedOut;
use crate::classify::hint::GRPC_RETRY_PUSHBACK_MS;
use crate::engine::deadline::{CHAIN_STOP, Serving};
use crate::engine::frame::Served;
use crate::integrations::wire::SHOULD_RETRY;
use crate::runtime::Instant;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use tower_layer::Layer;
use tower_service::Service;

/// A tower layer for servers: each request's handler runs under what its caller says of the
/// request (its deadline, and which of its attempts it is), and when the handler's own calls
/// gave up retrying, its error answer tells the caller not to retry, so that retries do not
/// multiply from hop to hop.
///
/// Three services that each retry three times send 27 requests to a dead fourth for each user
/// call (the SRE book's three layers of four attempts: 64); behind this layer, the service
/// next to the failure retries, and the ones above it do not: 3. Its parts:
///
/// - **The caller's deadline**, as [`DeadlineLayer`](super::DeadlineLayer) reads it
///   (`grpc-timeout`, `x-envoy-expected-rq-timeout-ms`): every `#[retry]` function and
///   [`Policy`](crate::Policy) call the handler makes clamps its deadline to it, writes what it
///   has left into its own requests ([`with_attempt`](crate::wire::WithAttempt), the tower
///   layer), and makes no attempt after it; a handler still running at the deadline is
///   dropped, and the layer answers `504 Gateway Timeout` (gRPC: `DEADLINE_EXCEEDED`).
/// - **"Do not retry" when the handler's calls gave up.** A call the handler made (at any
///   depth, on the task that polls the handler) that fails having given up retrying (its
///   retries spent, a retry refused by a protection (the token bucket, a budget, a breaker, a
///   guard), ended by the deadline after a retry or by a server's hint longer than it allows,
///   or an error no retry fixes, such as an answer that itself said not to retry) marks the
///   request. If the
///   handler then answers with an error, the layer adds `x-should-retry: false` to it (an HTTP
///   status of 400 or more), or `grpc-retry-pushback-ms: -1` (a gRPC status other than `OK` in
///   the response's headers, a trailers-only response, which is how servers answer a call
///   they fail), gRFC A6's "do not retry". The caller's `#[retry]` functions, `Policy` calls
///   and tower layers read both and do not retry ([`wire::SHOULD_RETRY`](crate::wire::SHOULD_RETRY)):
///   only the layer above the failure retries, as the SRE book's "Addressing Cascading
///   Failures" asks. A call that fails without having retried because it may not (its
///   function is not idempotent, or allows one attempt, or no retry fits before the deadline,
///   which is often the caller's attempt's cutoff) leaves the retry to the caller and marks
///   nothing. An answer that already carries either header keeps what the handler wrote.
/// - **The caller's attempt**, from `grpc-previous-rpc-attempts` (gRFC A6),
///   `x-envoy-attempt-count` (Envoy) or `amz-sdk-request`'s `attempt=` (the AWS SDKs, and this
///   crate's `with_attempt`), the highest if several say: the handler finds it in the
///   request's extensions as a [`CallerAttempt`] (axum: `Option<Extension<CallerAttempt>>`), to
///   tell a retry from a first attempt in its logs or metrics. A retried request's calls retry
///   as any other's: the simulations of the call graph found that making them single attempts
///   (Kitex's "chain stop") changes nothing behind the "do not retry" answers, and costs
///   recoveries where attempts time out.
///
/// A malformed, repeated or self-contradictory header is ignored, with one warning per header
/// and problem for the process (a `retry::config` tracing event, or a line on standard error),
/// and never read as "do not retry". A request with none of them runs as it is.
///
/// A transient failure next to the failure is still recovered, by one hop: the service whose
/// call failed retries it under its own policy, and its caller sees the success.
///
/// The layer works under axum's `Router::layer` and tonic's `Server::builder().layer`, over
/// any `http::Request` body; the response body type is the handler's own (built on its
/// `Default` for the layer's deadline answer). As for [`attempt()`](crate::attempt), the
/// request is known to code that the handler's future polls on its own thread, not to a task
/// it spawns.
///
/// ```
/// use http::{Request, Response, StatusCode};
/// use retry_runtime::tower::ServerLayer;
/// use retry_runtime::{Policy, wire};
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use tower::{Layer, Service, ServiceExt, service_fn};
///
/// /// A handler whose call to a dead dependency retries three times, then answers 503.
/// async fn handler(_: Request<String>) -> Result<Response<String>, Infallible> {
///     let policy = Policy::new().max_attempts(3).initial_backoff(Duration::from_millis(10));
///     let dependency = policy
///         .retry(|| async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) })
///         .await;
///     let mut response = Response::new(format!("{dependency:?}"));
///     *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
///     Ok(response)
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let server = ServerLayer::new().layer(service_fn(handler));
/// let request = Request::get("/").body(String::new()).unwrap();
/// let response = server.oneshot(request).await.unwrap();
/// // The handler's call gave up: its caller should not retry the 503.
/// assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(response.headers()[wire::SHOULD_RETRY], "false");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerLayer {
    _private: (),
}

impl ServerLayer {
    /// The layer.
    #[must_use]
    pub const fn new() -> Self {
        ServerLayer { _private: () }
    }
}

impl<S> Layer<S> for ServerLayer {
    type Service = Server<S>;

    fn layer(&self, inner: S) -> Server<S> {
        Server { inner, whole: true }
    }
}

/// A service whose requests' handlers run under what their callers say of them (made by
/// [`ServerLayer`], and by [`DeadlineLayer`](super::DeadlineLayer), which reads the deadline
/// alone).
#[derive(Clone, Debug)]
pub struct Server<S> {
    inner: S,
    /// The server side of a hop, as `ServerLayer` makes it; else the caller's deadline alone.
    whole: bool,
}

impl<S> Server<S> {
    /// `inner` under its callers' deadlines alone: no attempt read, no answer changed (what
    /// `DeadlineLayer` makes).
    pub(super) fn deadline_only(inner: S) -> Self {
        Server {
            inner,
            whole: false,
        }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, RB> Service<Request<B>> for Server<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    RB: Default,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = ServerFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let start = Instant::now();
        let headers = request.headers();
        let deadline = caller::time_left(headers, &mut caller::report)
            .and_then(|left| start.checked_add(left));
        let grpc = grpc_content_type(headers);
        let served = if self.whole {
            let attempt = caller::attempt(headers, &mut caller::report);
            if let Some(number) = attempt {
                request.extensions_mut().insert(CallerAttempt { number });
            }
            Some(Served::new(single(attempt)))
        } else {
            None
        };
        // The service's own `call` runs for the request too, as its future will.
        let inner = &mut self.inner;
        let future =
            crate::engine::deadline::enter(deadline, served.as_ref(), || inner.call(request));
        ServerFuture {
            inner: Serving::of(start, deadline, served, future),
            grpc,
        }
    }
}

/// Which of its caller's attempts a request is, as its headers say (`grpc-previous-rpc-attempts`,
/// `x-envoy-attempt-count`, `amz-sdk-request`): put into the request's extensions by
/// [`ServerLayer`] when a header says it.
///
/// ```
/// use http::{Request, Response};
/// use retry_runtime::tower::{CallerAttempt, ServerLayer};
/// use std::convert::Infallible;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = ServerLayer::new().layer(service_fn(|request: Request<()>| async move {
///     let attempt = request.extensions().get::<CallerAttempt>().map(|a| a.number());
///     Ok::<_, Infallible>(Response::new(format!("{attempt:?}")))
/// }));
/// let retried = Request::get("/").header("amz-sdk-request", "attempt=2; max=3").body(()).unwrap();
/// assert_eq!(server.oneshot(retried).await.unwrap().into_body(), "Some(2)");
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallerAttempt {
    number: u32,
}

impl CallerAttempt {
    /// The attempt's number: 1 for the caller's first, 2 for its first retry (or hedge), ...
    #[must_use]
    pub fn number(self) -> u32 {
        self.number
    }

    /// Whether the request is a retry (or a hedge) of its caller's.
    #[must_use]
    pub fn is_retry(self) -> bool {
        self.number > 1
    }
}

/// Whether the calls made for a request that is its caller's attempt `attempt` make one
/// attempt each (Kitex's rule that a retry is not retried again downstream), as the
/// simulations chose it ([`CHAIN_STOP`]).
fn single(attempt: Option<u32>) -> bool {
    CHAIN_STOP && attempt.is_some_and(|n| n > 1)
}

pin_project_lite::pin_project! {
    /// The future of a [`Server`] service's call: the handler's response (told not to be
    /// retried when the handler's calls gave up), or the layer's own once the deadline has
    /// passed.
    pub struct ServerFuture<F> {
        #[pin]
        inner: Serving<F>,
        // The request's content type, if it is a gRPC call.
        grpc: Option<HeaderValue>,
    }
}

impl<F, RB, E> Future for ServerFuture<F>
where
    F: Future<Output = Result<Response<RB>, E>>,
    RB: Default,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let (out, gave_up) = core::task::ready!(this.inner.poll(cx));
        let response = match out {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Poll::Ready(Err(e)),
            Err(timed_out) => deadline_exceeded(this.grpc.take(), timed_out),
        };
        Poll::Ready(Ok(if gave_up {
            do_not_retry(response)
        } else {
            response
        }))
    }
}

impl<F> core::fmt::Debug for ServerFuture<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerFuture")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// `response`, an answer to a request whose handler's calls gave up, told not to be retried
/// if it is an error: an HTTP status of 400 or more gets `x-should-retry: false`, a gRPC status
/// other than `OK` in its headers `grpc-retry-pushback-ms: -1`. What the handler wrote of
/// either stays.
fn do_not_retry<RB>(mut response: Response<RB>) -> Response<RB> {
    let error_status = response.status().as_u16() >= 400;
    let grpc_error = response
        .headers()
        .get("grpc-status")
        .is_some_and(|code| code.as_bytes().trim_ascii() != b"0");
    let headers = response.headers_mut();
    if error_status && !headers.contains_key(SHOULD_RETRY) {
        headers.insert(SHOULD_RETRY, HeaderValue::from_static("false"));
    }
    if grpc_error && !headers.contains_key(GRPC_RETRY_PUSHBACK_MS) {
        headers.insert(GRPC_RETRY_PUSHBACK_MS, HeaderValue::from_static("-1"));
    }
    response
}

/// The request's content type, if it is a gRPC call's (`application/grpc`, with or without a
/// subtype).
pub(super) fn grpc_content_type(headers: &HeaderMap) -> Option<HeaderValue> {
    headers
        .get(CONTENT_TYPE)
        .filter(|t| t.as_bytes().starts_with(b"application/grpc"))
        .cloned()
}

/// The layer's answer for a handler its deadline cut off: gRPC's `DEADLINE_EXCEEDED` for a
/// gRPC call (of content type `grpc`), else `504 Gateway Timeout`.
fn deadline_exceeded<RB: Default>(grpc: Option<HeaderValue>, cut: TimedOut) -> Response<RB> {
    let mut response = Response::new(RB::default());
    match grpc {
        Some(content_type) => {
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, content_type);
            headers.insert("grpc-status", HeaderValue::from_static("4"));
            // Visible ASCII and spaces, which gRPC's percent-encoding leaves as they are.
            let message = HeaderValue::try_from(cut.to_string()).expect("visible ASCII");
            headers.insert("grpc-message", message);
        }
        None => *response.status_mut() = StatusCode::GATEWAY_TIMEOUT,
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    use crate::integrations::http::test_response as response;

    #[test]
    fn only_an_error_answer_is_told_not_to_be_retried() {
        let told = |r: Response<()>| {
            let r = do_not_retry(r);
            (
                r.headers()
                    .get(SHOULD_RETRY)
                    .map(|v| v.to_str().unwrap().to_owned()),
                r.headers()
                    .get(GRPC_RETRY_PUSHBACK_MS)
                    .map(|v| v.to_str().unwrap().to_owned()),
            )
        };
        let f = Some("false".to_owned());
        let stop = Some("-1".to_owned());
        assert_eq!(told(response(503, &[])), (f.clone(), None));
        assert_eq!(told(response(500, &[])), (f.clone(), None));
        assert_eq!(told(response(429, &[])), (f.clone(), None));
        assert_eq!(told(response(404, &[])), (f.clone(), None));
        assert_eq!(told(response(200, &[])), (None, None));
        assert_eq!(told(response(304, &[])), (None, None));
        // gRPC: a status in the headers (trailers-only).
        assert_eq!(
            told(response(200, &[("grpc-status", "14")])),
            (None, stop.clone())
        );
        assert_eq!(told(response(200, &[("grpc-status", "0")])), (None, None));
        assert_eq!(told(response(200, &[("grpc-status", " 0 ")])), (None, None));
        // What the handler wrote stays.
        assert_eq!(
            told(response(503, &[("x-should-retry", "true")])),
            (Some("true".to_owned()), None)
        );
        assert_eq!(
            told(response(
                200,
                &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "250")]
            )),
            (None, Some("250".to_owned()))
        );
        assert_eq!(
            StatusCode::from_u16(503).unwrap(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
