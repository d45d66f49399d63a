//! What a call consults beside its settings: the classifier and server-hint reader, the
//! `on_retry` hook, and what a call its breaker or a guard refused returns, with their bounds
//! stated once.
//! (The polling predicate, which every success consults, is the call's own `P`.)

use super::outcome::{IntoErrorClass, RetryResult};
use crate::classify::{Classify, ErrorClass};
use crate::observe::event::RetryEvent;
use crate::protect::guard::Refused;
use std::time::Duration;

/// The three functions a call consults when an attempt fails, as [`Hooks`] holds them.
pub trait OnFailure<R: RetryResult> {
    /// The class of an error.
    fn class(&self, err: &R::Err) -> ErrorClass;
    /// The server's retry hint in an error.
    fn hint(&self, err: &R::Err) -> Option<Duration>;
    /// The `on_retry` hook.
    fn on_retry(&self, event: &RetryEvent<'_, R::Err>);
}

/// The classifier and hint reader when neither `retry_on` nor `retry_after` is given: the
/// error's own [`Classify`] impl. Its bound is checked where the loop first decides a retry, so
/// an error type without the impl is one compile error, with `Classify`'s own message.
#[derive(Clone, Copy, Debug)]
pub struct ByTrait;

/// A classifier and a hint reader given as functions (`retry_on`, `retry_after`).
#[derive(Clone, Copy, Debug)]
pub struct Fns<C, A>(pub C, pub A);

/// What tells an error's class and the server's retry hint in it. (For [`ByTrait`], an error
/// type without `Classify` is reported with `Classify`'s own message.)
pub trait Classifier<E> {
    /// The class of `err`.
    fn class(&self, err: &E) -> ErrorClass;
    /// The server's retry hint in `err`.
    fn hint(&self, err: &E) -> Option<Duration>;
}

impl<E: Classify> Classifier<E> for ByTrait {
    fn class(&self, err: &E) -> ErrorClass {
        err.classify()
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        err.retry_after()
    }
}

impl<E, C: Classifier<E> + ?Sized> Classifier<E> for &C {
    fn class(&self, err: &E) -> ErrorClass {
        (**self).class(err)
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        (**self).hint(err)
    }
}

impl<E, C, A> Classifier<E> for Fns<C, A>
where
    C: Fn(&E) -> ErrorClass,
    A: Fn(&E) -> Option<Duration>,
{
    fn class(&self, err: &E) -> ErrorClass {
        (self.0)(err)
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        (self.1)(err)
    }
}

/// The classifier and hint reader `C`, the hook `O` and, with a breaker or guards, the
/// conversion `X` of their refusal ([`Refused`]) into the error type, of one call.
pub struct Hooks<C, O, X = NoConversion> {
    pub(crate) classify: C,
    pub(crate) on_retry: O,
    pub(crate) refused: X,
}

/// No conversion of a [`Refused`]: the function has neither a breaker nor guards.
#[derive(Clone, Copy, Debug)]
pub struct NoConversion;

/// How a call whose first attempt a breaker or a guard refused makes its outcome. No bound on
/// `R`: a function without either is not asked anything more of its return type.
pub trait OnStop<R> {
    /// The outcome, if the call has a conversion (`None`: it runs; a call that has a breaker
    /// or guards is always given one).
    fn refuse(&self, refused: Refused) -> Option<R>;
}

impl<R> OnStop<R> for NoConversion {
    fn refuse(&self, _: Refused) -> Option<R> {
        None
    }
}

impl<R, F: Fn(Refused) -> R> OnStop<R> for F {
    fn refuse(&self, refused: Refused) -> Option<R> {
        Some(self(refused))
    }
}

impl<R, C, O, X: OnStop<R>> OnStop<R> for Hooks<C, O, X> {
    fn refuse(&self, refused: Refused) -> Option<R> {
        self.refused.refuse(refused)
    }
}

impl<R, C, O, X> OnFailure<R> for Hooks<C, O, X>
where
    R: RetryResult,
    C: Classifier<R::Err>,
    O: Fn(&RetryEvent<'_, R::Err>),
{
    fn class(&self, err: &R::Err) -> ErrorClass {
        self.classify.class(err)
    }

    fn hint(&self, err: &R::Err) -> Option<Duration> {
        self.classify.hint(err)
    }

    fn on_retry(&self, event: &RetryEvent<'_, R::Err>) {
        (self.on_retry)(event);
    }
}

/// No server hint (a `retry_on` predicate without `retry_after`).
pub fn no_hint<E: ?Sized>(_: &E) -> Option<Duration> {
    None
}

/// Never repeat a success (no `retry_if_ok`).
pub fn never_repeat<T: ?Sized>(_: &T) -> bool {
    false
}

/// No `on_retry` hook.
pub fn no_hook<E>(_: &RetryEvent<'_, E>) {}

/// Converts what a `retry_on` predicate returned.
pub fn into_class<T: IntoErrorClass>(class: T) -> ErrorClass {
    class.into_error_class()
}

/// Pins a `retry_after` function's result type.
pub fn hint(hint: Option<Duration>) -> Option<Duration> {
    hint
}

/// Pins a `retry_if_ok` function's result type.
pub fn repeat(again: bool) -> bool {
    again
}
