//! What the expansion of `#[retry]` names. Not a public API: it changes with the macro.

pub use crate::call::{Call, FromTimedOut, RetryResult, Timed, Timer, Untimed};
pub use crate::classify::{Classify, ErrorClass, TimedOut};
pub use crate::event::RetryEvent;
pub use crate::partition::Site;
pub use crate::policy::{Jitter, Mode, Policy};
pub use core::ops::ControlFlow;
pub use std::time::Duration;

/// The classifier when `retry_on` is not given: the error's own [`Classify`] impl.
#[inline]
pub fn classify_by_trait<E: Classify + ?Sized>(err: &E) -> ErrorClass {
    err.classify()
}

/// The server hint when neither `retry_on` nor `retry_after` is given.
#[inline]
pub fn hint_by_trait<E: Classify + ?Sized>(err: &E) -> Option<Duration> {
    err.retry_after()
}

/// No server hint (a `retry_on` predicate without `retry_after`).
#[inline]
pub fn no_hint<E: ?Sized>(_: &E) -> Option<Duration> {
    None
}

/// Never repeat a success (no `retry_if_ok`).
#[inline]
pub fn never_repeat<T: ?Sized>(_: &T) -> bool {
    false
}

/// No `on_retry` hook.
#[inline]
pub fn no_hook<E>(_: &RetryEvent<'_, E>) {}

/// What a `retry_on` predicate returns: `bool` or [`ErrorClass`].
#[diagnostic::on_unimplemented(
    message = "a `retry_on` function must return `bool` or `ErrorClass`, not `{Self}`",
    label = "returns `{Self}`",
    note = "`true` retries the error as `Transient`; return an `ErrorClass` to say more"
)]
pub trait IntoErrorClass {
    /// The class.
    fn into_error_class(self) -> ErrorClass;
}

impl<T: Into<ErrorClass>> IntoErrorClass for T {
    #[inline]
    fn into_error_class(self) -> ErrorClass {
        self.into()
    }
}

/// Converts what a `retry_on` predicate returned.
#[inline]
pub fn into_class<T: IntoErrorClass>(class: T) -> ErrorClass {
    class.into_error_class()
}

/// Pins a `retry_after` function's result type.
#[inline]
pub fn hint(hint: Option<Duration>) -> Option<Duration> {
    hint
}

/// Pins a `retry_if_ok` function's result type.
#[inline]
pub fn repeat(again: bool) -> bool {
    again
}
