//! What the retry loop reports: tracing events (with the `tracing` feature), the records of
//! [`testing::record`](crate::testing::record), and configuration warnings.
//!
//! Events have the target `retry`:
//!
//! | level | when | fields |
//! |---|---|---|
//! | DEBUG | an attempt failed and the call sleeps before the next | `function`, `partition`, `attempt`, `class`, `delay_ms`, `tokens` (the retry bucket's level after this retry's cost), and in adaptive mode `fill_rate` (send tokens per second) |
//! | WARN | the call gives up before `max_attempts` | the same but `delay_ms`, and `reason`: `retry token bucket empty`, `deadline reached`, `not idempotent`, `server retry hint longer than max_backoff` |
//!
//! Configuration warnings have the target `retry::config`; without a subscriber that takes
//! them (or without the `tracing` feature) they go to standard error.

use crate::classify::ErrorClass;
use crate::partition::Site;
#[cfg(feature = "tracing")]
use crate::policy::Mode;
use crate::testing;
use std::time::Duration;

/// Why a call stopped retrying before its error class or `max_attempts` said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EarlyEnd {
    /// The retry token bucket held less than the retry's cost.
    BucketEmpty,
    /// The next attempt could not start (or its send token not be had) before the deadline.
    Deadline,
    /// The function is not idempotent and the request may have reached the server.
    NotIdempotent,
    /// The server asked for a delay longer than `max_backoff`.
    HintTooLong,
}

impl EarlyEnd {
    /// The reason as the WARN event writes it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
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
    site: &Site,
    attempt: u32,
    class: ErrorClass,
    delay: Duration,
    recording: bool,
) {
    let partition = site.partition_name();
    if recording {
        testing::note_retry(site.name, partition, attempt, class, delay);
    }
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::DEBUG) {
        let function = site.name;
        let partition = partition.unwrap_or("");
        let class = class.as_str();
        let delay_ms = delay.as_secs_f64() * 1000.0;
        let tokens = site.token_bucket().available();
        if site.settings().mode == Mode::Adaptive {
            let fill_rate = site.limiter().fill_rate();
            tracing::debug!(
                target: "retry",
                function, partition, attempt, class, delay_ms, tokens, fill_rate,
                "attempt failed, retrying",
            );
        } else {
            tracing::debug!(
                target: "retry",
                function, partition, attempt, class, delay_ms, tokens,
                "attempt failed, retrying",
            );
        }
    }
}

/// Retries ended early; the caller gets the last result.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn ended_early(
    site: &Site,
    attempt: u32,
    class: Option<ErrorClass>,
    why: EarlyEnd,
    recording: bool,
) {
    let partition = site.partition_name();
    if recording {
        testing::note_early_end(site.name, partition, attempt, class, why);
    }
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::WARN) {
        let function = site.name;
        let partition = partition.unwrap_or("");
        let class = class.map_or("none", ErrorClass::as_str);
        let reason = why.as_str();
        let tokens = site.token_bucket().available();
        if site.settings().mode == Mode::Adaptive {
            let fill_rate = site.limiter().fill_rate();
            tracing::warn!(
                target: "retry",
                function, partition, attempt, class, reason, tokens, fill_rate,
                "giving up before max_attempts",
            );
        } else {
            tracing::warn!(
                target: "retry",
                function, partition, attempt, class, reason, tokens,
                "giving up before max_attempts",
            );
        }
    }
}

/// A value from the environment or the config file that cannot be used: one warning, as a
/// tracing event if a subscriber takes it, else on standard error.
pub(crate) fn config_warning(message: &str) {
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry::config", tracing::Level::WARN) {
        tracing::warn!(target: "retry::config", "{message}");
        return;
    }
    eprintln!("warning: retry: {message}");
}
