//! The one list every attempt of a call meets the protections in, for both drivers (the
//! sequential loop and the hedged one): the built-in ones (breaker, budget, bucket, rate
//! limiter) and the user's guards ([`crate::Guard`]) are entries of one [`Chain`], asked in one
//! loop ([`Chain::ask`]), each entry by a direct call.
//!
//! The keys name entries at fixed places: the breaker's ([`BREAKER`]), the budget's
//! ([`BUDGET`]) and the bucket's ([`BUCKET`]) first, then the user's guards in the order
//! written ([`GUARDS`]), and the rate limiter's last. An attempt is asked about twice, each
//! time along the list:
//!
//! - **Admission** ([`Chain::another`], step 4 of a retry or a hedge, before its backoff): an
//!   open breaker or a budget without room refuses it; the bucket takes its cost (or, for a
//!   bucket that waits for its refill, says how long until it can), and the budget counts the
//!   retry it allowed; then the user's guards. What it holds is held through its backoff.
//! - **The gate** ([`Chain::gate`], step 1 of every attempt, just before it is sent): the
//!   breaker's leave (its pass: counted in the window, or the half-open probe); the user's
//!   guards for an attempt not admitted before (a first attempt, a polling repeat); in adaptive
//!   mode the rate limiter's send token (a waiter keeps its place in the ticket).
//!
//! What an admitted attempt holds (the bucket's cost, the breaker's pass, its place at the
//! limiter, the guards that admitted it) is its [`Ticket`], which goes from the admission to
//! the end. Its end is booked once, along the list again ([`Chain::ended`]): the breaker, the
//! budget and the limiter count the outcome, and the guards that admitted it are settled; a
//! success gives a retry's cost back or earns a first attempt's reward ([`Chain::succeeded`],
//! [`Chain::rewarded`]). An attempt that will not run gives back what it holds
//! ([`Chain::release`]). A change of a protection's state that an answer or a booking made
//! goes to the one hook the caller gives (`changed`).
//!
//! A new built-in protection is its file and its entry here; a user's protection is a
//! [`crate::Guard`], an entry at the guards' places.

use super::Change;
use super::breaker::{self, Admit as Leave, CircuitBreaker, Pass};
use super::bucket::{Costs, TokenBucket};
use super::budget::RetryBudget;
use super::guard::{
    Admit, AttemptKind, Guard, GuardContext, GuardOutcome, Guards, MAX_GUARDS, Names,
};
use super::limiter::{RateLimiter, send_cost};
use super::{Held, Of, Stamp, Ticket};
use crate::classify::ErrorClass;
use crate::runtime::Instant;
use crate::spec::Behavior;
use std::task::Waker;
use std::time::Duration;

/// The breaker's place (`breaker = ...`).
pub(crate) const BREAKER: usize = 0;
/// The budget's place (`budget = ...`).
pub(crate) const BUDGET: usize = 1;
/// The bucket's place (`bucket = ...`, or the function's own): every list has one.
pub(crate) const BUCKET: usize = 2;
/// The first of the user's guards' places (`guard = ...`); the rate limiter's place follows
/// the last guard.
pub(crate) const GUARDS: usize = 3;
/// The most places a list has: the three above, the guards, the limiter's.
const PLACES: usize = GUARDS + MAX_GUARDS + 1;

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
    pub(crate) fn refused(self) -> Option<super::guard::Refused> {
        match self {
            Stop::CircuitOpen(retry_in) => {
                Some(super::guard::Refused::until(breaker::NAME, retry_in))
            }
            Stop::Guard(by) => Some(super::guard::Refused::new(by)),
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

/// Where the gate starts asking: a place of the list.
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
    /// Whether waits are skipped (an instant `testing` scope): send tokens are then taken
    /// without waiting. Asked only where a wait comes up.
    pub(crate) skips_waits: &'d dyn Fn() -> bool,
    /// A draw from `U[0, 1)`, from the call's ambient.
    pub(crate) draw: &'d dyn Fn() -> f64,
}

/// One entry of the list: a protection at its place. Each kind is asked by a direct call.
pub(crate) enum Entry {
    /// A place no protection fills (a function without a breaker or a budget).
    Empty,
    /// A circuit breaker: refuses another attempt while open; gives each attempt its leave.
    Breaker(Held<CircuitBreaker>),
    /// A retry budget: refuses another attempt without room; counts requests and retries.
    Budget(Held<RetryBudget>),
    /// The function's own bucket, kept in the chain.
    OwnBucket,
    /// A user's `static` bucket or the partition's.
    Bucket(&'static TokenBucket),
    /// A user's guard.
    Guard(Held<dyn Guard>),
    /// The rate limiter (`None`: the function's own), which paces sends in adaptive mode only
    /// (`paces`), and is kept for its reports otherwise.
    Limiter {
        shared: Option<&'static RateLimiter>,
        paces: bool,
    },
}

impl core::fmt::Debug for Entry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Entry::Empty => f.write_str("Empty"),
            Entry::Breaker(b) => f.debug_tuple("Breaker").field(&**b).finish(),
            Entry::Budget(b) => f.debug_tuple("Budget").field(&**b).finish(),
            Entry::OwnBucket => f.write_str("OwnBucket"),
            Entry::Bucket(b) => f.debug_tuple("Bucket").field(b).finish(),
            Entry::Guard(g) => f.debug_tuple("Guard").field(&g.name()).finish(),
            Entry::Limiter { shared, paces } => f
                .debug_struct("Limiter")
                .field("shared", shared)
                .field("paces", paces)
                .finish(),
        }
    }
}

/// The question the list is asked.
#[derive(Clone, Copy)]
enum Point<'l, 'd> {
    /// Admission of another attempt (`kind`, number `number`) after a failure of `class`.
    Another {
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
    },
    /// The gate, just before the attempt is sent.
    Gate(&'l Look<'d>),
}

/// What the list answered ([`Chain::ask`]).
pub(crate) enum Asked {
    /// Every entry asked let the attempt go.
    Go,
    /// The bucket covers the cost after this refill.
    Refill(Duration),
    /// A guard asks to be asked again after `delay`, or with `line` to wait in its line for
    /// at most that long.
    Wait { delay: Duration, line: bool },
    /// The limiter's send token after this wait.
    Pace(Duration),
    /// A refusal; the guards that admitted the attempt before it were settled as cancelled.
    Refused(Stop),
    /// The limiter's wait would reach the deadline.
    Late,
}

/// The protections of one function, resolved once with its settings: one list, in the order
/// its calls' attempts meet them. Its own bucket comes first (`repr(C)` keeps the order, and
/// the function's resolution holds the chain first), and the bucket's entry is at a fixed
/// place: choosing between it and a shared bucket, which every success does, needs no address
/// computed for it.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Chain {
    /// The function's own bucket, which [`Entry::OwnBucket`] names.
    own_bucket: TokenBucket,
    /// The entries, at their places; those from `len` on are [`Entry::Empty`].
    list: [Entry; PLACES],
    /// The places in use: the limiter's is the last.
    len: u8,
    /// The first place admission asks (the breaker's, the budget's or the bucket's).
    first: u8,
    /// Admission asks the bucket alone: no breaker, budget or guard.
    bucket_alone: bool,
    /// The first place the gate asks (the breaker's, or the guards'): the budget and the
    /// bucket have nothing to say there.
    gate_first: u8,
    /// Some guard reads its attempts' time ([`Guard::timed`]): the gate stamps an attempt's
    /// send.
    timed: bool,
    /// No breaker, no budget and a limiter that does not pace: an attempt's end is booked by
    /// the guards that admitted it alone.
    guards_alone: bool,
    /// The function's own limiter, which a [`Entry::Limiter`] without `shared` names.
    own_limiter: RateLimiter,
    /// What a retry costs in the bucket: its own costs, or the 2026 behavior's in a bucket the
    /// runtime made (resolved with the function's settings).
    costs: Costs,
    /// Which send costs the limiter charges.
    behavior: Behavior,
    /// The function's names, as its guards' contexts tell them.
    pub(crate) names: Names,
}

impl Chain {
    /// The list of a function called `function`: its own bucket (whose retries cost `costs`)
    /// and its own limiter, which does not pace sends (`behavior` says which send costs it
    /// would charge).
    pub(crate) fn new(
        function: &'static str,
        partition: Option<&'static str>,
        costs: Costs,
        behavior: Behavior,
    ) -> Chain {
        let mut list = core::array::from_fn(|_| Entry::Empty);
        list[BUCKET] = Entry::OwnBucket;
        list[GUARDS] = Entry::Limiter {
            shared: None,
            paces: false,
        };
        Chain {
            own_bucket: TokenBucket::standard(),
            list,
            len: GUARDS as u8 + 1,
            // Computed from the list by `derived`.
            first: 0,
            bucket_alone: false,
            gate_first: 0,
            timed: false,
            guards_alone: false,
            own_limiter: RateLimiter::adaptive(),
            costs,
            behavior,
            names: Names {
                function,
                partition,
            },
        }
        .derived()
    }

    /// The list with what the hot paths read of it computed again from its entries: the first
    /// place admission asks, the gate's first, and whether the bucket alone, or the guards
    /// alone, answer; whether a guard is timed.
    fn derived(mut self) -> Chain {
        let entries = &self.list[..usize::from(self.len)];
        let empty = |place: usize| matches!(self.list[place], Entry::Empty);
        self.first = entries
            .iter()
            .position(|e| !matches!(e, Entry::Empty))
            .unwrap_or(BUCKET) as u8;
        self.bucket_alone =
            usize::from(self.first) == BUCKET && usize::from(self.len) == GUARDS + 1;
        self.gate_first = if empty(BREAKER) { GUARDS } else { BREAKER } as u8;
        self.guards_alone = empty(BREAKER)
            && empty(BUDGET)
            && !matches!(entries.last(), Some(Entry::Limiter { paces: true, .. }));
        self.timed = entries
            .iter()
            .any(|e| matches!(e, Entry::Guard(g) if g.timed()));
        self
    }

    /// The entry at `place` (one of [`BREAKER`], [`BUDGET`], [`BUCKET`]).
    pub(crate) fn with(mut self, place: usize, entry: Entry) -> Chain {
        self.list[place] = entry;
        self.derived()
    }

    /// The user's guards at their places, in order; the limiter's place follows them.
    pub(crate) fn with_guards(mut self, guards: &Guards) -> Chain {
        let limiter = core::mem::replace(&mut self.list[self.len as usize - 1], Entry::Empty);
        let mut place = GUARDS;
        for guard in guards.held() {
            self.list[place] = Entry::Guard(guard.clone());
            place += 1;
        }
        self.list[place] = limiter;
        self.len = place as u8 + 1;
        self.derived()
    }

    /// The rate limiter at its place: a shared one (`None`: the function's own), pacing sends
    /// (adaptive mode) or not.
    pub(crate) fn with_limiter(
        mut self,
        shared: Option<&'static RateLimiter>,
        paces: bool,
    ) -> Chain {
        self.list[self.len as usize - 1] = Entry::Limiter { shared, paces };
        self.derived()
    }

    /// The entries in use, at their places.
    fn entries(&self) -> &[Entry] {
        &self.list[..usize::from(self.len)]
    }

    /// The bucket the function draws from.
    pub(crate) fn bucket(&self) -> &TokenBucket {
        match self.list[BUCKET] {
            Entry::Bucket(b) => b,
            _ => &self.own_bucket,
        }
    }

    /// The rate limiter at its place, and whether it paces sends.
    fn limiter_entry(&self) -> (&RateLimiter, bool) {
        match self.entries().last() {
            Some(Entry::Limiter {
                shared: Some(l),
                paces,
            }) => (l, *paces),
            Some(Entry::Limiter { paces, .. }) => (&self.own_limiter, *paces),
            _ => (&self.own_limiter, false),
        }
    }

    /// The rate limiter the function paces its sends with in adaptive mode.
    pub(crate) fn limiter(&self) -> &RateLimiter {
        self.limiter_entry().0
    }

    /// The limiter, in adaptive mode only.
    pub(crate) fn pacing(&self) -> Option<&RateLimiter> {
        let (limiter, paces) = self.limiter_entry();
        paces.then_some(limiter)
    }

    /// The user's guard at `i` of them.
    fn guard(&self, i: u8) -> Option<&dyn Guard> {
        match self.list.get(GUARDS + usize::from(i)) {
            Some(Entry::Guard(g)) => Some(&**g),
            _ => None,
        }
    }

    /// Admission of another attempt (a retry of attempt `number - 1`, or a hedge) after a
    /// failure of `class`: along the list from its first entry (the breaker and the budget,
    /// then the bucket's cost, which is taken only when they allow it; then the user's
    /// guards). On `Go` and `Wait` the ticket holds what the attempt took.
    #[inline(always)]
    pub(crate) fn another(
        &self,
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
        ticket: &mut Ticket,
        draw: &dyn Fn() -> f64,
    ) -> Step {
        // A list whose admission is the bucket's alone (no breaker, budget or guard) is
        // answered by that one entry, without walking the list.
        if self.bucket_alone {
            return match self.pay(self.bucket(), class, kind, number, ticket) {
                Ok(()) => Step::Go,
                Err(asked) => self.step(asked, ticket, draw),
            };
        }
        let point = Point::Another {
            class,
            kind,
            number,
        };
        let asked = self.ask(point, usize::from(self.first), ticket, draw, &mut |_| {});
        self.step(asked, ticket, draw)
    }

    /// Admission again, after a [`Step::Wait`]: from the bucket (its refill; the breaker and
    /// the budget allowed it before), or from the guards that have not admitted it yet.
    pub(crate) fn another_again(
        &self,
        resume: Resume,
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
        ticket: &mut Ticket,
        draw: &dyn Fn() -> f64,
    ) -> Step {
        let from = match resume {
            Resume::Refill => BUCKET,
            Resume::Guards | Resume::Line => GUARDS,
        };
        let point = Point::Another {
            class,
            kind,
            number,
        };
        let asked = self.ask(point, from, ticket, draw, &mut |_| {});
        self.step(asked, ticket, draw)
    }

    /// What admission answers for what the list answered.
    #[inline(always)]
    fn step(&self, asked: Asked, ticket: &mut Ticket, draw: &dyn Fn() -> f64) -> Step {
        match asked {
            Asked::Go => Step::Go,
            Asked::Refill(wait) => Step::Wait(wait, Resume::Refill),
            // A wait in line is counted when it ends, as it may end early.
            Asked::Wait { delay, line: true } => Step::Wait(delay, Resume::Line),
            Asked::Wait { delay, .. } => {
                ticket.waited(delay);
                Step::Wait(delay, Resume::Guards)
            }
            Asked::Refused(stop) => {
                if let Stop::Guard(_) = stop {
                    self.release(ticket, draw);
                }
                Step::Refused(stop)
            }
            // Admission does not ask the limiter.
            Asked::Pace(_) | Asked::Late => Step::Go,
        }
    }

    /// Whether the gate is the user's guards alone (no breaker, a limiter that does not
    /// pace): then [`gate_guards`](Self::gate_guards) is the whole gate of an attempt.
    pub(crate) fn guards_alone(&self) -> bool {
        self.guards_alone
    }

    /// The gate of a list whose gate is its guards alone, for attempt `number`: each guard
    /// that has not admitted the attempt is asked in turn, as [`ask`](Self::ask) asks them.
    /// `Ok`: all admitted it (the ticket holds them, and its send is stamped if a guard reads
    /// its time); else what the list answered, which [`answer`](Self::answer) acts on. It
    /// reads nothing else of the attempt, so the caller makes no [`Look`] for an attempt that
    /// goes.
    #[inline(always)]
    pub(crate) fn gate_guards(
        &self,
        ticket: &mut Ticket,
        number: u32,
        draw: &dyn Fn() -> f64,
    ) -> Result<(), Asked> {
        let mut cx = None;
        while let Some(guard) = self.guard(ticket.guards) {
            let cx = cx.get_or_insert_with(|| {
                begin(ticket, AttemptKind::at_gate(number), number);
                self.context(ticket, Stamp::NONE, draw)
            });
            if let Some(asked) = self.ask_guard(guard, ticket, cx) {
                return Err(asked);
            }
        }
        if self.timed {
            ticket.sent();
        }
        Ok(())
    }

    /// The gate, for the attempt `ticket` is for, from `from`, along the list: the breaker's
    /// leave (once per attempt), the guards not asked yet, and in adaptive mode the rate
    /// limiter's send token. A change of the breaker's state goes to `changed`. (A list of
    /// guards alone is asked by [`gate_guards`](Self::gate_guards) first, where the attempt's
    /// [`Look`] is not made.)
    pub(crate) fn gate(
        &self,
        ticket: &mut Ticket,
        from: Stage,
        look: &Look<'_>,
        mut changed: impl FnMut(Change),
    ) -> Gate {
        let from = match from {
            Stage::Start => usize::from(self.gate_first),
            Stage::Guards => GUARDS,
            Stage::Limiter => usize::from(self.len) - 1,
        };
        let asked = self.ask(Point::Gate(look), from, ticket, look.draw, &mut changed);
        self.answer(asked, ticket, look)
    }

    /// What the gate answers for what the list `asked` about the attempt `ticket` is for.
    pub(crate) fn answer(&self, asked: Asked, ticket: &mut Ticket, look: &Look<'_>) -> Gate {
        match asked {
            // The gate does not ask the bucket.
            Asked::Go | Asked::Refill(_) => self.go(ticket),
            Asked::Pace(wait) => Gate::Wait(wait),
            Asked::Late => Gate::Late,
            // A wait in line lasts as long as the deadline allows, and is counted when it
            // ends, as it may end early.
            Asked::Wait { delay, line: true } => match look.deadline {
                None => Gate::Line(delay),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Gate::Line(delay.min(left)),
                    _ => Gate::Late,
                },
            },
            Asked::Wait { delay, .. } => {
                if look
                    .deadline
                    .is_some_and(|d| crate::runtime::reaches(d, Instant::now(), delay))
                {
                    return Gate::Late;
                }
                ticket.waited(delay);
                Gate::Wait(delay)
            }
            Asked::Refused(stop @ Stop::CircuitOpen(_)) => Gate::Refused(stop, Stage::Guards),
            Asked::Refused(stop) => Gate::Refused(stop, Stage::Limiter),
        }
    }

    /// The attempt goes: its send is stamped if a guard reads its time.
    fn go(&self, ticket: &mut Ticket) -> Gate {
        if self.timed {
            ticket.sent();
        }
        Gate::Go
    }

    /// One guard asked about the attempt `ticket` is for: `None` if it admits it (the ticket
    /// then holds it), else what the list answers (a wait, or a refusal, which cancels the
    /// guards that admitted it before).
    #[inline(always)]
    fn ask_guard(
        &self,
        guard: &dyn Guard,
        ticket: &mut Ticket,
        cx: &GuardContext<'_>,
    ) -> Option<Asked> {
        match guard.admit(cx) {
            Admit::Go => {
                ticket.guards += 1;
                None
            }
            Admit::Wait(delay) => Some(Asked::Wait {
                delay: delay.max(Duration::from_millis(1)),
                line: guard.line().is_some(),
            }),
            Admit::Refuse => {
                let admitted = std::mem::take(&mut ticket.guards);
                self.settle_guards(admitted, cx, GuardOutcome::Cancelled);
                Some(Asked::Refused(Stop::Guard(guard.name())))
            }
        }
    }

    /// The list asked `point` about the attempt `ticket` is for, from the place `from` on, each
    /// entry in turn until one does not let it go. Admission stops before the limiter's place.
    #[inline(always)]
    fn ask(
        &self,
        point: Point<'_, '_>,
        from: usize,
        ticket: &mut Ticket,
        draw: &dyn Fn() -> f64,
        changed: &mut dyn FnMut(Change),
    ) -> Asked {
        let end = match point {
            Point::Another { .. } => usize::from(self.len) - 1,
            Point::Gate(_) => usize::from(self.len),
        };
        // The clock, read once when an entry first needs it.
        let mut now = None;
        let mut clock = || *now.get_or_insert_with(Instant::now);
        // The guards' context, made when the first guard not asked yet is asked.
        let mut cx = None;
        let mut place = from;
        while place < end {
            let entry = &self.list[place];
            match (entry, point) {
                (Entry::Breaker(b), Point::Another { .. }) if b.refuses(clock()) => {
                    return Asked::Refused(Stop::CircuitOpen(Duration::ZERO));
                }
                (Entry::Breaker(b), Point::Gate(_)) if ticket.pass == Pass::None => {
                    let (leave, change) = b.admit(Instant::now());
                    if let Some(change) = change {
                        changed(Change::Breaker(change));
                    }
                    match leave {
                        Leave::Go(pass) => ticket.pass = pass,
                        Leave::Refused(retry_in) => {
                            return Asked::Refused(Stop::CircuitOpen(retry_in));
                        }
                    }
                }
                (Entry::Budget(b), Point::Another { .. }) if !b.room(clock()) => {
                    return Asked::Refused(Stop::BudgetExhausted);
                }
                (
                    entry @ (Entry::OwnBucket | Entry::Bucket(_)),
                    Point::Another {
                        class,
                        kind,
                        number,
                    },
                ) => {
                    let bucket = match entry {
                        Entry::Bucket(b) => b,
                        _ => &self.own_bucket,
                    };
                    if let Err(asked) = self.pay(bucket, class, kind, number, ticket) {
                        return asked;
                    }
                    // The budget before the bucket counts the retry it allowed.
                    if let Entry::Budget(budget) = &self.list[BUDGET] {
                        budget.count_retry(clock());
                    }
                }
                (Entry::Guard(guard), point) => {
                    let i = (place - GUARDS) as u8;
                    if i >= ticket.guards {
                        let cx = cx.get_or_insert_with(|| {
                            if let Point::Gate(look) = point {
                                let n = look.number;
                                begin(ticket, AttemptKind::at_gate(n), n);
                            }
                            self.context(ticket, Stamp::NONE, draw)
                        });
                        if let Some(asked) = self.ask_guard(&**guard, ticket, cx) {
                            return asked;
                        }
                    }
                }
                (Entry::Limiter { shared, paces }, Point::Gate(look)) => {
                    let limiter = shared.unwrap_or(&self.own_limiter);
                    return match paces {
                        true if limiter.is_enabled() => self.send_token(limiter, ticket, look),
                        // Before the first throttling response: no token to take, no clock to
                        // read.
                        _ => {
                            if look.keeps_place {
                                ticket.lost = false;
                            }
                            Asked::Go
                        }
                    };
                }
                _ => {}
            }
            place += 1;
        }
        Asked::Go
    }

    /// The bucket's entry at admission: the retry's cost taken from `bucket` (the ticket then
    /// holds it), or why not.
    #[inline(always)]
    fn pay(
        &self,
        bucket: &TokenBucket,
        class: ErrorClass,
        kind: AttemptKind,
        number: u32,
        ticket: &mut Ticket,
    ) -> Result<(), Asked> {
        let cost = self.costs.of(class);
        if !bucket.try_take_now(cost) {
            return Err(if bucket.waits_when_empty() {
                match bucket.time_until(cost, Instant::now()) {
                    Some(wait) => Asked::Refill(wait),
                    None => Asked::Refused(Stop::NeverRefilled),
                }
            } else {
                Asked::Refused(Stop::BucketEmpty)
            });
        }
        *ticket = Ticket::paid(cost, kind, number, class);
        Ok(())
    }

    /// One look at the rate limiter (enabled) for the attempt's send token. Instant retries
    /// wait for nothing, send tokens included.
    fn send_token(&self, limiter: &RateLimiter, ticket: &mut Ticket, look: &Look<'_>) -> Asked {
        let now = Instant::now();
        let cost = send_cost(look.number, look.after_throttle, self.behavior);
        let answer = if (look.skips_waits)() {
            limiter.take_without_waiting(cost, now);
            Ok(None)
        } else {
            let lost = look.keeps_place && ticket.lost;
            limiter.try_send(cost, now, look.deadline, lost, look.draw)
        };
        let (asked, lost) = match answer {
            Ok(None) => (Asked::Go, false),
            Ok(Some(wait)) => (Asked::Pace(wait), true),
            Err(()) => (Asked::Late, false),
        };
        if look.keeps_place {
            ticket.lost = lost;
        }
        asked
    }

    /// A first attempt (or a polling repeat, which cost nothing) succeeded: the bucket's
    /// reward; `false` if the bucket was full.
    #[inline]
    pub(crate) fn rewarded(&self) -> bool {
        self.bucket().reward()
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
    /// class (`first`: the call's first attempt to end): along the list, the breaker, the
    /// budget and the limiter count it, and the guards that admitted it are settled. Every
    /// change of state this makes (the breaker's, the limiter's rate, a guard's own) goes to
    /// `changed`.
    #[inline(always)]
    pub(crate) fn ended(
        &self,
        mut ticket: Ticket,
        first: bool,
        failure: Option<ErrorClass>,
        draw: &dyn Fn() -> f64,
        changed: &dyn Fn(Change),
    ) {
        let admitted = std::mem::take(&mut ticket.guards);
        let outcome = match failure {
            Some(class) => GuardOutcome::Failure(class),
            None => GuardOutcome::Success,
        };
        if self.guards_alone {
            if admitted > 0 {
                let cx = self
                    .context(&ticket, ticket.started, draw)
                    .reporting(changed);
                self.settle_guards(admitted, &cx, outcome);
            }
            return;
        }
        self.ended_along(ticket, admitted, outcome, first, failure, draw, changed);
    }

    /// [`ended`](Self::ended) along a list with more than guards: each place in turn.
    #[allow(clippy::too_many_arguments)]
    fn ended_along(
        &self,
        ticket: Ticket,
        admitted: u8,
        outcome: GuardOutcome,
        first: bool,
        failure: Option<ErrorClass>,
        draw: &dyn Fn() -> f64,
        changed: &dyn Fn(Change),
    ) {
        let mut now = None;
        let mut clock = || *now.get_or_insert_with(Instant::now);
        let mut cx = None;
        // The first place that books an end: the breaker's or the budget's, else the guards'.
        let from = match usize::from(self.first) {
            BUCKET => GUARDS,
            first => first,
        };
        for (place, entry) in self.entries().iter().enumerate().skip(from) {
            match entry {
                Entry::Breaker(b) => {
                    let failed = breaker::counts_as_failure(failure);
                    if let Some(change) = b.record(clock(), ticket.pass, failed) {
                        changed(Change::Breaker(change));
                    }
                }
                Entry::Budget(b) => {
                    let now = clock();
                    if first {
                        b.on_request(now);
                    }
                    b.on_outcome(failure);
                }
                Entry::Guard(g) if place - GUARDS < usize::from(admitted) => {
                    let cx = cx.get_or_insert_with(|| {
                        self.context(&ticket, ticket.started, draw)
                            .reporting(changed)
                    });
                    g.settle(cx, outcome);
                }
                Entry::Limiter {
                    shared,
                    paces: true,
                } => {
                    let limiter = shared.unwrap_or(&self.own_limiter);
                    let throttled = failure == Some(ErrorClass::Throttling);
                    if let Some(rate) = limiter.record(clock(), throttled) {
                        changed(Change::Rate(rate));
                    }
                }
                _ => {}
            }
        }
    }

    /// Gives back what `ticket` holds for an attempt that will not run: its cost, and the
    /// guards' admissions (settled as cancelled).
    pub(crate) fn release(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) {
        let cost = std::mem::take(&mut ticket.cost);
        if cost > 0 {
            self.bucket().deposit(cost);
        }
        self.cancel(ticket, draw);
    }

    /// The attempt holding `ticket` lost (a hedged call ended without it): its cost stays out,
    /// the guards that admitted it are told it was cancelled.
    pub(crate) fn lost(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) {
        self.cancel(ticket, draw);
    }

    /// Tells the guards that admitted the attempt `ticket` is for that it was cancelled; the
    /// ticket then holds none of them.
    fn cancel(&self, ticket: &mut Ticket, draw: &dyn Fn() -> f64) {
        let admitted = std::mem::take(&mut ticket.guards);
        if admitted == 0 {
            return;
        }
        let cx = self.context(ticket, ticket.started, draw);
        self.settle_guards(admitted, &cx, GuardOutcome::Cancelled);
    }

    /// Tells the first `admitted` guards how the attempt `cx` describes ended.
    fn settle_guards(&self, admitted: u8, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        for i in 0..admitted {
            if let Some(guard) = self.guard(i) {
                guard.settle(cx, outcome);
            }
        }
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
        let guard = self.guard(ticket.guards)?;
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
            .guard(ticket.guards)
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
            .guard(ticket.guards)
            .and_then(|g| g.line())
            .is_some_and(|line| line.leave(id));
        if held {
            ticket.guards += 1;
        }
    }

    /// What the guards are told of the attempt `ticket` is for, sent at `sent` (none in
    /// `admit`).
    fn context<'d>(
        &'d self,
        ticket: &Ticket,
        sent: Stamp,
        random: &'d dyn Fn() -> f64,
    ) -> GuardContext<'d> {
        let ticket = Ticket {
            started: sent,
            ..*ticket
        };
        GuardContext::of(ticket, &self.names, random)
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
        let costs = TokenBucket::standard().costs();
        Chain::new("f", None, costs, Behavior::Classic).with_guards(&guards)
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
            skips_waits: &|| false,
            draw: &half,
        }
    }

    #[test]
    fn a_budget_without_room_refuses_before_the_bucket_takes_its_cost() {
        static EMPTY: RetryBudget = RetryBudget::ratio(0.0).with_floor_per_sec(0);
        let c = chain(Guards::NONE).with(BUDGET, Entry::Budget(Held::Static(&EMPTY)));
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
    fn a_refusal_cancels_the_guards_before_it_and_asks_none_after() {
        static BEFORE: Scripted = Scripted::new(Admit::Go, Admit::Go);
        static REFUSES: Scripted = Scripted::new(Admit::Refuse, Admit::Go);
        static AFTER: Scripted = Scripted::new(Admit::Go, Admit::Go);
        let c = chain(Guards::NONE.with(&BEFORE).with(&REFUSES).with(&AFTER));
        let mut ticket = Ticket::NONE;
        let gate = c.gate(&mut ticket, Stage::Start, &first_attempt(None), |_| {});
        assert!(matches!(gate, Gate::Refused(Stop::Guard("scripted"), _)));
        assert_eq!(BEFORE.cancelled.load(Ordering::Relaxed), 1);
        assert_eq!(
            REFUSES.settled.load(Ordering::Relaxed),
            0,
            "it admitted nothing"
        );
        assert_eq!(
            AFTER.asked.load(Ordering::Relaxed),
            0,
            "not asked after a refusal"
        );
        assert!(!ticket.holds());
    }

    #[test]
    fn a_wait_is_at_least_a_millisecond() {
        static WAITS: Scripted = Scripted::new(Admit::Wait(Duration::ZERO), Admit::Go);
        let c = chain(Guards::NONE.with(&WAITS));
        let mut ticket = Ticket::NONE;
        let gate = c.gate(&mut ticket, Stage::Start, &first_attempt(None), |_| {});
        assert!(matches!(gate, Gate::Wait(d) if d == Duration::from_millis(1)));
    }

    #[test]
    fn the_keys_name_entries_at_fixed_places_and_the_limiter_follows_the_guards() {
        static GUARD: Scripted = Scripted::new(Admit::Go, Admit::Go);
        static HALF: RetryBudget = RetryBudget::ratio(0.5);
        let c = chain(Guards::NONE.with(&GUARD).with(&GUARD))
            .with(BUDGET, Entry::Budget(Held::Static(&HALF)));
        assert!(matches!(c.list[BREAKER], Entry::Empty));
        assert!(matches!(c.list[BUDGET], Entry::Budget(_)));
        assert!(matches!(c.list[BUCKET], Entry::OwnBucket));
        assert!(matches!(c.list[GUARDS], Entry::Guard(_)));
        assert!(matches!(c.list[GUARDS + 1], Entry::Guard(_)));
        assert!(matches!(
            c.list[GUARDS + 2],
            Entry::Limiter { paces: false, .. }
        ));
        assert_eq!(c.entries().len(), GUARDS + 3);
        assert_eq!(usize::from(c.first), BUDGET);
        assert!(c.pacing().is_none());
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
