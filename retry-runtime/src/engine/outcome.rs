//! The function's return type and error type as the engine sees them. These traits are where
//! a function that does not fit `#[retry]` is told so, each with its own message.

use crate::classify::{ErrorClass, TimedOut};
use crate::protect::guard::Refused;

/// The return type of a `#[retry]` function, seen as `Result<Ok, Err>` whatever alias wrote it.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` needs a function that returns `Result<T, E>`, not `{Self}`",
    label = "this return type is not a `Result`",
    note = "the loop retries on `Err` and returns on `Ok`; aliases such as `io::Result<T>` work"
)]
pub trait RetryResult {
    /// The success type.
    type Ok;
    /// The error type.
    type Err;
    /// Borrows the outcome.
    fn as_result(&self) -> Result<&Self::Ok, &Self::Err>;
    /// Wraps an error.
    fn from_err(err: Self::Err) -> Self;
}

impl<T, E> RetryResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    fn as_result(&self) -> Result<&T, &E> {
        self.as_ref()
    }
    fn from_err(err: E) -> Self {
        Err(err)
    }
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

/// An error type a timed-out attempt can become.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot represent a timeout, which `attempt_timeout` and `deadline` need",
    label = "`{Self}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add `impl From<retry_runtime::TimedOut> for {Self}` (a variant that keeps the \
            `TimedOut` is enough); `std::io::Error` has it already"
)]
pub trait FromTimedOut {
    /// The error for a timed-out attempt.
    fn from_timed_out(t: TimedOut) -> Self;
}

impl<E: From<TimedOut>> FromTimedOut for E {
    fn from_timed_out(t: TimedOut) -> Self {
        E::from(t)
    }
}

/// An error type a call refused by its breaker or one of its guards can become.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot represent a refused call, which `breaker` and `guard` need",
    label = "`{Self}` does not implement `From<retry_runtime::Refused>`",
    note = "add `impl From<retry_runtime::Refused> for {Self}` (a variant that keeps the \
            `Refused` is enough; `CircuitOpen` is the same type); `std::io::Error` and \
            `String` have it already"
)]
pub trait FromStopped {
    /// The error for a refused call.
    fn from_refused(refused: Refused) -> Self;
}

impl<E: From<Refused>> FromStopped for E {
    fn from_refused(refused: Refused) -> Self {
        E::from(refused)
    }
}

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
    fn into_error_class(self) -> ErrorClass {
        self.into()
    }
}
