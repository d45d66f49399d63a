//! What the attribute plugs into the loop's retry decisions: the classifier and server-hint
//! reader, and the `on_retry` hook, with their bounds stated once. (The polling predicate,
//! which every success consults, is the call's own `P`.)

use super::outcome::RetryResult;
use crate::classify::{Classify, ErrorClass};
use crate::event::RetryEvent;
use std::time::Duration;

/// The three functions a call consults when an attempt fails, as [`Plugs`] holds them.
pub trait Judge<R: RetryResult> {
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
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        err.classify()
    }

    #[inline]
    fn hint(&self, err: &E) -> Option<Duration> {
        err.retry_after()
    }
}

impl<E, C, A> Classifier<E> for Fns<C, A>
where
    C: Fn(&E) -> ErrorClass,
    A: Fn(&E) -> Option<Duration>,
{
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        (self.0)(err)
    }

    #[inline]
    fn hint(&self, err: &E) -> Option<Duration> {
        (self.1)(err)
    }
}

/// The classifier and hint reader `C` and the hook `O` of one call.
pub struct Plugs<C, O> {
    pub(crate) classify: C,
    pub(crate) on_retry: O,
}

impl<R, C, O> Judge<R> for Plugs<C, O>
where
    R: RetryResult,
    C: Classifier<R::Err>,
    O: Fn(&RetryEvent<'_, R::Err>),
{
    #[inline]
    fn class(&self, err: &R::Err) -> ErrorClass {
        self.classify.class(err)
    }

    #[inline]
    fn hint(&self, err: &R::Err) -> Option<Duration> {
        self.classify.hint(err)
    }

    #[inline]
    fn on_retry(&self, event: &RetryEvent<'_, R::Err>) {
        (self.on_retry)(event);
    }
}
