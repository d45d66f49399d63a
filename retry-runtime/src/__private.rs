//! What the expansion of `#[retry]` names. Not a public API: it changes with the macro.

pub use crate::__retry_loop as retry_loop;
pub use crate::__retry_loop_blocking as retry_loop_blocking;
pub use crate::classify::{Classify, ErrorClass, TimedOut};
pub use crate::engine::{
    ByTrait, Call, Classifier, Fns, FromCircuitOpen, FromTimedOut, IntoErrorClass, Judge,
    NoBreaker, Plugs, Refuse, RetryResult, ReturnsResult, SendToken, Settled, Timed, Timer,
    TimerKind, Untimed,
};
pub use crate::hedge::Latency;
pub use crate::observe::event::RetryEvent;
pub use crate::protect::breaker::{CircuitBreaker, CircuitOpen};
pub use crate::protect::bucket::TokenBucket;
pub use crate::protect::budget::RetryBudget;
pub use crate::spec::site::{BreakerRef, BudgetRef, Site};
pub use crate::spec::{HedgeSpec, Jitter, Keys, Keys as Policy, Mode};
pub use core::ops::ControlFlow;
pub use std::thread::sleep as thread_sleep;
pub use std::time::Duration;
pub use tokio::time::sleep;

use core::future::Future;

/// The retry loop, defined once. `$call` names a [`Call`]; `$attempt` is an expression that
/// makes one attempt's future, evaluated once per attempt. The loop's value is the call's
/// outcome. Every wait (a send token in adaptive mode, the backoff, a bucket's refill) is a
/// sleep awaited here, after a synchronous decision of the engine, so the caller's future
/// holds one timer at a time and no future of the engine.
///
/// A blocking function (`#[retry]` on a plain `fn`) runs the same steps
/// (`retry_loop_blocking!`): its attempt is a call of the closure `$attempt` names, and each
/// wait a `std::thread::sleep`.
#[doc(hidden)]
#[macro_export]
macro_rules! __retry_loop {
    ($call:ident, $attempt:expr) => {
        $crate::__retry_loop!(@steps async $call, {
            let out = $call.attempt($attempt).await;
            $call.finish(out)
        })
    };
    (@blocking $call:ident, $attempt:ident) => {
        $crate::__retry_loop!(@steps blocking $call, {
            let out = $call.attempt_blocking(&mut $attempt);
            $call.finish_outcome(out)
        })
    };
    (@wait async $delay:expr) => {
        $crate::__private::sleep($delay).await
    };
    (@wait blocking $delay:expr) => {
        $crate::__private::thread_sleep($delay)
    };
    (@steps $kind:ident $call:ident, $attempt_and_finish:block) => {
        'retry: loop {
            if $call.gated() {
                loop {
                    match $call.send_token() {
                        $crate::__private::SendToken::Go => break,
                        $crate::__private::SendToken::Wait(delay) => {
                            $crate::__retry_loop!(@wait $kind delay)
                        }
                        $crate::__private::SendToken::Return(out) => break 'retry out,
                    }
                }
            }
            let mut out = match $attempt_and_finish {
                $crate::__private::ControlFlow::Break(out) => break 'retry out,
                $crate::__private::ControlFlow::Continue(out) => ::core::option::Option::Some(out),
            };
            loop {
                // `settle` takes the outcome; after a `Wait` there is none (the retry that
                // waits for the bucket is kept in the call), and the future holds no outcome
                // across the sleep.
                match $call.settle(out) {
                    $crate::__private::Settled::Return(out) => break 'retry out,
                    $crate::__private::Settled::Retry => break,
                    $crate::__private::Settled::Sleep(delay) => {
                        $crate::__retry_loop!(@wait $kind delay);
                        break;
                    }
                    $crate::__private::Settled::Wait(delay) => {
                        $crate::__retry_loop!(@wait $kind delay);
                        out = ::core::option::Option::None;
                    }
                }
            }
        }
    };
}

/// The retry loop of a blocking function: [`retry_loop!`](crate::__retry_loop)'s steps, with
/// `$attempt` naming a closure that runs one attempt.
#[doc(hidden)]
#[macro_export]
macro_rules! __retry_loop_blocking {
    ($call:ident, $attempt:ident) => {
        $crate::__retry_loop!(@blocking $call, $attempt)
    };
}

impl<R, K, P, J> Call<'_, R, K, P, J>
where
    R: RetryResult,
    K: Timer<R>,
    P: Fn(&R::Ok) -> bool,
    J: Judge<R> + Refuse<R>,
{
    /// The loop for callers that hold the attempt as a closure: `attempt` makes each
    /// attempt's future. The same loop the expansion of `#[retry]` runs.
    pub async fn run<F, Fut>(mut self, mut attempt: F) -> R
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        let call = &mut self;
        crate::__retry_loop!(call, attempt())
    }

    /// The blocking loop, for callers that hold a blocking attempt as a closure: the loop
    /// the expansion of `#[retry]` on a plain `fn` runs.
    pub fn run_blocking<F>(mut self, mut attempt: F) -> R
    where
        F: FnMut() -> R,
    {
        let call = &mut self;
        crate::__retry_loop_blocking!(call, attempt)
    }
}

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

/// How a call its function's breaker refused becomes the function's error: its
/// `FromCircuitOpen` bound is where a missing `From<CircuitOpen>` is reported, with its own
/// message.
#[inline]
pub fn circuit_open<R: RetryResult>(open: CircuitOpen) -> R
where
    R::Err: FromCircuitOpen,
{
    R::from_err(<R::Err>::from_circuit_open(open))
}

/// The attempts of a hedged function, made by a closure that several attempts of one call
/// share. A body that consumes an argument makes the closure `FnOnce`; the compiler then names
/// this function, whose name says the fix: list the argument in `clone(...)`.
#[inline]
pub fn consumed_arguments_go_in_clone<F, Fut>(attempt: F) -> F
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    attempt
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
    use crate::protect::bucket::TokenBucket;
    use crate::protect::limiter::RateLimiter;
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

    /// One look at `limiter` for `cost` send tokens, as the engine's step 1 takes it: no
    /// clock read while the limiter is off; `Ok(Some(wait))` says how long to sleep before
    /// looking again (`lost`: this caller looked before and lost its tokens to another);
    /// `Err(())` if they would come at or after `deadline`.
    #[inline]
    #[allow(clippy::result_unit_err)] // the engine's own step, as it is: not a public API
    pub fn try_send(
        limiter: &RateLimiter,
        cost: u32,
        deadline: Option<Instant>,
        lost: bool,
    ) -> Result<Option<std::time::Duration>, ()> {
        use rand::RngExt;
        if !limiter.is_enabled() {
            return Ok(None);
        }
        let draw = || rand::rng().random::<f64>();
        limiter.try_send(cost, Instant::now(), deadline, lost, draw)
    }

    /// Records a response in `limiter` now: `throttled`, or a success or another error.
    #[inline]
    pub fn record(limiter: &RateLimiter, throttled: bool) {
        limiter.record(Instant::now(), throttled);
    }
}
