//! Whether a function's attempts run under a timer, known at compile time: a function without
//! `attempt_timeout` and `deadline` awaits its body as it is, with no timer code at all.

use super::outcome::RetryResult;
use crate::classify::{TimedOut, TimeoutKind};
use crate::runtime::{Elapsed, Instant, Timeout};
use core::future::Future;

/// Whether a function arms timers (`attempt_timeout` or `deadline`).
pub trait TimerKind {
    /// Whether attempts run under a timer.
    const TIMED: bool;
    /// What a call remembers of its current attempt's timer (nothing, for [`Untimed`]).
    type Timing: Timing;
}

impl TimerKind for Untimed {
    const TIMED: bool = false;
    type Timing = ();
}

impl<E> TimerKind for Timed<E> {
    const TIMED: bool = true;
    type Timing = Timings;
}

/// Which limit cuts the current attempt off, and whether it has; and, for a function with
/// timers, the instant the call started.
pub trait Timing: Copy {
    /// The state of a call that started at `start` (read only by a function with timers).
    fn begin(start: Option<Instant>) -> Self;
    /// The instant the call started, for a function with timers.
    fn start(&self) -> Option<Instant>;
    /// The attempt now runs under `kind` (`None`: under no timer).
    fn arm(&mut self, kind: Option<TimeoutKind>);
    /// The timer fired: which limit it was.
    fn fire(&mut self) -> TimeoutKind;
    /// The limit that cut the current attempt off, if one did.
    fn fired(&self) -> Option<TimeoutKind>;
}

impl Timing for () {
    fn begin(_: Option<Instant>) -> Self {}
    fn start(&self) -> Option<Instant> {
        None
    }
    fn arm(&mut self, _: Option<TimeoutKind>) {}
    fn fire(&mut self) -> TimeoutKind {
        TimeoutKind::Deadline
    }
    fn fired(&self) -> Option<TimeoutKind> {
        None
    }
}

/// The state of a timed attempt's timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Armed {
    /// No timer.
    #[default]
    No,
    /// The attempt runs under this limit.
    By(TimeoutKind),
    /// This limit cut the attempt off.
    Fired(TimeoutKind),
}

/// What a call with timers keeps of them: when it started, and its current attempt's timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    pub(crate) start: Option<Instant>,
    pub(crate) armed: Armed,
}

impl Timing for Timings {
    fn begin(start: Option<Instant>) -> Self {
        Timings {
            start,
            armed: Armed::No,
        }
    }

    fn start(&self) -> Option<Instant> {
        self.start
    }

    fn arm(&mut self, kind: Option<TimeoutKind>) {
        self.armed = kind.map_or(Armed::No, Armed::By);
    }

    fn fire(&mut self) -> TimeoutKind {
        // An attempt under no timer cannot be cut off; the deadline is the safe answer.
        let kind = match self.armed {
            Armed::By(kind) | Armed::Fired(kind) => kind,
            Armed::No => TimeoutKind::Deadline,
        };
        self.armed = Armed::Fired(kind);
        kind
    }

    fn fired(&self) -> Option<TimeoutKind> {
        match self.armed {
            Armed::Fired(kind) => Some(kind),
            _ => None,
        }
    }
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

    fn arm<F: Future<Output = R>>(attempt: F, _: Option<Instant>) -> F {
        attempt
    }

    fn outcome(out: R) -> Option<R> {
        Some(out)
    }

    fn timed_out(&self, t: TimedOut) -> R {
        unreachable!("an untimed attempt cannot time out ({t})")
    }
}

/// A function with `attempt_timeout` or `deadline`, and how a timed-out attempt becomes its
/// error. The expansion builds it from the error type's `From<TimedOut>`, asked at the key's
/// span, where a missing one is reported, once; a `Policy`'s builders likewise.
pub struct Timed<E>(pub fn(TimedOut) -> E);

impl<R: RetryResult> Timer<R> for Timed<R::Err> {
    type Attempt<F: Future<Output = R>> = Cut<F>;
    type Output = Result<R, Elapsed>;

    fn arm<F: Future<Output = R>>(attempt: F, until: Option<Instant>) -> Cut<F> {
        match until {
            Some(until) => Cut::At {
                timeout: crate::runtime::timeout_at(until, attempt),
            },
            // Nothing cuts it (a `Policy` without timeouts, or limits too far ahead to
            // represent): no timer to register.
            None => Cut::Never { attempt },
        }
    }

    fn outcome(out: Self::Output) -> Option<R> {
        out.ok()
    }

    fn timed_out(&self, t: TimedOut) -> R {
        R::from_err((self.0)(t))
    }
}

pin_project_lite::pin_project! {
    /// A timed function's attempt: under its timer, or under none when nothing cuts it off.
    #[project = CutProj]
    pub enum Cut<F> {
        /// Cut off at an instant.
        At {
            #[pin]
            timeout: Timeout<F>,
        },
        /// Not cut off.
        Never {
            #[pin]
            attempt: F,
        },
    }
}

impl<F: Future> Future for Cut<F> {
    type Output = Result<F::Output, Elapsed>;

    #[inline]
    fn poll(
        self: core::pin::Pin<&mut Self>,
        cx: &mut core::task::Context<'_>,
    ) -> core::task::Poll<Self::Output> {
        match self.project() {
            CutProj::At { timeout } => timeout.poll(cx),
            CutProj::Never { attempt } => attempt.poll(cx).map(Ok),
        }
    }
}
