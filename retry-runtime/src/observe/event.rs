//! What `on_retry` hooks see before each sleep.

use crate::attempt::InvocationId;
use crate::classify::ErrorClass;
use crate::observe::Source;
use core::fmt;
use std::time::Duration;

/// A retry about to happen, handed to the function named by `on_retry` before the sleep; for
/// a hedged function, also each hedge as it starts ([`is_hedge`](Self::is_hedge)).
///
/// ```
/// use retry_runtime::RetryEvent;
///
/// fn log_retry(ev: &RetryEvent<'_, std::io::Error>) {
///     eprintln!(
///         "{} [{}]: attempt {} failed ({}), retrying in {:?}",
///         ev.function(),
///         ev.invocation_id(),
///         ev.attempt(),
///         ev.class(),
///         ev.delay(),
///     );
/// }
/// # let _ = log_retry;
/// ```
pub struct RetryEvent<'a, E> {
    /// The call: its function, and its invocation id drawn when first asked for.
    pub(crate) call: &'a (dyn Source + Sync),
    pub(crate) attempt: u32,
    pub(crate) delay: Duration,
    pub(crate) error: Option<&'a E>,
    pub(crate) class: ErrorClass,
    pub(crate) hedge: bool,
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
        self.error.is_none() && !self.hedge
    }

    /// Whether this is a hedge: attempt `attempt() + 1` starts now while attempt `attempt()`
    /// (or another before it) is still in flight. `error()` is the failure of another attempt
    /// that started it at once, or `None` when none had answered within the hedge delay
    /// (then `class()` is `Timeout`); `delay()` is zero: the hedge starts now.
    #[must_use]
    pub fn is_hedge(&self) -> bool {
        self.hedge
    }

    /// The name of the `#[retry]` function.
    #[must_use]
    pub fn function(&self) -> &'static str {
        self.call.who().function
    }

    /// The named partition of the function, if any.
    #[must_use]
    pub fn partition(&self) -> Option<&'static str> {
        self.call.who().partition
    }

    /// The call's invocation id, the same for all its attempts (and the one
    /// [`crate::attempt`] gives the body), so that one call's retries can be found in logs.
    #[must_use]
    pub fn invocation_id(&self) -> InvocationId {
        self.call.invocation_id()
    }
}

impl<E: fmt::Debug> fmt::Debug for RetryEvent<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryEvent")
            .field("function", &self.function())
            .field("partition", &self.partition())
            .field("invocation_id", &self.invocation_id())
            .field("attempt", &self.attempt)
            .field("delay", &self.delay)
            .field("error", &self.error)
            .field("class", &self.class)
            .field("hedge", &self.hedge)
            .finish()
    }
}
