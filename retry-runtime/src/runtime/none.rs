//! No runtime feature: `std`'s clock, which blocking functions read, and timers that no
//! program can reach. Every async entry point of the engine asks [`AsyncRuntime`] of its
//! types, which nothing meets in this build, so a program that would await these does not
//! compile; they exist so that the engine's async code still does.
//!
//! [`AsyncRuntime`]: super::AsyncRuntime

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

const UNREACHABLE: &str = "retry-runtime was built without a runtime feature (`tokio`, `smol`): \
                           async calls do not compile there";

/// A sleep no program reaches (see the module's doc).
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
}

/// See the module's doc.
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    sleep_until(now.checked_add(duration).unwrap_or(now))
}

/// See the module's doc.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep { deadline }
}

impl Sleep {
    /// When it would end.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// It would end at `deadline` instead.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        self.get_mut().deadline = deadline;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        unreachable!("{UNREACHABLE}")
    }
}

/// An attempt cut off ([`Timeout`]'s error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

/// A timeout no program reaches (see the module's doc).
#[derive(Debug)]
pub struct Timeout<F> {
    future: F,
}

/// See the module's doc.
pub fn timeout_at<F: Future>(_: Instant, future: F) -> Timeout<F> {
    Timeout { future }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let _ = &self.future;
        unreachable!("{UNREACHABLE}")
    }
}
