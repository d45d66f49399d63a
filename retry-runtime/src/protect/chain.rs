//! The one order every attempt of a call meets the protections in, for both drivers (the
//! sequential loop and the hedged one): the built-in ones (breaker, budget, bucket, rate
//! limiter) and the user's guards ([`crate::Guard`]), asked through one value, [`Chain`].
//!
//! An attempt is asked about twice:
//!
//! - **Admission** ([`Chain::another`], step 4 of a retry or a hedge, before its backoff): an
//!   open breaker or a budget without room refuses it; the bucket takes its cost (or, for a
//!   bucket that waits for its refill, says how long until it can); then the user's guards, in
//!   order. What it holds is held through its backoff.
//! - **The gate** ([`Chain::gate`], step 1 of every attempt, just before it is sent): the
//!   breaker's leave (its pass: counted in the window, or the half-open probe); the user's
//!   guards for an attempt not admitted before (a first attempt, a polling repeat); in adaptive
//!   mode the rate limiter's send token.
//!
//! Its end is booked once ([`Chain::ended`]): a success gives a retry's cost back (or earns a
//! first attempt's reward), the breaker, the budget and the limiter count the outcome, and the
//! guards that admitted it are settled. An attempt that will not run gives back what it holds
//! ([`Chain::release`]).
//!
//! A new built-in protection is a file beside this one and its place in these steps; a user's
//! protection is a [`crate::Guard`], asked in the guards' place.

use super::breaker::{self, Admit as Leave, Change, CircuitBreaker, Pass};
use super::bucket::{Costs, TokenBucket};
use super::budget::RetryBudget;
use super::guard::{Admit, Answer, AttemptKind, GuardContext, GuardOutcome, Guards, Refused};
use super::limiter::{RateLimiter, send_cost};
use super::{Held, Of, Stamp, Ticket};
use crate::classify::ErrorClass;
use crate::runtime::Instant;
use crate::spec::Behavior;
use std::task::Waker;
use std::time::Duration;

/// Why another attempt was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// An open circuit breaker; its next probe in this long.
    CircuitOpen(Duration),
    /// A retry budget without room.
    BudgetExhausted,
    /// A bucket with fewer tokens than the cost.
    BucketEmpty,
    /// A bucket that waits for its refill, but will never cover the cost.
    NeverRefilled,
    /// The user's guard of this name.
    Guard(&'static str),
}

impl Stop {
    /// Whether a long-polling call backs off before it returns (the bucket's refusal, as the
    /// AWS SDKs' long-polling operations do).
    pub(crate) fn lingers(self) -> bool {
        self == Stop::BucketEmpty
    }

    /// What a call whose first attempt this stopped is refused with: the breaker's and the
    /// guards' stops (the only ones at the gate).
    pub(crate) fn refused(self) -> Option<Refused> {
        match self {
            Stop::CircuitOpen(retry_in) => Some(Refused::until(breaker::NAME, retry_in)),
            Stop::Guard(by) => Some(Refused::new(by)),
            Stop::BudgetExhausted | Stop::BucketEmpty | Stop::NeverRefilled => None,
        }
    }
}

/// What [`Chain::another`] decided.
pub(crate) enum Step {
    /// Admitted: the ticket holds what it took.
    Go,
    /// Ask again after this delay, from where it stopped (the ticket keeps what it holds).
    Wait(Duration, Resume),
    /// Refused; the ticket holds nothing.
    Refused(Stop),
}

/// Where [`Chain::another_again`] goes on after a [`Step::Wait`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resume {
    /// The bucket's refill, for the retry's cost.
    Refill,
    /// The guards that have not admitted the attempt yet.
    Guards,
    /// The guards, after a wait in the line of the first of them that has not admitted it.
    Line,
}

/// What joining a guard's line gave ([`Chain::join`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// The guard, asked again, admitted the attempt: it holds it, and nobody waits.
    Go,
    /// The guard, asked again, refused it: nobody waits.
    Refuse,
    /// In line, with this number.
    Wait(u64),
}

/// What [`Chain::gate`] decided.
pub(crate) enum Gate {
    /// Send the attempt.
    Go,
    /// Sleep this long, then ask again (the ticket keeps what it holds).
    Wait(Duration),
    /// Wait in the line of the first guard that has not admitted the attempt, at most this
    /// long (to the deadline), then ask again.
    Line(Duration),
    /// Refused; asking may go on from the stage given, if the call runs the attempt anyway.
    Refused(Stop, Stage),
    /// The wait asked for would reach the deadline.
    Late,
}

/// Where the gate starts asking.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// From the start: the breaker.
    Start,
    /// The guards, then the limiter.
    Guards,
    /// The limiter only.
    Limiter,
}

/// What the gate is told of the attempt it looks at.
pub(crate) struct Look<'d> {
    /// The attempt's number.
    pub(crate) number: u32,
    /// The attempt follows a throttling error (a send costs more in the classic behavior).
    pub(crate) after_throttle: bool,
    /// The deadline a wait may not reach (`None`: the call cannot end with the deadline's
    /// error, and waits for as long as it is told).
    pub(crate) deadline: Option<Instant>,
    /// The attempt keeps its place at the limiter: one that lost its send tokens to another
    /// caller looks again with priority (a hedge looks afresh each time).
    pub(crate) keeps_place: bool,
    /// Waits are skipped (an instant `testing` scope): send tokens are taken without waiting.
    pub(crate) skips_waits: bool,
    /// A draw from `U[0, 1)`, from the call's ambient.
    pub(crate) draw: &'d dyn Fn() -> f64,
}

/// The protections of one function, resolved once with its settings, in the order its calls'
/// attempts meet them. Its own bucket comes first (`repr(C)` keeps the order, and the
/// function's resolution holds the chain first): choosing between it and a shared bucket,
/// which every success does, then needs no address computed for it.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Chain {
    /// The function's own bucket, used when it names neither a `static` one nor a partition.
    pub(crate) own_bucket: TokenBucket,
    /// A user's `static` bucket or the partition's; `None`: the function's own.
    pub(crate) bucket: Option<&'static TokenBucket>,
    pub(crate) breaker: Option<Held<CircuitBreaker>>,
    pub(crate) budget: Option<Held<RetryBudget>>,
    /// A user's `static` limiter or the partition's; `None`: the function's own.
    pub(crate) limiter: Option<&'static RateLimiter>,
    /// The function's own limiter.
    pub(crate) own_limiter: RateLimiter,
    /// Adaptive mode: attempts pace their sends with the limiter.
    pub(crate) adaptive: bool,
    /// What a retry costs in the bucket: its own costs, or the 2026 behavior's in a bucket the
    /// runtime made (resolved with the function's settings).
    pub(crate) costs: Costs,
    /// The user's guards, in order.
    pub(crate) guards: Guards,
    /// Which send costs the limiter charges.
    pub(crate) behavior: Behavior,
    pub(crate) function: &'static str,
    pub(crate) partition: Option<&'static str>,
}

/// What a built-in protection is asked besides the bucket, as failsafe-go's policies are asked
/// before and after each execution. Each method defaults to "nothing to do".
trait Protection {
    /// Admission, before the bucket's cost is taken: may another attempt (a retry, or a hedge)
    /// follow? A refusal takes nothing.
    fn allows_another(&self, now: Instant) -> Result<(), Stop> {
        let _ = now;
        Ok(())
    }

    /// Admission: the bucket paid for another attempt, which will run unless the call ends
    /// first.
    fn another_admitted(&self, now: Instant) {
        let _ = now;
    }

    /// An attempt that held `ticket` ended, a success (`failure` is `None`) or a failure of a
    /// class; `first`: the call's first attempt to end. A change of the protection's state
    /// that the booking made is returned, for the caller to report.
    fn book(
        &self,
        now: Instant,
        ticket: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
    ) -> Option<Change>;
}

/// The built-in protections beside the bucket, listed once, in the order a call meets them:
/// `$each` runs once for each one the call has.
macro_rules! each {
    ($breaker:expr, $budget:expr, $limiter:expr, |$p:ident| $each:expr) => {{
        if let Some($p) = $breaker {
            $each
        }
        if let Some($p) = $budget {
            $each
        }
        if let Some($p) = $limiter {
            $each
        }
    }};
}

/// Whether the breaker and the budget allow another attempt now; out of line, and given them
/// rather than the chain, so that a call with neither only tests for them.
#[cold]
#[inline(never)]
fn others_allow(
    breaker: Option<&CircuitBreaker>,
    budget: Option<&RetryBudget>,
) -> Result<Instant, Stop> {
    let now = Instant::now();
    each!(breaker, budget, None::<&RateLimiter>, |p| p
        .allows_another(now)?);
    Ok(now)
}

impl Chain {
    /// The bucket the function draws from.
    pub(crate) fn bucket(&self) -> &TokenBucket {
        match self.bucket {
            Some(b) => b,
            None => &self.own_bucket,
        }
    }

    /// The rate limiter the function paces its sends with in adaptive mode.
    pub(crate) fn limiter(&self) -> &RateLimiter {
        match self.limiter {
            Some(l) => l,
            None => &self.own_limiter,
        }
    }

    /// The limiter, in adaptive mode only.
    fn pacing(&self) -> Option<&RateLimiter> {
        self.adaptive.then(|| self.limiter())
    }

    /// Admission of another attempt (a retry of attempt `number - 1`, or a hedge) after a
    /// failure of `class`: the breaker and the budget, then the bucket's cost, which is taken
    /// only when they allow it; then the user's guards. On `Go` and `Wait` the ticket holds
    /// what the attempt took.
    #[inline(always)]
    pub(crate) fn another(
        &self,
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
        ticket: &mut Ticket,
        draw: &dyn Fn() -> f64,
    ) -> Step {
        let now = if self.needs_clock() {
            match others_allow(self.breaker.as_deref(), self.budget.as_deref()) {
                Ok(now) => Some(now),
                Err(refusal) => return Step::Refused(refusal),
            }
        } else {
            None
        };
        let cost = self.costs.of(class);
        if !self.bucket().try_take_now(cost) {
            return if self.bucket().waits_when_empty() {
                self.refill(cost)
            } else {
                Step::Refused(Stop::BucketEmpty)
            };
        }
        self.admitted(now);
        *ticket = Ticket::paid(cost, kind, number, class);
        if self.guards.is_empty() {
            Step::Go
        } else {
            self.ask_guards(ticket, draw)
        }
    }

    /// Admission again, after a [`Step::Wait`]: the bucket's refill (the breaker and the budget
    /// allowed it before), or the guards that have not admitted it yet.
    pub(crate) fn another_again(
        &self,
        resume: Resume,
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
        ticket: &mut Ticket,
        draw: &dyn Fn() -> f64,
    ) -> Step {
        match resume {
            Resume::Guards | Resume::Line => self.ask_guards(ticket, draw),
            Resume::Refill => {
                let cost = self.costs.of(class);
                if !self.bucket().try_take_now(cost) {
                    return self.refill(cost);
                }
                self.admitted(self.needs_clock().then(Instant::now));
                *ticket = Ticket::paid(cost, kind, number, class);
                self.ask_guards(ticket, draw)
            }
        }
    }

    /// How long until the bucket covers `cost`.
    fn refill(&self, cost: u32) -> Step {
        match self.bucket().time_until(cost, Instant::now()) {
            Some(wait) => Step::Wait(wait, Resume::Refill),
            None => Step::Refused(Stop::NeverRefilled),
        }
    }

    /// The user's guards that have not admitted the attempt `ticket` is for.
    fn ask_guards(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) -> Step {
        if !self.pending(ticket) {
            return Step::Go;
        }
        match self.ask(ticket, draw) {
            Answer::Go(_) => Step::Go,
            // A wait in line is counted when it ends, as it may end early.
            Answer::Wait {
                delay, line: true, ..
            } => Step::Wait(delay, Resume::Line),
            Answer::Wait { delay, .. } => {
                ticket.waited(delay);
                Step::Wait(delay, Resume::Guards)
            }
            Answer::Refused(by) => {
                self.release(ticket, draw);
                Step::Refused(Stop::Guard(by))
            }
        }
    }

    fn admitted(&self, now: Option<Instant>) {
        if let Some(now) = now {
            each!(
                self.breaker.as_deref(),
                self.budget.as_deref(),
                None::<&RateLimiter>,
                |p| p.another_admitted(now)
            );
        }
    }

    fn needs_clock(&self) -> bool {
        self.breaker.is_some() || self.budget.is_some()
    }

    /// The gate, for the attempt `ticket` is for, from `from`: the breaker's leave (once per
    /// attempt), the guards not asked yet, and in adaptive mode the rate limiter's send token.
    /// A change of the breaker's state goes to `changed`.
    pub(crate) fn gate(
        &self,
        ticket: &mut Ticket,
        from: Stage,
        look: &Look<'_>,
        changed: impl FnOnce(Change),
    ) -> Gate {
        let gate = self.look(ticket, from, look, changed);
        if let Gate::Go = gate {
            ticket.sent();
        }
        gate
    }

    /// [`gate`](Self::gate)'s questions, before the attempt that passes them is sent.
    fn look(
        &self,
        ticket: &mut Ticket,
        from: Stage,
        look: &Look<'_>,
        changed: impl FnOnce(Change),
    ) -> Gate {
        if let Some(breaker) = self.breaker.as_deref()
            && from <= Stage::Start
            && ticket.pass == Pass::None
        {
            let (leave, change) = breaker.admit(Instant::now());
            if let Some(change) = change {
                changed(change);
            }
            match leave {
                Leave::Go(pass) => ticket.pass = pass,
                Leave::Refused(retry_in) => {
                    return Gate::Refused(Stop::CircuitOpen(retry_in), Stage::Guards);
                }
            }
        }
        if from <= Stage::Guards && self.pending(ticket) {
            let kind = if look.number <= 1 {
                AttemptKind::First
            } else {
                AttemptKind::Retry
            };
            begin(ticket, kind, look.number);
            match self.ask(ticket, look.draw) {
                Answer::Go(_) => {}
                // A wait in line lasts as long as the deadline allows, and is counted when it
                // ends, as it may end early.
                Answer::Wait {
                    delay, line: true, ..
                } => {
                    return match look.deadline {
                        None => Gate::Line(delay),
                        Some(d) => match d.checked_duration_since(Instant::now()) {
                            Some(left) if !left.is_zero() => Gate::Line(delay.min(left)),
                            _ => Gate::Late,
                        },
                    };
                }
                Answer::Wait { delay, .. } => {
                    if look
                        .deadline
                        .is_some_and(|d| crate::runtime::reaches(d, Instant::now(), delay))
                    {
                        return Gate::Late;
                    }
                    ticket.waited(delay);
                    return Gate::Wait(delay);
                }
                Answer::Refused(by) => {
                    return Gate::Refused(Stop::Guard(by), Stage::Limiter);
                }
            }
        }
        match self.pacing() {
            Some(limiter) if limiter.is_enabled() => self.send_token(limiter, ticket, look),
            // Before the first throttling response: no token to take, no clock to read.
            _ => {
                if look.keeps_place {
                    ticket.lost = false;
                }
                Gate::Go
            }
        }
    }

    /// One look at the rate limiter (enabled) for the attempt's send token. Instant retries
    /// wait for nothing, send tokens included.
    fn send_token(&self, limiter: &RateLimiter, ticket: &mut Ticket, look: &Look<'_>) -> Gate {
        let now = Instant::now();
        let cost = send_cost(look.number, look.after_throttle, self.behavior);
        let answer = if look.skips_waits {
            limiter.take_without_waiting(cost, now);
            Ok(None)
        } else {
            let lost = look.keeps_place && ticket.lost;
            limiter.try_send(cost, now, look.deadline, lost, look.draw)
        };
        let (gate, lost) = match answer {
            Ok(None) => (Gate::Go, false),
            Ok(Some(wait)) => (Gate::Wait(wait), true),
            Err(()) => (Gate::Late, false),
        };
        if look.keeps_place {
            ticket.lost = lost;
        }
        gate
    }

    /// A first attempt (or a polling repeat, which cost nothing) succeeded: the bucket's
    /// reward.
    #[inline]
    pub(crate) fn rewarded(&self) {
        self.bucket().reward();
    }

    /// The attempt holding `ticket` succeeded: its cost goes back, or for one that cost
    /// nothing, the bucket's reward.
    pub(crate) fn succeeded(&self, ticket: &mut Ticket) {
        let cost = std::mem::take(&mut ticket.cost);
        if cost > 0 {
            self.bucket().refund(cost);
        } else {
            self.bucket().reward();
        }
    }

    /// The attempt holding `ticket` ended, a success (`failure` is `None`) or a failure of a
    /// class (`first`: the call's first attempt to end): the breaker, the budget and the
    /// limiter count it, and the guards that admitted it are settled. Changes of the breaker's
    /// state go to `changed`.
    pub(crate) fn ended(
        &self,
        mut ticket: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
        draw: &dyn Fn() -> f64,
        mut changed: impl FnMut(Change),
    ) {
        let limiter = self.pacing();
        if self.breaker.is_some() || self.budget.is_some() || limiter.is_some() {
            let now = Instant::now();
            each!(
                self.breaker.as_deref(),
                self.budget.as_deref(),
                limiter,
                |p| {
                    if let Some(change) = p.book(now, ticket, first, failure) {
                        changed(change);
                    }
                }
            );
        }
        let outcome = match failure {
            Some(class) => GuardOutcome::Failure(class),
            None => GuardOutcome::Success,
        };
        self.settle(&mut ticket, outcome, draw);
    }

    /// Gives back what `ticket` holds for an attempt that will not run: its cost, and the
    /// guards' admissions (settled as cancelled).
    pub(crate) fn release(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) {
        let cost = std::mem::take(&mut ticket.cost);
        if cost > 0 {
            self.bucket().deposit(cost);
        }
        self.settle(ticket, GuardOutcome::Cancelled, draw);
    }

    /// The attempt holding `ticket` lost (a hedged call ended without it): its cost stays out,
    /// the guards that admitted it are told it was cancelled.
    pub(crate) fn lost(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) {
        self.settle(ticket, GuardOutcome::Cancelled, draw);
    }

    /// Joins the line of the first guard that has not admitted the attempt `ticket` is for,
    /// asking it again under the line's lock; a guard that admits it holds it. `None`: that
    /// guard keeps no line.
    pub(crate) fn join(
        &self,
        ticket: &mut Ticket,
        waker: &Waker,
        draw: &dyn Fn() -> f64,
    ) -> Option<Joined> {
        let guard = self.guards.at(ticket.guards)?;
        let line = guard.line()?;
        let cx = self.context(ticket, Stamp::NONE, draw);
        let mut answer = Admit::Refuse;
        let waits = || {
            answer = guard.admit(&cx);
            matches!(answer, Admit::Wait(_))
        };
        Some(match line.join(waits, waker) {
            Some(id) => Joined::Wait(id),
            None if answer == Admit::Go => {
                ticket.guards += 1;
                Joined::Go
            }
            None => Joined::Refuse,
        })
    }

    /// Whether the attempt `ticket` is for, in line as `id`, was handed its place (the guard
    /// then holds it); otherwise `waker` is the one to wake.
    pub(crate) fn granted(&self, ticket: &mut Ticket, id: u64, waker: &Waker) -> bool {
        let granted = self
            .guards
            .at(ticket.guards)
            .and_then(|g| g.line())
            .is_some_and(|line| line.granted(id, waker));
        if granted {
            ticket.guards += 1;
        }
        granted
    }

    /// The attempt `ticket` is for leaves the line it stood in as `id`; a place handed to it
    /// meanwhile is held (and settled with the attempt).
    pub(crate) fn leave(&self, ticket: &mut Ticket, id: u64) {
        let held = self
            .guards
            .at(ticket.guards)
            .and_then(|g| g.line())
            .is_some_and(|line| line.leave(id));
        if held {
            ticket.guards += 1;
        }
    }

    /// Whether the user's guards still have to be asked about the attempt `ticket` is for.
    fn pending(&self, ticket: &Ticket) -> bool {
        ticket.guards < self.guards.len()
    }

    /// Asks the guards that have not admitted the attempt `ticket` is for, in order, and keeps
    /// in the ticket how many admitted it. On a refusal the ticket holds no admission (the ones
    /// before were settled as cancelled).
    fn ask(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) -> Answer {
        let cx = self.context(ticket, Stamp::NONE, draw);
        let answer = self.guards.admit(ticket.guards, &cx);
        ticket.guards = match answer {
            Answer::Go(n) => n,
            Answer::Wait { admitted, .. } => admitted,
            Answer::Refused(_) => 0,
        };
        answer
    }

    /// Tells the guards that admitted the attempt `ticket` is for how it ended; the ticket then
    /// holds none of them.
    fn settle(&self, ticket: &mut Ticket, outcome: GuardOutcome, draw: &dyn Fn() -> f64) {
        let admitted = std::mem::take(&mut ticket.guards);
        if admitted == 0 {
            return;
        }
        let cx = self.context(ticket, ticket.started, draw);
        self.guards.settle(admitted, &cx, outcome);
    }

    /// What the guards are told of the attempt `ticket` is for, sent at `sent` (none in
    /// `admit`).
    fn context<'d>(
        &self,
        ticket: &Ticket,
        sent: Stamp,
        random: &'d dyn Fn() -> f64,
    ) -> GuardContext<'d> {
        GuardContext::of(
            ticket.of.kind(),
            ticket.number,
            self.function,
            self.partition,
            ticket.of.last_class(),
            Duration::from_millis(u64::from(ticket.waited_ms)),
            sent,
            random,
        )
    }
}

/// Sets `ticket` up for attempt `number` of `kind` at the gate, unless the guards were asked
/// about it already (some admitted it, or it waited): then it keeps what it holds, and asking
/// goes on from there.
fn begin(ticket: &mut Ticket, kind: AttemptKind, number: u32) {
    if ticket.guards == 0 && ticket.waited_ms == 0 {
        ticket.of = match kind {
            AttemptKind::First => Of::First,
            AttemptKind::Hedge => Of::Hedge,
            AttemptKind::Retry => Of::Repeat,
        };
        ticket.number = number;
    }
}

impl Protection for CircuitBreaker {
    fn allows_another(&self, now: Instant) -> Result<(), Stop> {
        if self.refuses(now) {
            Err(Stop::CircuitOpen(Duration::ZERO))
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
    fn allows_another(&self, now: Instant) -> Result<(), Stop> {
        if self.room(now) {
            Ok(())
        } else {
            Err(Stop::BudgetExhausted)
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

#[cfg(all(test, not(retry_loom)))]
mod tests {
    //! The order of the chain's questions, one protection against another. The calls that meet
    //! them are tested through the attribute and `Policy` by the workspace's tests.
    use super::*;
    use crate::protect::guard::{Admit, Guard};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A guard that answers `answers` in turn (then `Go`), and counts what it is told.
    struct Scripted {
        answers: [Admit; 2],
        asked: AtomicU32,
        settled: AtomicU32,
        cancelled: AtomicU32,
    }

    impl Scripted {
        const fn new(first: Admit, second: Admit) -> Scripted {
            Scripted {
                answers: [first, second],
                asked: AtomicU32::new(0),
                settled: AtomicU32::new(0),
                cancelled: AtomicU32::new(0),
            }
        }
    }

    impl Guard for Scripted {
        fn admit(&self, _: &GuardContext<'_>) -> Admit {
            let n = self.asked.fetch_add(1, Ordering::Relaxed) as usize;
            self.answers.get(n).copied().unwrap_or(Admit::Go)
        }

        fn settle(&self, _: &GuardContext<'_>, outcome: GuardOutcome) {
            self.settled.fetch_add(1, Ordering::Relaxed);
            if outcome == GuardOutcome::Cancelled {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
            }
        }

        fn name(&self) -> &'static str {
            "scripted"
        }
    }

    fn chain(guards: Guards) -> Chain {
        let own_bucket = TokenBucket::standard();
        Chain {
            costs: own_bucket.costs(),
            own_bucket,
            bucket: None,
            breaker: None,
            budget: None,
            limiter: None,
            own_limiter: RateLimiter::adaptive(),
            adaptive: false,
            guards,
            behavior: Behavior::Classic,
            function: "f",
            partition: None,
        }
    }

    fn half() -> f64 {
        0.5
    }

    /// The gate's look at a first attempt, with `deadline`.
    fn first_attempt(deadline: Option<Instant>) -> Look<'static> {
        Look {
            number: 1,
            after_throttle: false,
            deadline,
            keeps_place: true,
            skips_waits: false,
            draw: &half,
        }
    }

    #[test]
    fn a_budget_without_room_refuses_before_the_bucket_takes_its_cost() {
        static BUDGET: RetryBudget = RetryBudget::ratio(0.0).with_floor_per_sec(0);
        let mut c = chain(Guards::NONE);
        c.budget = Some(Held::Static(&BUDGET));
        let bucket = c.bucket();
        let mut ticket = Ticket::NONE;
        let step = c.another(
            ErrorClass::Transient,
            AttemptKind::Retry,
            2,
            &mut ticket,
            &half,
        );
        assert!(matches!(step, Step::Refused(Stop::BudgetExhausted)));
        assert_eq!(bucket.available(), 500);
        assert!(!ticket.holds());
    }

    #[test]
    fn a_guard_that_refuses_a_retry_gives_the_bucket_its_cost_back() {
        static REFUSES: Scripted = Scripted::new(Admit::Refuse, Admit::Go);
        let c = chain(Guards::NONE.with(&REFUSES));
        let bucket = c.bucket();
        let mut ticket = Ticket::NONE;
        let step = c.another(
            ErrorClass::Timeout,
            AttemptKind::Retry,
            2,
            &mut ticket,
            &half,
        );
        assert!(matches!(step, Step::Refused(Stop::Guard("scripted"))));
        assert_eq!(bucket.available(), 500, "the cost of 10 went back");
        assert!(!ticket.holds());
        assert_eq!(
            REFUSES.settled.load(Ordering::Relaxed),
            0,
            "it admitted nothing"
        );
    }

    #[test]
    fn a_guard_that_asks_to_wait_is_asked_again_holding_the_cost() {
        static WAITS: Scripted = Scripted::new(Admit::Wait(Duration::from_millis(20)), Admit::Go);
        static AFTER: Scripted = Scripted::new(Admit::Go, Admit::Go);
        let c = chain(Guards::NONE.with(&AFTER).with(&WAITS));
        let bucket = c.bucket();
        let mut ticket = Ticket::NONE;
        let step = c.another(
            ErrorClass::Transient,
            AttemptKind::Retry,
            2,
            &mut ticket,
            &half,
        );
        let Step::Wait(delay, resume) = step else {
            panic!("the second guard asked to wait");
        };
        assert_eq!(delay, Duration::from_millis(20));
        assert_eq!(
            bucket.available(),
            495,
            "the retry holds its cost through the wait"
        );
        assert_eq!(ticket.guards, 1, "the first guard admitted it");
        let step = c.another_again(
            resume,
            ErrorClass::Transient,
            AttemptKind::Retry,
            2,
            &mut ticket,
            &half,
        );
        assert!(matches!(step, Step::Go));
        assert_eq!(AFTER.asked.load(Ordering::Relaxed), 1, "not asked twice");
        assert_eq!(ticket.guards, 2);
        c.release(&mut ticket, &half);
        assert_eq!(bucket.available(), 500);
        assert_eq!(AFTER.cancelled.load(Ordering::Relaxed), 1);
        assert_eq!(WAITS.cancelled.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn the_gate_asks_the_guards_about_a_first_attempt_and_goes_on_after_a_refusal() {
        static REFUSES: Scripted = Scripted::new(Admit::Refuse, Admit::Go);
        let c = chain(Guards::NONE.with(&REFUSES));
        let look = first_attempt(None);
        let mut ticket = Ticket::NONE;
        let gate = c.gate(&mut ticket, Stage::Start, &look, |_| {});
        assert!(matches!(
            gate,
            Gate::Refused(Stop::Guard("scripted"), Stage::Limiter)
        ));
        // A call with no conversion for the refusal runs the attempt: the gate goes on from
        // the stage it was given, past the guards.
        let gate = c.gate(&mut ticket, Stage::Limiter, &look, |_| {});
        assert!(matches!(gate, Gate::Go));
        assert_eq!(REFUSES.asked.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_guard_wait_that_reaches_the_deadline_is_late() {
        static WAITS: Scripted = Scripted::new(Admit::Wait(Duration::from_secs(5)), Admit::Go);
        let c = chain(Guards::NONE.with(&WAITS));
        let look = first_attempt(Some(Instant::now() + Duration::from_secs(1)));
        let mut ticket = Ticket::NONE;
        let gate = c.gate(&mut ticket, Stage::Start, &look, |_| {});
        assert!(matches!(gate, Gate::Late));
    }
}
