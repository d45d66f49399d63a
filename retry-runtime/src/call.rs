//! The per-call engine: one [`Call`] per invocation of a `#[retry]` function, stepped once per
//! attempt by the loop the macro writes into the function's body.
//!
//! The loop lives in the user's function, not here, so that each attempt is a fresh `async`
//! block borrowing the arguments (and `&mut self`) only while it runs; nothing is boxed.

use crate::backoff;
use crate::bucket::{Permit, TokenBucket};
use crate::classify::{ErrorClass, TimedOut, TimeoutKind};
use crate::event::RetryEvent;
use crate::limiter::send_cost;
use crate::observe::{self, EarlyEnd};
use crate::partition::Site;
use crate::policy::Mode;
use crate::testing;
use core::future::Future;
use core::ops::ControlFlow;
use std::time::Duration;
use tokio::time::Instant;

/// The return type of a `#[retry]` function, seen as `Result<Ok, Err>` whatever alias wrote it.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` needs a function that returns `Result<T, E>`, not `{Self}`",
    label = "this return type is not a `Result`",
    note = "the loop retries on `Err` and returns on `Ok`; aliases such as `io::Result<T>` work"
)]
pub trait RetryResult {
    /// The success type.
    type Ok;
    /// The error type.
    type Err;
    /// Borrows the outcome.
    fn as_result(&self) -> Result<&Self::Ok, &Self::Err>;
    /// Wraps an error.
    fn from_err(err: Self::Err) -> Self;
}

impl<T, E> RetryResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    #[inline]
    fn as_result(&self) -> Result<&T, &E> {
        self.as_ref()
    }
    #[inline]
    fn from_err(err: E) -> Self {
        Err(err)
    }
}

/// One invocation of a `#[retry]` function.
///
/// `C` classifies errors, `A` reads server hints, `P` says whether an `Ok` should be polled
/// again, `O` is the `on_retry` hook.
pub struct Call<'s, R: RetryResult, C, A, P, O> {
    site: &'s Site,
    classify: C,
    hint: A,
    repeat: P,
    on_retry: O,
    /// How a timer's expiry becomes the function's error; `None` for a function without
    /// `attempt_timeout` and `deadline`, which then never arms a timer.
    timed_out: Option<fn(TimedOut) -> R::Err>,
    idempotent: bool,
    attempt: u32,
    deadline: Option<Instant>,
    /// The retry cost this call holds for the attempt it is about to run or running.
    permit: Option<Permit<'s>>,
    /// The last delay slept (decorrelated jitter grows from it).
    previous_delay: Duration,
    after_throttle: bool,
    /// The outcome of the last attempt, kept across the sleep in case the next attempt cannot
    /// start (its send token would come after the deadline).
    last: Option<R>,
}

/// When the running attempt is cut off, and by which limit.
struct Window<E> {
    at: Instant,
    kind: TimeoutKind,
    limit: Duration,
    timed_out: fn(TimedOut) -> E,
}

impl<'s, R, C, A, P, O> Call<'s, R, C, A, P, O>
where
    R: RetryResult,
    C: Fn(&R::Err) -> ErrorClass,
    A: Fn(&R::Err) -> Option<Duration>,
    P: Fn(&R::Ok) -> bool,
    O: Fn(&RetryEvent<'_, R::Err>),
{
    /// Starts a call. The deadline clock starts now, at the first poll of the function.
    #[inline]
    pub fn new(
        site: &'s Site,
        idempotent: bool,
        timed_out: Option<fn(TimedOut) -> R::Err>,
        classify: C,
        hint: A,
        repeat: P,
        on_retry: O,
    ) -> Self {
        let deadline = match (timed_out, site.policy.deadline) {
            (Some(_), Some(d)) => Some(Instant::now() + d),
            _ => None,
        };
        Call {
            site,
            classify,
            hint,
            repeat,
            on_retry,
            timed_out,
            idempotent,
            attempt: 0,
            deadline,
            permit: None,
            previous_delay: site.policy.initial_backoff,
            after_throttle: false,
            last: None,
        }
    }

    /// Runs one attempt and decides what follows: `Break` with the function's result, or
    /// `Continue` after sleeping the backoff.
    pub async fn step<F: Future<Output = R>>(&mut self, attempt: F) -> ControlFlow<R> {
        self.attempt += 1;
        let n = self.attempt;
        let settings = self.site.settings();
        let adaptive = settings.mode == Mode::Adaptive;

        // 1. Adaptive mode: a send token, waited for no later than the deadline.
        if adaptive {
            let cost = send_cost(n, self.after_throttle);
            if self
                .site
                .limiter()
                .acquire(cost, self.deadline)
                .await
                .is_err()
            {
                if let Some(out) = self.last.take().or_else(|| self.deadline_error(n)) {
                    drop(self.permit.take());
                    self.ended_early(n - 1, None, EarlyEnd::Deadline);
                    return ControlFlow::Break(out);
                }
            }
        }

        // 2. The attempt, under its timeout.
        let (out, expired) = match self.window(n) {
            None => (attempt.await, false),
            Some(w) => match tokio::time::timeout_at(w.at, attempt).await {
                Ok(out) => (out, false),
                Err(_) => {
                    let err = (w.timed_out)(TimedOut::new(w.kind, w.limit, n));
                    (R::from_err(err), true)
                }
            },
        };
        self.last = None;

        // 3 and 4. Bookkeeping, then the outcome's class.
        let bucket = self.site.token_bucket();
        let (class, hint) = match out.as_result() {
            Ok(value) => {
                match self.permit.take() {
                    Some(permit) => drop(permit), // refund the retry's cost
                    None => bucket.reward(),
                }
                if adaptive {
                    self.site.limiter().record(false);
                }
                if !(self.repeat)(value) {
                    return ControlFlow::Break(out);
                }
                (None, None)
            }
            Err(err) => {
                let class = if expired {
                    ErrorClass::Timeout
                } else {
                    (self.classify)(err)
                };
                if let Some(permit) = self.permit.take() {
                    permit.consume();
                }
                if adaptive {
                    self.site.limiter().record(class == ErrorClass::Throttling);
                }
                self.after_throttle = class == ErrorClass::Throttling;
                if class == ErrorClass::Permanent {
                    return ControlFlow::Break(out);
                }
                if !self.idempotent && !class.is_safe_for_non_idempotent() {
                    self.ended_early(n, Some(class), EarlyEnd::NotIdempotent);
                    return ControlFlow::Break(out);
                }
                (Some(class), (self.hint)(err))
            }
        };

        // 5. The last attempt.
        if n >= testing::cap_attempts(settings.max_attempts) {
            return ControlFlow::Break(out);
        }

        // 6. The retry's cost (a polling repeat costs nothing).
        if let Some(class) = class {
            match self.take_retry_cost(bucket, class).await {
                Some(permit) => self.permit = Some(permit),
                None => {
                    let why = if self.deadline_passes(Duration::ZERO) {
                        EarlyEnd::Deadline
                    } else {
                        EarlyEnd::BucketEmpty
                    };
                    self.ended_early(n, Some(class), why);
                    return ControlFlow::Break(out);
                }
            }
        }

        // 7. The delay: the server's hint, else the jittered backoff.
        let policy = &self.site.policy;
        let delay = match hint {
            Some(h) if h > policy.max_backoff => {
                drop(self.permit.take());
                self.ended_early(n, class, EarlyEnd::HintTooLong);
                return ControlFlow::Break(out);
            }
            Some(h) => h,
            None => {
                let d = testing::with_seeded_rng(|rng| {
                    backoff::delay(policy, n, self.previous_delay, rng)
                })
                .unwrap_or_else(|| {
                    backoff::delay(policy, n, self.previous_delay, &mut rand::rng())
                });
                self.previous_delay = d;
                d
            }
        };
        let instant = testing::is_instant();

        // 8. No sleep crosses the deadline.
        if self.deadline_passes(if instant { Duration::ZERO } else { delay }) {
            drop(self.permit.take());
            self.ended_early(n, class, EarlyEnd::Deadline);
            return ControlFlow::Break(out);
        }

        // 9. Hook, event, sleep.
        let class = class.unwrap_or(ErrorClass::Transient);
        (self.on_retry)(&RetryEvent {
            function: self.site.name,
            partition: self.site.partition_name(),
            attempt: n,
            delay,
            error: out.as_result().err(),
            class,
        });
        observe::retrying(self.site, n, class, delay);
        self.last = Some(out);
        if !instant {
            tokio::time::sleep(delay).await;
        }
        ControlFlow::Continue(())
    }

    /// The timer of attempt `n`: the attempt timeout, clamped to what is left of the deadline.
    fn window(&self, n: u32) -> Option<Window<R::Err>> {
        let timed_out = self.timed_out?;
        let policy = &self.site.policy;
        let own = policy
            .attempt_timeout_for(n)
            .map(|t| (Instant::now() + t, t));
        let (at, kind, limit) = match (own, self.deadline) {
            (None, None) => return None,
            (Some((at, t)), None) => (at, TimeoutKind::Attempt, t),
            (Some((at, t)), Some(d)) if at < d => (at, TimeoutKind::Attempt, t),
            (_, Some(d)) => (d, TimeoutKind::Deadline, policy.deadline?),
        };
        Some(Window {
            at,
            kind,
            limit,
            timed_out,
        })
    }

    /// Whether `now + delay` reaches the deadline.
    fn deadline_passes(&self, delay: Duration) -> bool {
        self.deadline
            .is_some_and(|d| Instant::now().checked_add(delay).is_none_or(|t| t >= d))
    }

    /// The error of a call whose first attempt could not start before the deadline.
    fn deadline_error(&self, n: u32) -> Option<R> {
        let timed_out = self.timed_out?;
        let limit = self.site.policy.deadline?;
        Some(R::from_err(timed_out(TimedOut::new(
            TimeoutKind::Deadline,
            limit,
            n,
        ))))
    }

    /// Step 6: takes the cost of a retry after `class`, waiting for the refill when the bucket
    /// says so and the deadline allows. `None`: no retry.
    async fn take_retry_cost(
        &self,
        bucket: &'s TokenBucket,
        class: ErrorClass,
    ) -> Option<Permit<'s>> {
        let cost = bucket.cost(class);
        loop {
            let now = Instant::now();
            if let Some(permit) = bucket.try_acquire(cost, now) {
                return Some(permit);
            }
            let wait = bucket.time_until(cost, now)?;
            if self.deadline_passes(wait) {
                return None;
            }
            tokio::time::sleep(wait).await;
        }
    }

    fn ended_early(&self, n: u32, class: Option<ErrorClass>, why: EarlyEnd) {
        observe::ended_early(self.site, n, class, why);
    }
}
