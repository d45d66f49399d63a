//! hyper's errors and the hyper-util legacy client's (feature `hyper`).

use super::chain::known_cause;
use super::io::connect_failure;
use crate::classify::{Classify, ErrorClass};
use std::error::Error;
use std::time::Duration;

/// | `hyper::Error` | class |
/// |---|---|
/// | `is_canceled()`: the request was dropped before it was dispatched to a connection | `NotSent` |
/// | `is_timeout()` | `Timeout` |
/// | `is_parse()`, `is_user()` (a malformed message, a misuse of the API) | `Permanent` |
/// | otherwise, an `io::Error` among its causes | that error's class |
/// | otherwise, with the `http2` feature, an `h2::Error` among its causes (a stream of an HTTP/2 connection failed) | that error's class: `NotSent` for a stream the server refused (`REFUSED_STREAM`) or left unprocessed under its `GOAWAY` |
/// | otherwise (connection closed mid-message, protocol error) | `Transient` |
///
/// hyper's `is_canceled()` is how it hands back a request it never wrote: the connection
/// closed, or was not ready, before the request was dispatched to it (hyper's client
/// dispatcher gives such a request back whole). "connection closed before message
/// completed" (`is_incomplete_message()`) is not one of them: the request may have been
/// written and acted on, so it is `Transient`.
impl Classify for ::hyper::Error {
    fn classify(&self) -> ErrorClass {
        if self.is_canceled() {
            ErrorClass::NotSent
        } else if self.is_timeout() {
            ErrorClass::Timeout
        } else if self.is_parse() || self.is_user() {
            ErrorClass::Permanent
        } else {
            self.source()
                .and_then(known_cause)
                .map_or(ErrorClass::Transient, |c| c.classify())
        }
    }
}

/// | `hyper_util::client::legacy::Error` | class |
/// |---|---|
/// | `is_connect()`: DNS, TCP connect, TLS handshake or proxy failed, so the request never left | `NotSent` (`Permanent` for a TLS failure: an `InvalidData` I/O error among its causes) |
/// | with a `hyper::Error` (or another known error) as its cause | that error's class |
/// | without a cause (a request the client refuses: bad method, version, URI) | `Permanent` |
///
/// A request the client's connection gave back unsent (its kind `Canceled`: hyper's canceled
/// error as the cause) is `NotSent` through that cause; the client itself retries it once on
/// a new connection when the one it took from the pool was reused (`retry_canceled_requests`,
/// on by default). An HTTP/2 stream error (the `http2` feature) is classified by the
/// `h2::Error` under the `hyper::Error`.
impl Classify for ::hyper_util::client::legacy::Error {
    fn classify(&self) -> ErrorClass {
        if self.is_connect() {
            return connect_failure(self);
        }
        match self.source() {
            Some(cause) => known_cause(cause).map_or(ErrorClass::Transient, |c| c.classify()),
            None => ErrorClass::Permanent,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}
