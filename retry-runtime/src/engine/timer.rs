//! Whether a function's attempts run under a timer, known at compile time: a function without
//! `attempt_timeout` and `deadline` awaits its body as it is, with no timer code at all.

use super::outcome::RetryResult;
use crate::classify::TimedOut;
use core::future::Future;
use tokio::time::{Instant, Timeout};

/// Whether a function arms timers (`attempt_timeout` or `deadline`).
pub trait TimerKind {
    /// Whether attempts run under a timer.
    const TIMED: bool;
}

impl TimerKind for Untimed {
    const TIMED: bool = false;
}

impl<E> TimerKind for Timed<E> {
    const TIMED: bool = true;
}

/// How an attempt's future runs: as it is ([`Untimed`]), or cut off at an instant ([`Timed`]).
pub trait Timer<R>: TimerKind {
    /// The attempt under this timer.
    type Attempt<F: Future<Output = R>>: Future<Output = Self::Output>;
    /// What the attempt under this timer yields.
    type Output;
    /// Arms the timer of one attempt: cut off at `until` (never, for `None`).
    fn arm<F: Future<Output = R>>(attempt: F, until: Option<Instant>) -> Self::Attempt<F>;
    /// The attempt's outcome, or `None` if the timer cut it off.
    fn outcome(out: Self::Output) -> Option<R>;
    /// The error a timed-out attempt becomes.
    fn timed_out(&self, t: TimedOut) -> R;
}

/// A function without `attempt_timeout` and `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct Untimed;

// No bound on `R`: a return type that is not a `Result` is reported by the engine's entry
// points, once, not again by the attempt's timer.
impl<R> Timer<R> for Untimed {
    type Attempt<F: Future<Output = R>> = F;
    type Output = R;

    #[inline]
    fn arm<F: Future<Output = R>>(attempt: F, _: Option<Instant>) -> F {
        attempt
    }

    #[inline]
    fn outcome(out: R) -> Option<R> {
        Some(out)
    }

    fn timed_out(&self, t: TimedOut) -> R {
        unreachable!("an untimed attempt cannot time out ({t})")
    }
}

/// A function with `attempt_timeout` or `deadline`, and how a timed-out attempt becomes its
/// error. The expansion builds it from `__private::timed_out`, whose `FromTimedOut` bound is
/// where a missing `From<TimedOut>` is reported, once, with its own message.
pub struct Timed<E>(pub fn(TimedOut) -> E);

impl<R: RetryResult> Timer<R> for Timed<R::Err> {
    type Attempt<F: Future<Output = R>> = Timeout<F>;
    type Output = Result<R, tokio::time::error::Elapsed>;

    #[inline]
    fn arm<F: Future<Output = R>>(attempt: F, until: Option<Instant>) -> Timeout<F> {
        // Limits too far ahead to represent (centuries) arm a timer that never fires.
        let until = until.unwrap_or_else(far_future);
        tokio::time::timeout_at(until, attempt)
    }

    #[inline]
    fn outcome(out: Self::Output) -> Option<R> {
        out.ok()
    }

    #[cold]
    fn timed_out(&self, t: TimedOut) -> R {
        R::from_err((self.0)(t))
    }
}

/// An instant no call lives to see (tokio's own `far_future`: 30 years on).
fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365 * 30)
}
