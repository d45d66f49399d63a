//! What the expansion of `#[retry]` names. Not a public API: it changes with the macro.

pub use crate::__retry_loop as retry_loop;
pub use crate::__retry_loop_blocking as retry_loop_blocking;
pub use crate::classify::{Classify, ErrorClass, TimedOut};
pub use crate::engine::deadline::{CHAIN_STOP, Serving, serve};
pub use crate::engine::site::{BreakerRef, BudgetRef, Site};
pub use crate::engine::{
    ByTrait, Call, Classifier, Fns, Hooks, IntoErrorClass, NoConversion, OnFailure, OnStop,
    RetryResult, ReturnsResult, SendToken, Settled, Timed, Timer, TimerKind, Untimed, hint,
    into_class, never_repeat, no_hint, no_hook, repeat,
};
pub use crate::hedge::Latency;
pub use crate::observe::event::RetryEvent;
pub use crate::protect::breaker::CircuitBreaker;
pub use crate::protect::bucket::TokenBucket;
pub use crate::protect::budget::RetryBudget;
pub use crate::protect::guard::{Guard, Guards, Refused};
pub use crate::runtime::AsyncRuntime;
pub use crate::runtime::sleep;
pub use crate::runtime::thread_sleep;
pub use crate::spec::{Behavior, HedgeSpec, Jitter, Keys, Mode};
pub use core::ops::ControlFlow;
pub use std::time::Duration;

use core::future::Future;

/// What the attribute's `aws_config = true` asks, in a `const` spelled at the key: the
/// `aws-config` feature, which only then meets the bound, so that without it the key is a
/// compile error that names the feature.
pub const fn needs_aws_config<T: crate::policy::AwsConfig + ?Sized>() {}

/// The attempts of a hedged function, made by a closure that several attempts of one call
/// share. A body that consumes an argument makes the closure `FnOnce`; the compiler then names
/// this function, whose name says the fix: list the argument in `clone(...)`.
pub fn consumed_arguments_go_in_clone<F, Fut>(attempt: F) -> F
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    attempt
}

/// The shared state's own steps, for the workspace's benchmarks of the bucket and the limiter.
pub mod shared {
    use crate::protect::bucket::TokenBucket;
    use crate::protect::limiter::RateLimiter;
    use crate::runtime::Instant;

    /// Takes a retry's `cost` from `bucket` at `now`, as the engine does; `false` if short.
    pub fn take(bucket: &TokenBucket, cost: u32, now: Instant) -> bool {
        bucket.try_take(cost, now)
    }

    /// Gives `tokens` back to `bucket`, as a retry's success or a dropped call does.
    pub fn refund(bucket: &TokenBucket, tokens: u32) {
        bucket.deposit(tokens);
    }

    /// One look at `limiter` for `cost` send tokens, as the engine's step 1 takes it: no
    /// clock read while the limiter is off; `Ok(Some(wait))` says how long to sleep before
    /// looking again (`lost`: this caller looked before and lost its tokens to another);
    /// `Err(())` if they would come at or after `deadline`.
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
        let draw = || crate::engine::scope::thread_rng().random::<f64>();
        limiter.try_send(cost, Instant::now(), deadline, lost, draw)
    }

    /// Records a response in `limiter` now: `throttled`, or a success or another error.
    pub fn record(limiter: &RateLimiter, throttled: bool) {
        limiter.record(Instant::now(), throttled);
    }
}
