//! The caller's deadline: [`with_deadline`] runs a future under a deadline that every call
//! inside it clamps its own to, and cuts the future off when the deadline passes.
//!
//! While it polls its future it publishes the deadline in the slot that carries an attempt's
//! frame (`frame.rs`), as a `Bound`: a call started inside reads it where it reads an outer
//! attempt, with the same look it makes today (a timed call once at its start, an untimed one
//! at each poll of its attempt), so a call outside any deadline pays nothing more for it.

use crate::classify::{TimedOut, TimeoutKind};
use crate::engine::frame::{self, Served};
use crate::runtime::{AsyncRuntime, Instant, Sleep, sleep_until};
use core::fmt;
use core::future::{Future, IntoFuture};
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;

/// Runs `future` under a deadline `time_left` from now: the caller's deadline, as a server
/// reads it from a request (see `tower::DeadlineLayer` with the `tower` feature) or as a
/// program sets it for a piece of work.
///
/// - Every `#[retry]` function and [`Policy`](crate::Policy) call started inside, at any
///   depth, takes the earlier of its own deadline and this one, as a call nested in another's
///   attempt takes that attempt's cutoff: its attempts' timers, what
///   [`attempt()`](crate::attempt()) says (`time_left`, `deadline`), what
///   [`with_attempt`](crate::wire::WithAttempt) writes into a request (`grpc-timeout`,
///   reqwest's timeout, the AWS `ttl`), and its waits: a backoff that would end at or after the
///   deadline is not slept, the call returns its last error instead. A timed call that the
///   deadline cuts fails with its [`TimedOut`] of kind `Deadline` and the time it had.
/// - A function without timers (no `attempt_timeout`, no `deadline`) stays without: its
///   attempts run as they are, and its error type need not hold a [`TimedOut`]. It reads the
///   deadline at each poll of an attempt (as it reads an outer attempt), so its backoff stops
///   short of the deadline and `attempt().time_left()` is the deadline's; the attempt still
///   running when the deadline passes is cut by `with_deadline` itself, which drops the whole
///   future there.
/// - A blocking `#[retry]` function called from the future's poll takes the deadline too (no
///   sleep past it), but nothing cuts a blocking attempt off: the deadline is noticed when the
///   poll that runs it returns.
/// - Nested deadlines take the earlier, and a deadline set inside a `#[retry]` attempt is
///   clamped to that attempt's cutoff. Outside any call, [`attempt()`](crate::attempt()) is
///   still `None`: the deadline is not an attempt.
///
/// The output is `Ok` with the future's own output if it finishes first; `Err` with a
/// [`TimedOut`] of kind `Deadline` (its `limit` the time it had, its `attempt()` 0, since no
/// attempt of a call was cut) once the deadline has passed. The deadline is looked at before
/// each poll of the future, and the future is dropped with the `WithDeadline`: nothing inside
/// it starts after the deadline. A time too long to represent is no deadline.
///
/// The clock starts when `with_deadline` is called, not when the future is first polled: the
/// time a request said it had is measured from when it was read. As for
/// [`attempt()`](crate::attempt()), the deadline is seen by code the future's poll runs on this
/// thread, not by a task spawned from it.
///
/// ```
/// use retry_runtime::{attempt, retry, with_deadline};
/// use std::time::Duration;
///
/// #[retry(max_attempts = 3, attempt_timeout = "2s", deadline = "10s")]
/// async fn fetch() -> Result<u32, std::io::Error> {
///     // The caller gave this call 1 s: its attempt has that, not its own 2 s.
///     assert_eq!(attempt().unwrap().time_left(), Some(Duration::from_secs(1)));
///     Ok(7)
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert_eq!(with_deadline(Duration::from_secs(1), fetch()).await.unwrap().unwrap(), 7);
///
/// // What is still running at the deadline is dropped there.
/// let slow = tokio::time::sleep(Duration::from_secs(5));
/// let cut = with_deadline(Duration::from_millis(300), slow).await.unwrap_err();
/// assert!(cut.is_deadline());
/// assert_eq!(cut.limit(), Duration::from_millis(300));
/// # }
/// ```
pub fn with_deadline<F>(time_left: Duration, future: F) -> WithDeadline<F::IntoFuture>
where
    F: IntoFuture,
    F::Output: AsyncRuntime,
{
    let start = Instant::now();
    WithDeadline::until(start, start.checked_add(time_left), future.into_future())
}

pin_project_lite::pin_project! {
    /// A future run under a caller's deadline: see [`with_deadline`].
    #[must_use = "futures do nothing unless polled"]
    pub struct WithDeadline<F> {
        #[pin]
        future: F,
        // Armed at the first poll that leaves the future pending (a timer needs the runtime).
        #[pin]
        timer: Option<Sleep>,
        start: Instant,
        deadline: Option<Instant>,
        // The request a server's handler serves, if the future is one's (`tower::ServerLayer`).
        served: Option<Served>,
    }
}

impl<F> WithDeadline<F> {
    /// `future` under a deadline set at `start` for `deadline` (`None`: no deadline, the
    /// future runs as it is).
    pub(crate) fn until(start: Instant, deadline: Option<Instant>, future: F) -> Self {
        WithDeadline {
            future,
            timer: None,
            start,
            deadline,
            served: None,
        }
    }

    /// A server's handler `future`, serving a request `served`, under its caller's deadline
    /// (as [`until`](Self::until)): the calls it makes tell the request when they give up
    /// retrying, and take from it whether they make one attempt each.
    pub(crate) fn serving(
        start: Instant,
        deadline: Option<Instant>,
        served: Served,
        future: F,
    ) -> Self {
        WithDeadline {
            served: Some(served),
            ..WithDeadline::until(start, deadline, future)
        }
    }

    /// Whether a call the future made gave up retrying (for a server's handler: see
    /// [`serving`](Self::serving)).
    pub(crate) fn gave_up(&self) -> bool {
        self.served.as_ref().is_some_and(Served::gave_up)
    }

    /// What a future cut at `at` returns.
    fn timed_out(start: Instant, at: Instant) -> TimedOut {
        TimedOut::new(
            TimeoutKind::Deadline,
            at.saturating_duration_since(start),
            0,
        )
    }
}

impl<F: Future> Future for WithDeadline<F> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let served = this.served.as_ref();
        let future = this.future;
        let own = *this.deadline;
        if own.is_none() && served.is_none() {
            return future.poll(cx).map(Ok);
        }
        let (at, below) = in_effect(own);
        if let Some(at) = own.and(at)
            && Instant::now() >= at
        {
            return Poll::Ready(Err(Self::timed_out(*this.start, at)));
        }
        if let Poll::Ready(out) = frame::enter_bound(at, below, served, || future.poll(cx)) {
            return Poll::Ready(Ok(out));
        }
        // Only the future's own deadline is timed here: an outer attempt's cutoff is its
        // call's to enforce.
        let Some(at) = own.and(at) else {
            return Poll::Pending;
        };
        match this.timer.as_mut().as_pin_mut() {
            Some(timer) if timer.deadline() == at => {}
            Some(timer) => timer.reset(at),
            None => this.timer.set(Some(sleep_until(at))),
        }
        let fired = this
            .timer
            .as_pin_mut()
            .is_some_and(|t| t.poll(cx).is_ready());
        if fired {
            return Poll::Ready(Err(Self::timed_out(*this.start, at)));
        }
        Poll::Pending
    }
}

/// The deadline in effect for a caller's deadline `own` (`None`: none of its own): the
/// earlier of `own` and the cutoff of the attempt (or the caller's deadline) the current code
/// runs inside; and that attempt.
fn in_effect(own: Option<Instant>) -> (Option<Instant>, Option<frame::Outer>) {
    let below = frame::outer();
    let at = match (own, below.and_then(|o| o.cutoff)) {
        (Some(own), Some(cut)) => Some(own.min(cut)),
        (own, cut) => own.or(cut),
    };
    (at, below)
}

/// Runs `f` under the caller's deadline `deadline`, if any, and for the request `served`, if
/// any, as [`WithDeadline`] polls its future (for code that runs before the future is made: a
/// tower service's `call`).
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) fn enter<T>(
    deadline: Option<Instant>,
    served: Option<&Served>,
    f: impl FnOnce() -> T,
) -> T {
    if deadline.is_none() && served.is_none() {
        return f();
    }
    let (at, below) = in_effect(deadline);
    frame::enter_bound(at, below, served, f)
}

/// Whether a server's handler that serves its caller's retry (the request's second attempt or
/// later) makes one attempt of each call (Kitex's "chain stop"), besides telling its caller
/// not to retry when its calls gave up. The simulations of SIMULATION.md's "The call graph"
/// chose the rule; ARCHITECTURE.md says why.
pub const CHAIN_STOP: bool = false;

/// Runs a server's handler `future` for a request, under the caller's deadline `time_left`
/// from now (if any): the calls it makes clamp their deadlines to it, tell the request when
/// they give up retrying, and make one attempt each if `single` (the request was the caller's
/// retry). The engine of `tower::ServerLayer`, and of the simulator's servers.
pub fn serve<F: IntoFuture>(
    time_left: Option<Duration>,
    single: bool,
    future: F,
) -> Serving<F::IntoFuture> {
    let start = Instant::now();
    let deadline = time_left.and_then(|left| start.checked_add(left));
    Serving {
        inner: WithDeadline::serving(start, deadline, Served::new(single), future.into_future()),
    }
}

pin_project_lite::pin_project! {
    /// A server's handler serving a request (see [`serve`]).
    #[must_use = "futures do nothing unless polled"]
    pub struct Serving<F> {
        #[pin]
        inner: WithDeadline<F>,
    }
}

impl<F> Serving<F> {
    /// `future` run for `served` (if the server serves requests, not only deadlines) under
    /// `deadline`, set at `start` (for a service whose own `call` already ran for the request:
    /// `served` holds what its calls told it).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn of(
        start: Instant,
        deadline: Option<Instant>,
        served: Option<Served>,
        future: F,
    ) -> Self {
        Serving {
            inner: WithDeadline {
                served,
                ..WithDeadline::until(start, deadline, future)
            },
        }
    }
}

impl<F: Future> Future for Serving<F> {
    /// The handler's output, or the deadline's error; and whether a call it made gave up
    /// retrying.
    type Output = (Result<F::Output, TimedOut>, bool);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inner = self.project().inner;
        let out = core::task::ready!(inner.as_mut().poll(cx));
        Poll::Ready((out, inner.gave_up()))
    }
}

impl<F> fmt::Debug for Serving<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serving")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<F> fmt::Debug for WithDeadline<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithDeadline")
            .field(
                "time_left",
                &self
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now())),
            )
            .finish_non_exhaustive()
    }
}
