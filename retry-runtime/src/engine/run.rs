//! The retry loop, defined once, as a macro that the expansion of `#[retry]` invokes in the
//! function's body, and [`Call::run`] for callers that hold the attempt as a closure.

use super::outcome::RetryResult;
use super::{Call, OnFailure, OnRefusal, Timer};
use crate::runtime::AsyncRuntime;
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
    J: OnFailure<R> + OnRefusal<R>,
{
    /// The loop for callers that hold the attempt as a closure: `attempt` makes each
    /// attempt's future. The same loop the expansion of `#[retry]` runs.
    pub async fn run<F, Fut>(mut self, mut attempt: F) -> R
    where
        R: AsyncRuntime,
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
