//! What the layer knows of a service's requests and responses: [`Exchange`], with [`Http`]
//! for `http::Request`/`http::Response` (and gRPC over them) and [`Cloning`] for any request
//! that is `Clone`.

use super::body::ReplayBody;
use crate::attempt::{Attempt, InvocationId};
use crate::classify::ErrorClass;
use crate::classify::hint::{self, Pushback};
use crate::integrations::wire::{
    GRPC_PREVIOUS_RPC_ATTEMPTS, GRPC_TIMEOUT, attempt_headers, grpc_timeout_value, key_value,
    keyed_class, told_not_to_retry,
};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use std::time::Duration;

/// How the layer replays a service's requests, tells whether they are idempotent, and reads
/// its responses.
///
/// [`Http`] is the layer's default; [`Cloning`] serves a service whose requests are `Clone`
/// and whose responses are all successes. A service of other types implements it for a type
/// of its own, given to [`RetryLayer::exchange`](super::RetryLayer::exchange).
pub trait Exchange<Req, Resp> {
    /// A copy of `request` for a later attempt, or `None` if it cannot be sent again: it is
    /// then sent once and never retried. Called when the request arrives, then on the copy
    /// before each later attempt; it may reshape `request` (buffer its body).
    fn replay(&self, request: &mut Req) -> Option<Req>;

    /// Whether `request` may be sent again after it may have reached the server (a request
    /// that is not is retried only after failures that prove it was not acted on: `NotSent`
    /// and `Throttling`).
    fn is_idempotent(&self, request: &Req) -> bool;

    /// `Some(class, hint)` for a response that reports a failed attempt, `None` for one the
    /// caller gets as it is.
    fn failure(&self, response: &Resp) -> Option<(ErrorClass, Option<Duration>)>;

    /// Whether `request` can carry an idempotency key
    /// ([`write_idempotency_key`](Self::write_idempotency_key) writes one into it). Under a
    /// policy that sends keys ([`Policy::idempotency_key`](crate::Policy::idempotency_key)),
    /// such a request is retried (and hedged) as an idempotent one. `false` by default: the
    /// request goes without a key, idempotent or not as [`is_idempotent`](Self::is_idempotent)
    /// says.
    fn carries_idempotency_key(&self, request: &Req) -> bool {
        let _ = request;
        false
    }

    /// Writes `key`, the call's invocation id, into `request` as its idempotency key,
    /// replacing any it carried: called on the request of each attempt (and hedge), just
    /// before it is sent, under a policy that sends keys, when
    /// [`carries_idempotency_key`](Self::carries_idempotency_key) said it can. Does nothing
    /// by default.
    fn write_idempotency_key(&self, request: &mut Req, key: InvocationId) {
        let _ = (request, key);
    }

    /// Writes what the server should know of the attempt into `request`, the request of the
    /// attempt `attempt` (called just before each attempt and hedge is sent): its time left,
    /// where a server's [`ServerLayer`](super::ServerLayer) or
    /// [`DeadlineLayer`](super::DeadlineLayer) reads it, and which attempt it is. Does nothing
    /// by default; [`Http`] writes what `with_attempt` writes.
    fn write_attempt(&self, request: &mut Req, attempt: &Attempt) {
        let _ = (request, attempt);
    }

    /// The failure a response reports to a request that carried the call's idempotency key:
    /// by default what [`failure`](Self::failure) says. [`Http`] reads the answers the
    /// idempotency-key draft gives such a request.
    fn keyed_failure(&self, response: &Resp) -> Option<(ErrorClass, Option<Duration>)> {
        self.failure(response)
    }
}

/// `http::Request`s and `http::Response`s, and gRPC calls over them (the layer's default).
///
/// - Replay: the request's method, URI, version, headers and extensions are copied, and its
///   body is replayed by its [`ReplayBody`] impl (at most [`replay_limit`](Self::replay_limit)
///   bytes are buffered).
/// - Idempotency by method, as RFC 9110 section 9.2.2 defines it: `GET`, `HEAD`, `OPTIONS`,
///   `TRACE`, `PUT` and `DELETE` are idempotent; `POST`, `PATCH`, `CONNECT` and extension
///   methods are not, unless the request carries an `Idempotency-Key` header (the IETF
///   httpapi draft "The Idempotency-Key HTTP Header Field": the server deduplicates it).
///   gRPC calls are `POST`s: not idempotent unless the layer is told
///   ([`RetryLayer::idempotent`](super::RetryLayer::idempotent)).
/// - Idempotency keys, under a policy that sends them
///   ([`Policy::idempotency_key`](crate::Policy::idempotency_key)): every request carries
///   one, written as the [`IDEMPOTENCY_KEY`] header (the call's invocation id, replacing a key
///   the request had), so every request is idempotent. The answers of the IETF httpapi draft
///   "The Idempotency-Key HTTP Header Field" to a keyed request are read as it means them:
///   `409 Conflict` (a request with the same key is still being processed) is a `Throttling`
///   failure, with `Retry-After` as its hint, and `422 Unprocessable Content` (the key was
///   used with another payload) is the caller's at once.
/// - The attempt, written into each attempt's request as the crate's
///   [`with_attempt`](crate::wire::WithAttempt) writes it: for a gRPC call (a `content-type`
///   of `application/grpc`), the time left as `grpc-timeout` (or the time the request
///   already carried, if shorter) and, on a retry or a hedge, `grpc-previous-rpc-attempts`; for
///   any other request, `amz-sdk-invocation-id`, `amz-sdk-request` and the time left as
///   `x-envoy-expected-rq-timeout-ms`. A server behind [`ServerLayer`](super::ServerLayer) or
///   [`DeadlineLayer`](super::DeadlineLayer) runs its handler under that time.
/// - Responses: a gRPC response that carries its status in its headers (a "trailers-only"
///   response, which is how servers answer a unary call they fail) is classified by that
///   status as `tonic::Status`'s `Classify` does, with `grpc-retry-pushback-ms` as the hint
///   (a negative one: do not retry, gRFC A6); any other response by its HTTP status as
///   `http::StatusCode`'s `Classify` does (5xx, 408 and 429), with `x-amz-retry-after` or
///   `Retry-After` as the hint. A response that classifies as `Permanent` (a 404, a gRPC
///   `NOT_FOUND`) is not a failed attempt: the caller gets it at once.
///
/// A gRPC status sent in trailers after a response's body (a streaming call's, or a failure
/// while the body was sent) is not seen: the layer never reads a response's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http {
    limit: usize,
}

impl Http {
    /// The default: bodies of up to 1 MiB are buffered for replay (gRPC Java's default
    /// per-call retry buffer).
    #[must_use]
    pub const fn new() -> Http {
        Http { limit: 1 << 20 }
    }

    /// Buffers at most `bytes` of a streaming body for replay; a longer one is sent once.
    #[must_use]
    pub const fn replay_limit(mut self, bytes: usize) -> Http {
        self.limit = bytes;
        self
    }
}

impl Default for Http {
    fn default() -> Self {
        Http::new()
    }
}

pub use crate::integrations::wire::IDEMPOTENCY_KEY;

impl<B: ReplayBody, RB> Exchange<Request<B>, Response<RB>> for Http {
    fn replay(&self, request: &mut Request<B>) -> Option<Request<B>> {
        let body = request.body_mut().replay(self.limit)?;
        let mut copy = Request::new(body);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(copy)
    }

    fn is_idempotent(&self, request: &Request<B>) -> bool {
        idempotent_method(request.method()) || request.headers().contains_key(IDEMPOTENCY_KEY)
    }

    fn failure(&self, response: &Response<RB>) -> Option<(ErrorClass, Option<Duration>)> {
        crate::observe::trace::http_status(response.status().as_u16());
        response_failure(response.status(), response.headers())
    }

    fn carries_idempotency_key(&self, _: &Request<B>) -> bool {
        true
    }

    fn write_attempt(&self, request: &mut Request<B>, attempt: &Attempt) {
        let headers = request.headers_mut();
        if super::server::grpc_content_type(headers).is_some() {
            write_grpc_attempt(headers, attempt);
        } else {
            for (name, value) in attempt_headers(attempt) {
                if let Some(name) = name {
                    headers.insert(name, value);
                }
            }
        }
    }

    fn write_idempotency_key(&self, request: &mut Request<B>, key: InvocationId) {
        let name = http::HeaderName::from_static(IDEMPOTENCY_KEY);
        request.headers_mut().insert(name, key_value(key));
    }

    fn keyed_failure(&self, response: &Response<RB>) -> Option<(ErrorClass, Option<Duration>)> {
        let status = response.status().as_u16();
        match keyed_class(status) {
            // 409 is retried after its hint or the backoff; 422 is the caller's as it is.
            Some(class) => {
                crate::observe::trace::http_status(status);
                let headers = response.headers();
                class
                    .is_retryable()
                    .then(|| stop_if_told((class, hint::from_headers(headers)), headers))
            }
            None => <Http as Exchange<Request<B>, _>>::failure(self, response),
        }
    }
}

/// What a gRPC call's request says of its attempt (gRFC A6): the time left as `grpc-timeout`,
/// unless the request already gives less, and on a retry or a hedge the attempts before it as
/// `grpc-previous-rpc-attempts`.
pub(crate) fn write_grpc_attempt(headers: &mut HeaderMap, attempt: &Attempt) {
    if let Some(left) = attempt.time_left() {
        let given = headers
            .get(GRPC_TIMEOUT)
            .and_then(|v| super::caller::grpc_timeout(v).ok());
        if given.is_none_or(|given| left < given) {
            headers.insert(GRPC_TIMEOUT, grpc_timeout_value(left));
        }
    }
    if attempt.number() > 1 {
        headers.insert(
            GRPC_PREVIOUS_RPC_ATTEMPTS,
            HeaderValue::from(attempt.number() - 1),
        );
    }
}

/// RFC 9110 section 9.2.2: the methods whose repetition has the effect of one request.
pub(crate) fn idempotent_method(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// The failure a response reports, if any: by its gRPC status in the headers, else by its
/// HTTP status. A failure that the server says not to retry (a negative
/// `grpc-retry-pushback-ms`, `x-should-retry: false`) is a failed attempt of class
/// `Permanent`, not to be repeated.
pub(crate) fn response_failure(
    status: StatusCode,
    headers: &HeaderMap,
) -> Option<(ErrorClass, Option<Duration>)> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(code) = headers.get(GRPC_STATUS) {
        let class = grpc_class(code.as_bytes())?;
        if !class.is_retryable() {
            return None;
        }
        let failure = match text(hint::GRPC_RETRY_PUSHBACK_MS).and_then(hint::grpc_pushback) {
            Some(Pushback::Stop) => (ErrorClass::Permanent, None),
            Some(Pushback::After(delay)) => (class, Some(delay)),
            None => (class, None),
        };
        return Some(stop_if_told(failure, headers));
    }
    let class = crate::integrations::http::mesh_class(status.as_u16(), headers);
    class
        .is_retryable()
        .then(|| stop_if_told((class, hint::from_headers(headers)), headers))
}

/// `failure`, or a `Permanent` one without a hint if `headers` say not to retry
/// (`x-should-retry: false`).
fn stop_if_told(
    failure: (ErrorClass, Option<Duration>),
    headers: &HeaderMap,
) -> (ErrorClass, Option<Duration>) {
    if failure.0.is_retryable() && told_not_to_retry(headers) {
        (ErrorClass::Permanent, None)
    } else {
        failure
    }
}

const GRPC_STATUS: &str = "grpc-status";

/// The class of a `grpc-status` value, as `tonic::Status`'s `Classify` has it for a status
/// the server sent; `None` for `OK`.
fn grpc_class(code: &[u8]) -> Option<ErrorClass> {
    let code = std::str::from_utf8(code).ok()?.trim().parse::<u32>().ok();
    match code {
        Some(0) => None,
        // UNAVAILABLE, ABORTED, INTERNAL
        Some(14 | 10 | 13) => Some(ErrorClass::Transient),
        // DEADLINE_EXCEEDED
        Some(4) => Some(ErrorClass::Timeout),
        // RESOURCE_EXHAUSTED
        Some(8) => Some(ErrorClass::Throttling),
        // Every other code, and a value that is not one (tonic reads it as UNKNOWN).
        _ => Some(ErrorClass::Permanent),
    }
}

/// Any request that is `Clone`, replayed by cloning; every response is a success (only the
/// service's errors are failed attempts), and every request is idempotent unless the layer
/// says otherwise ([`RetryLayer::idempotent`](super::RetryLayer::idempotent)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cloning;

impl<Req: Clone, Resp> Exchange<Req, Resp> for Cloning {
    fn replay(&self, request: &mut Req) -> Option<Req> {
        Some(request.clone())
    }

    fn is_idempotent(&self, _: &Req) -> bool {
        true
    }

    fn failure(&self, _: &Resp) -> Option<(ErrorClass, Option<Duration>)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    use crate::integrations::http::test_response as response;

    fn failure(r: &Response<()>) -> Option<(ErrorClass, Option<Duration>)> {
        <Http as Exchange<Request<()>, _>>::failure(&Http::new(), r)
    }

    fn idempotent(r: &Request<()>) -> bool {
        <Http as Exchange<_, Response<()>>>::is_idempotent(&Http::new(), r)
    }

    #[test]
    fn methods_are_idempotent_as_rfc_9110_says() {
        for (method, is) in [
            (Method::GET, true),
            (Method::HEAD, true),
            (Method::OPTIONS, true),
            (Method::TRACE, true),
            (Method::PUT, true),
            (Method::DELETE, true),
            (Method::POST, false),
            (Method::PATCH, false),
            (Method::CONNECT, false),
            (Method::from_bytes(b"PURGE").unwrap(), false),
        ] {
            let request = Request::builder().method(method.clone()).body(()).unwrap();
            assert_eq!(idempotent(&request), is, "{method}");
        }
        let keyed = Request::post("/orders")
            .header("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
            .body(())
            .unwrap();
        assert!(idempotent(&keyed));
    }

    #[test]
    fn a_request_is_copied_whole() {
        #[derive(Clone, Debug, PartialEq)]
        struct Tag(u32);
        let mut request = Request::put("http://example.com/items/1")
            .version(http::Version::HTTP_2)
            .header("x-a", "1")
            .extension(Tag(7))
            .body(Full::new(bytes::Bytes::from_static(b"item")))
            .unwrap();
        let copy = <Http as Exchange<_, Response<()>>>::replay(&Http::new(), &mut request).unwrap();
        assert_eq!(copy.method(), Method::PUT);
        assert_eq!(copy.uri(), "http://example.com/items/1");
        assert_eq!(copy.version(), http::Version::HTTP_2);
        assert_eq!(copy.headers()["x-a"], "1");
        assert_eq!(copy.extensions().get::<Tag>(), Some(&Tag(7)));
    }

    #[test]
    fn http_responses_fail_by_status_with_their_hint() {
        assert_eq!(failure(&response(200, &[])), None);
        assert_eq!(failure(&response(404, &[])), None);
        assert_eq!(failure(&response(501, &[])), None);
        assert_eq!(
            failure(&response(503, &[])),
            Some((ErrorClass::Transient, None))
        );
        assert_eq!(
            failure(&response(408, &[])),
            Some((ErrorClass::Timeout, None))
        );
        assert_eq!(
            failure(&response(429, &[("retry-after", "3")])),
            Some((ErrorClass::Throttling, Some(Duration::from_secs(3))))
        );
    }

    #[test]
    fn a_failure_the_server_says_not_to_retry_is_permanent() {
        let stop = ("x-should-retry", "false");
        assert_eq!(
            failure(&response(503, &[stop, ("retry-after", "3")])),
            Some((ErrorClass::Permanent, None))
        );
        assert_eq!(
            failure(&response(429, &[stop])),
            Some((ErrorClass::Permanent, None))
        );
        // Not a failure to begin with: still the caller's at once.
        assert_eq!(failure(&response(404, &[stop])), None);
        assert_eq!(failure(&response(200, &[stop])), None);
        // A gRPC status with it, and the keyed answers.
        assert_eq!(
            failure(&response(200, &[("grpc-status", "14"), stop])),
            Some((ErrorClass::Permanent, None))
        );
        let keyed =
            |r: &Response<()>| <Http as Exchange<Request<()>, _>>::keyed_failure(&Http::new(), r);
        assert_eq!(
            keyed(&response(409, &[stop])),
            Some((ErrorClass::Permanent, None))
        );
        // Anything but `false` leaves the status to decide.
        assert_eq!(
            failure(&response(503, &[("x-should-retry", "true")])),
            Some((ErrorClass::Transient, None))
        );
        assert_eq!(
            failure(&response(503, &[("x-should-retry", "maybe")])),
            Some((ErrorClass::Transient, None))
        );
    }

    /// What the layer writes into an attempt's request, read inside the attempt of a policy
    /// with a deadline of 2 s.
    #[tokio::test(start_paused = true)]
    async fn the_attempt_is_written_as_with_attempt_writes_it() {
        use crate::policy::Policy;
        let policy = Policy::new()
            .max_attempts(2)
            .deadline(Duration::from_secs(2))
            .initial_backoff(Duration::from_millis(250))
            .jitter(crate::spec::Jitter::None);
        let seen = std::sync::Mutex::new(Vec::new());
        let out = policy
            .retry(|| async {
                let a = crate::attempt().unwrap();
                let mut http = Request::get("/items/1").body(()).unwrap();
                let mut grpc = Request::post("/shop.Orders/Get")
                    .header("content-type", "application/grpc+proto")
                    .header(GRPC_TIMEOUT, "10S")
                    .body(())
                    .unwrap();
                <Http as Exchange<_, Response<()>>>::write_attempt(&Http::new(), &mut http, &a);
                <Http as Exchange<_, Response<()>>>::write_attempt(&Http::new(), &mut grpc, &a);
                seen.lock().unwrap().push((http, grpc));
                Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
            })
            .await;
        assert!(out.is_err());
        let seen = seen.into_inner().unwrap();
        let (http, grpc) = &seen[0];
        let h = http.headers();
        assert_eq!(h["x-envoy-expected-rq-timeout-ms"], "2000");
        assert!(
            h["amz-sdk-request"]
                .to_str()
                .unwrap()
                .contains("attempt=1; max=2")
        );
        assert!(h.contains_key("amz-sdk-invocation-id"));
        // A gRPC call: the time left as grpc-timeout (shorter than the 10 s it carried), no
        // HTTP headers, and no attempt count on the first.
        let g = grpc.headers();
        assert_eq!(g[GRPC_TIMEOUT], "2000000u");
        assert!(!g.contains_key("x-envoy-expected-rq-timeout-ms"));
        assert!(!g.contains_key(GRPC_PREVIOUS_RPC_ATTEMPTS));
        // The retry, 250 ms later.
        let (http, grpc) = &seen[1];
        assert_eq!(http.headers()["x-envoy-expected-rq-timeout-ms"], "1750");
        assert_eq!(grpc.headers()[GRPC_TIMEOUT], "1750000u");
        assert_eq!(grpc.headers()[GRPC_PREVIOUS_RPC_ATTEMPTS], "1");
    }

    #[test]
    fn grpc_responses_fail_by_their_status() {
        let grpc = |code: &'static str| response(200, &[("grpc-status", code)]);
        assert_eq!(failure(&grpc("0")), None);
        assert_eq!(failure(&grpc("5")), None, "NOT_FOUND is the caller's");
        assert_eq!(failure(&grpc("14")), Some((ErrorClass::Transient, None)));
        assert_eq!(failure(&grpc("4")), Some((ErrorClass::Timeout, None)));
        let pushed = response(
            200,
            &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "250")],
        );
        assert_eq!(
            failure(&pushed),
            Some((ErrorClass::Throttling, Some(Duration::from_millis(250))))
        );
        let stop = response(
            200,
            &[("grpc-status", "14"), ("grpc-retry-pushback-ms", "-1")],
        );
        assert_eq!(failure(&stop), Some((ErrorClass::Permanent, None)));
        // A proxy's 503 before any gRPC status: the HTTP status decides.
        assert_eq!(
            failure(&response(503, &[("content-type", "application/grpc")])),
            Some((ErrorClass::Transient, None))
        );
    }

    /// The codes read from headers classify as `tonic::Status` classifies a status the server
    /// sent.
    #[cfg(feature = "tonic")]
    #[test]
    fn grpc_codes_classify_as_tonic_statuses_do() {
        use crate::classify::Classify;
        for code in 0..=17 {
            let status = ::tonic::Status::new(::tonic::Code::from_i32(code), "");
            let expected = (status.code() != ::tonic::Code::Ok).then(|| status.classify());
            assert_eq!(grpc_class(code.to_string().as_bytes()), expected, "{code}");
        }
        assert_eq!(grpc_class(b"x"), Some(ErrorClass::Permanent));
    }

    /// The idempotency-key draft's answers to a keyed request: 409 is throttling, with its
    /// hint; 422 is the caller's; any other status as for any request.
    #[test]
    fn keyed_requests_read_409_and_422_as_the_draft_means_them() {
        let keyed =
            |r: &Response<()>| <Http as Exchange<Request<()>, _>>::keyed_failure(&Http::new(), r);
        assert_eq!(
            keyed(&response(409, &[("retry-after", "2")])),
            Some((ErrorClass::Throttling, Some(Duration::from_secs(2))))
        );
        assert_eq!(
            keyed(&response(409, &[])),
            Some((ErrorClass::Throttling, None))
        );
        assert_eq!(keyed(&response(422, &[])), None);
        assert_eq!(
            keyed(&response(503, &[])),
            Some((ErrorClass::Transient, None))
        );
        assert_eq!(keyed(&response(200, &[])), None);
        // Unkeyed, a 409 is the caller's.
        assert_eq!(failure(&response(409, &[])), None);
    }

    #[test]
    fn the_key_is_written_over_any_other() {
        let http = Http::new();
        let mut request = Request::post("/orders")
            .header("Idempotency-Key", "mine")
            .body(())
            .unwrap();
        assert!(<Http as Exchange<_, Response<()>>>::carries_idempotency_key(&http, &request));
        let id = InvocationId::v4(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        <Http as Exchange<_, Response<()>>>::write_idempotency_key(&http, &mut request, id);
        let values: Vec<_> = request.headers().get_all(IDEMPOTENCY_KEY).iter().collect();
        assert_eq!(values, ["01234567-89ab-4def-8123-456789abcdef"]);
        assert!(idempotent(&request));
        // A request of another kind carries no key unless its exchange says how.
        assert!(
            !<Cloning as Exchange<String, u32>>::carries_idempotency_key(&Cloning, &String::new())
        );
    }

    #[test]
    fn cloning_replays_anything_clone_and_reads_no_response() {
        let mut request = String::from("GET /");
        assert_eq!(
            <Cloning as Exchange<String, u32>>::replay(&Cloning, &mut request),
            Some(request.clone())
        );
        assert!(<Cloning as Exchange<String, u32>>::is_idempotent(
            &Cloning, &request
        ));
        assert_eq!(
            <Cloning as Exchange<String, u32>>::failure(&Cloning, &503),
            None
        );
    }
}
