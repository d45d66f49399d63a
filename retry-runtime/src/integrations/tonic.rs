//! tonic (feature `tonic`): `Classify`, `From<TimedOut>` and `From<Refused>` for
//! `tonic::Status`.

use super::chain::known_cause;
use super::h2::not_processed;
use super::io::connect_failure;
use super::wire::{GRPC_PREVIOUS_RPC_ATTEMPTS, IDEMPOTENCY_KEY, WithAttempt};
use crate::classify::hint::{self, Pushback};
use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::engine::frame::{self, attempt};
use ::tonic::{Code, ConnectError, Status, TimeoutExpired};
use std::error::Error;
use std::time::Duration;

/// An expired attempt timeout or deadline becomes `DEADLINE_EXCEEDED`, which classifies as
/// `Timeout`.
impl From<TimedOut> for Status {
    fn from(t: TimedOut) -> Self {
        Status::deadline_exceeded(t.to_string())
    }
}

/// A call its breaker refused becomes `UNAVAILABLE` (as gRPC reports a channel that will not
/// send), one that a guard refused `RESOURCE_EXHAUSTED` (the client's own limit, as gRPC
/// reports a local quota), with the [`Refused`](crate::Refused) as its source: it classifies
/// as `Permanent`, so an outer retry loop does not spin on it.
impl From<crate::protect::guard::Refused> for Status {
    fn from(refused: crate::protect::guard::Refused) -> Self {
        let mut status = if refused.by() == crate::protect::breaker::NAME {
            Status::unavailable(refused.to_string())
        } else {
            Status::resource_exhausted(refused.to_string())
        };
        status.set_source(std::sync::Arc::new(refused));
        status
    }
}

/// The status code decides, after what the client itself saw and the server's pushback.
///
/// 0. A status made from a [`Refused`](crate::Refused): `Permanent`.
/// 1. A negative `grpc-retry-pushback-ms` in the metadata: `Permanent` (the server asks not
///    to retry, gRFC A6). A non-negative one is the [`retry_after`](Classify::retry_after) hint.
/// 2. The client-side cause of a status made by tonic: a failed connection
///    (`tonic::ConnectError`, or a refused `io::Error`) is `NotSent` (`Permanent` for a TLS
///    failure); a request hyper dropped before dispatching it is `NotSent`; an HTTP/2 stream
///    the server refused (`RST_STREAM` with `REFUSED_STREAM`, which tonic reports as
///    `UNAVAILABLE`) or left unprocessed under its `GOAWAY` (reported as `INTERNAL`, or
///    `RESOURCE_EXHAUSTED` for `ENHANCE_YOUR_CALM`) is `NotSent` (`Throttling` for
///    `ENHANCE_YOUR_CALM`): the `h2::Error` among its causes says so (RFC 9113 section 8.7);
///    tonic's own timeout (`tonic::TimeoutExpired`, reported as `CANCELLED`) is `Timeout`.
/// 3. The code:
///
/// | code | class |
/// |---|---|
/// | `UNAVAILABLE`, `ABORTED`, `INTERNAL` | `Transient` |
/// | `DEADLINE_EXCEEDED` | `Timeout` |
/// | `RESOURCE_EXHAUSTED` | `Throttling` |
/// | `UNKNOWN` with an I/O error among its causes | that error's class |
/// | `UNKNOWN` from the transport otherwise (a `hyper::Error` among its causes: the connection broke off mid-call, a frame cut short) | `Transient` |
/// | every other code (`CANCELLED`, `UNKNOWN`, `INVALID_ARGUMENT`, `NOT_FOUND`, `ALREADY_EXISTS`, `PERMISSION_DENIED`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`, `UNIMPLEMENTED`, `DATA_LOSS`, `UNAUTHENTICATED`, `OK`) | `Permanent` |
impl Classify for Status {
    fn classify(&self) -> ErrorClass {
        if self
            .source()
            .is_some_and(|s| s.is::<crate::protect::guard::Refused>())
        {
            return ErrorClass::Permanent;
        }
        if pushback(self) == Some(Pushback::Stop) {
            return ErrorClass::Permanent;
        }
        if let Some(class) = self.source().and_then(client_side) {
            return class;
        }
        match self.code() {
            Code::Unavailable | Code::Aborted | Code::Internal => ErrorClass::Transient,
            Code::DeadlineExceeded => ErrorClass::Timeout,
            Code::ResourceExhausted => ErrorClass::Throttling,
            Code::Unknown => match self.source().and_then(known_cause).map(|c| c.classify()) {
                Some(class) if class != ErrorClass::Permanent => class,
                // The transport broke off mid-call (an I/O error of another kind, such as a
                // frame cut short: "bytes remaining on stream").
                _ if self.source().is_some_and(transport) => ErrorClass::Transient,
                class => class.unwrap_or(ErrorClass::Permanent),
            },
            _ => ErrorClass::Permanent,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match pushback(self)? {
            Pushback::After(d) => Some(d),
            Pushback::Stop => None,
        }
    }
}

/// A failed connection: the request never left.
impl Classify for ConnectError {
    fn classify(&self) -> ErrorClass {
        connect_failure(self)
    }
}

/// tonic's own request timeout.
impl Classify for TimeoutExpired {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Timeout
    }
}

fn pushback(status: &Status) -> Option<Pushback> {
    let value = status.metadata().get(hint::GRPC_RETRY_PUSHBACK_MS)?;
    hint::grpc_pushback(value.to_str().ok()?)
}

/// Whether the transport (hyper, under tonic's channel) raised the error: the connection failed
/// during the call, not the call's own content.
fn transport(cause: &(dyn Error + 'static)) -> bool {
    let mut next = Some(cause);
    while let Some(e) = next {
        if e.downcast_ref::<::hyper::Error>()
            .is_some_and(|h| !h.is_parse() && !h.is_user())
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// What the chain of causes of a client-made status proves, if anything.
fn client_side(cause: &(dyn Error + 'static)) -> Option<ErrorClass> {
    let mut next = Some(cause);
    while let Some(e) = next {
        if let Some(c) = e.downcast_ref::<ConnectError>() {
            return Some(c.classify());
        }
        if e.is::<TimeoutExpired>() {
            return Some(ErrorClass::Timeout);
        }
        if e.downcast_ref::<::hyper::Error>()
            .is_some_and(::hyper::Error::is_canceled)
        {
            return Some(ErrorClass::NotSent);
        }
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return Some(ErrorClass::NotSent);
        }
        if let Some(class) = e.downcast_ref::<::h2::Error>().and_then(not_processed) {
            return Some(class);
        }
        next = e.source();
    }
    None
}

impl<T> WithAttempt for ::tonic::Request<T> {
    fn with_attempt(mut self) -> Self {
        let Some(a) = attempt() else {
            return self;
        };
        if let Some(left) = a.time_left() {
            self.set_timeout(left);
        }
        if a.number() > 1 {
            self.metadata_mut().insert(
                GRPC_PREVIOUS_RPC_ATTEMPTS,
                ::tonic::metadata::MetadataValue::from(a.number() - 1),
            );
        }
        if let Some(key) = a.idempotency_key() {
            let value = ::tonic::metadata::MetadataValue::try_from(key.to_string())
                .expect("a UUID is visible ASCII");
            self.metadata_mut().insert(IDEMPOTENCY_KEY, value);
            frame::mark_key_sent();
        }
        self
    }
}
