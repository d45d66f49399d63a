//! The caller's deadline: [`with_deadline`] runs a future under a deadline that every call
//! inside it clamps its own to, and cuts the future off when the deadline passes.
//!
//! While it polls its future it publishes the deadline in the slot that carries an attempt's
//! frame (`frame.rs`), as a `Bound`: a call started inside reads it where it reads an outer
//! attempt, with the same look it makes today (a timed call once at its start, an untimed one
//! at each poll of its attempt), so a call outside any deadline pays nothing more for it.

use crate::classify::{TimedOut, TimeoutKind};
use crate::engine::frame;
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
        }
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
        let Some(own) = *this.deadline else {
            return this.future.poll(cx).map(Ok);
        };
        let (at, below) = in_effect(own);
        if Instant::now() >= at {
            return Poll::Ready(Err(Self::timed_out(*this.start, at)));
        }
        let future = this.future;
        if let Poll::Ready(out) = frame::enter_bound(at, below, || future.poll(cx)) {
            return Poll::Ready(Ok(out));
        }
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

/// The deadline in effect for a caller's deadline `own`: `own`, or the cutoff of the attempt
/// (or the caller's deadline) the current code runs inside, if earlier; and that attempt.
fn in_effect(own: Instant) -> (Instant, Option<frame::Outer>) {
    let below = frame::outer();
    let at = match below.and_then(|o| o.cutoff) {
        Some(cut) if cut < own => cut,
        _ => own,
    };
    (at, below)
}

/// Runs `f` under the caller's deadline `deadline`, if any, as [`WithDeadline`] polls its
/// future (for code that runs before the future is made: a tower service's `call`).
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) fn enter<T>(deadline: Option<Instant>, f: impl FnOnce() -> T) -> T {
    match deadline {
        Some(own) => {
            let (at, below) = in_effect(own);
            frame::enter_bound(at, below, f)
        }
        None => f(),
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
