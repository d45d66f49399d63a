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
//! # What fails an attempt
//!
//! - The service's error, classified by `Box<dyn Error + Send + Sync>`'s [`Classify`] impl,
//!   which walks its chain of causes to the first error of a type the crate knows (a failed
//!   connection of hyper-util's client or of tonic is `NotSent`, a reset one `Transient`, ...).
//!   The layer's error is that box (`tower::BoxError`, tower's convention); a timeout of the
//!   policy is a [`TimedOut`] in it.
//! - A response that the [`Exchange`] says failed: with [`Http`], a status that
//!   `http::StatusCode`'s `Classify` retries (most 5xx, 408, 429), or a gRPC status such as
//!   `UNAVAILABLE` in a trailers-only response; its `Retry-After`
//!   (or `grpc-retry-pushback-ms`) is the server's hint. When the retries end, the caller gets
//!   the last response as `Ok`, as the service gave it: a 503 is still a response.
//!
//! Both count as failed attempts for the token bucket, the rate limiter and a budget, and the
//! policy's `on_retry` hook sees them as a [`Failure`].
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
//! refused) and `Throttling` (429, `RESOURCE_EXHAUSTED`). A policy built with
//! `idempotent(false)` makes every request so, whatever the layer says.
//!
//! A request that must not be sent again (not idempotent, or not replayable) is ended by the
//! layer itself one millisecond before the policy's attempt timeout or deadline would cut it
//! off, with a [`TimedOut`] error, so that it is not retried as a timeout; should the
//! policy's timer cut it off all the same, the next attempt sends nothing and ends the call
//! with that timeout.
//!
//! # Services, readiness and shared state
//!
//! The inner service must be `Clone`: `poll_ready` is the inner service's, and `call` takes
//! the service it made ready for the request's first attempt, leaving a clone in its place;
//! each later attempt drives the readiness of a fresh clone before calling it, as
//! `tower::retry` does. The first attempt is made when the response future is first polled
//! (after a send token of adaptive mode), inside the attempt: a layer below this one can
//! read [`attempt()`](crate::attempt) in its own `call` (to write
//! [`wire::insert_attempt_headers`](crate::wire::insert_attempt_headers), say).
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
//! (a share of the requests as Finagle's and Envoy's, or gRPC's retry throttling), request
//! replay for `http::Request` bodies, idempotency by method, tracing events and metrics. Its
//! errors are `BoxError`s, and the last failed response comes back as a response.
#![cfg_attr(docsrs, doc(cfg(feature = "tower")))]

mod body;
mod exchange;

pub use body::ReplayBody;
pub use exchange::{Cloning, Exchange, Http, IDEMPOTENCY_KEY};

use crate::plug::{ByTrait, Hook, NoHook, NoRepeat, Repeat};
use crate::{Classify, ErrorClass, Policy, TimedOut, TimeoutKind};
use core::future::{Future, poll_fn};
use core::pin::{Pin, pin};
use core::task::{Context, Poll};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

/// The layer's error type: the service's error, boxed (tower's `BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Wraps a service in [`Retry`]: its requests are retried under a [`Policy`].
///
/// The policy classifies with the [`Classify`] impls (the `ByTrait` policy every
/// [`Policy::new`] starts with; a policy given its own classifier with
/// [`Policy::classify`] is not accepted, as what it would classify is the layer's
/// [`Failure`]). Its `retry_if_ok` predicate sees responses, its `on_retry` hook sees
/// [`Failure`]s.
pub struct RetryLayer<P = NoRepeat, O = NoHook, M = Http> {
    policy: Arc<Policy<ByTrait, P, O>>,
    exchange: M,
    idempotent: Option<bool>,
}

impl<P, O> RetryLayer<P, O, Http> {
    /// A layer for `http::Request`s ([`Http`]) under `policy`, which it keeps in an `Arc`.
    #[must_use]
    pub fn new(policy: Policy<ByTrait, P, O>) -> Self {
        Self::shared(Arc::new(policy))
    }

    /// A layer under a policy already shared (with its bucket) by other users.
    #[must_use]
    pub fn shared(policy: Arc<Policy<ByTrait, P, O>>) -> Self {
        RetryLayer {
            policy,
            exchange: Http::new(),
            idempotent: None,
        }
    }
}

impl<P, O, M> RetryLayer<P, O, M> {
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
    pub fn exchange<N>(self, exchange: N) -> RetryLayer<P, O, N> {
        RetryLayer {
            policy: self.policy,
            exchange,
            idempotent: self.idempotent,
        }
    }

    /// The policy.
    #[must_use]
    pub fn policy(&self) -> &Policy<ByTrait, P, O> {
        &self.policy
    }
}

impl<P, O, M: Clone> Clone for RetryLayer<P, O, M> {
    fn clone(&self) -> Self {
        RetryLayer {
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

impl<P, O, M: fmt::Debug> fmt::Debug for RetryLayer<P, O, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("policy", &*self.policy)
            .field("exchange", &self.exchange)
            .field("idempotent", &self.idempotent)
            .finish()
    }
}

impl<S, P, O, M: Clone> Layer<S> for RetryLayer<P, O, M> {
    type Service = Retry<S, P, O, M>;

    fn layer(&self, inner: S) -> Retry<S, P, O, M> {
        Retry {
            inner,
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

/// A service whose requests are retried under a [`Policy`] (made by [`RetryLayer`]).
pub struct Retry<S, P = NoRepeat, O = NoHook, M = Http> {
    inner: S,
    policy: Arc<Policy<ByTrait, P, O>>,
    exchange: M,
    idempotent: Option<bool>,
}

impl<S, P, O, M> Retry<S, P, O, M> {
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

impl<S: Clone, P, O, M: Clone> Clone for Retry<S, P, O, M> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
            exchange: self.exchange.clone(),
            idempotent: self.idempotent,
        }
    }
}

impl<S: fmt::Debug, P, O, M: fmt::Debug> fmt::Debug for Retry<S, P, O, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("policy", &*self.policy)
            .field("exchange", &self.exchange)
            .field("idempotent", &self.idempotent)
            .finish()
    }
}

impl<S, P, O, M, Req> Service<Req> for Retry<S, P, O, M>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Into<BoxError>,
    Req: Send + 'static,
    M: Exchange<Req, S::Response> + Clone + Send + Sync + 'static,
    P: Repeat<S::Response> + Send + Sync + 'static,
    O: Hook<Failure<S::Response>> + Send + Sync + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Req) -> Self::Future {
        let spare = self.exchange.replay(&mut request);
        let idempotent = self
            .idempotent
            .unwrap_or_else(|| self.exchange.is_idempotent(&request));
        let gate = Gate {
            replayable: spare.is_some(),
            idempotent,
        };
        // The service made ready goes with its request; a clone takes its place.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let policy = self.policy.clone();
        let exchange = self.exchange.clone();
        ResponseFuture {
            inner: Box::pin(
                async move { run(&policy, &exchange, ready, request, spare, gate).await },
            ),
        }
    }
}

/// The future of a [`Retry`] call: the last attempt's response, or its error.
pub struct ResponseFuture<T> {
    inner: Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>,
}

impl<T> Future for ResponseFuture<T> {
    type Output = Result<T, BoxError>;

    #[inline]
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
/// error, `Permanent` for a request that may not be sent again after it.
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
}

impl Gate {
    /// Whether any failure may be followed by another attempt.
    fn repeatable(self) -> bool {
        self.replayable && self.idempotent
    }

    /// The class the loop sees: `Permanent` for a failure after which the request may not be
    /// sent again.
    fn class(self, class: ErrorClass) -> ErrorClass {
        if !self.replayable || (!self.idempotent && !class.is_safe_for_non_idempotent()) {
            ErrorClass::Permanent
        } else {
            class
        }
    }

    fn error<R>(self, error: BoxError) -> Failure<R> {
        let (class, hint) = (error.classify(), error.retry_after());
        Failure::of_error(error, self.class(class), hint)
    }
}

/// One call: its attempts under the policy, and the last response as the caller's `Ok`.
async fn run<S, Req, P, O, M>(
    policy: &Policy<ByTrait, P, O>,
    exchange: &M,
    service: S,
    request: Req,
    spare: Option<Req>,
    gate: Gate,
) -> Result<S::Response, BoxError>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    M: Exchange<Req, S::Response>,
    P: Repeat<S::Response>,
    O: Hook<Failure<S::Response>>,
{
    let session = Session {
        service: Mutex::new(service),
        cut: Mutex::new(None),
        started: Instant::now(),
    };
    let session = &session;
    let mut first = Some(request);
    let mut spare = spare;
    let out = policy
        .retry(move || {
            let fresh = first.is_some();
            let request = first
                .take()
                .or_else(|| spare.as_mut().and_then(|s| exchange.replay(s)));
            session.attempt(exchange, request, fresh, gate)
        })
        .await;
    out.or_else(Failure::into_result)
}

/// What a call's attempts share.
struct Session<S> {
    /// The service made ready for the first attempt; later attempts clone it.
    service: Mutex<S>,
    /// For a request that may not be sent again: the timeout of the attempt under way, until
    /// it ends by itself. Found by the next attempt, it means the policy's timer cut it off.
    cut: Mutex<Option<TimedOut>>,
    /// When the call started.
    started: Instant,
}

/// A request that cannot be copied was asked for again (a `retry_if_ok` repeat of one).
#[derive(Debug)]
struct NotReplayable;

impl fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request cannot be sent again: its body cannot be replayed")
    }
}

impl std::error::Error for NotReplayable {}

/// Ends a request that may not be sent again this long before the policy's timer would.
const AHEAD: Duration = Duration::from_millis(1);

/// `d` to the nearest millisecond.
fn to_millis(d: Duration) -> Duration {
    let ms = d.as_micros().saturating_add(500) / 1000;
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S> Session<S> {
    /// One attempt with `request` (`None`: it could not be copied).
    async fn attempt<Req, M>(
        &self,
        exchange: &M,
        request: Option<Req>,
        fresh: bool,
        gate: Gate,
    ) -> Result<S::Response, Failure<S::Response>>
    where
        S: Service<Req> + Clone,
        S::Error: Into<BoxError>,
        M: Exchange<Req, S::Response>,
    {
        let Some(request) = request else {
            return Err(Failure::of_error(
                Box::new(NotReplayable),
                ErrorClass::Permanent,
                None,
            ));
        };
        if gate.repeatable() {
            return self.send(exchange, request, fresh, gate).await;
        }
        if let Some(cut) = lock(&self.cut).take() {
            // The policy's timer cut the last attempt off, and the loop retries timeouts:
            // this request is not sent again.
            return Err(Failure::of_error(
                Box::new(cut),
                ErrorClass::Permanent,
                None,
            ));
        }
        let Some((at, timed_out)) = self.cutoff() else {
            return self.send(exchange, request, fresh, gate).await;
        };
        *lock(&self.cut) = Some(timed_out);
        let out = before(at, self.send(exchange, request, fresh, gate)).await;
        *lock(&self.cut) = None;
        out.unwrap_or_else(|| {
            Err(Failure::of_error(
                Box::new(timed_out),
                ErrorClass::Permanent,
                None,
            ))
        })
    }

    /// When the attempt under way is cut off, a little before the policy's timer, and the
    /// timeout it then ends with: the limit is measured from the call's start (the deadline)
    /// or from the attempt's (its timeout), within microseconds of the loop's own instants,
    /// and rounded to the millisecond.
    fn cutoff(&self) -> Option<(Instant, TimedOut)> {
        let attempt = crate::attempt()?;
        let cutoff = attempt.cutoff()?;
        let n = attempt.number();
        let kind = if attempt.deadline() == Some(cutoff) {
            TimeoutKind::Deadline
        } else {
            TimeoutKind::Attempt
        };
        let from = match kind {
            TimeoutKind::Deadline => self.started,
            TimeoutKind::Attempt => Instant::now(),
        };
        let limit = to_millis(cutoff.saturating_duration_since(from));
        let at = cutoff.checked_sub(AHEAD).unwrap_or(cutoff);
        Some((at, TimedOut::new(kind, limit, n)))
    }

    /// Sends `request`: with the service made ready for the call on its first attempt, else
    /// with a clone made ready now.
    async fn send<Req, M>(
        &self,
        exchange: &M,
        request: Req,
        fresh: bool,
        gate: Gate,
    ) -> Result<S::Response, Failure<S::Response>>
    where
        S: Service<Req> + Clone,
        S::Error: Into<BoxError>,
        M: Exchange<Req, S::Response>,
    {
        let call = if fresh {
            call_ready(&self.service, request)
        } else {
            let mut service = lock(&self.service).clone();
            if let Err(e) = poll_fn(|cx| service.poll_ready(cx)).await {
                return Err(gate.error(e.into()));
            }
            service.call(request)
        };
        match call.await {
            Ok(response) => match exchange.failure(&response) {
                None => Ok(response),
                Some((class, hint)) => Err(Failure::of_response(response, gate.class(class), hint)),
            },
            Err(e) => Err(gate.error(e.into())),
        }
    }
}

/// Calls the service that was made ready (its guard is gone before anything is awaited).
fn call_ready<S: Service<Req>, Req>(service: &Mutex<S>, request: Req) -> S::Future {
    lock(service).call(request)
}

/// `fut`'s output, or `None` if it has not finished at `at`.
async fn before<F: Future>(at: Instant, fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut timer = pin!(tokio::time::sleep_until(at));
    poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        // The clock as well as the timer: a task short of tokio's cooperative budget would
        // see the timer pending past its instant.
        if Instant::now() >= at || timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_that_may_not_be_repeated_makes_its_failures_permanent() {
        use ErrorClass::*;
        let both = Gate {
            replayable: true,
            idempotent: true,
        };
        let not_idempotent = Gate {
            replayable: true,
            idempotent: false,
        };
        let once = Gate {
            replayable: false,
            idempotent: true,
        };
        for class in [Permanent, Transient, Timeout, Throttling, NotSent] {
            assert_eq!(both.class(class), class);
            assert_eq!(once.class(class), Permanent);
            let expected = if class.is_safe_for_non_idempotent() {
                class
            } else {
                Permanent
            };
            assert_eq!(not_idempotent.class(class), expected);
        }
        assert!(both.repeatable() && !not_idempotent.repeatable() && !once.repeatable());
    }

    #[test]
    fn an_error_is_classified_by_its_causes() {
        let gate = Gate {
            replayable: true,
            idempotent: false,
        };
        let refused: BoxError =
            Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let failure = gate.error::<()>(refused);
        assert_eq!(failure.classify(), ErrorClass::NotSent);
        assert!(failure.response().is_none());
        let reset: BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(gate.error::<()>(reset).classify(), ErrorClass::Permanent);
    }

    #[tokio::test(start_paused = true)]
    async fn before_ends_a_future_that_outlives_its_instant() {
        let at = Instant::now() + Duration::from_secs(1);
        assert_eq!(before(at, async { 7 }).await, Some(7));
        assert_eq!(before(at, std::future::pending::<()>()).await, None);
        assert_eq!(Instant::now(), at);
    }
}
