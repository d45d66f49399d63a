//! The layer of a gRPC service config (features `tower` and `grpc-config`): each request runs
//! under its method's [`GrpcPolicy`], as [`GrpcPolicy::retry`] runs a call, through the same
//! engine site.

use super::body::ReplayBody;
use super::exchange::{Exchange, Http};
use super::{BoxError, Requests, ResponseFuture, RetryLayer, Session, take_ready};
use crate::classify::{ErrorClass, TimedOut};
use crate::engine::Classifier;
use crate::integrations::grpc::call::ByCodes;
use crate::integrations::grpc::codes::NAMES;
use crate::integrations::grpc::{GrpcPolicy, ServiceConfig};
use ::tonic::metadata::MetadataMap;
use ::tonic::{Code, Status};
use core::task::{Context, Poll};
use http::{Request, Response, StatusCode};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

impl RetryLayer {
    /// A layer that runs each gRPC call under its method's policy in a gRPC service config
    /// (gRFC A6's `retryPolicy`, `hedgingPolicy`, `timeout` and `retryThrottling`; features
    /// `tower` and `grpc-config`).
    ///
    /// Over a tonic `Channel`, and a generated client on the result:
    /// `ServiceBuilder::new().layer(RetryLayer::grpc(config)).service(channel)`, then
    /// `OrdersClient::new(channel)`. It wraps any service of `http::Request`s as tonic's
    /// clients call it (a `Service<http::Request<B>, Response = http::Response<RB>>`).
    ///
    /// # Which policy a request gets
    ///
    /// The request's path, `/pkg.Service/Method`, names its method:
    /// [`ServiceConfig::policy`]`("pkg.Service", "Method")` gives the most specific method
    /// config (the method's, else its service's, else the default `{}`; none: one attempt). A
    /// path of any other form gets the default entry, or one attempt.
    ///
    /// Each request then runs as [`GrpcPolicy::retry`] runs a call of its method, through the
    /// same engine site (made once per method config and shared with every
    /// [`GrpcPolicy`] of the config): the policy's `retryableStatusCodes` (or, hedging, its
    /// `nonFatalStatusCodes`), `maxAttempts` (at most 5), the backoff with full jitter, the
    /// server's `grpc-retry-pushback-ms` (the delay, whatever its length, the backoff
    /// starting again after it; a negative or unreadable one ends the call), hedging by
    /// `hedgingDelay`, the method's `timeout` as the deadline of the whole call, and the
    /// config's `retryThrottling`, one throttle shared by every method of the config, every
    /// clone of the layer and every service it wraps. The config's codes decide what is
    /// retried: every gRPC call is a `POST`, and none is held back as not idempotent.
    ///
    /// # What the layer sees of a call
    ///
    /// The status of each attempt is read where tonic's client reads it before the response's
    /// body:
    ///
    /// - a response that carries `grpc-status` in its headers (a "trailers-only" response,
    ///   which is how tonic's and other servers answer a call they fail before sending a
    ///   message): that status, with the `grpc-retry-pushback-ms` beside it;
    /// - a response whose HTTP status is not `200 OK` and that has no `grpc-status` (a
    ///   proxy's answer): the code gRPC's HTTP to gRPC status mapping gives it (`503`,
    ///   `502`, `504` and `429` are `UNAVAILABLE`; see
    ///   <https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.md>);
    /// - the service's error (a connection that failed or broke off): the status tonic's
    ///   client makes of it (`tonic::Status::from_error`: a failed connection is
    ///   `UNAVAILABLE`).
    ///
    /// A status sent in trailers after a message is not seen: the layer never reads a
    /// response's body. Such a response (a unary call whose server failed while sending its
    /// answer, a streaming call's end) is a success for the layer and for the throttle, and
    /// the client sees its status when it reads the body.
    ///
    /// When the call ends, the caller gets the last response as `Ok`, as the service gave it
    /// (the client reads its status), or the last error as a `BoxError` holding a
    /// `tonic::Status`, which tonic's client returns as it is: `DEADLINE_EXCEEDED` when the
    /// method's timeout ran out.
    ///
    /// # Replay and hedging
    ///
    /// A request is sent again only as a copy, when its body can be replayed ([`ReplayBody`],
    /// at most 1 MiB buffered): a unary call's message is whole when the request is made, so a
    /// unary call is replayed; a client stream still being produced is sent once (its one
    /// attempt still counts for the throttle). A method with one attempt buffers nothing.
    ///
    /// A hedged method's attempts run side by side, each on a clone of the service made ready
    /// for it; the first success (or fatal status) is the call's, and the others are dropped
    /// then (tonic cancels their streams).
    ///
    /// Each retry or hedge carries `grpc-previous-rpc-attempts`, the number of attempts before
    /// it, as A6 asks, and every attempt carries the time it has left of the method's timeout
    /// as `grpc-timeout` (a shorter timeout the client set on its request is sent as it is),
    /// which a server behind [`ServerLayer`](super::ServerLayer) runs its handler under.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http::{Request, Response};
    /// use http_body_util::Full;
    /// use retry_runtime::grpc::ServiceConfig;
    /// use retry_runtime::tower::RetryLayer;
    /// use std::convert::Infallible;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::task::{Context, Poll};
    /// use tower_layer::Layer;
    /// use tower_service::Service;
    ///
    /// /// A gRPC server whose first two calls fail with `UNAVAILABLE` (14), answered
    /// /// trailers-only: the status in the headers.
    /// #[derive(Clone, Default)]
    /// struct Flaky(Arc<AtomicU32>);
    ///
    /// impl Service<Request<Full<Bytes>>> for Flaky {
    ///     type Response = Response<Full<Bytes>>;
    ///     type Error = Infallible;
    ///     type Future = std::future::Ready<Result<Self::Response, Infallible>>;
    ///
    ///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
    ///         Poll::Ready(Ok(()))
    ///     }
    ///
    ///     fn call(&mut self, _: Request<Full<Bytes>>) -> Self::Future {
    ///         let response = match self.0.fetch_add(1, Ordering::SeqCst) {
    ///             0 | 1 => Response::builder().header("grpc-status", "14"),
    ///             // The answer's message, then its status in the trailers.
    ///             _ => Response::builder(),
    ///         };
    ///         let response = response.header("content-type", "application/grpc");
    ///         std::future::ready(Ok(response.body(Full::default()).unwrap()))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let config = ServiceConfig::from_json(
    ///     r#"{"methodConfig": [{"name": [{"service": "shop.Orders", "method": "Get"}],
    ///       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
    /// )
    /// .unwrap();
    /// let server = Flaky::default();
    /// let mut channel = RetryLayer::grpc(config).layer(server.clone());
    /// // A unary call's request: one empty message, whole when the request is made.
    /// let call = |path| Request::post(path).body(Full::new(Bytes::from_static(&[0; 5]))).unwrap();
    ///
    /// // shop.Orders/Get retries UNAVAILABLE: the third attempt answered.
    /// std::future::poll_fn(|cx| channel.poll_ready(cx)).await.unwrap();
    /// let response = channel.call(call("/shop.Orders/Get")).await.unwrap();
    /// assert!(response.headers().get("grpc-status").is_none());
    /// assert_eq!(server.0.load(Ordering::SeqCst), 3);
    ///
    /// // No method config names shop.Orders/Place: one attempt, whose status the client reads.
    /// server.0.store(0, Ordering::SeqCst);
    /// std::future::poll_fn(|cx| channel.poll_ready(cx)).await.unwrap();
    /// let response = channel.call(call("/shop.Orders/Place")).await.unwrap();
    /// assert_eq!(response.headers()["grpc-status"], "14");
    /// assert_eq!(server.0.load(Ordering::SeqCst), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn grpc(config: ServiceConfig) -> GrpcRetryLayer {
        GrpcRetryLayer {
            config: Arc::new(config),
        }
    }
}

/// Wraps a service in [`GrpcRetry`]: each gRPC call runs under its method's policy in a
/// service config. Made by [`RetryLayer::grpc`], which says what it does.
///
/// A clone shares the config, its engine sites and its retry throttle.
#[derive(Clone, Debug)]
pub struct GrpcRetryLayer {
    config: Arc<ServiceConfig>,
}

impl GrpcRetryLayer {
    /// The service config, whose policies share the layer's retry throttle: a call made
    /// beside the channel, `layer.config().policy(service, method).retry(..)`, counts against
    /// the same `retryThrottling` as the layer's calls. (A `ServiceConfig` is not `Clone`: a
    /// second one read from the same JSON has a throttle of its own.)
    #[must_use]
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }
}

impl<S> Layer<S> for GrpcRetryLayer {
    type Service = GrpcRetry<S>;

    fn layer(&self, inner: S) -> GrpcRetry<S> {
        GrpcRetry {
            inner,
            config: self.config.clone(),
        }
    }
}

/// A service whose gRPC calls run under their methods' policies in a service config (made by
/// [`RetryLayer::grpc`], which says what it does).
///
/// The inner service must be `Clone`, as [`Retry`](super::Retry)'s: `poll_ready` is the inner
/// service's, `call` takes the service made ready for the call's first attempt (a clone takes
/// its place), and each later attempt, or hedge, drives the readiness of a fresh clone. The
/// response future is boxed and `Send`.
#[derive(Clone, Debug)]
pub struct GrpcRetry<S> {
    inner: S,
    config: Arc<ServiceConfig>,
}

impl<S> GrpcRetry<S> {
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

impl<S, B, RB> Service<Request<B>> for GrpcRetry<S>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: ReplayBody + Send + 'static,
    RB: Send + 'static,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = ResponseFuture<Response<RB>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let (service, method) = method_of(request.uri().path());
        let policy = self.config.policy(service, method);
        let exchange = Http::new();
        // A call of one attempt needs no copy.
        let spare = if policy.max_attempts() > 1 {
            <Http as Exchange<_, Response<RB>>>::replay(&exchange, &mut request)
        } else {
            None
        };
        let ready = take_ready(&mut self.inner);
        ResponseFuture {
            inner: Box::pin(run(policy, exchange, ready, request, spare)),
        }
    }
}

/// The service and the method a request's path names (`/pkg.Service/Method`), or `("", "")`,
/// which only the default method config names, for a path of any other form.
fn method_of(path: &str) -> (&str, &str) {
    path.strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .filter(|(service, method)| {
            !service.is_empty() && !method.is_empty() && !method.contains('/')
        })
        .unwrap_or(("", ""))
}

/// One call under `policy`: its attempts in the engine's loop, and the last response as the
/// caller's `Ok`. A request without a copy (`spare`) makes one attempt.
fn run<S, B, RB>(
    policy: GrpcPolicy,
    exchange: Http,
    service: S,
    request: Request<B>,
    spare: Option<Request<B>>,
) -> impl Future<Output = Result<Response<RB>, BoxError>>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    B: ReplayBody,
{
    let once = spare.is_none();
    // Made before the call's future, which holds each once (see the layer's `run`).
    let session = Session {
        service: Mutex::new(service),
        exchange,
        // A gRPC service config's policy sends no idempotency keys.
        keyed: false,
    };
    let mut requests = Requests::new(request, spare);
    async move {
        let session = &session;
        let out = policy
            .run(once, Rejected::timed_out, || {
                let (request, fresh) = requests.next::<Response<RB>, _>(&session.exchange);
                attempt(session, request, fresh)
            })
            .await;
        out.or_else(Rejected::into_result)
    }
}

/// One attempt with `request` (`None`: it could not be copied), on the service made ready for
/// the call (`fresh`) or on a clone made ready now, its time left written in `grpc-timeout`
/// and its number in `grpc-previous-rpc-attempts` after the first. The request stays in the
/// attempt's future, written in place, until the service takes it (see the layer's).
// A block: an `async fn` would move its argument into a local and hold both.
#[allow(clippy::manual_async_fn)]
fn attempt<S, B, RB>(
    session: &Session<S, Http>,
    mut request: Option<Request<B>>,
    fresh: bool,
) -> impl Future<Output = Result<Response<RB>, Rejected<Response<RB>>>>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone,
    S::Error: Into<BoxError>,
{
    async move {
        let Some(written) = request.as_mut() else {
            let status = Status::from_error(Box::new(super::NotReplayable));
            return Err(Rejected {
                status,
                response: None,
                last: true,
            });
        };
        // gRFC A6: a retry or a hedge tells the server how many attempts came before it, and
        // every attempt how long it has.
        if let Some(a) = crate::engine::frame::attempt() {
            super::exchange::write_grpc_attempt(written.headers_mut(), &a);
        }
        // The attempt's span (feature `tracing`) records the status the layer read: the one
        // in the headers, or `OK` for a response that carries none there (its own comes in
        // trailers, which the layer does not read).
        match session.send(&mut request, fresh).await {
            Ok(response) => match failed_status(&response) {
                None => {
                    traced(Code::Ok);
                    Ok(response)
                }
                Some(status) => {
                    traced(status.code());
                    Err(Rejected {
                        status,
                        response: Some(response),
                        last: false,
                    })
                }
            },
            Err(error) => {
                let status = transport_status(error);
                traced(status.code());
                Err(Rejected {
                    status,
                    response: None,
                    last: false,
                })
            }
        }
    }
}

/// The status of the service's error, as tonic's client makes it (`Status::from_error`), but
/// `DEADLINE_EXCEEDED` when tonic's channel cut the call at the `grpc-timeout` the layer wrote
/// (the time the method had left), which tonic reports as `CANCELLED`.
fn transport_status(error: BoxError) -> Status {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&*error);
    while let Some(e) = cause {
        if e.is::<::tonic::TimeoutExpired>() {
            return Status::deadline_exceeded(error.to_string());
        }
        cause = e.source();
    }
    Status::from_error(error)
}

/// A failed attempt: the status it failed with, read by the method's codes, and the response
/// that reported it (none for the service's error or the method's timeout).
struct Rejected<R> {
    status: Status,
    response: Option<R>,
    /// Not to be sent again, whatever its code (its request could not be copied).
    last: bool,
}

impl<R> Rejected<R> {
    /// The method's timeout ran out: `DEADLINE_EXCEEDED`.
    fn timed_out(t: TimedOut) -> Self {
        Rejected {
            status: Status::from(t),
            response: None,
            last: false,
        }
    }

    /// What the caller gets if this was the last attempt: the response, or the status (which
    /// tonic's client returns as it is).
    fn into_result(self) -> Result<R, BoxError> {
        match self.response {
            Some(response) => Ok(response),
            None => Err(Box::new(self.status)),
        }
    }
}

/// A failed attempt is read as its status is, by the method's codes and the server's pushback.
impl<R> Classifier<Rejected<R>> for ByCodes {
    fn class(&self, rejected: &Rejected<R>) -> ErrorClass {
        if rejected.last {
            return ErrorClass::Permanent;
        }
        <Self as Classifier<Status>>::class(self, &rejected.status)
    }

    fn hint(&self, rejected: &Rejected<R>) -> Option<Duration> {
        <Self as Classifier<Status>>::hint(self, &rejected.status)
    }
}

const GRPC_STATUS: &str = "grpc-status";

/// The status a response reports before its body, if it is not `OK`: its `grpc-status` (a
/// trailers-only response), else for an HTTP status other than `200 OK` the code gRPC's
/// mapping gives it. The status keeps the response's headers as its metadata
/// (`grpc-retry-pushback-ms` among them); its message is left empty, as it is only read by
/// the method's codes (the caller gets the response itself).
fn failed_status<RB>(response: &Response<RB>) -> Option<Status> {
    let headers = response.headers();
    let code = match headers.get(GRPC_STATUS) {
        Some(code) => Code::from_bytes(code.as_bytes()),
        None if response.status() == StatusCode::OK => return None,
        None => code_of_http_status(response.status()),
    };
    (code != Code::Ok)
        .then(|| Status::with_metadata(code, "", MetadataMap::from_headers(headers.clone())))
}

/// gRPC's "HTTP to gRPC Status Code Mapping", for a response without `grpc-status`.
fn code_of_http_status(status: StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// Records `code` on the current attempt's span (feature `tracing`), with its name.
fn traced(code: Code) {
    let number = code as i32;
    let name = usize::try_from(number)
        .ok()
        .and_then(|n| NAMES.get(n))
        .copied()
        .unwrap_or("UNKNOWN");
    crate::observe::trace::grpc_status(number, name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn the_path_names_the_method() {
        assert_eq!(method_of("/shop.Orders/Get"), ("shop.Orders", "Get"));
        assert_eq!(method_of("/Orders/Get"), ("Orders", "Get"));
        for other in [
            "",
            "/",
            "/shop.Orders",
            "/shop.Orders/",
            "//Get",
            "/a/b/c",
            "a/b",
        ] {
            assert_eq!(method_of(other), ("", ""), "{other:?}");
        }
    }

    fn response(status: u16, headers: &[(&'static str, &'static str)]) -> Response<()> {
        let mut r = Response::builder().status(status);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.body(()).unwrap()
    }

    fn code(r: &Response<()>) -> Option<Code> {
        failed_status(r).map(|s| s.code())
    }

    #[test]
    fn a_status_is_read_before_the_body() {
        assert_eq!(code(&response(200, &[])), None, "in the trailers, unseen");
        assert_eq!(code(&response(200, &[("grpc-status", "0")])), None);
        assert_eq!(
            code(&response(200, &[("grpc-status", "14")])),
            Some(Code::Unavailable)
        );
        assert_eq!(
            code(&response(200, &[("grpc-status", "x")])),
            Some(Code::Unknown)
        );
        let pushed = response(
            200,
            &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "250")],
        );
        let status = failed_status(&pushed).unwrap();
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "250"
        );
        // A proxy's answer, without a gRPC status.
        assert_eq!(code(&response(503, &[])), Some(Code::Unavailable));
        assert_eq!(code(&response(429, &[])), Some(Code::Unavailable));
        assert_eq!(code(&response(404, &[])), Some(Code::Unimplemented));
        assert_eq!(code(&response(500, &[])), Some(Code::Unknown));
        // The gRPC status wins over the HTTP one.
        assert_eq!(code(&response(503, &[("grpc-status", "0")])), None);
    }

    /// A body that cannot be sent again.
    struct Once;

    impl ReplayBody for Once {
        fn replay(&mut self, _: usize) -> Option<Self> {
            None
        }
    }

    /// Answers `UNAVAILABLE`, trailers-only, and counts the calls.
    #[derive(Clone, Default)]
    struct Unavailable(Arc<AtomicU32>);

    impl<B> Service<Request<B>> for Unavailable {
        type Response = Response<Full<Bytes>>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<B>) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            let response = Response::builder().header(GRPC_STATUS, "14");
            std::future::ready(Ok(response.body(Full::default()).unwrap()))
        }
    }

    const RETRY_UNAVAILABLE: &str = r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

    async fn call<B>(
        service: &mut GrpcRetry<Unavailable>,
        request: Request<B>,
    ) -> Response<Full<Bytes>>
    where
        B: ReplayBody + Send + 'static,
    {
        core::future::poll_fn(|cx| Service::<Request<B>>::poll_ready(service, cx))
            .await
            .unwrap();
        service.call(request).await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_is_sent_again_only_when_its_body_can_be() {
        let config = ServiceConfig::from_json(RETRY_UNAVAILABLE).unwrap();
        let server = Unavailable::default();
        let mut channel = RetryLayer::grpc(config).layer(server.clone());
        let replayable = Request::post("/shop.Orders/Get")
            .body(Full::new(Bytes::from_static(&[0; 5])))
            .unwrap();
        let response = call(&mut channel, replayable).await;
        assert_eq!(response.headers()[GRPC_STATUS], "14");
        assert_eq!(server.0.swap(0, Ordering::SeqCst), 3);

        let once = Request::post("/shop.Orders/Get").body(Once).unwrap();
        let response = call(&mut channel, once).await;
        assert_eq!(response.headers()[GRPC_STATUS], "14");
        assert_eq!(server.0.load(Ordering::SeqCst), 1);
    }

    /// Another path than `/pkg.Service/Method` gets the default entry.
    #[tokio::test(start_paused = true)]
    async fn another_path_gets_the_default_entry() {
        let config = ServiceConfig::from_json(
            &RETRY_UNAVAILABLE.replace(r#"{"service": "shop.Orders"}"#, "{}"),
        )
        .unwrap();
        let server = Unavailable::default();
        let mut channel = RetryLayer::grpc(config).layer(server.clone());
        let request = Request::post("/health")
            .body(Full::<Bytes>::default())
            .unwrap();
        call(&mut channel, request).await;
        assert_eq!(server.0.load(Ordering::SeqCst), 3);
    }
}
