//! What the expansion of `#[retry]` names. Not a public API: it changes with the macro.

pub use crate::call::{
    Call, FromTimedOut, RetryResult, SendToken, Settled, Timed, Timer, TimerKind, Untimed,
};
pub use crate::classify::{Classify, ErrorClass, TimedOut};
pub use crate::event::RetryEvent;
pub use crate::partition::Site;
pub use crate::policy::{Jitter, Mode, Policy};
pub use core::ops::ControlFlow;
pub use std::time::Duration;
pub use tokio::time::sleep;

/// The classifier and server hint when `retry_on` is not given: the error's own [`Classify`]
/// impl. One function for both, so a missing impl is reported once.
#[inline]
pub fn by_trait<E: Classify>() -> (
    impl Fn(&E) -> ErrorClass + Copy,
    impl Fn(&E) -> Option<Duration> + Copy,
) {
    (E::classify, E::retry_after)
}

/// How a timed-out attempt becomes the error of a function with a timer: its `FromTimedOut`
/// bound is where a missing `From<TimedOut>` is reported, with its own message.
#[inline]
pub fn timed_out<E: FromTimedOut>(t: TimedOut) -> E {
    E::from_timed_out(t)
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

/// The function's return type, checked to be a `Result` where the expansion names it with the
/// return type's span, so that the first error a non-`Result` alias gets points at it. (A
/// return type that is plainly not a `Result`, such as `u32`, is refused by the macro itself.)
#[diagnostic::on_unimplemented(
    message = "`#[retry]` needs a function that returns `Result<T, E>`, not `{Self}`",
    label = "this return type is not a `Result`",
    note = "the loop retries on `Err` and returns on `Ok`; aliases such as `io::Result<T>` work"
)]
pub trait ReturnsResult: RetryResult {
    /// The same type, seen as a [`RetryResult`].
    type Result: RetryResult;
}

impl<T, E> ReturnsResult for Result<T, E> {
    type Result = Result<T, E>;
}
