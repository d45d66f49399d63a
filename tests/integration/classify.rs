//! The mapping tables of the `Classify` implementations' docs, entry by entry, for the types
//! that can be built without a network (the transport errors are in `http.rs` and `grpc.rs`).

use crate::util::{TestError, paused_runtime};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use retry_runtime::{Classify, ErrorClass, TimedOut, hint};
use std::error::Error;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

#[test]
fn every_http_status() {
    for code in 100..=599u16 {
        let Ok(status) = StatusCode::from_u16(code) else {
            continue;
        };
        let expected = match code {
            408 => ErrorClass::Timeout,
            429 => ErrorClass::Throttling,
            501 | 505 | 506 | 508 | 510 | 511 => ErrorClass::Permanent,
            500..=599 => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        };
        assert_eq!(status.classify(), expected, "{code}");
    }
    // The ones people ask about.
    assert_eq!(
        StatusCode::INTERNAL_SERVER_ERROR.classify(),
        ErrorClass::Transient
    );
    assert_eq!(StatusCode::BAD_GATEWAY.classify(), ErrorClass::Transient);
    assert_eq!(
        StatusCode::SERVICE_UNAVAILABLE.classify(),
        ErrorClass::Transient
    );
    assert_eq!(
        StatusCode::GATEWAY_TIMEOUT.classify(),
        ErrorClass::Transient
    );
    assert_eq!(
        StatusCode::NOT_IMPLEMENTED.classify(),
        ErrorClass::Permanent
    );
    assert_eq!(StatusCode::CONFLICT.classify(), ErrorClass::Permanent);
    assert_eq!(StatusCode::OK.classify(), ErrorClass::Permanent);
}

fn response(status: u16, headers: &[(&'static str, &'static str)]) -> Response<()> {
    let mut r = Response::new(());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (name, value) in headers {
        r.headers_mut()
            .insert(*name, HeaderValue::from_static(value));
    }
    r
}

/// A 503 that Envoy answers itself while it sheds load (`x-envoy-overloaded: true`) is
/// throttling: the mesh asks for less traffic; the service did not fail.
#[test]
fn a_503_from_an_overloaded_envoy_is_throttling() {
    let r = response(503, &[("x-envoy-overloaded", "true")]);
    assert_eq!(r.classify(), ErrorClass::Throttling);
    assert_eq!(response(503, &[]).classify(), ErrorClass::Transient);
    // The header means nothing on another status.
    let r = response(500, &[("x-envoy-overloaded", "true")]);
    assert_eq!(r.classify(), ErrorClass::Transient);
    // With a quota field, the time until it resets is the hint.
    let r = response(
        503,
        &[
            ("x-envoy-overloaded", "true"),
            ("ratelimit", "\"mesh\";r=0;t=2"),
        ],
    );
    assert_eq!(r.retry_after(), Some(Duration::from_secs(2)));
}

#[test]
fn responses_carry_their_hint() {
    let r = response(429, &[("retry-after", "7")]);
    assert_eq!(r.classify(), ErrorClass::Throttling);
    assert_eq!(r.retry_after(), Some(Duration::from_secs(7)));

    let r = response(503, &[("retry-after", "7"), ("x-amz-retry-after", "250")]);
    assert_eq!(r.classify(), ErrorClass::Transient);
    assert_eq!(r.retry_after(), Some(Duration::from_millis(250)));

    // A malformed x-amz-retry-after falls back to Retry-After; a malformed Retry-After is none.
    let r = response(503, &[("retry-after", "7"), ("x-amz-retry-after", "soon")]);
    assert_eq!(r.retry_after(), Some(Duration::from_secs(7)));
    let r = response(503, &[("retry-after", "in a while")]);
    assert_eq!(r.retry_after(), None);

    let mut headers = HeaderMap::new();
    headers.insert(
        "retry-after",
        HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"),
    );
    assert_eq!(hint::from_headers(&headers), Some(Duration::ZERO));
    headers.insert("retry-after", HeaderValue::from_bytes(b"\xff\xfe").unwrap());
    assert_eq!(hint::from_headers(&headers), None);
}

#[test]
fn every_grpc_code() {
    let table = [
        (Code::Ok, ErrorClass::Permanent),
        (Code::Cancelled, ErrorClass::Permanent),
        (Code::Unknown, ErrorClass::Permanent),
        (Code::InvalidArgument, ErrorClass::Permanent),
        (Code::DeadlineExceeded, ErrorClass::Timeout),
        (Code::NotFound, ErrorClass::Permanent),
        (Code::AlreadyExists, ErrorClass::Permanent),
        (Code::PermissionDenied, ErrorClass::Permanent),
        (Code::ResourceExhausted, ErrorClass::Throttling),
        (Code::FailedPrecondition, ErrorClass::Permanent),
        (Code::Aborted, ErrorClass::Transient),
        (Code::OutOfRange, ErrorClass::Permanent),
        (Code::Unimplemented, ErrorClass::Permanent),
        (Code::Internal, ErrorClass::Transient),
        (Code::Unavailable, ErrorClass::Transient),
        (Code::DataLoss, ErrorClass::Permanent),
        (Code::Unauthenticated, ErrorClass::Permanent),
    ];
    for (code, class) in table {
        assert_eq!(Status::new(code, "").classify(), class, "{code:?}");
    }
}

fn with_pushback(code: Code, value: &'static str) -> Status {
    let mut status = Status::new(code, "");
    status
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", MetadataValue::from_static(value));
    status
}

#[test]
fn grpc_pushback() {
    let s = with_pushback(Code::ResourceExhausted, "300");
    assert_eq!(s.classify(), ErrorClass::Throttling);
    assert_eq!(s.retry_after(), Some(Duration::from_millis(300)));
    // A negative pushback stops whatever the code.
    for code in [Code::ResourceExhausted, Code::Unavailable] {
        let s = with_pushback(code, "-1");
        assert_eq!(s.classify(), ErrorClass::Permanent);
        assert_eq!(s.retry_after(), None);
    }
    // A malformed one is ignored.
    let s = with_pushback(Code::Unavailable, "later");
    assert_eq!(s.classify(), ErrorClass::Transient);
    assert_eq!(s.retry_after(), None);
}

#[test]
fn grpc_client_side_causes() {
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let connect = tonic::ConnectError(Box::new(refused));
    let mut s = Status::unavailable("connect failed");
    s.set_source(std::sync::Arc::new(connect));
    assert_eq!(s.classify(), ErrorClass::NotSent);

    let tls = std::io::Error::new(std::io::ErrorKind::InvalidData, "bad certificate");
    let mut s = Status::unavailable("connect failed");
    s.set_source(std::sync::Arc::new(tonic::ConnectError(Box::new(tls))));
    assert_eq!(s.classify(), ErrorClass::Permanent);

    let mut s = Status::cancelled("Timeout expired");
    s.set_source(std::sync::Arc::new(tonic::TimeoutExpired(())));
    assert_eq!(s.classify(), ErrorClass::Timeout);

    let mut s = Status::unknown("transport error");
    s.set_source(std::sync::Arc::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionReset,
    )));
    assert_eq!(s.classify(), ErrorClass::Transient);
}

#[test]
fn a_timeout_becomes_deadline_exceeded() {
    // A TimedOut comes only from the loop; catch one from an attempt that never ends.
    #[retry_runtime::retry(max_attempts = 1, attempt_timeout = "10ms")]
    async fn hang() -> Result<(), Status> {
        std::future::pending().await
    }
    let rt = paused_runtime();
    let status = rt.block_on(hang()).unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(status.message(), "attempt 1 timed out after 10ms");
    assert_eq!(status.classify(), ErrorClass::Timeout);
}

#[test]
fn chains_of_causes() {
    #[derive(Debug)]
    struct Context(&'static str, Box<dyn Error + Send + Sync>);
    impl std::fmt::Display for Context {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Context {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&*self.1)
        }
    }

    let throttled = with_pushback(Code::ResourceExhausted, "40");
    let wrapped: Box<dyn Error + Send + Sync> = Box::new(Context("loading", Box::new(throttled)));
    assert_eq!(wrapped.classify(), ErrorClass::Throttling);
    assert_eq!(wrapped.retry_after(), Some(Duration::from_millis(40)));

    let e = anyhow::Error::new(with_pushback(Code::Unavailable, "5")).context("saving");
    assert_eq!(e.classify(), ErrorClass::Transient);
    assert_eq!(e.retry_after(), Some(Duration::from_millis(5)));

    let e = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::TimedOut));
    assert_eq!(e.context("reading").classify(), ErrorClass::Timeout);

    // The outermost known cause decides.
    let inner = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let outer = Status::invalid_argument("bad sku");
    let e = anyhow::Error::new(inner).context(outer);
    assert_eq!(
        e.classify(),
        ErrorClass::NotSent,
        "context is not an error type"
    );
    let chain: Box<dyn Error + Send + Sync> = Box::new(Context(
        "outer",
        Box::new(Status::invalid_argument("bad sku")),
    ));
    assert_eq!(chain.classify(), ErrorClass::Permanent);
}

#[test]
fn the_reqwest_wrapper_error() {
    let t: retry_runtime::reqwest::Error = timed_out().into();
    assert_eq!(t.classify(), ErrorClass::Timeout);
    assert_eq!(t.status(), None);
    assert!(t.source().is_none());
}

/// A `TimedOut` as the loop hands it over.
fn timed_out() -> TimedOut {
    #[retry_runtime::retry(max_attempts = 1, attempt_timeout = "5ms")]
    async fn hang() -> Result<(), TestError> {
        std::future::pending().await
    }
    let rt = paused_runtime();
    let TestError::TimedOut(t) = rt.block_on(hang()).unwrap_err() else {
        panic!("the attempt never answers")
    };
    t
}
