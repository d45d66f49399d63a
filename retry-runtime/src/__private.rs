//! What the expansion of `#[retry]` names. Not a public API: it changes with the macro.

pub use crate::__retry_loop as retry_loop;
pub use crate::classify::{Classify, ErrorClass, TimedOut};
pub use crate::engine::{
    ByTrait, Call, Classifier, Fns, FromTimedOut, IntoErrorClass, Judge, Plugs, RetryResult,
    ReturnsResult, SendToken, Settled, Timed, Timer, TimerKind, Untimed,
};
pub use crate::event::RetryEvent;
pub use crate::partition::Site;
pub use crate::policy::{Jitter, Mode, Policy};
pub use core::ops::ControlFlow;
pub use std::time::Duration;
pub use tokio::time::sleep;

/// The class of an error by its [`Classify`] impl (`retry_after` given without `retry_on`).
#[inline]
pub fn class_by_trait<E: Classify>(err: &E) -> ErrorClass {
    err.classify()
}

/// How a timed-out attempt becomes the error of a function with a timer: its `FromTimedOut`
/// bound is where a missing `From<TimedOut>` is reported, with its own message.
#[inline]
pub fn timed_out<E: FromTimedOut>(t: TimedOut) -> E {
    E::from_timed_out(t)
}

/// No server hint (a `retry_on` predicate without `retry_after`).
#[inline]
pub fn no_hint<E: ?Sized>(_: &E) -> Option<Duration> {
    None
}

/// Never repeat a success (no `retry_if_ok`).
#[inline]
pub fn never_repeat<T: ?Sized>(_: &T) -> bool {
    false
}

/// No `on_retry` hook.
#[inline]
pub fn no_hook<E>(_: &RetryEvent<'_, E>) {}

/// Converts what a `retry_on` predicate returned.
#[inline]
pub fn into_class<T: IntoErrorClass>(class: T) -> ErrorClass {
    class.into_error_class()
}

/// Pins a `retry_after` function's result type.
#[inline]
pub fn hint(hint: Option<Duration>) -> Option<Duration> {
    hint
}

/// Pins a `retry_if_ok` function's result type.
#[inline]
pub fn repeat(again: bool) -> bool {
    again
}

/// The shared state's own steps, for the workspace's benchmarks of the bucket and the limiter.
pub mod shared {
    use crate::bucket::TokenBucket;
    use crate::limiter::RateLimiter;
    use tokio::time::Instant;

    /// Takes a retry's `cost` from `bucket` at `now`, as the engine does; `false` if short.
    #[inline]
    pub fn take(bucket: &TokenBucket, cost: u32, now: Instant) -> bool {
        bucket.try_take(cost, now)
    }

    /// Gives `tokens` back to `bucket`, as a retry's success or a dropped call does.
    #[inline]
    pub fn refund(bucket: &TokenBucket, tokens: u32) {
        bucket.deposit(tokens);
    }

    /// Waits for and takes `cost` send tokens from `limiter`; `Err(())` if they would come at
    /// or after `deadline`.
    pub async fn acquire(
        limiter: &RateLimiter,
        cost: u32,
        deadline: Option<Instant>,
    ) -> Result<(), ()> {
        limiter.acquire(cost, deadline).await
    }

    /// Records a response in `limiter` now: `throttled`, or a success or another error.
    #[inline]
    pub fn record(limiter: &RateLimiter, throttled: bool) {
        limiter.record(Instant::now(), throttled);
    }
}
