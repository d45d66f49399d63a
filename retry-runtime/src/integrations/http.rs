//! HTTP status codes and responses (feature `http`).

use super::wire::{WithAttempt, insert_attempt_headers, told_not_to_retry};
use crate::classify::{Classify, ErrorClass, hint};
use ::http::{Response, StatusCode};
use std::time::Duration;

/// The class of an HTTP status, as the AWS and Google Cloud guidance has it: 5xx and 408 may
/// clear on their own, 429 asks the client to slow down, other 4xx need a different request.
///
/// | status | class |
/// |---|---|
/// | 408 Request Timeout | `Timeout` |
/// | 429 Too Many Requests | `Throttling` |
/// | 500-599, except those below | `Transient` |
/// | 501, 505, 506, 508, 510, 511 | `Permanent` (they describe the request or the server's set-up) |
/// | every other status (1xx-4xx) | `Permanent` |
///
/// ```
/// use http::StatusCode;
/// use retry_runtime::{Classify, ErrorClass};
///
/// assert_eq!(StatusCode::SERVICE_UNAVAILABLE.classify(), ErrorClass::Transient);
/// assert_eq!(StatusCode::TOO_MANY_REQUESTS.classify(), ErrorClass::Throttling);
/// assert_eq!(StatusCode::NOT_FOUND.classify(), ErrorClass::Permanent);
/// ```
impl Classify for StatusCode {
    fn classify(&self) -> ErrorClass {
        status_class(self.as_u16())
    }
}

/// By status, but a 503 with Envoy's `x-envoy-overloaded` is `Throttling` (the mesh shedding
/// load, not the service failing), and an answer with `x-should-retry: false`
/// ([`wire::SHOULD_RETRY`](crate::wire::SHOULD_RETRY): the server says not to retry, as a
/// server behind [`ServerLayer`](crate::tower::ServerLayer) says when its own calls gave up)
/// is `Permanent`; the hint is `x-amz-retry-after`, `Retry-After` or `RateLimit`
/// ([`hint::from_headers`](crate::hint::from_headers)).
impl<B> Classify for Response<B> {
    fn classify(&self) -> ErrorClass {
        response_class(self.status().as_u16(), self.headers())
    }
    fn retry_after(&self) -> Option<Duration> {
        hint::from_headers(self.headers())
    }
}

/// Envoy's header on the 503 it answers when it sheds load itself (its overload manager, or a
/// circuit breaker of the mesh's): the request did not reach the service.
pub(crate) const ENVOY_OVERLOADED: &str = "x-envoy-overloaded";

/// The class of a response with `status` and `headers`: [`status_class`], but a 503 carrying
/// [`ENVOY_OVERLOADED`] is `Throttling`, and an error that carries `x-should-retry: false`
/// `Permanent`.
pub(crate) fn response_class(status: u16, headers: &::http::HeaderMap) -> ErrorClass {
    told(mesh_class(status, headers), headers)
}

/// The class of a response with `status` and `headers` before what the server says of
/// retrying it: [`status_class`], but a 503 carrying [`ENVOY_OVERLOADED`] is `Throttling`.
pub(crate) fn mesh_class(status: u16, headers: &::http::HeaderMap) -> ErrorClass {
    if status == 503 && headers.contains_key(ENVOY_OVERLOADED) {
        ErrorClass::Throttling
    } else {
        status_class(status)
    }
}

/// `class`, or `Permanent` for a retryable one if `headers` say not to retry.
pub(crate) fn told(class: ErrorClass, headers: &::http::HeaderMap) -> ErrorClass {
    if class.is_retryable() && told_not_to_retry(headers) {
        ErrorClass::Permanent
    } else {
        class
    }
}

pub(crate) const fn status_class(status: u16) -> ErrorClass {
    match status {
        408 => ErrorClass::Timeout,
        429 => ErrorClass::Throttling,
        501 | 505 | 506 | 508 | 510 | 511 => ErrorClass::Permanent,
        500..=599 => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

impl WithAttempt for ::http::request::Builder {
    fn with_attempt(mut self) -> Self {
        if let Some(headers) = self.headers_mut() {
            insert_attempt_headers(headers);
        }
        self
    }
}

/// A response of `status` with `headers`, for the tests of the integrations that read
/// responses.
#[cfg(test)]
pub(crate) fn test_response(status: u16, headers: &[(&'static str, &'static str)]) -> Response<()> {
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.body(()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::test_response as response;
    use super::*;

    #[test]
    fn an_answer_that_says_do_not_retry_is_permanent() {
        let stop = [("x-should-retry", "false")];
        assert_eq!(response(503, &stop).classify(), ErrorClass::Permanent);
        assert_eq!(response(429, &stop).classify(), ErrorClass::Permanent);
        assert_eq!(response(408, &stop).classify(), ErrorClass::Permanent);
        assert_eq!(
            response(503, &[("x-should-retry", " FALSE ")]).classify(),
            ErrorClass::Permanent
        );
        // `true` leaves the status to decide: a 404 is not made retryable.
        let go = [("x-should-retry", "true")];
        assert_eq!(response(503, &go).classify(), ErrorClass::Transient);
        assert_eq!(response(404, &go).classify(), ErrorClass::Permanent);
        // A garbled or repeated value is ignored.
        for bad in ["no", "0", "f", "false, false", ""] {
            let r = response(503, &[("x-should-retry", bad)]);
            assert_eq!(r.classify(), ErrorClass::Transient, "{bad:?}");
        }
        let twice = response(
            503,
            &[("x-should-retry", "false"), ("x-should-retry", "false")],
        );
        assert_eq!(twice.classify(), ErrorClass::Transient);
        // Envoy's overload, told not to retry.
        let shed = [("x-envoy-overloaded", "true"), ("x-should-retry", "false")];
        assert_eq!(response(503, &shed).classify(), ErrorClass::Permanent);
        assert_eq!(
            response(503, &[("x-envoy-overloaded", "true")]).classify(),
            ErrorClass::Throttling
        );
    }
}
