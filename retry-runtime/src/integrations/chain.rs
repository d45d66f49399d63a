//! The causes of the libraries' own errors, classified by their chain of sources: the first
//! error of a type the runtime knows (the libraries' errors and the runtime's own, whose
//! `Classify` impls live with their integrations). What is behind `dyn Error` and `anyhow` is
//! read the same way, plus the crate's own error types that wrap a library's (`boxed.rs`).

use crate::classify::{Classify, TimedOut};
use std::error::Error;

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
pub(crate) fn known<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a dyn Classify> {
    if let Some(e) = err.downcast_ref::<TimedOut>() {
        return Some(e);
    }
    if let Some(e) = err.downcast_ref::<crate::protect::guard::Refused>() {
        return Some(e);
    }
    if let Some(e) = err.downcast_ref::<std::io::Error>() {
        return Some(e);
    }
    #[cfg(feature = "reqwest")]
    if let Some(e) = err.downcast_ref::<::reqwest::Error>() {
        return Some(e);
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
