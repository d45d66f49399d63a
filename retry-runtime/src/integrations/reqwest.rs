//! reqwest (feature `reqwest`): `Classify` for `reqwest::Error` and `reqwest::Response`, and
//! [`Error`], an error type for `#[retry]` functions that call reqwest: it keeps the server's
//! `Retry-After` (which `Response::error_for_status` drops) and can hold a [`TimedOut`], so
//! `attempt_timeout` and `deadline` work without a wrapper of your own.
//!
//! ```no_run
//! use retry_runtime::retry;
//! use retry_runtime::reqwest::{error_for_status, Error};
//!
//! #[retry(max_attempts = 4, attempt_timeout = "2s", deadline = "10s")]
//! async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, Error> {
//!     let response = error_for_status(client.get(url).send().await?)?;
//!     Ok(response.text().await?)
//! }
//! ```
//!
//! | `reqwest::Error` | class |
//! |---|---|
//! | `is_connect()`: DNS, TCP connect, TLS handshake or proxy failed, so the request never left | `NotSent` (`Permanent` for a TLS failure: an `InvalidData` I/O error among its causes) |
//! | `is_timeout()` (reqwest's own timeouts) | `Timeout` |
//! | `status()` is set (from `error_for_status`) | the status's class |
//! | `is_decode()` with a transport error among its causes (`hyper::Error`, `io::Error`: a body cut short by the connection) | that error's class |
//! | `is_builder()`, `is_redirect()`, `is_decode()` otherwise (a body that does not parse), `is_upgrade()` | `Permanent` |
//! | `is_request()`, `is_body()`: a known error among its causes (`hyper::Error`, `io::Error`; with the `http2` feature, `h2::Error`) | that error's class |
//! | `is_request()`, `is_body()` otherwise (the exchange broke off) | `Transient` |
//!
//! Over HTTP/2, with the `http2` feature, a stream the server refused (`RST_STREAM` with
//! `REFUSED_STREAM`) or left unprocessed under its `GOAWAY` is `NotSent` (RFC 9113 section 8.7),
//! found as the `h2::Error` under the `hyper::Error` under the `hyper_util` client's error,
//! where reqwest 0.13's own retry module looks for it (`is_retryable_error` in
//! <https://github.com/seanmonstar/reqwest/blob/v0.13.5/src/retry.rs>). A reqwest `Client`
//! retries a refused stream and a `GOAWAY` with `NO_ERROR` itself by default, its "protocol
//! NACKs", twice per request at most (`ClientBuilder::retry`; `reqwest::retry::never()` turns
//! that off): the error `#[retry]` sees is one that got through those retries, and retrying it
//! is still safe for a call that is not idempotent.
//!
//! A `reqwest::Response` and [`Error::Status`] are classified by status (see
//! [`Classify for http::StatusCode`](crate::Classify)), with `x-amz-retry-after` or
//! `Retry-After` as the hint; an [`Error::Status`] read by an attempt that sent its call's
//! idempotency key takes `409` and `422` as the key's answers (see [`error_for_status`]).
//!
//! # In an error type of your own
//!
//! A function that fails in other ways too wraps [`Error`] in a variant of its own error enum,
//! and `#[derive(Classify)]` with `#[classify(delegate)]` classifies that variant as [`Error`]
//! does, the server's hint included. `?` on [`error_for_status`] goes through `#[from]`; `?` on
//! a plain `reqwest::Error` (from `send` or `text`) and the loop's [`TimedOut`] go through
//! [`Error`] too, by the `From` impls that `from(...)` beside `delegate` asks the derive for:
//!
//! ```no_run
//! use retry_runtime::reqwest::error_for_status;
//! use retry_runtime::{Classify, TimedOut, retry};
//!
//! #[derive(Debug, thiserror::Error, Classify)]
//! enum ApiError {
//!     #[error(transparent)]
//!     // The response's status and `Retry-After`; `From<reqwest::Error>` and `From<TimedOut>`,
//!     // each through `retry_runtime::reqwest::Error`.
//!     #[classify(delegate, from(reqwest::Error, TimedOut))]
//!     Http(#[from] retry_runtime::reqwest::Error),
//!     #[error("the answer is not a count")]
//!     #[classify(permanent)]
//!     Parse(#[from] std::num::ParseIntError),
//! }
//!
//! #[retry(max_attempts = 4, attempt_timeout = "2s")]
//! async fn count(client: &reqwest::Client, url: &str) -> Result<u64, ApiError> {
//!     let response = error_for_status(client.get(url).send().await?)?;
//!     Ok(response.text().await?.trim().parse()?)
//! }
//! ```
//!
//! A function with `breaker` or `guard` lists `Refused` too (`CircuitOpen` is the same type),
//! which [`Error`] converts from as well. [`#[derive(Classify)]`](derive@crate::Classify) says what `from(...)`
//! writes and which conflicts it reports.
//!
//! Check the response with [`error_for_status`], not with reqwest's own
//! `Response::error_for_status()`: the `reqwest::Error` that one returns keeps only the status,
//! so the server's `Retry-After` is lost and the loop falls back to its computed backoff. For the
//! same reason, `#[classify(delegate)]` over a field written as reqwest's own `reqwest::Error`
//! is a warning, on the field's type, that names [`Error`]; the derive reads the type as
//! written, so it does not see through an import or an alias, and
//! `#[classify(delegate, allow(hint_lost))]` silences it where the hint is not wanted.

use super::chain::known_cause;
use super::http::{response_class, status_class, told};
use super::io::connect_failure;
use super::wire::{WithAttempt, attempt_headers, keyed_class};
use crate::classify::{Classify, ErrorClass, TimedOut, hint};
use crate::engine::frame::{attempt, key_sent};
use ::http::{HeaderMap, StatusCode};
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

impl Classify for ::reqwest::Error {
    fn classify(&self) -> ErrorClass {
        if self.is_connect() {
            return connect_failure(self);
        }
        if self.is_timeout() {
            return ErrorClass::Timeout;
        }
        if let Some(status) = self.status() {
            return status_class(status.as_u16());
        }
        if self.is_decode() {
            // A body the connection cut short surfaces as a decode error caused by hyper's
            // `IncompleteBody`; a body that arrived whole and does not parse has no such cause.
            return self
                .source()
                .and_then(known_cause)
                .map_or(ErrorClass::Permanent, |c| c.classify());
        }
        if self.is_builder() || self.is_redirect() || self.is_upgrade() {
            return ErrorClass::Permanent;
        }
        if self.is_request() || self.is_body() {
            return self
                .source()
                .and_then(known_cause)
                .map_or(ErrorClass::Transient, |c| c.classify());
        }
        ErrorClass::Permanent
    }
}

impl Classify for ::reqwest::Response {
    fn classify(&self) -> ErrorClass {
        response_class(self.status().as_u16(), self.headers())
    }
    fn retry_after(&self) -> Option<Duration> {
        hint::from_headers(self.headers())
    }
}

/// What one attempt of a `#[retry]` function that calls reqwest can fail with.
///
/// `?` converts a `reqwest::Error`; [`error_for_status`] turns an error response into
/// [`Error::Status`], keeping its headers (and so the server's hint); the retry loop converts
/// an expired attempt timeout or deadline with `From<TimedOut>`.
///
/// Its `Debug` is one short line: an error response's status and URL (not its headers), and
/// the message of the error inside the other variants with their causes, as
/// `Status { status: 503, url: "http://127.0.0.1:8080/greeting" }` or
/// `TimedOut("attempt 2 timed out after 2s")`.
#[non_exhaustive]
pub enum Error {
    /// reqwest could not complete the exchange.
    Request(::reqwest::Error),
    /// The server answered with a client or server error status (400-599).
    Status(Box<ErrorResponse>),
    /// The attempt's timeout or the call's deadline expired: the loop cut the attempt off, or
    /// its request gave up at the same instant at the timeout
    /// [`with_attempt`](WithAttempt::with_attempt) gave it (a shorter timeout of your own that
    /// runs out first is a [`Request`](Error::Request) error whose `is_timeout()` is true).
    TimedOut(TimedOut),
    /// The call's breaker or one of its guards refused it (`Permanent`).
    Refused(crate::protect::guard::Refused),
}

impl Error {
    /// The status of an error response (or of the `reqwest::Error` made from one).
    #[must_use]
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Error::Request(e) => e.status(),
            Error::Status(r) => Some(r.status),
            Error::TimedOut(_) | Error::Refused(_) => None,
        }
    }
}

/// The head of an error response, kept by [`error_for_status`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ErrorResponse {
    /// The response's status.
    pub status: StatusCode,
    /// The response's headers (the server's hint among them).
    pub headers: HeaderMap,
    /// The URL that answered.
    pub url: ::reqwest::Url,
    /// The attempt that read it had written its call's idempotency key (see
    /// [`error_for_status`]).
    keyed: bool,
}

impl ErrorResponse {
    /// The class of the response: by its status and headers, and for a keyed request's `409`
    /// and `422` as the idempotency-key draft means them.
    fn class(&self) -> ErrorClass {
        let status = self.status.as_u16();
        match keyed_class(status) {
            Some(class) if self.keyed => told(class, &self.headers),
            _ => response_class(status, &self.headers),
        }
    }
}

/// `Ok(response)` for a status below 400, else [`Error::Status`] with the response's status,
/// headers and URL (the body is dropped unread). Inside an attempt of a call whose spans are
/// recorded (feature `tracing`), the status is recorded on the attempt's span as
/// `http.response.status_code`.
///
/// Inside an attempt that wrote its call's idempotency key (`idempotency_key = true` and
/// [`with_attempt`](WithAttempt::with_attempt) on the request), a `409 Conflict` is
/// `Throttling` (the server still runs the request with that key: wait and ask again) and a
/// `422 Unprocessable Content` `Permanent` (the key was used with another payload), as the
/// idempotency-key draft has them; see [`wire`](crate::wire#idempotency-keys).
pub fn error_for_status(response: ::reqwest::Response) -> Result<::reqwest::Response, Error> {
    let status = response.status();
    crate::observe::trace::http_status(status.as_u16());
    if status.is_client_error() || status.is_server_error() {
        Err(Error::Status(Box::new(ErrorResponse {
            status,
            headers: response.headers().clone(),
            url: response.url().clone(),
            keyed: key_sent(),
        })))
    } else {
        Ok(response)
    }
}

/// A request that gave up at its own timeout marks its attempt: one that fails so at its cutoff
/// (the timeout [`with_attempt`](WithAttempt::with_attempt) sets is the attempt's time left)
/// ends with the loop's [`TimedOut`], as [`Error::TimedOut`] says, not with this error.
impl From<::reqwest::Error> for Error {
    fn from(e: ::reqwest::Error) -> Self {
        if e.is_timeout() {
            crate::engine::frame::mark_request_timed_out();
        }
        Error::Request(e)
    }
}

impl From<crate::protect::guard::Refused> for Error {
    fn from(refused: crate::protect::guard::Refused) -> Self {
        Error::Refused(refused)
    }
}

impl From<TimedOut> for Error {
    fn from(t: TimedOut) -> Self {
        Error::TimedOut(t)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Request(e) => f.debug_tuple("Request").field(&Messages(e)).finish(),
            Error::Status(r) => f
                .debug_struct("Status")
                .field("status", &r.status)
                .field("url", &r.url.as_str())
                .finish(),
            Error::TimedOut(t) => f.debug_tuple("TimedOut").field(&Messages(t)).finish(),
            Error::Refused(r) => f.debug_tuple("Refused").field(&Messages(r)).finish(),
        }
    }
}

/// An error's message followed by its causes', `: ` between them, as a quoted string.
struct Messages<'a>(&'a dyn StdError);

impl fmt::Debug for Messages<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(e) = cause {
            text.push_str(": ");
            text.push_str(&e.to_string());
            cause = e.source();
        }
        fmt::Debug::fmt(&text, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Request(e) => fmt::Display::fmt(e, f),
            Error::Status(r) => write!(f, "HTTP status {} from {}", r.status, r.url),
            Error::TimedOut(t) => fmt::Display::fmt(t, f),
            Error::Refused(r) => fmt::Display::fmt(r, f),
        }
    }
}

/// `Request` and `TimedOut` are transparent: their `Display` is the inner error's, and their
/// source is the inner error's source.
impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Request(e) => e.source(),
            Error::Status(_) | Error::TimedOut(_) | Error::Refused(_) => None,
        }
    }
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Error::Request(e) => e.classify(),
            Error::Status(r) => r.class(),
            Error::TimedOut(_) => ErrorClass::Timeout,
            Error::Refused(_) => ErrorClass::Permanent,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Status(r) => hint::from_headers(&r.headers),
            Error::Request(_) | Error::TimedOut(_) | Error::Refused(_) => None,
        }
    }
}

impl WithAttempt for ::reqwest::RequestBuilder {
    fn with_attempt(self) -> Self {
        let Some(a) = attempt() else {
            return self;
        };
        let mut builder = self;
        if let Some(left) = a.time_left() {
            builder = builder.timeout(left);
        }
        // `headers` replaces what a name held (`header` would append): called twice, or over
        // headers already set, the request still carries one of each.
        builder.headers(attempt_headers(&a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::TimeoutKind;

    #[test]
    fn debug_is_one_short_line() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "1".parse().unwrap());
        headers.insert("server", "loopback".parse().unwrap());
        let status = Error::Status(Box::new(ErrorResponse {
            status: StatusCode::SERVICE_UNAVAILABLE,
            headers,
            url: "http://127.0.0.1:8080/greeting?lang=en".parse().unwrap(),
            keyed: false,
        }));
        assert_eq!(
            format!("{status:?}"),
            r#"Status { status: 503, url: "http://127.0.0.1:8080/greeting?lang=en" }"#
        );

        // A request that cannot be built: reqwest's error, then its cause.
        let client = ::reqwest::Client::builder().no_proxy().build().unwrap();
        let request = Error::from(client.get("not a url").build().unwrap_err());
        assert_eq!(
            format!("{request:?}"),
            r#"Request("builder error: relative URL without a base")"#
        );

        let timed_out = Error::from(TimedOut::new(
            TimeoutKind::Attempt,
            Duration::from_secs(2),
            2,
        ));
        assert_eq!(
            format!("{timed_out:?}"),
            r#"TimedOut("attempt 2 timed out after 2s")"#
        );

        let open = Error::from(crate::protect::guard::Refused::until(
            "CircuitBreaker",
            Duration::from_secs(5),
        ));
        assert_eq!(
            format!("{open:?}"),
            r#"Refused("refused by guard `CircuitBreaker`: the call was not made (it admits again in 5s)")"#
        );
    }
}
