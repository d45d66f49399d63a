//! Errors behind `dyn Error` and `anyhow::Error`: classified by their chain of sources, by the
//! first error of a type the runtime knows, the crate's own `reqwest::Error` among them.

use super::chain;
use crate::classify::{Classify, ErrorClass};
use std::error::Error;
use std::time::Duration;

/// An error whose concrete type is hidden behind `dyn Error` (a `Box<dyn Error + Send + Sync>`,
/// say) is classified by its chain of sources, itself first: the first error of a type the
/// runtime knows decides, and an error with none of them is `Permanent`. The types it knows are
/// [`TimedOut`](crate::TimedOut), [`Refused`](crate::Refused) and `std::io::Error`, and with
/// their features `reqwest::Error`, `retry_runtime::reqwest::Error`, `hyper::Error`,
/// `hyper_util::client::legacy::Error`, `h2::Error`, `tonic::Status`, `tonic::ConnectError` and
/// `tonic::TimeoutExpired`.
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
/// `Classify` impl: one the libraries' causes are read by ([`chain::known`]), or an error type
/// of the crate's own that wraps a library's.
pub(crate) fn known_cause<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a dyn Classify> {
    let mut next = Some(err);
    while let Some(e) = next {
        #[cfg(feature = "reqwest")]
        if let Some(e) = e.downcast_ref::<super::reqwest::Error>() {
            return Some(e);
        }
        if let Some(known) = chain::known(e) {
            return Some(known);
        }
        next = e.source();
    }
    None
}
