//! [`DeadlineLayer`]: a server's handlers under the deadline their callers sent.

use crate::classify::TimedOut;
use crate::config;
use crate::engine::deadline::WithDeadline;
use crate::runtime::Instant;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// gRPC's header with the time the caller gives the call.
const GRPC_TIMEOUT: &str = "grpc-timeout";

/// Envoy's header with the time its router gives the request.
const ENVOY_EXPECTED_RQ_TIMEOUT_MS: &str = "x-envoy-expected-rq-timeout-ms";

/// A tower layer for servers: each request's handler runs under the deadline the request's
/// headers give, as [`with_deadline`](crate::with_deadline) runs a future. Every `#[retry]`
/// function and `Policy` call the handler makes clamps its deadline to it, writes what it has
/// left into its own requests ([`with_attempt`](crate::wire::WithAttempt)), and makes no
/// attempt after it; a handler still running at the deadline is dropped there, and the layer
/// answers for it.
///
/// The deadline is read from:
///
/// - `grpc-timeout`, as gRPC over HTTP/2 defines it
///   (<https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md>): at most 8 digits
///   followed by a unit, `H` (hours), `M` (minutes), `S` (seconds), `m` (milliseconds), `u`
///   (microseconds) or `n` (nanoseconds). `0n` is a deadline already past.
/// - `x-envoy-expected-rq-timeout-ms`, which Envoy's router sets on the requests it forwards
///   (<https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/router_filter#x-envoy-expected-rq-timeout-ms>):
///   the time in milliseconds it expects the request to take, its route's timeout or the
///   caller's `x-envoy-upstream-rq-timeout-ms`. Envoy does not send 0, its "no timeout": 0 is
///   read as no deadline.
///
/// With both, the earlier deadline holds. The time is counted from when the layer's service
/// is called with the request. A request with neither runs as it is (gRPC's rule: no
/// `grpc-timeout`, no deadline). A malformed value is ignored, with one warning per header and
/// problem for the process (a `retry::config` tracing event, or a line on standard error, as
/// for a malformed setting in the environment), which shows the first such value.
///
/// At the deadline the handler's future is dropped and the layer returns a response of its
/// own, built on the body type's `Default`: for a gRPC request (a `content-type` that starts
/// with `application/grpc`) a trailers-only response with `grpc-status: 4`
/// (`DEADLINE_EXCEEDED`), as a gRPC server answers a call whose deadline passed; for any other
/// `504 Gateway Timeout`, what Envoy answers when the upstream's time runs out. The caller has
/// stopped waiting by then; the response ends the exchange cleanly.
///
/// ```
/// use http::{Request, Response};
/// use retry_runtime::tower::DeadlineLayer;
/// use retry_runtime::{Policy, attempt};
/// use std::convert::Infallible;
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use std::time::Duration;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// A handler whose own call has a deadline of 10 s, and answers the time it had.
/// #[derive(Clone)]
/// struct Handler;
///
/// impl Service<Request<()>> for Handler {
///     type Response = Response<String>;
///     type Error = Infallible;
///     type Future = Pin<Box<dyn Future<Output = Result<Response<String>, Infallible>> + Send>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///
///     fn call(&mut self, _: Request<()>) -> Self::Future {
///         Box::pin(async {
///             let policy = Policy::new().deadline(Duration::from_secs(10));
///             let left = policy
///                 .retry(|| async { Ok::<_, std::io::Error>(attempt().unwrap().time_left()) })
///                 .await
///                 .unwrap();
///             Ok(Response::new(format!("{left:?}")))
///         })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut server = DeadlineLayer::new().layer(Handler);
/// let request = Request::get("/").header("grpc-timeout", "250m").body(()).unwrap();
/// // The handler's call had the 250 ms its caller gave, not its own 10 s.
/// assert_eq!(server.call(request).await.unwrap().into_body(), "Some(250ms)");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadlineLayer {
    _private: (),
}

impl DeadlineLayer {
    /// The layer.
    #[must_use]
    pub const fn new() -> Self {
        DeadlineLayer { _private: () }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline { inner }
    }
}

/// A service whose requests' handlers run under the deadlines their headers give (made by
/// [`DeadlineLayer`]).
#[derive(Clone, Debug)]
pub struct Deadline<S> {
    inner: S,
}

impl<S> Deadline<S> {
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

impl<S, B, RB> Service<Request<B>> for Deadline<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    RB: Default,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let start = Instant::now();
        let headers = request.headers();
        let deadline = time_left(headers, &mut report).and_then(|left| start.checked_add(left));
        let grpc = headers
            .get(CONTENT_TYPE)
            .filter(|t| t.as_bytes().starts_with(b"application/grpc"))
            .cloned();
        // The service's own `call` runs under the deadline too, as its future will.
        let inner = &mut self.inner;
        let future = crate::engine::deadline::enter(deadline, || inner.call(request));
        DeadlineFuture {
            inner: WithDeadline::until(start, deadline, future),
            grpc,
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of a [`Deadline`] service's call: the handler's response, or the layer's
    /// own once the deadline has passed.
    pub struct DeadlineFuture<F> {
        #[pin]
        inner: WithDeadline<F>,
        // The request's content type, if it is a gRPC call.
        grpc: Option<HeaderValue>,
    }
}

impl<F, RB, E> Future for DeadlineFuture<F>
where
    F: Future<Output = Result<Response<RB>, E>>,
    RB: Default,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.inner.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(out)) => Poll::Ready(out),
            Poll::Ready(Err(timed_out)) => {
                Poll::Ready(Ok(deadline_exceeded(this.grpc.take(), timed_out)))
            }
        }
    }
}

impl<F> core::fmt::Debug for DeadlineFuture<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeadlineFuture")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
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

/// What is wrong with a deadline header's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Malformed {
    /// `grpc-timeout`: not visible ASCII.
    GrpcText,
    /// `grpc-timeout`: the last character is not a unit gRPC defines.
    GrpcUnit,
    /// `grpc-timeout`: no digits before the unit, or something else than digits.
    GrpcDigits,
    /// `grpc-timeout`: more than the 8 digits gRPC allows.
    GrpcTooLong,
    /// `x-envoy-expected-rq-timeout-ms`: not a whole number of milliseconds (that fits 64
    /// bits).
    Envoy,
}

impl Malformed {
    const ALL: [Malformed; 5] = [
        Malformed::GrpcText,
        Malformed::GrpcUnit,
        Malformed::GrpcDigits,
        Malformed::GrpcTooLong,
        Malformed::Envoy,
    ];

    fn header(self) -> &'static str {
        match self {
            Malformed::Envoy => ENVOY_EXPECTED_RQ_TIMEOUT_MS,
            _ => GRPC_TIMEOUT,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Malformed::GrpcText => "not visible ASCII",
            Malformed::GrpcUnit => "its unit is not one of H, M, S, m, u, n",
            Malformed::GrpcDigits => "not digits followed by a unit",
            Malformed::GrpcTooLong => "more than 8 digits",
            Malformed::Envoy => "not a whole number of milliseconds",
        }
    }
}

/// `grpc-timeout`'s value (gRPC over HTTP/2: `TimeoutValue TimeoutUnit`, the value a positive
/// integer of at most 8 ASCII digits), leading and trailing whitespace aside (which gRPC lets
/// a receiver strip).
fn grpc_timeout(value: &HeaderValue) -> Result<Duration, Malformed> {
    let text = value.to_str().map_err(|_| Malformed::GrpcText)?.trim();
    let Some((&unit, digits)) = text.as_bytes().split_last() else {
        return Err(Malformed::GrpcDigits);
    };
    let per: fn(u64) -> Duration = match unit {
        b'H' => |n| Duration::from_secs(n * 3600),
        b'M' => |n| Duration::from_secs(n * 60),
        b'S' => Duration::from_secs,
        b'm' => Duration::from_millis,
        b'u' => Duration::from_micros,
        b'n' => Duration::from_nanos,
        _ => return Err(Malformed::GrpcUnit),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Malformed::GrpcDigits);
    }
    if digits.len() > 8 {
        return Err(Malformed::GrpcTooLong);
    }
    // At most 8 digits: 99 999 999 hours fit a `Duration` with room to spare.
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Ok(per(n))
}

/// `x-envoy-expected-rq-timeout-ms`'s value: `None` for 0, Envoy's "no timeout".
fn envoy_timeout(value: &HeaderValue) -> Result<Option<Duration>, Malformed> {
    let text = value.to_str().map_err(|_| Malformed::Envoy)?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Malformed::Envoy);
    }
    let ms: u64 = text.parse().map_err(|_| Malformed::Envoy)?;
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

/// The time the request's headers give its handler, if any: the shorter of `grpc-timeout`
/// and `x-envoy-expected-rq-timeout-ms`. A malformed value is given to `malformed` and ignored.
fn time_left(
    headers: &HeaderMap,
    malformed: &mut dyn FnMut(Malformed, &HeaderValue),
) -> Option<Duration> {
    let mut left: Option<Duration> = None;
    let mut take = |d: Duration| left = Some(left.map_or(d, |l| l.min(d)));
    if let Some(value) = headers.get(GRPC_TIMEOUT) {
        match grpc_timeout(value) {
            Ok(d) => take(d),
            Err(m) => malformed(m, value),
        }
    }
    if let Some(value) = headers.get(ENVOY_EXPECTED_RQ_TIMEOUT_MS) {
        match envoy_timeout(value) {
            Ok(Some(d)) => take(d),
            Ok(None) => {}
            Err(m) => malformed(m, value),
        }
    }
    left
}

/// Which problems have been reported: one flag per [`Malformed`], so that a client sending
/// many malformed values is one warning per problem, and nothing grows with them.
struct Reported([AtomicBool; Malformed::ALL.len()]);

impl Reported {
    const fn new() -> Self {
        Reported([const { AtomicBool::new(false) }; Malformed::ALL.len()])
    }

    /// The warning for `m` in `value`, the first time only.
    fn first(&self, m: Malformed, value: &HeaderValue) -> Option<String> {
        if self.0[m as usize].swap(true, Ordering::Relaxed) {
            return None;
        }
        // The value as sent, cut short: a header can be long.
        let shown: String = String::from_utf8_lossy(value.as_bytes())
            .chars()
            .take(40)
            .collect();
        Some(format!(
            "ignoring the request header {}: {shown:?}: {} (later values with this problem \
             are ignored without a warning)",
            m.header(),
            m.what(),
        ))
    }
}

/// One warning per problem for the process, as for a malformed setting.
fn report(m: Malformed, value: &HeaderValue) {
    static REPORTED: Reported = Reported::new();
    if let Some(warning) = REPORTED.first(m, value) {
        config::warn_once(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn grpc(value: &str) -> Result<Duration, Malformed> {
        grpc_timeout(&HeaderValue::from_str(value).unwrap())
    }

    fn envoy(value: &str) -> Result<Option<Duration>, Malformed> {
        envoy_timeout(&HeaderValue::from_str(value).unwrap())
    }

    #[test]
    fn grpc_timeout_reads_every_unit() {
        assert_eq!(grpc("2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(grpc("3M"), Ok(Duration::from_secs(180)));
        assert_eq!(grpc("1S"), Ok(Duration::from_secs(1)));
        assert_eq!(grpc("250m"), Ok(MS(250)));
        assert_eq!(grpc("1500u"), Ok(Duration::from_micros(1500)));
        assert_eq!(grpc("299999999n"), Err(Malformed::GrpcTooLong));
        assert_eq!(grpc("29999999n"), Ok(Duration::from_nanos(29_999_999)));
        // What tonic writes for 300 ms, and surrounding whitespace gRPC lets a server strip.
        assert_eq!(grpc("300000u"), Ok(MS(300)));
        assert_eq!(grpc(" 5S "), Ok(Duration::from_secs(5)));
    }

    #[test]
    fn grpc_timeout_bounds() {
        // At most 8 digits, leading zeros counted.
        assert_eq!(
            grpc("99999999H"),
            Ok(Duration::from_secs(99_999_999 * 3600))
        );
        assert_eq!(grpc("00000001S"), Ok(Duration::from_secs(1)));
        assert_eq!(grpc("000000001S"), Err(Malformed::GrpcTooLong));
        assert_eq!(grpc("123456789m"), Err(Malformed::GrpcTooLong));
        // 0 is a deadline already past.
        assert_eq!(grpc("0n"), Ok(Duration::ZERO));
    }

    #[test]
    fn malformed_grpc_timeouts() {
        for (value, problem) in [
            ("", Malformed::GrpcDigits),
            ("S", Malformed::GrpcDigits),
            ("1", Malformed::GrpcUnit),
            ("10s", Malformed::GrpcUnit),
            ("10ms", Malformed::GrpcUnit),
            ("1h", Malformed::GrpcUnit),
            ("-1S", Malformed::GrpcDigits),
            ("+1S", Malformed::GrpcDigits),
            ("1.5S", Malformed::GrpcDigits),
            ("1 S", Malformed::GrpcDigits),
            ("0x10S", Malformed::GrpcDigits),
        ] {
            assert_eq!(grpc(value), Err(problem), "{value:?}");
        }
        let not_ascii = HeaderValue::from_bytes(b"1\xffS").unwrap();
        assert_eq!(grpc_timeout(&not_ascii), Err(Malformed::GrpcText));
    }

    #[test]
    fn envoy_expected_timeout() {
        assert_eq!(envoy("300"), Ok(Some(MS(300))));
        assert_eq!(envoy("15000"), Ok(Some(Duration::from_secs(15))));
        assert_eq!(envoy(" 7 "), Ok(Some(MS(7))));
        // Envoy never sends 0 (its "no timeout").
        assert_eq!(envoy("0"), Ok(None));
        assert_eq!(envoy("18446744073709551615"), Ok(Some(MS(u64::MAX))));
        for value in [
            "",
            "1.5",
            "-1",
            "300ms",
            "1e3",
            "18446744073709551616",
            "+1",
        ] {
            assert_eq!(envoy(value), Err(Malformed::Envoy), "{value:?}");
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_earlier_of_both_headers_holds_and_a_malformed_one_is_ignored() {
        let mut seen = Vec::new();
        let mut sink = |m: Malformed, v: &HeaderValue| seen.push((m, v.clone()));
        let both = headers(&[(GRPC_TIMEOUT, "2S"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500")]);
        assert_eq!(time_left(&both, &mut sink), Some(MS(500)));
        let both = headers(&[
            (GRPC_TIMEOUT, "200m"),
            (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500"),
        ]);
        assert_eq!(time_left(&both, &mut sink), Some(MS(200)));
        assert_eq!(time_left(&HeaderMap::new(), &mut sink), None);
        let bad_grpc = headers(&[(GRPC_TIMEOUT, "2s"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500")]);
        assert_eq!(time_left(&bad_grpc, &mut sink), Some(MS(500)));
        let bad_envoy = headers(&[(GRPC_TIMEOUT, "1S"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "x")]);
        assert_eq!(time_left(&bad_envoy, &mut sink), Some(MS(1000)));
        assert_eq!(
            seen,
            [
                (Malformed::GrpcUnit, HeaderValue::from_static("2s")),
                (Malformed::Envoy, HeaderValue::from_static("x")),
            ]
        );
    }

    #[test]
    fn one_warning_per_problem() {
        let reported = Reported::new();
        let value = |s: &'static str| HeaderValue::from_static(s);
        let first = reported.first(Malformed::GrpcUnit, &value("10s"));
        assert_eq!(
            first.as_deref(),
            Some(
                "ignoring the request header grpc-timeout: \"10s\": its unit is not one of H, M, \
                 S, m, u, n (later values with this problem are ignored without a warning)"
            )
        );
        assert_eq!(reported.first(Malformed::GrpcUnit, &value("3h")), None);
        let other = reported.first(Malformed::Envoy, &value("1.5")).unwrap();
        assert!(
            other.starts_with(
                "ignoring the request header x-envoy-expected-rq-timeout-ms: \"1.5\": not a \
                 whole number of milliseconds"
            ),
            "{other}"
        );
        assert_eq!(reported.first(Malformed::Envoy, &value("")), None);
        assert!(
            reported
                .first(Malformed::GrpcTooLong, &value("123456789S"))
                .is_some()
        );
        // A long value is shown cut short.
        let long = HeaderValue::from_str(&"9".repeat(100)).unwrap();
        let shown = reported.first(Malformed::GrpcDigits, &long).unwrap();
        assert!(
            shown.contains(&format!("\"{}\"", "9".repeat(40))),
            "{shown}"
        );
    }

    /// A handler that waits `delay` (on tokio's paused clock), then answers 200.
    #[derive(Clone)]
    struct Slow(Duration);

    impl Service<Request<()>> for Slow {
        type Response = Response<String>;
        type Error = std::convert::Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<String>, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<()>) -> Self::Future {
            let delay = self.0;
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(Response::new("done".to_owned()))
            })
        }
    }

    fn request(pairs: &[(&'static str, &str)]) -> Request<()> {
        let mut request = Request::new(());
        *request.headers_mut() = headers(pairs);
        request
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_past_its_deadline_is_answered_by_the_layer() {
        let mut server = DeadlineLayer::new().layer(Slow(Duration::from_secs(1)));
        let start = tokio::time::Instant::now();
        // An HTTP request through Envoy: 504 at the deadline.
        let response = server
            .call(request(&[(ENVOY_EXPECTED_RQ_TIMEOUT_MS, "300")]))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(start.elapsed(), MS(300));
        // A gRPC call: DEADLINE_EXCEEDED, trailers-only.
        let start = tokio::time::Instant::now();
        let response = server
            .call(request(&[
                (GRPC_TIMEOUT, "250000u"),
                ("content-type", "application/grpc+proto"),
            ]))
            .await
            .unwrap();
        assert_eq!(start.elapsed(), MS(250));
        assert_eq!(response.status(), StatusCode::OK);
        let h = response.headers();
        assert_eq!(h["content-type"], "application/grpc+proto");
        assert_eq!(h["grpc-status"], "4");
        assert_eq!(h["grpc-message"], "deadline of 250ms exceeded");
        // In time, or without a deadline (or with a malformed one): the handler's response.
        let start = tokio::time::Instant::now();
        for pairs in [
            &[(GRPC_TIMEOUT, "2S")][..],
            &[],
            &[(ENVOY_EXPECTED_RQ_TIMEOUT_MS, "0")],
            &[(GRPC_TIMEOUT, "1.5S")],
        ] {
            let response = server.call(request(pairs)).await.unwrap();
            assert_eq!(response.into_body(), "done");
        }
        assert_eq!(start.elapsed(), MS(4000));
    }
}
