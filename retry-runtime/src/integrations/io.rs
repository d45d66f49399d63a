//! `std::io::Error`, and what transport errors share: a failed connection never sent the request.

use super::chain::known_cause;
use crate::classify::{Classify, ErrorClass, TimedOut};
use std::error::Error;
use std::io;
use std::time::Duration;

/// A call its breaker or one of its guards refused: kind `Other`, wrapping the
/// [`Refused`](crate::Refused) (which classifies as `Permanent`).
impl From<crate::protect::guard::Refused> for io::Error {
    fn from(refused: crate::protect::guard::Refused) -> Self {
        io::Error::other(refused)
    }
}

impl From<TimedOut> for io::Error {
    fn from(t: TimedOut) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, t)
    }
}

/// `std::io::Error` by kind. Only a refused connection is `NotSent`: nothing reached the
/// server. A reset or aborted connection may have delivered the request, so it is `Transient`.
///
/// | kind | class |
/// |---|---|
/// | `ConnectionRefused` | `NotSent` |
/// | `TimedOut`, `WouldBlock` | `Timeout` |
/// | `ConnectionReset`, `ConnectionAborted`, `BrokenPipe`, `NotConnected`, `UnexpectedEof`, `Interrupted`, `AddrInUse`, `AddrNotAvailable`, `HostUnreachable`, `NetworkUnreachable`, `NetworkDown`, `ResourceBusy` | `Transient` |
/// | any other kind wrapping an error the runtime knows (`io::Error::other(e)`) | that error's class, and its server hint |
/// | any other kind | `Permanent` |
///
/// An error of another kind that wraps an inner error (`io::Error::other(e)`, as body streams
/// do with transport errors) is classified by the inner error's chain when the runtime knows a
/// type in it.
impl Classify for io::Error {
    fn classify(&self) -> ErrorClass {
        use io::ErrorKind as K;
        match self.kind() {
            K::ConnectionRefused => ErrorClass::NotSent,
            K::TimedOut | K::WouldBlock => ErrorClass::Timeout,
            K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::NotConnected
            | K::UnexpectedEof
            | K::Interrupted
            | K::AddrInUse
            | K::AddrNotAvailable
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::ResourceBusy => ErrorClass::Transient,
            _ => inner(self).map_or(ErrorClass::Permanent, |c| c.classify()),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        inner(self).and_then(|c| c.retry_after())
    }
}

/// The known cause wrapped by an `io::Error`, if any (not the `io::Error` itself).
fn inner(err: &io::Error) -> Option<&dyn Classify> {
    let inner: &(dyn Error + 'static) = err.get_ref()?;
    known_cause(inner)
}

/// The class of an error raised while opening the connection (TCP connect, DNS, TLS, proxy):
/// the request never left, so `NotSent`, unless a TLS failure shows in the chain (an
/// `io::Error` of kind `InvalidData`, as rustls and native-tls report a bad certificate or
/// handshake), which retrying cannot mend: `Permanent`.
#[cfg_attr(not(any(feature = "hyper", feature = "tonic")), allow(dead_code))]
pub(crate) fn connect_failure(err: &(dyn Error + 'static)) -> ErrorClass {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::InvalidData)
        {
            return ErrorClass::Permanent;
        }
        next = e.source();
    }
    ErrorClass::NotSent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::TimeoutKind;

    #[test]
    fn kinds() {
        use io::ErrorKind as K;
        for (kind, class) in [
            (K::ConnectionRefused, ErrorClass::NotSent),
            (K::TimedOut, ErrorClass::Timeout),
            (K::ConnectionReset, ErrorClass::Transient),
            (K::BrokenPipe, ErrorClass::Transient),
            (K::UnexpectedEof, ErrorClass::Transient),
            (K::NotFound, ErrorClass::Permanent),
            (K::PermissionDenied, ErrorClass::Permanent),
            (K::InvalidData, ErrorClass::Permanent),
            (K::Other, ErrorClass::Permanent),
        ] {
            assert_eq!(io::Error::from(kind).classify(), class, "{kind:?}");
        }
    }

    #[test]
    fn wrapped_errors_are_looked_into() {
        let t = TimedOut::new(TimeoutKind::Attempt, Duration::from_secs(1), 1);
        assert_eq!(io::Error::other(t).classify(), ErrorClass::Timeout);
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(io::Error::other(refused).classify(), ErrorClass::NotSent);
        assert_eq!(io::Error::other("boom").classify(), ErrorClass::Permanent);
        // The kind decides when it says more than "other".
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, t);
        assert_eq!(reset.classify(), ErrorClass::Transient);
    }

    #[test]
    fn timed_out_becomes_an_io_timeout() {
        let t = TimedOut::new(TimeoutKind::Deadline, Duration::from_secs(3), 2);
        let e = io::Error::from(t);
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(e.classify(), ErrorClass::Timeout);
    }

    #[test]
    fn connect_failures() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(connect_failure(&refused), ErrorClass::NotSent);
        let dns = io::Error::other("failed to lookup address information");
        assert_eq!(connect_failure(&dns), ErrorClass::NotSent);
        let tls = io::Error::new(io::ErrorKind::InvalidData, "invalid peer certificate");
        assert_eq!(connect_failure(&tls), ErrorClass::Permanent);
    }
}
