//! What `on_retry` hooks see before each sleep.

use crate::classify::ErrorClass;
use std::time::Duration;

/// A retry about to happen, handed to the function named by `on_retry` before the sleep.
///
/// ```
/// use retry_runtime::RetryEvent;
///
/// fn log_retry(ev: &RetryEvent<'_, std::io::Error>) {
///     eprintln!(
///         "{}: attempt {} failed ({}), retrying in {:?}",
///         ev.function(),
///         ev.attempt(),
///         ev.class(),
///         ev.delay(),
///     );
/// }
/// # let _ = log_retry;
/// ```
#[derive(Debug)]
pub struct RetryEvent<'a, E> {
    pub(crate) function: &'static str,
    pub(crate) partition: Option<&'static str>,
    pub(crate) attempt: u32,
    pub(crate) delay: Duration,
    pub(crate) error: Option<&'a E>,
    pub(crate) class: ErrorClass,
}

impl<'a, E> RetryEvent<'a, E> {
    /// The attempt (1-based) that just ended; the next one is `attempt() + 1`.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How long the call sleeps before the next attempt.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The error of the attempt that just ended, or `None` when `retry_if_ok` asked to repeat
    /// a successful attempt (polling).
    #[must_use]
    pub fn error(&self) -> Option<&'a E> {
        self.error
    }

    /// The class of the error. A `retry_if_ok` repeat has no error and reports `Transient`
    /// (the result is not ready yet); [`is_repeat`](Self::is_repeat) tells the two apart.
    #[must_use]
    pub fn class(&self) -> ErrorClass {
        self.class
    }

    /// Whether this is a `retry_if_ok` repeat of a successful attempt.
    #[must_use]
    pub fn is_repeat(&self) -> bool {
        self.error.is_none()
    }

    /// The name of the `#[retry]` function.
    #[must_use]
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// The named partition of the function, if any.
    #[must_use]
    pub fn partition(&self) -> Option<&'static str> {
        self.partition
    }
}
