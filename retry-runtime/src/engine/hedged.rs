//! The loop of a hedged function (`hedge_after`): the same steps as `retry_loop!`, with more
//! than one attempt of a call in flight.
//!
//! An attempt that has not answered within the hedge delay gets a copy beside it (a hedge),
//! up to `max_in_flight` at once and `max_attempts` in all, hedges and retries counted
//! together as gRFC A6 counts them. The first success wins and every other attempt is dropped
//! at that moment. A failure while others run lets the next hedge start at once (gRPC's rule,
//! grpc-java #10145); a permanent failure ends the call. When the last attempt in flight fails,
//! the call decides what follows exactly as the sequential loop does ([`Call::settle`]):
//! the retry's cost, its backoff or the server's hint, the deadline.
//!
//! Hedges are paid for: each is admitted as a retry is, through the same steps in the same
//! order (`Protections::admit_another`: an open breaker or a budget without room refuses it,
//! then the bucket's retry cost, given back if the hedge wins; then the guards, `guards::ask`,
//! where a guard that asks to wait postpones the hedge), then passes the same gate (the
//! breaker's leave, and in adaptive mode a send token: a hedge waits for none, it starts later
//! holding its ticket). A hedge that loses or fails keeps its cost out, so an empty bucket
//! stops hedging and a slow dependency cannot double the load. Running out stops only further
//! hedges, never one in flight. A server's hint stops them too. Dropping the call drops every
//! attempt and gives back every cost they held, and a waiting hedge's.
//!
//! Attempts live in the caller's future: two in place (the attempt and one hedge, the default
//! `max_in_flight`), more boxed. A call whose first attempt answers before the hedge delay
//! allocates nothing, and one that answers on its first poll registers no timer.

use super::{Call, OnFailure, OnStop, RetryResult, SendToken, Settled, Timer, Timing, decide};
use crate::classify::{ErrorClass, TimeoutKind};
use crate::engine::frame::{self, Frame};
use crate::engine::scope::{self, Around};
use crate::engine::site::Resolved;
use crate::hedge::Latency;
use crate::hedge::budget::Spend;
use crate::observe;
use crate::observe::event::RetryEvent;
use crate::observe::trace::Trace;
use crate::protect::Ticket;
use crate::protect::chain::{Gate, Look, Resume, Stage, Step};
use crate::protect::guard::AttemptKind;
use crate::runtime::{AsyncRuntime, Instant, Sleep};
use crate::spec::{HedgeSpec, Hedging, Settings};
use core::future::{Future, poll_fn};
use core::pin::{Pin, pin};
use core::task::{Context, Poll, ready};
use decide::AfterError;
use std::time::Duration;

pin_project_lite::pin_project! {
    /// One attempt of a hedged call in flight, polled with a frame of its own published (its
    /// number and cutoff; the call's id and deadline).
    struct Flight<'a, A> {
        frame: Frame<'a>,
        trace: Trace,
        meta: Meta,
        #[pin]
        attempt: A,
    }
}

/// What the call keeps of an attempt in flight.
#[derive(Clone, Copy)]
struct Meta {
    /// When it started, for `hedge_after = "pNN"` (its latency) and for a hedge.
    started: Option<Instant>,
    /// What it holds: a hedge's or a retry's cost, and its breaker pass.
    ticket: Ticket,
}

/// An attempt that ended.
struct Ended<O> {
    meta: Meta,
    number: u32,
    /// When its timer was set to cut it off, if it had one (see [`limit_kind`]).
    cutoff: Option<Instant>,
    /// The invocation id, if its body drew it.
    id: [u64; 2],
    /// What its frame passes on to the call's: a call nested in it retried and still failed,
    /// or gave up; it wrote the call's idempotency key.
    marks: u32,
    /// Its span, still open.
    trace: Trace,
    out: O,
}

/// The attempts in flight: two in place, more boxed. Dropped with the call (its caller
/// dropped it, or it panicked), it gives back the tokens its attempts held. (A hedge admitted
/// but waiting for its send token holds the call's own ticket, which the call gives back.)
struct Flights<'s, 'a, A> {
    first: Pin<&'s mut Option<Flight<'a, A>>>,
    second: Pin<&'s mut Option<Flight<'a, A>>>,
    more: Vec<Pin<Box<Option<Flight<'a, A>>>>>,
    count: u32,
    /// The function's resolution, whose bucket gets the costs back.
    r: &'a Resolved,
}

impl<A> Drop for Flights<'_, '_, A> {
    fn drop(&mut self) {
        if self.count == 0 {
            // Ended (or cancelled): nothing is held.
            return;
        }
        let chain = self.r.chain();
        let draw = || scope::around().uniform();
        for mut ticket in self.tickets() {
            chain.release(&mut ticket, &draw);
        }
    }
}

impl<'a, A> Flights<'_, 'a, A> {
    /// The attempts in flight.
    fn in_flight(&self) -> impl Iterator<Item = &Flight<'a, A>> {
        let more = self.more.iter().map(|s| s.as_ref().get_ref());
        [
            self.first.as_ref().get_ref(),
            self.second.as_ref().get_ref(),
        ]
        .into_iter()
        .chain(more)
        .filter_map(Option::as_ref)
    }

    /// The tickets of the attempts in flight.
    fn tickets(&self) -> impl Iterator<Item = Ticket> + '_ {
        self.in_flight().map(|f| f.meta.ticket)
    }
}

impl<'a, A: Future> Flights<'_, 'a, A> {
    fn start(&mut self, flight: Flight<'a, A>) {
        self.count += 1;
        if self.first.is_none() {
            self.first.set(Some(flight));
        } else if self.second.is_none() {
            self.second.set(Some(flight));
        } else if let Some(slot) = self.more.iter_mut().find(|s| s.is_none()) {
            slot.set(Some(flight));
        } else {
            self.more.push(Box::pin(Some(flight)));
        }
    }

    /// Polls every attempt in flight; the first that ended leaves its slot.
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<Ended<A::Output>> {
        let mut ended = poll_slot(self.first.as_mut(), cx);
        if ended.is_pending() {
            ended = poll_slot(self.second.as_mut(), cx);
        }
        if ended.is_pending() {
            for slot in &mut self.more {
                ended = poll_slot(slot.as_mut(), cx);
                if ended.is_ready() {
                    break;
                }
            }
        }
        if ended.is_ready() {
            self.count -= 1;
        }
        ended
    }

    /// Every frame in flight, for the call's invocation id.
    fn frames(&self) -> impl Iterator<Item = &Frame<'a>> {
        self.in_flight().map(|f| &f.frame)
    }

    /// Drops every attempt in flight: they lost, and their costs stay out; the guards that
    /// admitted them are told they were cancelled.
    fn cancel(&mut self) {
        let chain = self.r.chain();
        let draw = || scope::around().uniform();
        for mut ticket in self.tickets() {
            chain.lost(&mut ticket, &draw);
        }
        self.first.set(None);
        self.second.set(None);
        self.more.clear();
        self.count = 0;
    }
}

/// Which limit cuts off an attempt whose timer was set for `cutoff`, in a call whose deadline
/// is `deadline`: the deadline when the cutoff is the deadline (an attempt timeout that would
/// end at or after the deadline yields to it, see `Call::limit`), else the attempt timeout.
/// Derived rather than kept with the attempt, whose ticket leaves no room for it.
fn limit_kind(cutoff: Option<Instant>, deadline: Option<Instant>) -> Option<TimeoutKind> {
    let cutoff = cutoff?;
    Some(if Some(cutoff) == deadline {
        TimeoutKind::Deadline
    } else {
        TimeoutKind::Attempt
    })
}

fn poll_slot<A: Future>(
    mut slot: Pin<&mut Option<Flight<'_, A>>>,
    cx: &mut Context<'_>,
) -> Poll<Ended<A::Output>> {
    let Some(flight) = slot.as_mut().as_pin_mut() else {
        return Poll::Pending;
    };
    let this = flight.project();
    let attempt = this.attempt;
    let out = ready!(this.frame.enter_traced(this.trace, || attempt.poll(cx)));
    let ended = Ended {
        meta: *this.meta,
        number: this.frame.number,
        cutoff: this.frame.cutoff,
        id: this.frame.id_halves(),
        marks: this.frame.take_passed_on(),
        trace: std::mem::take(this.trace),
        out,
    };
    slot.set(None);
    Poll::Ready(ended)
}

/// What the call knows about hedging so far.
struct State {
    /// No more hedges: a server's hint, or the bucket, budget, breaker or limiter refused one.
    stopped: bool,
    /// An attempt's end was booked (the budget counts the call's first as its request).
    booked: bool,
    /// A hedge the protections admitted waits at the gate, holding the call's ticket (which
    /// the call gives back if it ends first).
    waiting: bool,
    /// When the next hedge starts, if one will.
    due: Option<Due>,
}

/// When the next hedge is due.
#[derive(Clone, Copy)]
enum Due {
    /// The hedge delay after the last attempt's start (read when first needed: an attempt
    /// that answers at once never reads the clock for it).
    After(Option<Instant>),
    At(Instant),
}

enum Event<O> {
    Ended(Ended<O>),
    Hedge,
}

/// What a hedged call reads: its hedging settings, and for a percentile or a budget the
/// function's estimate (which keeps the budget's delay too).
#[derive(Clone, Copy, Debug)]
struct Hedge<'a> {
    settings: &'a Hedging,
    latency: Option<&'a Latency>,
}

impl<'a> Hedge<'a> {
    /// The hedging of `settings`, if they hedge; a percentile estimates with `latency`.
    fn of(settings: &'a Settings, latency: Option<&'a Latency>) -> Option<Hedge<'a>> {
        Some(Hedge {
            settings: settings.hedge.as_ref()?,
            latency,
        })
    }

    /// At most this many attempts of a call at once.
    fn max_in_flight(&self) -> u32 {
        self.settings.max_in_flight
    }

    /// How long after an attempt starts the next hedge starts: `hedge_after`'s delay, raised
    /// by the budget if there is one; `max_hedge_after` while a percentile's estimate does not
    /// answer yet.
    fn delay(&self) -> Duration {
        let max = self.settings.max_after;
        match (self.base(), self.spend()) {
            (Some(base), Some((spend, _))) => spend.delay(base, max),
            (Some(base), None) => base,
            (None, _) => max,
        }
    }

    /// `hedge_after`'s own delay: the fixed one, or the percentile's estimate within its
    /// bounds (`None` until the estimate answers).
    fn base(&self) -> Option<Duration> {
        let (min, max) = (self.settings.min_after, self.settings.max_after);
        match (self.settings.after, self.latency) {
            (HedgeSpec::Fixed(d), _) => Some(d),
            (HedgeSpec::Percentile(p), Some(latency)) => latency
                .quantile_cached(p)
                .map(|d| d.clamp(min, max.max(min))),
            (HedgeSpec::Percentile(_), None) => None,
        }
    }

    /// The function's hedge budget and its share, if it has one.
    fn spend(&self) -> Option<(&'a Spend, f64)> {
        Some((self.latency?.spend(), self.settings.budget?))
    }

    /// The budget, if any, counts a call that starts, or (`hedge`) a hedge started because an
    /// attempt outlived the delay; once `hedge_after` has a delay.
    fn count(&self, hedge: bool) {
        // The budget first: without one, the estimate is not read.
        let Some((spend, share)) = self.spend() else {
            return;
        };
        let Some(base) = self.base() else {
            return;
        };
        let max = self.settings.max_after;
        if hedge {
            spend.hedged(share, base, max);
        } else {
            spend.call(share, base, max);
        }
    }

    /// The estimate a successful attempt's latency goes into, for a percentile.
    fn latency(&self) -> Option<&'a Latency> {
        match self.settings.after {
            HedgeSpec::Fixed(_) => None,
            HedgeSpec::Percentile(_) => self.latency,
        }
    }
}

impl<'a, R, K, P, J> Call<'a, R, K, P, J>
where
    R: RetryResult,
    K: Timer<R>,
    P: Fn(&R::Ok) -> bool,
    J: OnFailure<R> + OnStop<R>,
{
    /// The loop of a hedged function: [`run`](Self::run)'s steps, with a copy of an attempt
    /// that has not answered within the function's hedge delay started beside it. A function
    /// without `hedge_after` runs them one at a time.
    // A block: an `async fn` would hold the call twice, its argument and the local it moves
    // it into (BENCHMARKS.md, "Memory").
    #[allow(clippy::manual_async_fn)]
    pub fn run_hedged<F, Fut>(mut self, mut attempt: F) -> impl Future<Output = R>
    where
        R: AsyncRuntime,
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        async move {
            // A call without timers reads what it runs inside (an outer attempt, a caller's
            // deadline, a served request) at each poll of an attempt, in that attempt's frame: the
            // call's own frame, which decides the hedges, reads it once here.
            if !K::TIMED {
                self.current.frame.adopt_outer();
            }
            let hedging = Hedge::of(&self.r().settings, self.r().latency());
            let mut flights = Flights {
                first: pin!(None),
                second: pin!(None),
                more: Vec::new(),
                count: 0,
                r: self.r(),
            };
            let mut timer: Pin<&mut Option<Sleep>> = pin!(None);
            let mut state = State {
                stopped: hedging.is_none(),
                booked: false,
                waiting: false,
                due: None,
            };
            let latency = hedging.and_then(|h| h.latency());
            if let Some(h) = hedging {
                h.count(false);
            }
            'call: loop {
                // An attempt with none in flight: the first, or a retry after its backoff.
                if self.gated() {
                    loop {
                        match self.send_token() {
                            SendToken::Go => break,
                            SendToken::Wait(delay) => crate::runtime::sleep(delay).await,
                            SendToken::Line(delay) => self.in_line(delay).await,
                            SendToken::Return(out) => return out,
                        }
                    }
                }
                let ticket = std::mem::take(&mut self.current.ticket);
                self.count_attempt();
                let started = latency.map(|_| Instant::now());
                flights.start(self.launch(&mut attempt, started, ticket, false));
                state.due = hedging.map(|_| Due::After(started));

                loop {
                    // The closure holds unique borrows (moved in), so that the call's future is
                    // `Send` whenever the call's parts are, without asking them to be `Sync`.
                    let (call, flights_, state_, timer_) =
                        (&mut self, &mut flights, &mut state, &mut timer);
                    let event = poll_fn(move |cx| {
                        let (flights, state, timer) = (&mut *flights_, &mut *state_, &mut *timer_);
                        if let Poll::Ready(ended) = flights.poll_end(cx) {
                            return Poll::Ready(Event::Ended(ended));
                        }
                        let at = match (state.due, hedging) {
                            (Some(Due::At(at)), _) => at,
                            (Some(Due::After(start)), Some(h)) => {
                                let start = start.unwrap_or_else(Instant::now);
                                state.due = call
                                    .next_hedge(&h, state, flights.count, start)
                                    .map(Due::At);
                                match state.due {
                                    Some(Due::At(at)) => at,
                                    _ => return Poll::Pending,
                                }
                            }
                            _ => return Poll::Pending,
                        };
                        match timer.as_mut().as_pin_mut() {
                            Some(sleep) if sleep.deadline() != at => sleep.reset(at),
                            Some(_) => {}
                            None => timer.set(Some(crate::runtime::sleep_until(at))),
                        }
                        match timer.as_mut().as_pin_mut().map(|s| s.poll(cx)) {
                            Some(Poll::Ready(())) => Poll::Ready(Event::Hedge),
                            _ => Poll::Pending,
                        }
                    })
                    .await;
                    let ended = match event {
                        Event::Hedge => {
                            state.due = None;
                            if let Some(h) = hedging {
                                let a = &scope::around();
                                state.due = self
                                    .hedge(&h, &mut state, &mut flights, &mut attempt, None, a)
                                    .map(Due::At);
                            }
                            continue;
                        }
                        Event::Ended(ended) => ended,
                    };
                    let Ended {
                        meta,
                        number,
                        cutoff,
                        id,
                        marks,
                        mut trace,
                        out,
                    } = ended;
                    self.current.frame.merge(marks);
                    let (out, timed_out) = match K::outcome(out) {
                        // Its request gave up at its own timeout at the cutoff: the loop's
                        // timeout, as `Call::finish` has it.
                        Some(out)
                            if K::TIMED
                                && out.as_result().is_err()
                                && frame::cut_by_request(marks, cutoff) =>
                        {
                            let kind = limit_kind(cutoff, self.current.frame.deadline)
                                .unwrap_or(TimeoutKind::Deadline);
                            (self.cut_off(number, kind), true)
                        }
                        Some(out) => (out, false),
                        None => {
                            let kind = limit_kind(cutoff, self.current.frame.deadline)
                                .unwrap_or(TimeoutKind::Deadline);
                            (self.cut_off(number, kind), true)
                        }
                    };
                    let Err(err) = out.as_result() else {
                        if let (Some(latency), Some(started)) = (latency, meta.started) {
                            latency.record(started.elapsed());
                        }
                        // Its cost goes back (or, for an attempt that cost nothing, the bucket's
                        // reward); the others lose, and theirs stay out, and a hedge waiting at the
                        // gate will not start.
                        self.hold_instead(meta.ticket, &mut state);
                        self.book_success_as(!state.booked);
                        self.recovered();
                        flights.cancel();
                        return out;
                    };
                    // Events may follow: they carry the id the attempt's body drew, if it did.
                    self.current.frame.adopt_id(id);
                    if self.hooks.hint(err).is_some() {
                        // A server's hint or pushback stops hedging (gRFC A6).
                        state.stopped = true;
                        state.due = None;
                    }
                    if flights.count == 0 {
                        // The last attempt in flight failed: the sequential loop's decision, which
                        // books the attempt's end (on its span too). A hedge waiting at the gate will
                        // not start.
                        self.current.trace.adopt(trace);
                        self.hold_instead(meta.ticket, &mut state);
                        state.booked = true;
                        self.timing
                            .arm(limit_kind(cutoff, self.current.frame.deadline));
                        if timed_out {
                            self.timing.fire();
                        }
                        let mut out = Some(out);
                        loop {
                            match self.settle(out.take()) {
                                Settled::Return(out) => return out,
                                Settled::Retry => continue 'call,
                                Settled::Sleep(delay) => {
                                    crate::runtime::sleep(delay).await;
                                    continue 'call;
                                }
                                Settled::Wait(delay) => crate::runtime::sleep(delay).await,
                                Settled::Line(delay) => self.in_line(delay).await,
                            }
                        }
                    }
                    // Others are still in flight.
                    let a = &scope::around();
                    let class = if timed_out {
                        ErrorClass::Timeout
                    } else {
                        self.hooks.class(err)
                    };
                    self.current.trace.flight_failed(&mut trace, class);
                    trace.close();
                    // Its cost stays out.
                    if self.r().extras {
                        self.book_end(meta.ticket, !state.booked, Some(class));
                    }
                    state.booked = true;
                    let r = self.retrying();
                    r.after_throttle = class == ErrorClass::Throttling;
                    r.failed = true;
                    match decide::after_error(class, false, self.idempotent()) {
                        AfterError::Retry => {}
                        AfterError::Return => {
                            flights.cancel();
                            self.returned(class);
                            self.ended(false, None);
                            self.passes_on();
                            return out;
                        }
                        AfterError::EndEarly(why) => {
                            self.ended_early(a, number, Some(class), why);
                            flights.cancel();
                            self.ended(false, None);
                            self.passes_on();
                            return out;
                        }
                    }
                    if let Some(h) = hedging {
                        // A failure lets the next hedge start at once.
                        let trigger = Some((class, &out));
                        if let Some(at) =
                            self.hedge(&h, &mut state, &mut flights, &mut attempt, trigger, a)
                        {
                            state.due = Some(Due::At(at));
                        }
                    }
                }
            }
        }
    }

    /// The call holds `ticket`, an ended attempt's, for the steps that follow its end: a hedge
    /// waiting at the gate, whose ticket the call held, will not start, and gives its cost back.
    fn hold_instead(&mut self, ticket: Ticket, state: &mut State) {
        if std::mem::take(&mut state.waiting) {
            self.release();
        }
        self.current.ticket = ticket;
    }

    /// Gives back what `ticket` holds for a hedge that will not start: its cost, and the
    /// guards' admissions (settled as cancelled).
    fn give_back(&self, mut ticket: Ticket, a: &Around) {
        let draw = || a.uniform();
        self.r().chain().release(&mut ticket, &draw);
    }

    /// The call's current attempt (counted), starting `now` and holding `ticket`, under its
    /// timer and with a frame of its own.
    fn launch<F, Fut>(
        &mut self,
        attempt: &mut F,
        started: Option<Instant>,
        ticket: Ticket,
        hedge: bool,
    ) -> Flight<'a, K::Attempt<Fut>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        let n = self.current.frame.number;
        let limit = if K::TIMED { self.limit(n) } else { None };
        let until = limit.map(|(at, _)| at);
        // The trace first: opening the call's span draws the invocation id, which the frame
        // then takes with it.
        let trace = self.current.trace.fork(&self.current.frame, hedge);
        Flight {
            frame: self.current.frame.fork(n, until),
            trace,
            meta: Meta { started, ticket },
            attempt: K::arm(attempt(), until),
        }
    }

    /// When the next hedge starts after an attempt started `now`, if one can.
    fn next_hedge(
        &self,
        h: &Hedge<'_>,
        state: &State,
        in_flight: u32,
        now: Instant,
    ) -> Option<Instant> {
        if !self.may_hedge(h, state, in_flight, &scope::around()) {
            return None;
        }
        let at = now.checked_add(h.delay())?;
        match self.current.frame.deadline {
            Some(deadline) if at >= deadline => None,
            _ => Some(at),
        }
    }

    /// Whether another attempt may start beside `in_flight` others: hedging not stopped,
    /// attempts left, room in flight.
    fn may_hedge(&self, h: &Hedge<'_>, state: &State, in_flight: u32, a: &Around) -> bool {
        !state.stopped
            && self.current.frame.number < self.max_attempts(a)
            && in_flight < h.max_in_flight()
    }

    /// Starts a hedge now if the call may (`trigger`: the failure that starts it at once, or
    /// `None` after the hedge delay), paying its cost. Returns when the next one starts.
    fn hedge<F, Fut>(
        &mut self,
        h: &Hedge<'_>,
        state: &mut State,
        flights: &mut Flights<'_, 'a, K::Attempt<Fut>>,
        attempt: &mut F,
        trigger: Option<(ErrorClass, &R)>,
        a: &Around,
    ) -> Option<Instant>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        if !self.may_hedge(h, state, flights.count, a) {
            return None;
        }
        // A function that sends idempotency keys and is not idempotent without them hedges
        // only an attempt that wrote its key: a copy of a request without one is not safe.
        if self.repeats == super::Repeats::Keyed
            && !self.current.frame.key_sent()
            && !flights.frames().any(|f| f.key_sent())
        {
            return None;
        }
        let now = Instant::now();
        if self.current.frame.deadline.is_some_and(|d| now >= d) {
            return None;
        }
        // 4. The protections admit the hedge as they admit a retry, in the same order (the
        // bucket takes its cost once: a hedge postponed keeps its ticket). A hedge waits for no
        // bucket's refill; a guard that asks to wait postpones it.
        let n = self.current.frame.number + 1;
        let draw = || a.uniform();
        let chain = self.r().chain();
        let mut ticket = if std::mem::take(&mut state.waiting) {
            std::mem::take(&mut self.current.ticket)
        } else {
            let class = trigger.map_or(ErrorClass::Transient, |(class, _)| class);
            let mut ticket = Ticket::NONE;
            match chain.another(class, AttemptKind::Hedge, n, &mut ticket, &draw) {
                Step::Go => {}
                Step::Wait(delay, resume @ (Resume::Guards | Resume::Line)) => {
                    // A hedge stands in no line: it is postponed by the wait, counted now.
                    if resume == Resume::Line {
                        ticket.waited(delay);
                    }
                    self.current.ticket = ticket;
                    state.waiting = true;
                    return now.checked_add(delay);
                }
                Step::Wait(_, Resume::Refill) | Step::Refused(_) => {
                    // As when the bucket is empty: hedging stops, the attempts in flight go
                    // on.
                    state.stopped = true;
                    return None;
                }
            }
            ticket
        };
        // 1. The gate, as for any attempt (the guards that asked to wait asked again first). A
        // hedge waits for nothing: it starts later, holding its ticket.
        let skips_waits = || a.skips_waits();
        let look = Look {
            number: n,
            after_throttle: self.retrying.as_ref().is_some_and(|r| r.after_throttle),
            deadline: self.current.frame.deadline,
            keeps_place: false,
            skips_waits: &skips_waits,
            draw: &draw,
        };
        let r = self.r();
        let gate = chain.gate(&mut ticket, Stage::Start, &look, |change| {
            observe::state_changed(r.who(), change);
        });
        match gate {
            Gate::Go => {}
            Gate::Wait(delay) => {
                self.current.ticket = ticket;
                state.waiting = true;
                return now.checked_add(delay);
            }
            Gate::Line(delay) => {
                // A hedge stands in no line: it is postponed by the wait, counted now.
                ticket.waited(delay);
                self.current.ticket = ticket;
                state.waiting = true;
                return now.checked_add(delay);
            }
            Gate::Refused(..) | Gate::Late => {
                self.give_back(ticket, a);
                state.stopped = true;
                return None;
            }
        }
        self.count_attempt();

        // Every attempt of the call shares one invocation id.
        for f in flights.frames() {
            self.current.frame.share_id(f);
        }
        let _ = self.current.frame.invocation_id();
        for f in flights.frames() {
            f.share_id(&self.current.frame);
        }

        let in_flight = flights.count + 1;
        let delay = h.delay();
        self.hooks.on_retry(&RetryEvent {
            call: &self.current,
            attempt: self.current.frame.number - 1,
            delay: Duration::ZERO,
            error: trigger.and_then(|(_, out)| out.as_result().err()),
            class: trigger.map_or(ErrorClass::Timeout, |(class, _)| class),
            hedge: true,
        });
        if trigger.is_none() {
            h.count(true);
        }
        observe::hedged(&self.current, a, in_flight, trigger.map(|(c, _)| c), delay);
        flights.start(self.launch(attempt, Some(now), ticket, true));
        self.next_hedge(h, state, flights.count, now)
    }
}
