//! async-io's timers (smol's) and `std`'s clock. async-io drives its timers from its reactor:
//! under `smol::block_on` (or `async_io::block_on`) on the blocked thread, under any other
//! executor on async-io's own thread, so these work wherever a future is polled.

use async_io::Timer;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;
pub use std::time::Instant;

/// `instant` itself: the clock is `std`'s.
#[must_use]
pub fn to_public(instant: Instant) -> std::time::Instant {
    instant
}

/// A sleep until an instant, which the hedged loop moves ([`Sleep::reset`]).
#[derive(Debug)]
pub struct Sleep {
    timer: Timer,
    deadline: Instant,
}

/// A sleep of `duration` from now (forever, for a duration past what `Instant` holds).
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    match now.checked_add(duration) {
        Some(at) => sleep_until(at),
        None => Sleep {
            timer: Timer::never(),
            deadline: now,
        },
    }
}

/// A sleep until `deadline` (none, for one passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        timer: Timer::at(deadline),
        deadline,
    }
}

impl Sleep {
    /// When it ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// It ends at `deadline` instead.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.timer.set_at(deadline);
        this.deadline = deadline;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().timer).poll(cx).map(drop)
    }
}

/// An attempt's future cut off at an instant ([`Timeout`]'s error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

pin_project_lite::pin_project! {
    /// `future`, cut off at an instant: it is polled first, as tokio's `Timeout` polls it, so
    /// that an answer ready at the cutoff wins.
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        timer: Timer,
    }
}

/// `future`, cut off at `deadline`.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future,
        timer: Timer::at(deadline),
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.future.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        Pin::new(this.timer).poll(cx).map(|_| Err(Elapsed(())))
    }
}
