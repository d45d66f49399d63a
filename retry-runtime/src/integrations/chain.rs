//! Errors behind `dyn Error` (and `anyhow::Error`, and the causes of the libraries' own errors):
//! classified by their chain of sources, by the first error of a type the runtime knows.

use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::protect::breaker::CircuitOpen;
use std::error::Error;
use std::time::Duration;

/// An error whose concrete type is hidden behind `dyn Error` (a `Box<dyn Error + Send + Sync>`,
/// say) is classified by its chain of sources, itself first: the first error of a type the
/// runtime knows decides, and an error with none of them is `Permanent`. The types it knows are
/// [`TimedOut`], [`CircuitOpen`](crate::CircuitOpen) and `std::io::Error`, and with their features `reqwest::Error`,
/// `retry_runtime::reqwest::Error`, `hyper::Error`, `hyper_util::client::legacy::Error`,
/// `h2::Error`, `tonic::Status`, `tonic::ConnectError` and `tonic::TimeoutExpired`.
///
/// ```
/// use retry_runtime::{Classify, ErrorClass};
/// use std::error::Error;
///
/// let refused: Box<dyn Error + Send + Sync> =
///     Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
/// assert_eq!(refused.classify(), ErrorClass::NotSent);
///
/// let unknown: Box<dyn Error + Send + Sync> = "no such table".into();
/// assert_eq!(unknown.classify(), ErrorClass::Permanent);
/// ```
impl Classify for dyn Error + 'static {
    fn classify(&self) -> ErrorClass {
        known_cause(self).map_or(ErrorClass::Permanent, |c| c.classify())
    }
    fn retry_after(&self) -> Option<Duration> {
        known_cause(self).and_then(|c| c.retry_after())
    }
}

/// As for `dyn Error`.
impl Classify for dyn Error + Send + 'static {
    fn classify(&self) -> ErrorClass {
        <dyn Error>::classify(self)
    }
    fn retry_after(&self) -> Option<Duration> {
        <dyn Error>::retry_after(self)
    }
}

/// As for `dyn Error`.
impl Classify for dyn Error + Send + Sync + 'static {
    fn classify(&self) -> ErrorClass {
        <dyn Error>::classify(self)
    }
    fn retry_after(&self) -> Option<Duration> {
        <dyn Error>::retry_after(self)
    }
}

/// The first error of `err`'s chain of sources (`err` itself first) whose type has a
/// `Classify` impl here.
pub(crate) fn known_cause<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a dyn Classify> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(known) = known(e) {
            return Some(known);
        }
        next = e.source();
    }
    None
}

/// `err` as a type with a `Classify` impl here, if it is one.
fn known<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a dyn Classify> {
    if let Some(e) = err.downcast_ref::<TimedOut>() {
        return Some(e);
    }
    if let Some(e) = err.downcast_ref::<CircuitOpen>() {
        return Some(e);
    }
    if let Some(e) = err.downcast_ref::<crate::protect::guard::Refused>() {
        return Some(e);
    }
    if let Some(e) = err.downcast_ref::<std::io::Error>() {
        return Some(e);
    }
    #[cfg(feature = "reqwest")]
    {
        if let Some(e) = err.downcast_ref::<super::reqwest::Error>() {
            return Some(e);
        }
        if let Some(e) = err.downcast_ref::<::reqwest::Error>() {
            return Some(e);
        }
    }
    #[cfg(feature = "hyper")]
    {
        if let Some(e) = err.downcast_ref::<::hyper_util::client::legacy::Error>() {
            return Some(e);
        }
        if let Some(e) = err.downcast_ref::<::hyper::Error>() {
            return Some(e);
        }
    }
    // After hyper's: a `hyper::Error` holds the `h2::Error` of an HTTP/2 connection as its
    // cause, and defers to it.
    #[cfg(feature = "http2")]
    if let Some(e) = err.downcast_ref::<::h2::Error>() {
        return Some(e);
    }
    #[cfg(feature = "tonic")]
    {
        if let Some(e) = err.downcast_ref::<::tonic::Status>() {
            return Some(e);
        }
        if let Some(e) = err.downcast_ref::<::tonic::ConnectError>() {
            return Some(e);
        }
        if let Some(e) = err.downcast_ref::<::tonic::TimeoutExpired>() {
            return Some(e);
        }
    }
    None
}
