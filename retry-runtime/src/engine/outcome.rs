//! The function's return type and error type as the engine sees them. These traits are where
//! a function that does not fit `#[retry]` is told so, each with its own message.

use crate::classify::ErrorClass;

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
