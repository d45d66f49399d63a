//! The per-call engine: one [`Call`] per invocation of a `#[retry]` function, stepped once per
//! attempt by the loop the macro writes into the function's body.
//!
//! The loop lives in the user's function, not here, so that each attempt is a fresh `async`
//! block borrowing the arguments (and `&mut self`) only while it runs; nothing is boxed.
//!
//! The first attempt is the hot path: it reads the function's settings once, runs the body
//! (under a timer only if the function has one: that is known at compile time), and on
//! success adds 1 to a bucket that is not full. Everything a retry needs lives in
//! [`Retrying`], set up when the first retry is decided.

use crate::backoff;
use crate::classify::{ErrorClass, TimedOut, TimeoutKind};
use crate::event::RetryEvent;
use crate::limiter::send_cost;
use crate::observe::{self, EarlyEnd};
use crate::partition::Site;
use crate::policy::{Jitter, Mode};
use crate::testing::{self, TestScope};
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

/// An error type a timed-out attempt can become.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot represent a timeout, which `attempt_timeout` and `deadline` need",
    label = "`{Self}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add `impl From<retry_runtime::TimedOut> for {Self}` (a variant that keeps the \
            `TimedOut` is enough); `std::io::Error` has it already"
)]
pub trait FromTimedOut {
    /// The error for a timed-out attempt.
    fn from_timed_out(t: TimedOut) -> Self;
}

impl<E: From<TimedOut>> FromTimedOut for E {
    #[inline]
    fn from_timed_out(t: TimedOut) -> Self {
        E::from(t)
    }
}

/// Whether a function arms timers (`attempt_timeout` or `deadline`). Known at compile time,
/// so a function without timers has no timer code at all.
pub trait TimerKind {
    /// Whether attempts run under a timer.
    const TIMED: bool;
}

/// How an expired timer becomes the function's error.
pub trait Timer<E>: TimerKind {
    /// The conversion (`None` for [`Untimed`], which arms no timer).
    fn conversion(&self) -> Option<fn(TimedOut) -> E>;
}

/// A function without `attempt_timeout` and `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct Untimed;

impl TimerKind for Untimed {
    const TIMED: bool = false;
}

impl<E> Timer<E> for Untimed {
    #[inline]
    fn conversion(&self) -> Option<fn(TimedOut) -> E> {
        None
    }
}

/// A function with `attempt_timeout` or `deadline`, and how a timed-out attempt becomes its
/// error. The expansion builds it from `__private::timed_out`, whose `FromTimedOut` bound is
/// where a missing `From<TimedOut>` is reported, once, with its own message.
pub struct Timed<E>(pub fn(TimedOut) -> E);

impl<E> TimerKind for Timed<E> {
    const TIMED: bool = true;
}

impl<E> Timer<E> for Timed<E> {
    #[inline]
    fn conversion(&self) -> Option<fn(TimedOut) -> E> {
        Some(self.0)
    }
}

/// One invocation of a `#[retry]` function.
///
/// `K` says whether attempts run under a timer, `C` classifies errors, `A` reads server hints,
/// `P` says whether an `Ok` should be polled again, `O` is the `on_retry` hook.
///
/// The type and `new` carry no bounds; each method asks only for what it uses, so a mistake in
/// the user's types is reported once, where the expansion names the offending piece.
pub struct Call<'s, R, K, C, A, P, O> {
    site: &'s Site,
    timer: K,
    classify: C,
    hint: A,
    repeat: P,
    on_retry: O,
    idempotent: bool,
    /// Adaptive mode (resolved once per call: the environment may choose it).
    adaptive: bool,
    attempt: u32,
    /// Which limit cut the last attempt off, if one did.
    expired: Option<TimeoutKind>,
    /// The last look at the rate limiter found the send tokens taken by another caller.
    send_lost: bool,
    /// The instant the call started, until the first attempt's timer has used it (one clock
    /// read for both the deadline and that timer).
    started: Option<Instant>,
    deadline: Option<Instant>,
    retrying: Option<Retrying<R>>,
}

/// The state of a call that has retried.
struct Retrying<R> {
    /// Tokens this call took for the retry it is about to run or running. They go back when
    /// that retry succeeds, never starts, or the call is dropped (or panics) while holding
    /// them; they stay out when the retry fails.
    held: u32,
    /// The last delay slept (decorrelated jitter grows from it).
    previous_delay: Duration,
    after_throttle: bool,
    /// A retry waiting for a bucket's refill (between `Settled::Wait` and `resume`).
    pending: Option<Short<R>>,
    /// The outcome of the last attempt, kept across the sleep in case the next attempt cannot
    /// start (its send token would come after the deadline) or, while polling, is cut by the
    /// deadline.
    last: Option<R>,
}

impl<R, K, C, A, P, O> Drop for Call<'_, R, K, C, A, P, O> {
    #[inline]
    fn drop(&mut self) {
        // Only a call that has retried can hold tokens (between taking a retry's cost and
        // that retry's end); the check stays one load so the success path's drop stays small.
        if self.retrying.is_some() {
            self.release();
        }
    }
}

impl<R, K, C, A, P, O> Call<'_, R, K, C, A, P, O> {
    /// Gives back the tokens held for a retry that will not run (or not finish).
    #[cold]
    fn release(&mut self) {
        if let Some(r) = &mut self.retrying {
            let held = std::mem::take(&mut r.held);
            self.site.token_bucket().deposit(held);
        }
    }
}

/// When the running attempt is cut off, and by which limit.
struct Window {
    at: Instant,
    kind: TimeoutKind,
    limit: Duration,
}

impl<'s, R, K: TimerKind, C, A, P, O> Call<'s, R, K, C, A, P, O> {
    /// Starts a call. The deadline clock starts now, at the first poll of the function.
    #[inline]
    pub fn new(
        site: &'s Site,
        idempotent: bool,
        timer: K,
        classify: C,
        hint: A,
        repeat: P,
        on_retry: O,
    ) -> Self {
        let started = K::TIMED.then(Instant::now);
        let deadline = match (started, site.policy.deadline) {
            (Some(now), Some(d)) => now.checked_add(d),
            _ => None,
        };
        Call {
            site,
            timer,
            classify,
            hint,
            repeat,
            on_retry,
            idempotent,
            adaptive: site.settings().mode == Mode::Adaptive,
            attempt: 0,
            expired: None,
            send_lost: false,
            started,
            deadline,
            retrying: None,
        }
    }

    /// Whether attempts wait for the rate limiter's send tokens (adaptive mode, which the
    /// environment may choose at run time).
    #[inline]
    pub fn adaptive(&self) -> bool {
        self.adaptive
    }

    /// Step 2 without a timer: counts the attempt and hands its future back to be awaited in
    /// place. Its signature pins the body's output type, so `?` in the body converts to `R`.
    #[inline]
    pub fn attempt<F: Future<Output = R>>(&mut self, attempt: F) -> F {
        self.attempt += 1;
        attempt
    }

    /// The retry state, set up at the first retry.
    fn retrying(&mut self) -> &mut Retrying<R> {
        let initial = self.site.policy.initial_backoff;
        self.retrying.get_or_insert_with(|| Retrying {
            held: 0,
            pending: None,
            previous_delay: initial,
            after_throttle: false,
            last: None,
        })
    }

    /// The timer of attempt `n`: the attempt timeout, clamped to what is left of the deadline.
    /// Instants too far ahead to represent mean no timer.
    #[inline]
    fn window(&mut self, n: u32) -> Option<Window> {
        let policy = &self.site.policy;
        let started = self.started.take();
        let by_deadline = |at| Window {
            at,
            kind: TimeoutKind::Deadline,
            limit: policy.deadline.unwrap_or_default(),
        };
        let Some(limit) = policy.attempt_timeout_for(n) else {
            return self.deadline.map(by_deadline);
        };
        match started.unwrap_or_else(Instant::now).checked_add(limit) {
            Some(at) if self.deadline.is_none_or(|d| at < d) => Some(Window {
                at,
                kind: TimeoutKind::Attempt,
                limit,
            }),
            _ => self.deadline.map(by_deadline),
        }
    }

    /// Whether `now + delay` reaches the deadline.
    fn deadline_passes(&self, delay: Duration) -> bool {
        self.deadline
            .is_some_and(|d| Instant::now().checked_add(delay).is_none_or(|t| t >= d))
    }

    fn ended_early(&self, n: u32, class: Option<ErrorClass>, why: EarlyEnd, scope: TestScope) {
        observe::ended_early(self.site, n, class, why, scope.recording());
    }
}

// The entry points the expansion calls carry their bounds themselves (not on the impl), so
// that a return type that is not a `Result` is reported with `RetryResult`'s own message.
impl<'s, R, K, C, A, P, O> Call<'s, R, K, C, A, P, O> {
    /// Step 1, adaptive mode: one look at the rate limiter for the next attempt's send token.
    /// `Wait(d)`: sleep `d` and look again; `Return`: the token would come after the deadline,
    /// the call ends. No future of the engine: the expansion sleeps in place.
    pub fn send_token(&mut self) -> SendToken<R>
    where
        R: RetryResult,
        K: Timer<R::Err>,
    {
        let n = self.attempt + 1;
        let after_throttle = self.retrying.as_ref().is_some_and(|r| r.after_throttle);
        let cost = send_cost(n, after_throttle);
        self.started = None; // the attempt starts after the wait, not at the call's start
        let limiter = self.site.limiter();
        let scope = testing::test_scope();
        if scope.instant() {
            // Instant retries wait for nothing, send tokens included.
            limiter.take_without_waiting(cost);
            return SendToken::Go;
        }
        match limiter.try_send(cost, self.deadline, self.send_lost) {
            Ok(None) => {
                self.send_lost = false;
                SendToken::Go
            }
            Ok(Some(wait)) => {
                self.send_lost = true;
                SendToken::Wait(wait)
            }
            Err(()) => {
                self.send_lost = false;
                self.release();
                let last = self.retrying.as_mut().and_then(|r| r.last.take());
                match last.or_else(|| self.deadline_error(n)) {
                    Some(out) => {
                        self.ended_early(n - 1, None, EarlyEnd::Deadline, scope);
                        SendToken::Return(out)
                    }
                    // No deadline, so the wait cannot have been refused: go ahead.
                    None => SendToken::Go,
                }
            }
        }
    }

    /// Step 2 with a timer: the attempt, cut off at its window.
    pub async fn timed<F: Future<Output = R>>(&mut self, attempt: F) -> R
    where
        R: RetryResult,
        K: Timer<R::Err>,
    {
        self.attempt += 1;
        self.expired = None;
        let n = self.attempt;
        let (Some(w), Some(timed_out)) = (self.window(n), self.timer.conversion()) else {
            return attempt.await;
        };
        match tokio::time::timeout_at(w.at, attempt).await {
            Ok(out) => out,
            Err(_) => {
                self.expired = Some(w.kind);
                R::from_err(timed_out(TimedOut::new(w.kind, w.limit, n)))
            }
        }
    }

    /// The error of a call whose first attempt could not start before the deadline.
    fn deadline_error(&self, n: u32) -> Option<R>
    where
        R: RetryResult,
        K: Timer<R::Err>,
    {
        let limit = self.site.policy.deadline?;
        let timed_out = self.timer.conversion()?;
        Some(R::from_err(timed_out(TimedOut::new(
            TimeoutKind::Deadline,
            limit,
            n,
        ))))
    }

    /// Steps 3 and 4 on the hot path: a success of a call that has not retried and is not
    /// polling again ends here (`Break`). Anything else goes on to [`settle`](Self::settle).
    #[inline]
    pub fn finish(&mut self, out: R) -> ControlFlow<R, R>
    where
        R: RetryResult,
        K: TimerKind,
        P: Fn(&R::Ok) -> bool,
    {
        // An attempt cut off by a timer is an `Err`: it goes to `settle`, where polling may end
        // with the previous `Ok`.
        if let Ok(value) = out.as_result() {
            self.book_success();
            if !(self.repeat)(value) {
                return ControlFlow::Break(out);
            }
        }
        // An error, or an `Ok` that `retry_if_ok` polls again (already booked: the predicate
        // runs once).
        ControlFlow::Continue(out)
    }

    /// Step 3 for a success: refund the retry's cost, or reward an attempt that cost nothing;
    /// in adaptive mode, tell the limiter.
    #[inline]
    fn book_success(&mut self) {
        if self.retrying.is_none() {
            self.site.token_bucket().reward();
        } else {
            self.book_retry_success();
        }
        if self.adaptive {
            self.site.limiter().record(false);
        }
    }

    #[cold]
    fn book_retry_success(&mut self) {
        if let Some(r) = &mut self.retrying {
            r.last = None;
            let held = std::mem::take(&mut r.held);
            let bucket = self.site.token_bucket();
            if held > 0 {
                bucket.deposit(held);
            } else {
                bucket.reward();
            }
        }
    }

    /// Steps 3 to 9 for what [`finish`](Self::finish) passed on, decided without waiting: return,
    /// retry now, or sleep first (the expansion awaits the sleep in place, so no future of the
    /// engine sits between the function and its timer). `Wait(d)`: a bucket that waits for its
    /// refill cannot cover the retry yet; sleep `d`, then [`resume`](Self::resume).
    pub fn settle(&mut self, out: R) -> Settled<R>
    where
        R: RetryResult,
        K: Timer<R::Err>,
        C: Fn(&R::Err) -> ErrorClass,
        A: Fn(&R::Err) -> Option<Duration>,
        P: Fn(&R::Ok) -> bool,
        O: Fn(&RetryEvent<'_, R::Err>),
    {
        let scope = testing::test_scope();
        match self.judge(out, scope) {
            Ok(next) => next.settled(scope),
            Err(short) => self.refill_wait(short, scope),
        }
    }

    /// After a `Wait`: the bucket again, then as [`settle`](Self::settle).
    pub fn resume(&mut self) -> Settled<R>
    where
        R: RetryResult,
        K: Timer<R::Err>,
        C: Fn(&R::Err) -> ErrorClass,
        A: Fn(&R::Err) -> Option<Duration>,
        P: Fn(&R::Ok) -> bool,
        O: Fn(&RetryEvent<'_, R::Err>),
    {
        let scope = testing::test_scope();
        let Some(short) = self.retrying.as_mut().and_then(|r| r.pending.take()) else {
            // Only a `Wait` leads here, and it left its retry pending.
            return Settled::Retry;
        };
        if self.site.token_bucket().try_take_now(short.cost) {
            self.retrying().held = short.cost;
            self.schedule(short.out, Some(short.class), short.hint, scope)
                .settled(scope)
        } else {
            self.refill_wait(short, scope)
        }
    }
}

impl<'s, R, K, C, A, P, O> Call<'s, R, K, C, A, P, O>
where
    R: RetryResult,
    K: Timer<R::Err>,
    C: Fn(&R::Err) -> ErrorClass,
    A: Fn(&R::Err) -> Option<Duration>,
    P: Fn(&R::Ok) -> bool,
    O: Fn(&RetryEvent<'_, R::Err>),
{
    /// The loop the expansion of `#[retry]` writes, for callers without the macro (the fleet
    /// simulation, the property tests): `attempt` makes each attempt's future.
    pub async fn run<F, Fut>(mut self, mut attempt: F) -> R
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        'call: loop {
            if self.adaptive() {
                loop {
                    match self.send_token() {
                        SendToken::Go => break,
                        SendToken::Wait(d) => tokio::time::sleep(d).await,
                        SendToken::Return(out) => break 'call out,
                    }
                }
            }
            let out = if K::TIMED {
                self.timed(attempt()).await
            } else {
                self.attempt(attempt()).await
            };
            let mut settled = match self.finish(out) {
                ControlFlow::Break(out) => break 'call out,
                ControlFlow::Continue(out) => self.settle(out),
            };
            loop {
                match settled {
                    Settled::Return(out) => break 'call out,
                    Settled::Retry => break,
                    Settled::Sleep(d) => {
                        tokio::time::sleep(d).await;
                        break;
                    }
                    Settled::Wait(d) => {
                        tokio::time::sleep(d).await;
                        settled = self.resume();
                    }
                }
            }
        }
    }
}

/// What [`Call::send_token`] found.
pub enum SendToken<R> {
    /// The token is taken: run the attempt.
    Go,
    /// Sleep this long, then look again.
    Wait(Duration),
    /// The token would come after the deadline: the call ends with this outcome.
    Return(R),
}

/// What [`Call::settle`] decided.
pub enum Settled<R> {
    /// The call ends with this outcome.
    Return(R),
    /// Run the next attempt now.
    Retry,
    /// Sleep this long, then run the next attempt.
    Sleep(Duration),
    /// Sleep this long for the bucket's refill, then [`Call::resume`].
    Wait(Duration),
}

/// What follows an attempt.
enum Next<R> {
    /// The call ends with this outcome.
    Return(R),
    /// Sleep this long, then run the next attempt (the outcome is kept in `Retrying::last`).
    Sleep(Duration),
}

impl<R> Next<R> {
    /// Instant retries sleep nothing; a zero delay (`Retry-After: 0`, a zero backoff) retries
    /// now, where tokio's timer would wait for its next millisecond tick.
    fn settled(self, scope: TestScope) -> Settled<R> {
        match self {
            Next::Return(out) => Settled::Return(out),
            Next::Sleep(delay) if scope.instant() || delay.is_zero() => Settled::Retry,
            Next::Sleep(delay) => Settled::Sleep(delay),
        }
    }
}

/// A retry whose cost the bucket cannot cover yet, in a bucket that waits for its refill.
struct Short<R> {
    out: R,
    class: ErrorClass,
    hint: Option<Duration>,
    cost: u32,
}

impl<'s, R, K, C, A, P, O> Call<'s, R, K, C, A, P, O>
where
    R: RetryResult,
    K: Timer<R::Err>,
    C: Fn(&R::Err) -> ErrorClass,
    A: Fn(&R::Err) -> Option<Duration>,
    P: Fn(&R::Ok) -> bool,
    O: Fn(&RetryEvent<'_, R::Err>),
{
    /// Steps 3 to 8 for the last attempt's outcome, without waiting: `Err` when the retry must
    /// first wait for the bucket's refill.
    fn judge(&mut self, out: R, scope: TestScope) -> Result<Next<R>, Short<R>> {
        let n = self.attempt;
        let last = n >= scope.cap(self.site.settings().max_attempts);
        let Err(err) = out.as_result() else {
            // `finish` booked every `Ok` and passed on only the ones polled again.
            return Ok(self.poll_again(out, last, scope));
        };

        // 3 and 4 for an error: its class.
        let expired = if K::TIMED { self.expired } else { None };
        let class = if expired.is_some() {
            ErrorClass::Timeout
        } else {
            (self.classify)(err)
        };
        if let Some(previous) = self.polling_cut_by_deadline(expired) {
            self.ended_early(n, Some(ErrorClass::Timeout), EarlyEnd::Deadline, scope);
            return Ok(Next::Return(previous));
        }
        let r = self.retrying();
        r.held = 0; // the retry ran: its cost stays out
        r.after_throttle = class == ErrorClass::Throttling;
        if self.adaptive {
            self.site.limiter().record(class == ErrorClass::Throttling);
        }
        // 5, with 4's two ends: a permanent error, or the last attempt, ends the call as it
        // should; a function that is not idempotent ends it early.
        if class == ErrorClass::Permanent || last {
            return Ok(Next::Return(out));
        }
        if !self.idempotent && !class.is_safe_for_non_idempotent() {
            self.ended_early(n, Some(class), EarlyEnd::NotIdempotent, scope);
            return Ok(Next::Return(out));
        }
        let hint = match out.as_result() {
            Err(err) => (self.hint)(err),
            Ok(_) => None,
        };

        // 6. The retry's cost.
        let bucket = self.site.token_bucket();
        let cost = bucket.cost(class);
        if bucket.try_take_now(cost) {
            self.retrying().held = cost;
            return Ok(self.schedule(out, Some(class), hint, scope));
        }
        if bucket.waits_when_empty() {
            return Err(Short {
                out,
                class,
                hint,
                cost,
            });
        }
        let why = if self.deadline_passes(Duration::ZERO) {
            EarlyEnd::Deadline
        } else {
            EarlyEnd::BucketEmpty
        };
        self.ended_early(n, Some(class), why, scope);
        Ok(Next::Return(out))
    }

    /// A polling repeat: no retry cost, the backoff, the same limits.
    fn poll_again(&mut self, out: R, last: bool, scope: TestScope) -> Next<R> {
        if last {
            Next::Return(out)
        } else {
            self.schedule(out, None, None, scope)
        }
    }

    /// Steps 7 to 9 but the sleep: the delay (the server's hint, else the jittered backoff),
    /// the deadline check, the hook and the event. `class` is `None` for a polling repeat.
    fn schedule(
        &mut self,
        out: R,
        class: Option<ErrorClass>,
        hint: Option<Duration>,
        scope: TestScope,
    ) -> Next<R> {
        let n = self.attempt;
        let delay = match hint {
            Some(h) if h > self.site.policy.max_backoff => {
                self.release();
                self.ended_early(n, class, EarlyEnd::HintTooLong, scope);
                return Next::Return(out);
            }
            Some(h) => h,
            None => self.backoff(scope),
        };

        // 8. No sleep crosses the deadline.
        if self.deadline_passes(if scope.instant() {
            Duration::ZERO
        } else {
            delay
        }) {
            self.release();
            self.ended_early(n, class, EarlyEnd::Deadline, scope);
            return Next::Return(out);
        }

        // 9. Hook and event; the caller sleeps.
        let class = class.unwrap_or(ErrorClass::Transient);
        (self.on_retry)(&RetryEvent {
            function: self.site.name,
            partition: self.site.partition_name(),
            attempt: n,
            delay,
            error: out.as_result().err(),
            class,
        });
        observe::retrying(self.site, n, class, delay, scope.recording());
        self.retrying().last = Some(out);
        Next::Sleep(delay)
    }

    /// Step 7's backoff after the current attempt, jittered (from the scope's seeded generator
    /// in a seeded test scope). Without jitter there is nothing to draw.
    fn backoff(&mut self, scope: TestScope) -> Duration {
        let n = self.attempt;
        let policy = &self.site.policy;
        let previous = self.retrying().previous_delay;
        let d = if policy.jitter == Jitter::None {
            policy.backoff_for(n)
        } else if let Some(d) = scope
            .seeded()
            .then(|| testing::with_seeded_rng(|rng| backoff::delay(policy, n, previous, rng)))
            .flatten()
        {
            d
        } else {
            backoff::delay(policy, n, previous, &mut rand::rng())
        };
        self.retrying().previous_delay = d;
        d
    }

    /// Step 6 for a bucket that waits for its refill: how long until it covers the retry's
    /// cost, no later than the deadline (the retry waits in `Retrying::pending`).
    fn refill_wait(&mut self, short: Short<R>, scope: TestScope) -> Settled<R> {
        let n = self.attempt;
        let bucket = self.site.token_bucket();
        match bucket.time_until(short.cost, Instant::now()) {
            Some(wait) if !self.deadline_passes(wait) => {
                self.retrying().pending = Some(short);
                Settled::Wait(wait)
            }
            Some(_) => {
                self.ended_early(n, Some(short.class), EarlyEnd::Deadline, scope);
                Settled::Return(short.out)
            }
            None => {
                self.ended_early(n, Some(short.class), EarlyEnd::BucketEmpty, scope);
                Settled::Return(short.out)
            }
        }
    }

    /// A polling call whose next attempt the deadline cut short ends with the last `Ok`, as it
    /// would had the deadline refused the sleep before it.
    fn polling_cut_by_deadline(&mut self, expired: Option<TimeoutKind>) -> Option<R> {
        let r = self.retrying.as_mut()?;
        let previous = r.last.take()?;
        if expired == Some(TimeoutKind::Deadline) && previous.as_result().is_ok() {
            self.release();
            Some(previous)
        } else {
            None
        }
    }
}
