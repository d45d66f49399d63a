//! Tracing events of the retry loop (with the `tracing` feature; nothing otherwise).

use crate::classify::ErrorClass;
use std::time::Duration;

/// Why a call stopped retrying before its error class or attempt count said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EarlyEnd {
    /// The partition's retry token bucket held less than the retry's cost.
    BucketEmpty,
    /// The next attempt could not start (or its send token not be had) before the deadline.
    Deadline,
    /// The function is not idempotent and the request may have reached the server.
    NotIdempotent,
    /// The server asked for a delay longer than `max_backoff`.
    HintTooLong,
}

impl EarlyEnd {
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            EarlyEnd::BucketEmpty => "retry token bucket empty",
            EarlyEnd::Deadline => "deadline reached",
            EarlyEnd::NotIdempotent => "not idempotent",
            EarlyEnd::HintTooLong => "server retry hint longer than max_backoff",
        }
    }
}

/// A retry is about to sleep.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn retrying(
    function: &'static str,
    partition: Option<&'static str>,
    attempt: u32,
    class: ErrorClass,
    delay: Duration,
) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "retry",
        function,
        partition = partition.unwrap_or(""),
        attempt,
        class = class.as_str(),
        delay_ms = delay.as_secs_f64() * 1000.0,
        "attempt failed, retrying",
    );
}

/// Retries ended early; the caller gets the last result.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn ended_early(
    function: &'static str,
    partition: Option<&'static str>,
    attempt: u32,
    class: Option<ErrorClass>,
    why: EarlyEnd,
) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "retry",
        function,
        partition = partition.unwrap_or(""),
        attempt,
        class = class.map_or("none", ErrorClass::as_str),
        reason = why.as_str(),
        "giving up before max_attempts",
    );
}
