//! anyhow (feature `anyhow`): `Classify` for `anyhow::Error`.

use super::boxed::known_cause;
use crate::classify::{Classify, ErrorClass};
use std::time::Duration;

/// By the error's chain of causes, outermost first: the first error of a type the runtime
/// knows decides (see [`Classify for dyn Error`](crate::Classify)); a chain with none of them is
/// `Permanent`. Errors of your own types in the chain are not seen: classify those with
/// `retry_on` and `anyhow::Error::downcast_ref`.
///
/// `From<TimedOut>` needs nothing more: anyhow converts any `std::error::Error`, and the
/// converted [`TimedOut`](crate::TimedOut) classifies as `Timeout`.
///
/// ```
/// use anyhow::Context;
/// use retry_runtime::{Classify, ErrorClass};
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let err = anyhow::Error::new(refused).context("loading the price list");
/// assert_eq!(err.classify(), ErrorClass::NotSent);
/// assert_eq!(anyhow::anyhow!("bad input").classify(), ErrorClass::Permanent);
/// ```
impl Classify for ::anyhow::Error {
    fn classify(&self) -> ErrorClass {
        known_cause(self.as_ref()).map_or(ErrorClass::Permanent, |c| c.classify())
    }
    fn retry_after(&self) -> Option<Duration> {
        known_cause(self.as_ref())?.retry_after()
    }
}
