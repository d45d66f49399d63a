//! The protections a call passes through: the retry token bucket (AWS standard mode), the
//! client-side rate limiter (AWS adaptive mode), retry budgets and circuit breakers, and the
//! named partitions that share them. Each is shared state built by `const fn`, so that it can
//! live in a `static`, and changed lock-free (but for a refilling bucket's clock).

pub(crate) mod breaker;
pub(crate) mod bucket;
pub(crate) mod budget;
pub(crate) mod bulkhead;
pub(crate) mod concurrency;
pub(crate) mod guard;
pub(crate) mod limiter;
pub(crate) mod partition;
pub(crate) mod sync;
pub(crate) mod throttle;
pub(crate) mod window;

use crate::classify::ErrorClass;
use crate::runtime::Instant;
use breaker::{Admit, Change, CircuitBreaker, Pass};
use bucket::{Costs, TokenBucket};
use budget::RetryBudget;
use guard::AttemptKind;
use limiter::RateLimiter;
use std::time::Duration;

/// What an attempt holds from the protections that let it start: the retry cost it took from
/// the bucket, how it went through the breaker, and how many of the call's guards admitted it.
/// A retry's or a hedge's cost goes back if the attempt succeeds or never runs (whoever holds
/// the ticket when the call is dropped gives it back), and stays out if the attempt fails. A
/// first attempt costs nothing. The guards that admitted it are settled once, when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) cost: u32,
    /// The number the attempt has (or will have), for the guards' context.
    pub(crate) number: u32,
    /// How long the attempt waited at the guards so far, in milliseconds, saturating (16 bits
    /// keep the ticket, which every call's future holds, at 16 bytes).
    pub(crate) waited_ms: u16,
    pub(crate) pass: Pass,
    /// At its last look, the rate limiter's send tokens for this attempt went to another
    /// caller (it looks again with priority).
    pub(crate) lost: bool,
    /// How many of the call's guards admitted it (in order).
    pub(crate) guards: u8,
    pub(crate) kind: AttemptKind,
    /// The class of the failure a retry follows.
    pub(crate) after: Option<ErrorClass>,
}

impl Ticket {
    /// An attempt that holds nothing (a first attempt before its gate). A constant, so that a
    /// call sets its ticket up with stores of constants.
    pub(crate) const NONE: Ticket = Ticket {
        cost: 0,
        number: 0,
        waited_ms: 0,
        pass: Pass::None,
        lost: false,
        guards: 0,
        kind: AttemptKind::First,
        after: None,
    };

    /// Whether it holds anything to give back when its attempt will not run: a retry's cost,
    /// or guards' admissions.
    pub(crate) fn holds(&self) -> bool {
        self.cost > 0 || self.guards > 0
    }

    /// Adds `delay`, slept waiting at the guards, to what it waited.
    pub(crate) fn waited(&mut self, delay: Duration) {
        let ms = u16::try_from(delay.as_millis()).unwrap_or(u16::MAX);
        self.waited_ms = self.waited_ms.saturating_add(ms);
    }
}

impl Default for Ticket {
    fn default() -> Self {
        Ticket::NONE
    }
}

/// Why the protections refused another attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// An open circuit breaker.
    CircuitOpen,
    /// A retry budget without room.
    BudgetExhausted,
    /// A bucket with fewer tokens than the cost.
    BucketEmpty,
}

/// What a call asks of a built-in protection at each step, as failsafe-go's policies are asked
/// before and after each execution. Each method defaults to "nothing to do".
pub(crate) trait Protection {
    /// Step 4, before the bucket's cost is taken: may another attempt (a retry, or a hedge)
    /// follow? A refusal takes nothing.
    fn allows_another(&self, now: Instant) -> Result<(), Refusal> {
        let _ = now;
        Ok(())
    }

    /// Step 4: the bucket paid for another attempt, which will run unless the call ends first.
    fn another_admitted(&self, now: Instant) {
        let _ = now;
    }

    /// Step 3: an attempt that held `ticket` ended, a success (`failure` is `None`) or a
    /// failure of a class; `first`: the call's first attempt to end. A change of the guard's
    /// state that the booking made is returned, for the caller to report.
    fn book(
        &self,
        now: Instant,
        ticket: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
    ) -> Option<Change>;
}

/// The protections of one call beside its bucket, listed once, in the order a call meets
/// them: `$each` runs once for each one the call has. A new protection is a file here with its
/// `Protection` impl, and one line below.
macro_rules! guards {
    ($breaker:expr, $budget:expr, $limiter:expr, |$guard:ident| $each:expr) => {{
        if let Some($guard) = $breaker {
            $each
        }
        if let Some($guard) = $budget {
            $each
        }
        if let Some($guard) = $limiter {
            $each
        }
    }};
}

/// The protections a call passes through: the bucket always, the breaker and the budget when
/// the function has them, the rate limiter in adaptive mode.
#[derive(Clone, Copy)]
pub(crate) struct Protections<'a> {
    pub(crate) bucket: &'a TokenBucket,
    pub(crate) breaker: Option<&'a CircuitBreaker>,
    pub(crate) budget: Option<&'a RetryBudget>,
    /// The limiter, in adaptive mode only.
    pub(crate) limiter: Option<&'a RateLimiter>,
    /// What a retry costs in the bucket: its own costs, or the 2026 behavior's in a bucket the
    /// runtime made (resolved with the function's settings).
    pub(crate) costs: &'a Costs,
}

/// Whether the guards (an open breaker, a budget without room) allow another attempt now; out
/// of line, and given the guards themselves rather than the protections, so that a call with
/// neither only tests for them and keeps its protections in registers.
#[cold]
#[inline(never)]
fn guards_allow(
    breaker: Option<&CircuitBreaker>,
    budget: Option<&RetryBudget>,
) -> Result<Instant, Refusal> {
    let now = Instant::now();
    guards!(breaker, budget, None::<&RateLimiter>, |g| g
        .allows_another(now)?);
    Ok(now)
}

/// What [`Protections::admit_another`] decided.
pub(crate) enum Admission {
    /// Every protection allows it, and the bucket gave its cost: the next attempt's ticket.
    Granted(Ticket),
    /// Refused; nothing was taken.
    Refused(Refusal),
    /// The bucket is short of `cost` and waits for its refill (the other guards allowed it).
    Short(u32),
}

impl Protections<'_> {
    /// Step 4 for another attempt after a failure of `class`, checked in one order for a retry
    /// and for a hedge: the guards (an open breaker, a budget without room), then the bucket's
    /// cost, which is taken only when everything else allows it. `now` is read only when a
    /// guard needs it.
    #[inline(always)]
    pub(crate) fn admit_another(&self, class: ErrorClass) -> Admission {
        let now = if self.needs_clock() {
            match guards_allow(self.breaker, self.budget) {
                Ok(now) => Some(now),
                Err(refusal) => return Admission::Refused(refusal),
            }
        } else {
            None
        };
        let cost = self.costs.of(class);
        if !self.bucket.try_take_now(cost) {
            return if self.bucket.waits_when_empty() {
                Admission::Short(cost)
            } else {
                Admission::Refused(Refusal::BucketEmpty)
            };
        }
        self.admitted(now);
        Admission::Granted(Ticket {
            cost,
            ..Ticket::default()
        })
    }

    /// Step 4 again after a bucket's refill: the cost, if the bucket covers it now.
    pub(crate) fn admit_after_refill(&self, cost: u32) -> Option<Ticket> {
        if !self.bucket.try_take_now(cost) {
            return None;
        }
        self.admitted(self.needs_clock().then(Instant::now));
        Some(Ticket {
            cost,
            ..Ticket::default()
        })
    }

    #[inline]
    fn admitted(&self, now: Option<Instant>) {
        if let Some(now) = now {
            guards!(self.breaker, self.budget, None::<&RateLimiter>, |g| g
                .another_admitted(now));
        }
    }

    #[inline]
    fn needs_clock(&self) -> bool {
        self.breaker.is_some() || self.budget.is_some()
    }

    /// Step 1's leave: the breaker's, for an attempt about to start at `now`, kept in its
    /// ticket. `Err`: refused, the next probe in this long. A change of the breaker's state is
    /// passed to `changed`.
    pub(crate) fn leave(
        &self,
        now: Instant,
        ticket: &mut Ticket,
        changed: impl FnOnce(Change),
    ) -> Result<(), Duration> {
        let Some(breaker) = self.breaker else {
            return Ok(());
        };
        let (admit, change) = breaker.admit(now);
        if let Some(change) = change {
            changed(change);
        }
        match admit {
            Admit::Go(pass) => {
                ticket.pass = pass;
                Ok(())
            }
            Admit::Refused(retry_in) => Err(retry_in),
        }
    }

    /// Step 3 for the guards: the attempt holding `ticket` ended, a success or a failure of a
    /// class (`first`: the call's first attempt to end). Changes of state go to `changed`.
    pub(crate) fn book(
        &self,
        ticket: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
        mut changed: impl FnMut(Change),
    ) {
        if self.breaker.is_none() && self.budget.is_none() && self.limiter.is_none() {
            // Only guards to settle (the caller's): no clock to read.
            return;
        }
        let now = Instant::now();
        guards!(self.breaker, self.budget, self.limiter, |g| {
            if let Some(change) = g.book(now, ticket, first, failure) {
                changed(change);
            }
        });
    }

    /// Gives back the cost of a ticket whose attempt will not run.
    #[inline]
    pub(crate) fn release(&self, ticket: Ticket) {
        if ticket.cost > 0 {
            self.bucket.deposit(ticket.cost);
        }
    }
}

impl Protection for CircuitBreaker {
    fn allows_another(&self, now: Instant) -> Result<(), Refusal> {
        if self.refuses(now) {
            Err(Refusal::CircuitOpen)
        } else {
            Ok(())
        }
    }

    fn book(
        &self,
        now: Instant,
        ticket: Ticket,
        _: bool,
        failure: Option<ErrorClass>,
    ) -> Option<Change> {
        self.record(now, ticket.pass, breaker::counts_as_failure(failure))
    }
}

impl Protection for RetryBudget {
    fn allows_another(&self, now: Instant) -> Result<(), Refusal> {
        if self.room(now) {
            Ok(())
        } else {
            Err(Refusal::BudgetExhausted)
        }
    }

    fn another_admitted(&self, now: Instant) {
        self.count_retry(now);
    }

    fn book(
        &self,
        now: Instant,
        _: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
    ) -> Option<Change> {
        if first {
            self.on_request(now);
        }
        self.on_outcome(failure);
        None
    }
}

impl Protection for RateLimiter {
    fn book(
        &self,
        now: Instant,
        _: Ticket,
        _: bool,
        failure: Option<ErrorClass>,
    ) -> Option<Change> {
        self.record(now, failure == Some(ErrorClass::Throttling));
        None
    }
}
