//! [`DeadlineLayer`]: a server's handlers under the deadline their callers sent.

use super::server::Server;
use tower_layer::Layer;

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
    type Service = Server<S>;

    fn layer(&self, inner: S) -> Server<S> {
        Server::deadline_only(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::super::caller::{ENVOY_EXPECTED_RQ_TIMEOUT_MS, GRPC_TIMEOUT};
    use super::*;
    use core::future::Future;
    use core::pin::Pin;
    use core::task::{Context, Poll};
    use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
    use std::time::Duration;
    use tower_service::Service;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
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
