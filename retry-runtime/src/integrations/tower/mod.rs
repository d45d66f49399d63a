//! A tower layer (feature `tower`): [`RetryLayer`] retries a [`Service`]'s requests under a
//! [`Policy`], with the loop of `#[retry]` and [`Policy::retry`]: the retry token bucket,
//! adaptive mode's rate limiter, a retry budget, the server's hints, the deadline and the
//! attempt timeouts, and idempotency by request.
//!
//! ```
//! use bytes::Bytes;
//! use http::{Request, Response, StatusCode};
//! use http_body_util::Full;
//! use retry_runtime::Policy;
//! use retry_runtime::tower::RetryLayer;
//! use std::convert::Infallible;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::task::{Context, Poll};
//! use std::time::Duration;
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! /// A server that answers its first two requests `503 Service Unavailable`.
//! #[derive(Clone, Default)]
//! struct Flaky(Arc<AtomicU32>);
//!
//! impl Service<Request<Full<Bytes>>> for Flaky {
//!     type Response = Response<Full<Bytes>>;
//!     type Error = Infallible;
//!     type Future = std::future::Ready<Result<Self::Response, Infallible>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
//!         Poll::Ready(Ok(()))
//!     }
//!
//!     fn call(&mut self, _: Request<Full<Bytes>>) -> Self::Future {
//!         let status = match self.0.fetch_add(1, Ordering::SeqCst) {
//!             0 | 1 => StatusCode::SERVICE_UNAVAILABLE,
//!             _ => StatusCode::OK,
//!         };
//!         let response = Response::builder().status(status).body(Full::default());
//!         std::future::ready(Ok(response.unwrap()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let layer = RetryLayer::new(Policy::new().max_attempts(3).initial_backoff(Duration::from_millis(100)));
//! let server = Flaky::default();
//! let mut client = layer.layer(server.clone());
//!
//! // A GET is idempotent: retried through the two 503s.
//! let get = Request::get("/items/1").body(Full::default()).unwrap();
//! std::future::poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
//! assert_eq!(client.call(get).await.unwrap().status(), StatusCode::OK);
//! assert_eq!(server.0.load(Ordering::SeqCst), 3);
//!
//! // A POST is not: after a 503 the server may have acted on it, so the caller gets the 503.
//! server.0.store(0, Ordering::SeqCst);
//! let post = Request::post("/orders").body(Full::default()).unwrap();
//! std::future::poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
//! let response = client.call(post).await.unwrap();
//! assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
//! assert_eq!(server.0.load(Ordering::SeqCst), 1);
//! # }
//! ```
//!
//! Over hyper-util's client: `ServiceBuilder::new().layer(RetryLayer::new(policy))
//! .service(client)`. Over a tonic `Channel`, the same, and the generated client is built on
//! the result (`OrdersClient::new(retrying)`); gRPC calls are `POST`s, so a layer for
//! idempotent methods says so: `RetryLayer::new(policy).idempotent(true)`.
//!
//! With the `grpc-config` feature, `RetryLayer::grpc(config)` takes its policies from a gRPC
//! service config (gRFC A6) instead: each call runs under its own method's `retryPolicy` or
//! `hedgingPolicy`, as `GrpcPolicy::retry` runs it, and the config's codes decide what is
//! retried.
//!
//! # What fails an attempt
//!
//! - The service's error, classified by `Box<dyn Error + Send + Sync>`'s [`Classify`] impl,
//!   which walks its chain of causes to the first error of a type the crate knows (a failed
//!   connection of hyper-util's client or of tonic is `NotSent`, a reset one `Transient`, an
//!   HTTP/2 stream the server refused or left unprocessed under its `GOAWAY` `NotSent` with the
//!   `http2` feature, ...).
//!   The layer's error is that box (`tower::BoxError`, tower's convention); a timeout of the
//!   policy is a [`TimedOut`] in it.
//! - A response that the [`Exchange`] says failed: with [`Http`], a status that
//!   `http::StatusCode`'s `Classify` retries (most 5xx, 408, 429), or a gRPC status such as
//!   `UNAVAILABLE` in a trailers-only response; its `Retry-After`
//!   (or `grpc-retry-pushback-ms`) is the server's hint. When the retries end, the caller gets
//!   the last response as `Ok`, as the service gave it: a 503 is still a response.
//!
//! Both count as failed attempts for the token bucket, the rate limiter, a budget and a
//! circuit breaker, and the policy's `on_retry` hook sees them as a [`Failure`]. A call that
//! the policy's breaker or one of its guards ([`Policy::guard`]) refuses fails with a
//! [`Refused`](crate::Refused) in the `BoxError`, without reaching the service; the guards are asked about each attempt as for any `Policy` call.
//!
//! # Replay and idempotency
//!
//! A request is sent again only as a copy made by the [`Exchange`]: [`Http`] copies an
//! `http::Request` whose body is a [`ReplayBody`] (a `Full`, a `String`, a boxed body or a
//! unary gRPC body that is whole when the request is made, up to 1 MiB); a body that cannot
//! be replayed (hyper's `Incoming`, a stream still being produced) is sent once and never
//! retried. [`Cloning`] serves any `Clone` request.
//!
//! A request that is not idempotent (with [`Http`]: `POST`, `PATCH`, unless it carries an
//! `Idempotency-Key`; or every request of a layer built with `.idempotent(false)`) is retried
//! only after failures that prove the server did not act on it: `NotSent` (the connection was
//! refused; with the `http2` feature, an HTTP/2 stream refused with `REFUSED_STREAM` or above a
//! `GOAWAY`'s last stream id) and `Throttling` (429, `RESOURCE_EXHAUSTED`). A policy built with
//! `idempotent(false)` makes every request so, whatever the layer says.
//!
//! Under a policy that sends idempotency keys
//! ([`Policy::idempotency_key`](crate::Policy::idempotency_key)), the layer writes the call's
//! invocation id as the [`IDEMPOTENCY_KEY`] header of every attempt's request (every hedge's
//! too; with [`Http`], into every `http::Request`, replacing a key it carried), so each request
//! is retried as an idempotent one, a `POST` included. Its answers are read as the IETF httpapi
//! draft "The Idempotency-Key HTTP Header Field" means them: `409 Conflict` (a request with
//! the same key is still being processed) is a `Throttling` failure, retried after its
//! `Retry-After` or the backoff, and `422 Unprocessable Content` (the key was used with another
//! payload) is the caller's at once. An [`Exchange`] of your own keys requests with
//! [`Exchange::carries_idempotency_key`] and [`Exchange::write_idempotency_key`].
//!
//! A request that may not be sent again after a failure (not idempotent, or not replayable)
//! ends its call at that failure, with the failure's own class: a `503` is booked as
//! `Transient`, a cut by the policy's attempt timeout as `Timeout`, so the token bucket, the
//! rate limiter, a budget and a circuit breaker ([`Policy::breaker`]) count it as they count
//! any other, and nothing retries it. (The loop is told so as an input of the call: one that
//! is not idempotent retries only what provably was not acted on, one whose body cannot be
//! sent again makes one attempt.)
//!
//! # Services, readiness and shared state
//!
//! The inner service must be `Clone`: `poll_ready` is the inner service's, and `call` takes
//! the service it made ready for the request's first attempt, leaving a clone in its place;
//! each later attempt drives the readiness of a fresh clone before calling it, as
//! `tower::retry` does. The first attempt is made when the response future is first polled
//! (after a send token of adaptive mode), inside the attempt: a layer below this one can
//! read [`attempt()`](crate::attempt) in its own `call` (to write
//! [`wire::insert_attempt_headers`](crate::integrations::wire::insert_attempt_headers), say).
//!
//! The policy is kept in an `Arc`: every clone of the service, and every
//! service the layer wraps, shares its retry token bucket and rate limiter, as the calls of one
//! `#[retry]` function do.
//!
//! The response future is boxed and `Send` (tonic and hyper ask for that): the inner service,
//! its futures, its responses and the request must be `Send`.
//!
//! # Compared with `tower::retry`
//!
//! `tower::retry::Retry` is a mechanism: its [`Policy`](https://docs.rs/tower/0.5/tower/retry/trait.Policy.html)
//! trait is asked, after each attempt, whether to retry (`retry(&mut self, &mut Req, &mut
//! Result<Res, E>) -> Option<Future>`, the future being the wait before the next attempt) and
//! how to copy a request (`clone_request(&mut self, &Req) -> Option<Req>`); what fails, how
//! many attempts, how long to wait and what to copy are the policy's author's to write. Its
//! `backoff::ExponentialBackoff` draws the waits, and its
//! [`budget::TpsBudget`](https://docs.rs/tower/0.5/tower/retry/budget/struct.TpsBudget.html)
//! (Finagle's retry budget) bounds retries to a share of the recent requests: each request
//! deposits, each retry withdraws, over a sliding window of `ttl` (1 to 60 s), with
//! `min_per_sec` retries always allowed and `retry_percent` of the deposits on top; the policy
//! calls `deposit` and `withdraw` itself. The inner service's error type is kept.
//!
//! [`RetryLayer`] is that mechanism with the decisions made: the [`Policy`] of `#[retry]`
//! (attempts, exponential backoff with full, equal or decorrelated jitter, attempt timeouts
//! and a deadline), the classification of HTTP statuses, gRPC codes and hyper, tonic and I/O
//! errors, the server's `Retry-After`, `x-amz-retry-after` and `grpc-retry-pushback-ms`, the
//! AWS SDKs' retry token bucket (retries cost tokens by class, successes refund them; one
//! bucket per policy, or a `static`, or a partition's), their adaptive mode (a client rate
//! limiter that slows sends after throttling), an optional [`RetryBudget`](crate::RetryBudget)
//! (a share of the requests as Finagle's and Envoy's, or gRPC's retry throttling) and circuit
//! breaker, request replay for `http::Request` bodies, idempotency by method (a request that
//! is not idempotent is sent again only when it provably was not acted on), tracing events
//! and metrics. Its errors are `BoxError`s, and the last failed response comes back as a
//! response.

mod body;
mod caller;
mod deadline;
mod exchange;
#[cfg(feature = "grpc-config")]
mod grpc;
mod server;

pub use body::ReplayBody;
pub use deadline::DeadlineLayer;
pub use exchange::{Cloning, Exchange, Http, IDEMPOTENCY_KEY};
#[cfg(feature = "grpc-config")]
pub use grpc::{GrpcRetry, GrpcRetryLayer};
pub use server::{CallerAttempt, Server, ServerFuture, ServerLayer};

use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::engine::Timed;
use crate::policy::{
    ByClassify, ClassifiesWith, GuardsFor, Hook, Kind, NoHook, NoRepeat, Policy, Repeat, Stops,
    TimeoutsFor,
};
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// The layer's error type: the service's error, boxed (tower's `BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Wraps a service in [`Retry`]: its requests are retried under a [`Policy`].
///
/// The policy classifies with the [`Classify`] impls (as every [`Policy::new`] starts; a policy
/// given its own classifier with [`Policy::classify`] is not accepted, as what it would classify is
/// the layer's [`Failure`]). Its `retry_if_ok` predicate sees responses, its `on_retry` hook sees
/// [`Failure`]s; it may have a circuit breaker ([`Policy::breaker`]) and guards
/// ([`Policy::guard`]). The layer's error type represents every refusal, and a timeout, so it keeps
/// the policy as one with timeouts (`K` is its kind: `TimedOut`, or `(TimedOut, Refused)` with a
/// breaker or a guard).
pub struct RetryLayer<M = Http, P = NoRepeat, O = NoHook, K: Kind = TimedOut> {
    policy: Arc<Policy<K, P, O>>,
    exchange: M,
    idempotent: Option<bool>,
}

impl<P, O, K: ByClassify<Timed = K>> RetryLayer<Http, P, O, K> {
    /// A layer for `http::Request`s ([`Http`]) under `policy`, which it keeps in an `Arc`.
    #[must_use]
    pub fn new<C: ByClassify<Timed = K>>(policy: Policy<C, P, O>) -> Self {
        Self::shared(Arc::new(policy.with_timeouts()))
    }

    /// A layer under a policy already shared (with its bucket) by other users.
    #[must_use]
    pub fn shared(policy: Arc<Policy<K, P, O>>) -> Self {
        RetryLayer {
            policy,
            exchange: Http::new(),
            idempotent: None,
        }
    }
}

impl<P, O, K: Kind, M> RetryLayer<M, P, O, K> {
    /// Treats every request as idempotent (`true`: a `POST`, a gRPC call is retried after
    /// any retryable failure) or as not idempotent (`false`), instead of asking the
    /// [`Exchange`] (for [`Http`], the method).
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Replays requests and reads responses with `exchange`: [`Http`] with another replay
    /// limit, [`Cloning`], or one of your own.
    #[must_use]
    pub fn exchange<N>(self, exchange: N) -> RetryLayer<N, P, O, K> {
        RetryLayer {
            policy: self.policy,
            exchange,
            idempotent: self.idempotent,
        }
    }

    /// The policy.
    #[must_use]
    pub fn policy(&self) -> &Policy<K, P, O> {
        &self.policy
    }
}

impl<P, O, K: Kind, M: Clone> Clone for RetryLayer<M, P, O, K> {
    fn clone(&self) -> Self {
        RetryLayer {
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

impl<P, O, K: Kind, M: fmt::Debug> fmt::Debug for RetryLayer<M, P, O, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("policy", &*self.policy)
            .field("exchange", &self.exchange)
            .field("idempotent", &self.idempotent)
            .finish()
    }
}

impl<S, P, O, K: Kind, M: Clone> Layer<S> for RetryLayer<M, P, O, K> {
    type Service = Retry<S, M, P, O, K>;

    fn layer(&self, inner: S) -> Retry<S, M, P, O, K> {
        Retry {
            inner,
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

/// A service whose requests are retried under a [`Policy`] (made by [`RetryLayer`]).
pub struct Retry<S, M = Http, P = NoRepeat, O = NoHook, K: Kind = TimedOut> {
    inner: S,
    policy: Arc<Policy<K, P, O>>,
    exchange: M,
    idempotent: Option<bool>,
}

impl<S, P, O, K: Kind, M> Retry<S, M, P, O, K> {
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

impl<S: Clone, P, O, K: Kind, M: Clone> Clone for Retry<S, M, P, O, K> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

impl<S: fmt::Debug, P, O, K: Kind, M: fmt::Debug> fmt::Debug for Retry<S, M, P, O, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("policy", &*self.policy)
            .field("exchange", &self.exchange)
            .field("idempotent", &self.idempotent)
            .finish()
    }
}

impl<S, P, O, K, M, Req> Service<Req> for Retry<S, M, P, O, K>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Into<BoxError>,
    Req: Send + 'static,
    M: Exchange<Req, S::Response> + Clone + Send + Sync + 'static,
    P: Repeat<S::Response> + Send + Sync + 'static,
    O: Hook<Failure<S::Response>> + Send + Sync + 'static,
    K: ByClassify<Timed = K>
        + Kind<Timer<S::Response, Failure<S::Response>> = Timed<Failure<S::Response>>>
        + TimeoutsFor<Failure<S::Response>>
        + GuardsFor<Failure<S::Response>>
        + Stops<S::Response, Failure<S::Response>>
        + ClassifiesWith<Failure<S::Response>>
        + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Req) -> Self::Future {
        let spare = self.exchange.replay(&mut request);
        // Under a policy that sends idempotency keys, a request that carries one is safe to
        // send again, whatever its method or the layer says.
        let keyed =
            self.policy.sends_idempotency_keys() && self.exchange.carries_idempotency_key(&request);
        let idempotent = keyed
            || self
                .idempotent
                .unwrap_or_else(|| self.exchange.is_idempotent(&request));
        let gate = Gate {
            replayable: spare.is_some(),
            idempotent,
            keyed,
        };
        let ready = take_ready(&mut self.inner);
        let policy = self.policy.clone();
        let exchange = self.exchange.clone();
        ResponseFuture {
            inner: Box::pin(run(policy, exchange, ready, request, spare, gate)),
        }
    }
}

/// The future of a [`Retry`] call: the last attempt's response, or its error.
pub struct ResponseFuture<T> {
    inner: Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>,
}

impl<T> Future for ResponseFuture<T> {
    type Output = Result<T, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> fmt::Debug for ResponseFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

/// A failed attempt, as the policy's `on_retry` hook sees it: a response that reports a
/// failure, or the service's error.
///
/// ```
/// use http::Response;
/// use retry_runtime::{Policy, RetryEvent};
/// use retry_runtime::tower::{Failure, RetryLayer};
///
/// type Body = http_body_util::Full<bytes::Bytes>;
///
/// let layer = RetryLayer::new(Policy::new().on_retry(|e: &RetryEvent<'_, Failure<Response<Body>>>| {
///     let failure = e.error().expect("not polling");
///     match failure.response() {
///         Some(r) => println!("attempt {} answered {}", e.attempt(), r.status()),
///         None => println!("attempt {} failed: {}", e.attempt(), failure.error().unwrap()),
///     }
/// }));
/// # let _ = layer;
/// ```
pub struct Failure<R> {
    what: What<R>,
    class: ErrorClass,
    hint: Option<Duration>,
}

enum What<R> {
    Response(R),
    Error(BoxError),
}

impl<R> Failure<R> {
    fn of_response(response: R, class: ErrorClass, hint: Option<Duration>) -> Self {
        Failure {
            what: What::Response(response),
            class,
            hint,
        }
    }

    fn of_error(error: BoxError, class: ErrorClass, hint: Option<Duration>) -> Self {
        Failure {
            what: What::Error(error),
            class,
            hint,
        }
    }

    /// The response, if the attempt was answered.
    #[must_use]
    pub fn response(&self) -> Option<&R> {
        match &self.what {
            What::Response(r) => Some(r),
            What::Error(_) => None,
        }
    }

    /// The error, if the attempt failed without a response.
    #[must_use]
    pub fn error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match &self.what {
            What::Response(_) => None,
            What::Error(e) => Some(&**e),
        }
    }

    /// What the caller gets if this was the last attempt: the response, or the error.
    pub fn into_result(self) -> Result<R, BoxError> {
        match self.what {
            What::Response(r) => Ok(r),
            What::Error(e) => Err(e),
        }
    }
}

/// The class the layer found: the [`Exchange`]'s for a response, the error's own for an
/// error.
impl<R> Classify for Failure<R> {
    fn classify(&self) -> ErrorClass {
        self.class
    }

    fn retry_after(&self) -> Option<Duration> {
        self.hint
    }
}

/// A timeout of the policy: a [`TimedOut`] error.
impl<R> From<TimedOut> for Failure<R> {
    fn from(t: TimedOut) -> Self {
        Failure::of_error(Box::new(t), ErrorClass::Timeout, None)
    }
}

/// A call the policy's breaker ([`Policy::breaker`]) or one of its guards
/// ([`Policy::guard`]) refused: a [`Refused`](crate::Refused) error.
impl<R> From<crate::protect::guard::Refused> for Failure<R> {
    fn from(refused: crate::protect::guard::Refused) -> Self {
        let class = refused.classify();
        Failure::of_error(Box::new(refused), class, None)
    }
}

impl<R: fmt::Debug> fmt::Debug for Failure<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Failure");
        match &self.what {
            What::Response(r) => d.field("response", r),
            What::Error(e) => d.field("error", e),
        };
        d.field("class", &self.class)
            .field("hint", &self.hint)
            .finish()
    }
}

/// What a request allows after a failed attempt.
#[derive(Clone, Copy, Debug)]
struct Gate {
    /// A copy can be sent.
    replayable: bool,
    /// It may be sent again after it may have reached the server.
    idempotent: bool,
    /// Each attempt's request carries the call's idempotency key.
    keyed: bool,
}

/// The classified failure of a response or an error.
fn failure<R>(
    response: Result<R, BoxError>,
    class: ErrorClass,
    hint: Option<Duration>,
) -> Failure<R> {
    match response {
        Ok(r) => Failure::of_response(r, class, hint),
        Err(e) => Failure::of_error(e, class, hint),
    }
}

/// One call: its attempts under the policy, and the last response as the caller's `Ok`.
///
/// A request that can be copied runs under the policy, as idempotent or not (a POST retries
/// only a failure that provably was not acted on, `NotSent` or `Throttling`, and ends
/// `NotIdempotent` otherwise). One that cannot be copied makes one attempt (the call is told
/// so as an input, `once`): its failure ends the call with its own class, which the bucket,
/// the rate limiter, a budget and a breaker count as they count any other.
fn run<S, Req, P, O, K, M>(
    policy: Arc<Policy<K, P, O>>,
    exchange: M,
    service: S,
    request: Req,
    spare: Option<Req>,
    gate: Gate,
) -> impl Future<Output = Result<S::Response, BoxError>>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    M: Exchange<Req, S::Response>,
    P: Repeat<S::Response>,
    O: Hook<Failure<S::Response>>,
    K: ByClassify
        + Kind<Timer<S::Response, Failure<S::Response>> = Timed<Failure<S::Response>>>
        + TimeoutsFor<Failure<S::Response>>
        + GuardsFor<Failure<S::Response>>
        + Stops<S::Response, Failure<S::Response>>
        + ClassifiesWith<Failure<S::Response>>,
{
    // What the attempts share is made before the call's future, which holds each once (an
    // `async fn` would keep its arguments and what it moved them into).
    let session = Session {
        service: Mutex::new(service),
        exchange,
        keyed: gate.keyed,
    };
    let mut requests = Requests::new(request, spare);
    async move {
        let session = &session;
        // A request that cannot be copied makes one attempt: its failure ends the call with
        // its own class, which the bucket, the rate limiter, a budget and a breaker count as
        // they count any other. One that can runs under the policy, as idempotent or not (the
        // loop itself retries a POST only after what provably was not acted on).
        let out = policy
            .retry_limited(gate.idempotent, !gate.replayable, || {
                let (request, fresh) = requests.next(&session.exchange);
                session.attempt(request, fresh)
            })
            .await;
        out.or_else(Failure::into_result)
    }
}

/// The service made ready for a request, which goes with it; a clone takes its place.
fn take_ready<S: Clone>(service: &mut S) -> S {
    let clone = service.clone();
    std::mem::replace(service, clone)
}

/// A call's requests: `first`, then copies of `spare` made by the exchange (`None` once it
/// cannot be copied).
struct Requests<Req> {
    first: Option<Req>,
    spare: Option<Req>,
}

impl<Req> Requests<Req> {
    fn new(request: Req, spare: Option<Req>) -> Self {
        Requests {
            first: Some(request),
            spare,
        }
    }

    /// The next attempt's request, and whether it is the call's first (sent by the service
    /// made ready for the call).
    fn next<Resp, M: Exchange<Req, Resp>>(&mut self, exchange: &M) -> (Option<Req>, bool) {
        let fresh = self.first.is_some();
        let request = self
            .first
            .take()
            .or_else(|| self.spare.as_mut().and_then(|s| exchange.replay(s)));
        (request, fresh)
    }
}

/// What a call's attempts share.
struct Session<S, M> {
    /// The service made ready for the first attempt; later attempts clone it.
    service: Mutex<S>,
    exchange: M,
    /// Each attempt's request gets the call's idempotency key, and its responses are read as
    /// answers to a keyed request.
    keyed: bool,
}

/// A request that cannot be copied was asked for again.
#[derive(Debug)]
struct NotReplayable;

impl fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request cannot be sent again: its body cannot be replayed")
    }
}

impl std::error::Error for NotReplayable {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S, M> Session<S, M> {
    /// One attempt with `request` (`None`: it could not be copied), with the service made
    /// ready for the call on its first attempt (`fresh`), else with a clone made ready now.
    /// The request stays in the attempt's future, written in place, until the service takes
    /// it: the future holds it once.
    // A block: an `async fn` would move its argument into a local and hold both
    // (BENCHMARKS.md, "Memory").
    #[allow(clippy::manual_async_fn)]
    fn attempt<Req>(
        &self,
        mut request: Option<Req>,
        fresh: bool,
    ) -> impl Future<Output = Result<S::Response, Failure<S::Response>>>
    where
        S: Service<Req> + Clone,
        S::Error: Into<BoxError>,
        M: Exchange<Req, S::Response>,
    {
        async move {
            let Some(written) = request.as_mut() else {
                return Err(not_replayable());
            };
            let attempt = crate::attempt();
            if let Some(a) = &attempt {
                self.exchange.write_attempt(written, a);
            }
            let key = if self.keyed {
                attempt.and_then(|a| a.idempotency_key())
            } else {
                None
            };
            if let Some(key) = key {
                self.exchange.write_idempotency_key(written, key);
                crate::engine::frame::mark_key_sent();
            }
            let outcome = match self.send(&mut request, fresh).await {
                Ok(response) => {
                    let failed = if key.is_some() {
                        self.exchange.keyed_failure(&response)
                    } else {
                        self.exchange.failure(&response)
                    };
                    match failed {
                        None => return Ok(response),
                        Some((class, hint)) => (Ok(response), class, hint),
                    }
                }
                Err(error) => {
                    let (class, hint) = (error.classify(), error.retry_after());
                    (Err(error), class, hint)
                }
            };
            let (outcome, class, hint) = outcome;
            Err(failure(outcome, class, hint))
        }
    }

    /// Sends the request `request` holds, taken from it when the service is ready, and waits
    /// for its response.
    async fn send<Req>(
        &self,
        request: &mut Option<Req>,
        fresh: bool,
    ) -> Result<S::Response, BoxError>
    where
        S: Service<Req> + Clone,
        S::Error: Into<BoxError>,
    {
        let call = if fresh {
            call_ready(&self.service, take_request(request)?)
        } else {
            let mut service = lock(&self.service).clone();
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            service.call(take_request(request)?)
        };
        call.await.map_err(Into::into)
    }
}

/// The attempt's failure when its request could not be copied.
fn not_replayable<T>() -> Failure<T> {
    let error: BoxError = Box::new(NotReplayable);
    Failure::of_error(error, ErrorClass::Permanent, None)
}

/// The request an attempt holds, taken to be sent (an attempt without one failed before).
fn take_request<Req>(request: &mut Option<Req>) -> Result<Req, BoxError> {
    request
        .take()
        .ok_or_else(|| Box::new(NotReplayable) as BoxError)
}

/// Calls the service that was made ready (its guard is gone before anything is awaited).
fn call_ready<S: Service<Req>, Req>(service: &Mutex<S>, request: Req) -> S::Future {
    lock(service).call(request)
}
