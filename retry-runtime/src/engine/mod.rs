//! The per-call engine: one [`Call`] per invocation of a `#[retry]` function, stepped once per
//! attempt by the loop `retry_loop!` (in `__private`), the one definition of the retry loop.
//! The expansion of `#[retry]` invokes it in the function's body, and `Call::run` for callers
//! that hold the attempt as a closure (the fleet simulation, the property tests).
//!
//! The loop lives in the caller's future, not in a future of the engine, so that each attempt
//! is a fresh `async` block borrowing the arguments (and `&mut self`) only while it runs, and
//! every wait is a sleep awaited in place: nothing is boxed. The engine decides each step
//! synchronously.
//!
//! Steps are numbered as in the README's "One call": 1 the gate (the breaker's leave, the
//! guards, the send token), 2 the attempt, 3 success or classification, 4 the retry's
//! admission (breaker, budget, cost, guards), 5 the delay and the deadline, 6 hook, event,
//! sleep.
//!
//! The first attempt is the hot path: it reads the function's settings once, runs the body
//! (under a timer only if the function has one: that is known at compile time), and on
//! success adds 1 to a bucket that is not full. Everything a retry needs lives in
//! [`Retrying`], set up when the first retry is decided.
//!
//! What the protections allow is decided in `crate::protect`, in one order for a retry and
//! for a hedge: the call holds the current attempt's [`Ticket`] (its retry cost and breaker
//! pass), books its end through [`Protections`], and gives its cost back when it drops a
//! ticket whose attempt never ran.

pub(crate) mod chacha;
pub(crate) mod deadline;
mod decide;
pub(crate) mod frame;
mod hedged;
mod hooks;
mod outcome;
mod run;
pub(crate) mod scope;
pub(crate) mod site;
mod timer;

pub use hooks::{
    ByTrait, Classifier, Fns, Hooks, NoConversion, OnFailure, OnStop, into_class, never_repeat,
    no_hint, no_hook,
};
pub use hooks::{hint, repeat};
pub use outcome::{IntoErrorClass, RetryResult, ReturnsResult};
pub use timer::{Timed, Timer, TimerKind, Timing, Untimed};

use crate::classify::{ErrorClass, TimedOut, TimeoutKind};
use crate::observe;
use crate::observe::Source;
use crate::observe::event::RetryEvent;
use crate::observe::report::EarlyEnd;
use crate::observe::trace::Trace;
use crate::protect::Ticket;
use crate::protect::chain::{Gate, Look, Resume, Stage, Step, Stop};
use crate::protect::guard::AttemptKind;
use crate::runtime::{AsyncRuntime, Instant};
use crate::spec::{Jitter, Mode};
use core::future::Future;
use core::ops::ControlFlow;
use decide::AfterError;
use frame::{Frame, InFrame};
use scope::Around;
use site::{Hints, Resolved, Site};
use std::mem::ManuallyDrop;
use std::time::Duration;

/// One invocation of a `#[retry]` function.
///
/// `R` is the function's return type, `K` says whether attempts run under a timer, `P` says
/// whether a success is polled again (`retry_if_ok`), `J` holds what decides a retry
/// (classifier, hint reader, hook).
///
/// The type and `new` carry no bounds but `K`'s kind; each entry point asks only for what it
/// uses, so a mistake in the user's types is reported once, where the expansion names it.
pub struct Call<'a, R, K: TimerKind, P, J> {
    /// The current attempt (or the retry about to start): its frame and its ticket.
    current: Current<'a>,
    timer: K,
    repeat: P,
    hooks: J,
    /// Whether an attempt may be repeated after its request may have reached the server, and
    /// whether the caller allows more than one attempt at all.
    repeats: Repeats,
    /// When the call started, and the current attempt's timer: which limit cuts it off and
    /// whether it did (nothing without timers).
    timing: K::Timing,
    retrying: Option<Retrying<R>>,
    /// When the call started and how long it slept between attempts, for its histograms.
    #[cfg(feature = "metrics")]
    tally: Tally,
}

/// What a call's histograms take at its end besides its attempts.
#[cfg(feature = "metrics")]
struct Tally {
    started: Instant,
    slept: Duration,
}

/// Which attempts may follow one whose request may have reached the server.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Repeats {
    /// Only after failures that prove the request was not acted on.
    NotIdempotent = 0,
    /// Any the settings allow (an idempotent function).
    Idempotent = 1,
    /// None: the caller allows one attempt, whatever the settings (a tower request whose
    /// body cannot be sent again).
    Once = 2,
    /// As an idempotent function's after an attempt that wrote the call's idempotency key into
    /// its request, else as a function's that is not (a function with `idempotency_key = true`
    /// that does not say it is idempotent).
    Keyed = 3,
}

/// The current attempt, or the retry about to start: as the body sees it (its frame: its
/// number and cutoff, the call's deadline and id, and the function's settings in effect, which
/// the engine reads through [`Call::r`]), and what it holds from the protections (its ticket).
/// If the call is dropped (or panics) while the ticket holds a retry's cost, the cost goes
/// back to the bucket: a retry that never runs costs nothing.
///
/// It also holds the call's spans (with the `tracing` feature, when recorded), which it closes
/// when it is dropped: kept out of the frame's own drop, so that a call without them tests one
/// word more where it tests its ticket.
pub(crate) struct Current<'a> {
    pub(crate) frame: Frame<'a>,
    ticket: Ticket,
    pub(crate) trace: ManuallyDrop<Trace>,
}

impl Drop for Current<'_> {
    #[inline]
    fn drop(&mut self) {
        // One test for both: a call that holds nothing and has no spans skips both.
        if self.ticket.holds() | self.trace.is_on() {
            self.let_go();
        }
    }
}

impl Current<'_> {
    /// Gives the ticket's cost back to the bucket, and tells the guards that admitted its
    /// attempt that it was cancelled.
    fn release(&mut self) {
        let draw = || scope::around().uniform();
        self.frame.r.chain().release(&mut self.ticket, &draw);
    }

    /// Opens the call's span, if it is wanted and not open yet (a report is about to be made
    /// before any attempt was polled).
    fn open_trace(&mut self) {
        self.trace.open(&self.frame);
    }

    /// Gives back what the ticket holds, and closes the call's spans.
    fn let_go(&mut self) {
        if self.ticket.holds() {
            self.release();
        }
        std::mem::replace(&mut *self.trace, Trace::none()).close();
    }
}

/// What the reports of a call's decisions say of it (`crate::observe`): its frame's, and its
/// spans.
impl Source for Current<'_> {
    fn who(&self) -> observe::Who<'_> {
        self.frame.who()
    }

    fn invocation_id(&self) -> crate::attempt::InvocationId {
        self.frame.invocation_id()
    }

    fn attempt(&self) -> u32 {
        self.frame.number
    }

    fn levels(&self) -> observe::Levels {
        Source::levels(&self.frame)
    }

    fn trace(&self) -> &Trace {
        &self.trace
    }
}

/// The state of a call that has retried.
struct Retrying<R> {
    /// The last delay slept (decorrelated jitter grows from it).
    previous_delay: Duration,
    after_throttle: bool,
    /// An attempt failed: a success that ends the call recovers it.
    failed: bool,
    /// A retry waiting for a bucket's refill (between `Settled::Wait` and `settle(None)`).
    pending: Option<Short<R>>,
    /// The outcome of the last attempt, kept across the sleep in case the next attempt cannot
    /// start (its send token would come after the deadline) or, while polling, is cut by the
    /// deadline.
    last: Option<R>,
    /// The attempt after which the server's last pushback came (gRFC A6's backoff restarts
    /// there); 0 before any.
    pushed_at: u32,
}

impl<R, K: TimerKind, P, J> Call<'_, R, K, P, J> {
    /// The call makes one attempt, whatever its settings say: its failure ends it with its
    /// own class, booked as any other (a request that cannot be sent again).
    #[cfg(test)]
    pub(crate) fn once(mut self) -> Self {
        self.repeats = Repeats::Once;
        self
    }

    /// Gives back what is held for an attempt that will not run (or not finish): a retry's
    /// cost, the guards' admissions (settled as cancelled).
    fn release(&mut self) {
        if self.current.ticket.holds() {
            self.current.release();
        }
    }
}

impl<'a, R, K: TimerKind, C, P, O> Call<'a, R, K, P, Hooks<C, O>> {
    /// Starts a call. The deadline clock starts now, at the first poll of the function.
    /// `classify` tells an error's class and hint ([`ByTrait`] or [`Fns`]), `repeat` whether a
    /// success is polled again, `on_retry` is the hook.
    pub fn new(
        site: &'a Site,
        idempotent: bool,
        timer: K,
        classify: C,
        repeat: P,
        on_retry: O,
    ) -> Self {
        Self::of(site, idempotent, timer, classify, repeat, on_retry)
    }

    /// Starts a call of `site` (a `Policy` value's, for the time of one call; a `#[retry]`
    /// function's, for the process).
    pub(crate) fn of(
        site: &'a Site,
        idempotent: bool,
        timer: K,
        classify: C,
        repeat: P,
        on_retry: O,
    ) -> Self {
        Call::of_all(
            site,
            idempotent,
            false,
            timer,
            classify,
            repeat,
            on_retry,
            NoConversion,
        )
    }
}

impl<'a, R, K: TimerKind, C, P, O, X> Call<'a, R, K, P, Hooks<C, O, X>> {
    /// [`of`](Call::of) with what a refused call returns (`refused`) and, when `once`, one
    /// attempt whatever the settings: the call is built where it will stay, not moved again
    /// by [`on_stop`](Call::on_stop) and [`once`](Call::once).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn of_all(
        site: &'a Site,
        idempotent: bool,
        once: bool,
        timer: K,
        classify: C,
        repeat: P,
        on_retry: O,
        refused: X,
    ) -> Self {
        let repeats = if once {
            Repeats::Once
        } else if idempotent {
            Repeats::Idempotent
        } else if site.idempotency_key {
            Repeats::Keyed
        } else {
            Repeats::NotIdempotent
        };
        Call::built(site, repeats, timer, classify, repeat, on_retry, refused)
    }

    fn built(
        site: &'a Site,
        repeats: Repeats,
        timer: K,
        classify: C,
        repeat: P,
        on_retry: O,
        refused: X,
    ) -> Self {
        // A function with timers reads the attempt it runs inside now, before its first timer
        // is armed; one without looks when its attempt is first polled.
        let resolved = site.resolved(K::TIMED);
        let outer = if K::TIMED { frame::outer() } else { None };
        // Only a call that something cuts off (its own limits, or an outer attempt's cutoff)
        // reads the clock at its start.
        let cut =
            K::TIMED && (resolved.settings.timers() || outer.is_some_and(|o| o.cutoff.is_some()));
        let start = cut.then(Instant::now);
        let deadline = match (start, resolved.settings.deadline) {
            (Some(now), Some(d)) => now.checked_add(d),
            _ => None,
        };
        Call {
            current: Current {
                frame: Frame::new(resolved, deadline, outer),
                ticket: Ticket::NONE,
                trace: ManuallyDrop::new(Trace::none()),
            },
            timer,
            repeat,
            hooks: Hooks {
                classify,
                on_retry,
                refused,
            },
            repeats,
            timing: K::Timing::begin(start),
            retrying: None,
            #[cfg(feature = "metrics")]
            tally: Tally {
                started: start.unwrap_or_else(Instant::now),
                slept: Duration::ZERO,
            },
        }
    }
}

impl<'a, R, K: TimerKind, C, P, O> Call<'a, R, K, P, Hooks<C, O>> {
    /// Gives the call the conversion of [`Refused`](crate::Refused) into its outcome (a function or
    /// a closure of it), which a call that its function's breaker (`breaker = ...`) or one of its
    /// guards (`guard = ...`) refused returns. Without it ([`NoConversion`]), a refused first
    /// attempt runs anyway; a refused retry still ends the call.
    pub fn on_stop<X: OnStop<R>>(self, refused: X) -> Call<'a, R, K, P, Hooks<C, O, X>> {
        let Call {
            current,
            timer,
            repeat,
            hooks,
            repeats,
            timing,
            retrying,
            #[cfg(feature = "metrics")]
            tally,
        } = self;
        Call {
            current,
            timer,
            repeat,
            hooks: Hooks {
                classify: hooks.classify,
                on_retry: hooks.on_retry,
                refused,
            },
            repeats,
            timing,
            retrying,
            #[cfg(feature = "metrics")]
            tally,
        }
    }
}

impl<'a, R, K: TimerKind, P, J> Call<'a, R, K, P, J> {
    /// The function's settings in effect and the shared state they name.
    fn r(&self) -> &'a Resolved {
        self.current.frame.r
    }

    /// Whether attempts wait for the rate limiter's send tokens (adaptive mode, which the
    /// environment may choose at run time).
    fn adaptive(&self) -> bool {
        self.r().settings.mode == Mode::Adaptive
    }

    /// Whether each attempt passes the loop's gate, [`send_token`](Self::send_token): a
    /// circuit breaker's leave, and in adaptive mode the rate limiter's send token.
    pub fn gated(&self) -> bool {
        self.r().gated
    }

    /// Whether the attempt that just failed may be repeated after its request may have reached
    /// the server: the function is idempotent, or it sends idempotency keys and the attempt
    /// wrote its key.
    fn idempotent(&self) -> bool {
        match self.repeats {
            Repeats::NotIdempotent => false,
            Repeats::Keyed => self.current.frame.key_sent(),
            Repeats::Idempotent | Repeats::Once => true,
        }
    }

    /// The attempts the call may make: the function's, or fewer in a test scope; one if the
    /// caller allows no more, or if the call serves a request that was its caller's retry.
    fn max_attempts(&self, a: &Around) -> u32 {
        if self.repeats == Repeats::Once || self.current.frame.single() {
            1
        } else {
            a.max_attempts(self.r().settings.max_attempts)
        }
    }

    /// The retry state, set up at the first retry.
    fn retrying(&mut self) -> &mut Retrying<R> {
        let initial = self.r().settings.initial_backoff;
        self.retrying.get_or_insert_with(|| Retrying {
            pending: None,
            previous_delay: initial,
            after_throttle: false,
            failed: false,
            last: None,
            pushed_at: 0,
        })
    }

    /// Arms the timer of attempt `n`: the attempt timeout, clamped to what is left of the
    /// deadline. Instants too far ahead to represent mean no timer.
    #[inline]
    fn arm(&mut self, n: u32) -> Option<Instant> {
        let at = self.limit(n);
        self.timing.arm(at.map(|(_, kind)| kind));
        let at = at.map(|(at, _)| at);
        self.current.frame.cutoff = at;
        at
    }

    /// When attempt `n`, starting now, is cut off, and by which limit.
    fn limit(&self, n: u32) -> Option<(Instant, TimeoutKind)> {
        match self.r().settings.attempt_timeout_for(n) {
            // The first attempt starts with the call, unless adaptive mode waited for a send
            // token.
            Some(limit) => match self.attempt_start(n).checked_add(limit) {
                Some(at) if self.current.frame.deadline.is_none_or(|d| at < d) => {
                    Some((at, TimeoutKind::Attempt))
                }
                _ => self
                    .current
                    .frame
                    .deadline
                    .map(|d| (d, TimeoutKind::Deadline)),
            },
            None => self
                .current
                .frame
                .deadline
                .map(|d| (d, TimeoutKind::Deadline)),
        }
    }

    /// When attempt `n` starts: the call's start for the first, unless adaptive mode waited
    /// for a send token; now otherwise.
    fn attempt_start(&self, n: u32) -> Instant {
        match self.timing.start() {
            Some(start) if n == 1 && !self.adaptive() => start,
            _ => Instant::now(),
        }
    }

    /// The limit a deadline timeout reports: the function's `deadline`, or the time the call
    /// had when an outer attempt's cutoff clamped its deadline.
    fn deadline_limit(&self) -> Duration {
        match (self.current.frame.deadline, self.timing.start()) {
            (Some(deadline), Some(start)) => deadline.saturating_duration_since(start),
            _ => self.r().settings.deadline.unwrap_or_default(),
        }
    }

    /// Whether a wait of `wait` from now reaches the deadline.
    fn reaches_deadline(&self, wait: Duration) -> bool {
        self.current
            .frame
            .deadline
            .is_some_and(|d| crate::runtime::reaches(d, Instant::now(), wait))
    }

    /// The call ends before its attempts are spent, for `reason`, after `attempt` attempts: it
    /// gave up retrying ([`gave_up`](Self::gave_up)), unless it ends after its first attempt,
    /// before any retry, because its function is not idempotent or because no retry fits before
    /// the deadline. Such a call made one attempt, as one allowed no more would have; the
    /// retry is its caller's, whose own attempt a server's deadline is the cutoff of.
    fn ended_early(&self, a: &Around, attempt: u32, class: Option<ErrorClass>, reason: EarlyEnd) {
        let retry_left_to_caller =
            attempt == 1 && matches!(reason, EarlyEnd::NotIdempotent | EarlyEnd::Deadline);
        if !retry_left_to_caller {
            self.gave_up();
        }
        observe::ended_early(&self.current, a, attempt, class, reason);
    }

    /// The call fails having given up retrying: it tells the attempt it runs inside, or the
    /// request a server serves (`tower::ServerLayer`), whose answer then tells its caller not
    /// to retry. Nothing outside both.
    #[cold]
    fn gave_up(&self) {
        frame::call_gave_up();
    }

    /// A failure ends the call as it should (`AfterError::Return`, the class of the last
    /// error `class`): it gave up retrying, unless the error is retryable and the call made
    /// its only attempt because its settings allow one (`max_attempts = 1`), which leaves the
    /// retry to its caller.
    fn returned(&self, class: ErrorClass) {
        let frame = &self.current.frame;
        if class == ErrorClass::Permanent || frame.number > 1 || frame.single() {
            self.gave_up();
        }
    }

    /// The call slept `delay` before its next attempt (counted for its histograms).
    fn slept(&mut self, delay: Duration) {
        #[cfg(feature = "metrics")]
        {
            self.tally.slept += delay;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = delay;
    }

    /// The call ends (`ok`: with a success): its histograms, and on a failure its span's
    /// `error.type` (`class`, or the last failed attempt's).
    fn ended(&self, ok: bool, class: Option<ErrorClass>) {
        #[cfg(feature = "metrics")]
        self.r().meters.call_ended(
            ok,
            self.current.frame.number,
            self.tally.slept,
            self.tally.started.elapsed(),
        );
        if !ok {
            self.current.trace.call_failed(class);
        }
    }
}

// The entry points the loop calls carry their bounds themselves (not on the impl), each only
// what it uses, so that a return type that is not a `Result`, or an error type that cannot be
// classified, is reported with the trait's own message and as few times as can be.
impl<'a, R, K: TimerKind, P, J> Call<'a, R, K, P, J> {
    /// Step 1, the gate, as the protections' chain defines it: the breaker's leave (once per
    /// attempt), the guards for an attempt not admitted before, then in adaptive mode one look
    /// at the rate limiter for the attempt's send token. `Wait(d)`: sleep `d` and look again;
    /// `Return`: the attempt was refused, or its wait would come after the deadline; the call
    /// ends.
    pub fn send_token(&mut self) -> SendToken<R>
    where
        K: Timer<R>,
        J: OnStop<R>,
    {
        // The ambient (a `testing` scope, or none) is looked up only where it is needed: a
        // guard's draw, a wait, the call's end.
        let draw = || scope::around().uniform();
        let r = self.r();
        let number = self.current.frame.number + 1;
        // A gate of guards alone asks them without the look below: an attempt they all admit
        // goes at once.
        let mut asked = None;
        if r.chain().guards_alone() {
            match r
                .chain()
                .gate_guards(&mut self.current.ticket, number, &draw)
            {
                Ok(()) => return SendToken::Go,
                Err(a) => asked = Some(a),
            }
        }
        let skips_waits = || scope::around().skips_waits();
        let look = Look {
            number,
            after_throttle: self.retrying.as_ref().is_some_and(|r| r.after_throttle),
            // Only a function with timers can end with the deadline's error; an untimed call
            // inside an outer attempt is cut off by that attempt's timer.
            deadline: if K::TIMED {
                self.current.frame.deadline
            } else {
                None
            },
            keeps_place: true,
            skips_waits: &skips_waits,
            draw: &draw,
        };
        let mut from = Stage::Start;
        loop {
            let ticket = &mut self.current.ticket;
            let gate = match asked.take() {
                Some(asked) => r.chain().answer(asked, ticket, &look),
                None => r.chain().gate(ticket, from, &look, |change| {
                    observe::state_changed(r.who(), change);
                }),
            };
            match gate {
                Gate::Go => return SendToken::Go,
                Gate::Wait(delay) => {
                    self.slept(delay);
                    return SendToken::Wait(delay);
                }
                Gate::Line(delay) => return SendToken::Line(delay),
                Gate::Late => return self.late(&scope::around()),
                Gate::Refused(stop, next) => {
                    if let Some(out) = self.refused(stop, &scope::around()) {
                        return SendToken::Return(out);
                    }
                    // Nothing to return: the attempt runs, and the gate goes on.
                    from = next;
                }
            }
        }
    }

    /// The attempt's wait at the gate would reach the deadline: the call ends with its last
    /// outcome, or the deadline's error.
    fn late(&mut self, a: &Around) -> SendToken<R>
    where
        K: Timer<R>,
    {
        self.release();
        self.current.open_trace();
        let n = self.current.frame.number + 1;
        let last = self.retrying.as_mut().and_then(|r| r.last.take());
        let deadline = last.is_none();
        match last.or_else(|| self.deadline_error(n)) {
            Some(out) => {
                self.ended_early(a, n - 1, None, EarlyEnd::Deadline);
                self.ended(false, deadline.then_some(ErrorClass::Timeout));
                SendToken::Return(out)
            }
            // No deadline, so the wait cannot have been refused: go ahead.
            None => SendToken::Go,
        }
    }

    /// The gate refused the next attempt: a call that has retried ends with its last outcome,
    /// one that has not with `E::from(Refused)`. `None`: the call has no conversion for it,
    /// and the attempt runs.
    fn refused(&mut self, stop: Stop, a: &Around) -> Option<R>
    where
        J: OnStop<R>,
    {
        self.release();
        self.current.open_trace();
        let n = self.current.frame.number;
        let why = EarlyEnd::of(stop, false);
        if let Some(last) = self.retrying.as_mut().and_then(|r| r.last.take()) {
            self.ended_early(a, n, None, why);
            self.ended(false, None);
            return Some(last);
        }
        // Only the breaker and the guards refuse at the gate.
        let refused = stop.refused()?;
        let out = self.hooks.refuse(refused)?;
        self.gave_up();
        observe::refused(&self.current, a, why);
        self.ended(false, Some(ErrorClass::Permanent));
        Some(out)
    }

    /// Step 2: counts the attempt and puts its future under the attempt's timer, if the
    /// function has one. Its signature pins the body's output type, so `?` in the body
    /// converts to `R`. The attempt's future is polled with the call's frame published
    /// ([`crate::attempt`]).
    #[inline]
    pub fn attempt<F: Future<Output = R>>(&mut self, attempt: F) -> InFrame<'_, 'a, K::Attempt<F>>
    where
        K: Timer<R>,
        R: AsyncRuntime,
    {
        self.count_attempt();
        let until = if K::TIMED {
            self.arm(self.current.frame.number)
        } else {
            None
        };
        InFrame::new(&mut self.current, K::arm(attempt, until))
    }

    /// Counts the attempt about to run.
    fn count_attempt(&mut self) {
        self.current.frame.number += 1;
        #[cfg(feature = "metrics")]
        self.r().meters.attempt();
    }

    /// The error of a call whose first attempt could not start before the deadline.
    fn deadline_error(&self, n: u32) -> Option<R>
    where
        K: Timer<R>,
    {
        if !K::TIMED || self.current.frame.deadline.is_none() {
            return None;
        }
        let limit = self.deadline_limit();
        Some(
            self.timer
                .timed_out(TimedOut::new(TimeoutKind::Deadline, limit, n)),
        )
    }

    /// Step 3 on the hot path: a success of a call that is not polling again ends here
    /// (`Break`). Anything else goes on to [`settle`](Self::settle).
    #[inline]
    pub fn finish(&mut self, out: K::Output) -> ControlFlow<R, R>
    where
        R: RetryResult,
        K: Timer<R>,
        P: Fn(&R::Ok) -> bool,
    {
        let Some(out) = K::outcome(out) else {
            // Cut off by its timer: an `Err`, which goes to `settle`, where polling may end
            // with the previous `Ok`.
            return ControlFlow::Continue(self.timed_out());
        };
        match self.finish_outcome(out) {
            ControlFlow::Continue(out) if K::TIMED => {
                ControlFlow::Continue(self.cut_by_request(out))
            }
            flow => flow,
        }
    }

    /// An attempt that failed because its request gave up at its client's own timeout, at or
    /// after the attempt's cutoff (reqwest's, which `with_attempt` sets to the attempt's time
    /// left): the loop's timer ran out in the same instant, and the attempt, polled first,
    /// ended with the client's error. It ends with the loop's `TimedOut`, as it would have had
    /// the timer been polled first.
    fn cut_by_request(&mut self, out: R) -> R
    where
        R: RetryResult,
        K: Timer<R>,
    {
        if self.current.frame.take_cut_by_request() && out.as_result().is_err() {
            return self.timed_out();
        }
        out
    }

    /// Step 2 for a blocking function: counts the attempt and runs it with the call's frame
    /// published ([`crate::attempt`]). Nothing can cut a blocking attempt off: the deadline is
    /// its cutoff, checked between attempts.
    #[inline]
    pub fn attempt_blocking<F: FnMut() -> R>(&mut self, attempt: &mut F) -> R {
        self.count_attempt();
        if K::TIMED {
            self.timing.arm(None);
            self.current.frame.cutoff = self.current.frame.deadline;
        }
        let current = &mut self.current;
        current.frame.enter_watched(&mut current.trace, attempt)
    }

    /// Step 3 for an attempt's outcome, as [`finish`](Self::finish) takes it (a blocking
    /// function's attempt has no timer to unwrap).
    #[inline]
    pub fn finish_outcome(&mut self, out: R) -> ControlFlow<R, R>
    where
        R: RetryResult,
        P: Fn(&R::Ok) -> bool,
    {
        if let Ok(value) = out.as_result() {
            self.book_success();
            if !(self.repeat)(value) {
                self.recovered();
                return ControlFlow::Break(out);
            }
        }
        // An error, or an `Ok` that `retry_if_ok` polls again (already booked: the predicate
        // runs once).
        ControlFlow::Continue(out)
    }

    /// The error of the attempt its timer cut off.
    fn timed_out(&mut self) -> R
    where
        K: Timer<R>,
    {
        let kind = self.timing.fire();
        self.cut_off(self.current.frame.number, kind)
    }

    /// The error of attempt `n`, which the limit `kind` cut off.
    fn cut_off(&self, n: u32, kind: TimeoutKind) -> R
    where
        K: Timer<R>,
    {
        let limit = match kind {
            TimeoutKind::Attempt => self.r().settings.attempt_timeout_for(n).unwrap_or_default(),
            TimeoutKind::Deadline => self.deadline_limit(),
        };
        self.timer.timed_out(TimedOut::new(kind, limit, n))
    }

    /// Step 3 for a success: refund the retry's cost, or reward an attempt that cost nothing;
    /// in adaptive mode, tell the limiter; with a budget, count it.
    fn book_success(&mut self) {
        if self.retrying.is_none() {
            // A first attempt: it cost nothing, and is rewarded (a full bucket, the common
            // case, is left as it is).
            if self.r().chain().rewarded() {
                self.bucket_refilled();
            }
        } else {
            self.book_paid_success();
        }
        if self.r().extras {
            let ticket = std::mem::take(&mut self.current.ticket);
            self.book_end(ticket, self.current.frame.number == 1, None);
        }
    }

    /// [`book_success`](Self::book_success) for the attempt of a hedged call that won, `first`:
    /// the call's first attempt to end (not necessarily its attempt 1), which may be a hedge
    /// that cost the retry cost.
    fn book_success_as(&mut self, first: bool) {
        self.refund_or_reward();
        if self.r().extras {
            let ticket = std::mem::take(&mut self.current.ticket);
            self.book_end(ticket, first, None);
        }
    }

    /// A success of a call that has retried: see [`refund_or_reward`](Self::refund_or_reward).
    #[cold]
    fn book_paid_success(&mut self) {
        self.refund_or_reward();
    }

    /// The cost of the attempt that succeeded goes back (or, for one that cost nothing, a first
    /// attempt or a polling repeat, the bucket's reward).
    fn refund_or_reward(&mut self) {
        self.r().chain().succeeded(&mut self.current.ticket);
        self.bucket_refilled();
        if let Some(r) = &mut self.retrying {
            r.last = None;
        }
    }

    /// The bucket's level may have risen (a reward or a refund): its gauge follows.
    fn bucket_refilled(&self) {
        #[cfg(feature = "metrics")]
        self.r()
            .meters
            .bucket_level(self.r().chain().bucket().available());
    }

    /// A success ends the call: if an attempt of it failed, the call recovered.
    fn recovered(&self) {
        #[cfg(feature = "metrics")]
        if self.retrying.as_ref().is_some_and(|r| r.failed) {
            self.r().meters.recovered();
        }
        self.ended(true, None);
    }

    /// What adaptive mode, a budget and a breaker book for the attempt that held `ticket`,
    /// which ended (`first`: the call's first attempt to end).
    fn book_end(&self, ticket: Ticket, first: bool, failure: Option<ErrorClass>) {
        book_extras(self.r(), ticket, first, failure);
    }

    /// Steps 3 to 6 for what [`finish`](Self::finish) passed on, decided without waiting:
    /// return, retry now, or sleep first. `Wait(d)`: a bucket that waits for its refill cannot
    /// cover the retry yet; sleep `d`, then call again with `None` to look at it again.
    pub fn settle(&mut self, out: Option<R>) -> Settled<R>
    where
        R: RetryResult,
        K: Timer<R>,
        J: OnFailure<R>,
    {
        let a = &scope::around();
        match out {
            Some(out) => self.judge(out, a),
            None => match self.retrying.as_mut().and_then(|r| r.pending.take()) {
                Some(short) => self.after_refill(short, a),
                // Only a `Wait` leads here, and it left its retry pending.
                None => Settled::Retry,
            },
        }
    }

    /// The call ends with `out`: every `Settled::Return` of [`settle`](Self::settle) is made
    /// here, where a nested call marks its outer attempt ([`returning`](Self::returning)).
    fn ends(&self, out: R) -> Settled<R>
    where
        R: RetryResult,
    {
        self.returning(&out);
        self.ended(out.as_result().is_ok(), None);
        Settled::Return(out)
    }

    /// A nested call (one inside another's attempt) that retried and still fails marks the
    /// outer attempt, which warns if it retries the same failure in turn; a call that fails
    /// after a call in its attempts gave up retrying gives up too.
    fn returning(&self, out: &R)
    where
        R: RetryResult,
    {
        if out.as_result().is_err() {
            self.failing();
        }
    }

    /// [`returning`](Self::returning) for a failure, out of line.
    #[cold]
    #[inline(never)]
    fn failing(&self) {
        let frame = &self.current.frame;
        if frame.depth() > 1 && frame.number > 1 {
            frame::nested_call_retried();
        }
        self.passes_on();
    }

    /// A call that fails after a call in its attempts gave up retrying gives up too.
    fn passes_on(&self) {
        if self.current.frame.nested_gave_up() {
            self.gave_up();
        }
    }
}

/// What adaptive mode, a budget, a breaker and the guards book for an attempt that ended, a
/// success (`None`) or a failure of a class (see [`Chain::ended`]). Out of line, so the success
/// path only tests `extras`.
fn book_extras(r: &Resolved, ticket: Ticket, first: bool, failure: Option<ErrorClass>) {
    let draw = || scope::around().uniform();
    r.chain().ended(ticket, first, failure, &draw, &|change| {
        observe::state_changed(r.who(), change);
    });
}

/// What [`Call::send_token`] found.
pub enum SendToken<R> {
    /// The token is taken: run the attempt.
    Go,
    /// Sleep this long, then look again.
    Wait(Duration),
    /// Wait in a guard's line at most this long ([`Call::in_line`]), then look again.
    Line(Duration),
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
    /// Sleep this long for the bucket's refill, then [`Call::settle`] with `None`.
    Wait(Duration),
    /// Wait in a guard's line at most this long ([`Call::in_line`]), then [`Call::settle`]
    /// with `None`.
    Line(Duration),
}

impl<R> Settled<R> {
    /// A retry after `delay`. Instant retries sleep nothing; a zero delay (`Retry-After: 0`, a
    /// zero backoff) retries now, where tokio's timer would wait for its next millisecond tick.
    fn after(delay: Duration, a: &Around) -> Self {
        if delay.is_zero() || a.skips_waits() {
            Settled::Retry
        } else {
            Settled::Sleep(delay)
        }
    }
}

/// A retry whose admission waits (for a bucket's refill, or a guard), or a long-polling call's
/// outcome returned after its backoff.
struct Short<R> {
    out: R,
    class: ErrorClass,
    hint: Option<Duration>,
    /// Where its admission goes on; `None`: not a retry, the call returns `out`.
    resume: Option<Resume>,
}

impl<R, K: TimerKind, P, J> Call<'_, R, K, P, J>
where
    R: RetryResult,
    K: Timer<R>,
    J: OnFailure<R>,
{
    /// Step 4 again after a `Wait`: the bucket may cover the retry now (or, for a long-polling
    /// call's backoff, the call returns).
    fn after_refill(&mut self, short: Short<R>, a: &Around) -> Settled<R> {
        let Some(resume) = short.resume else {
            return self.ends(short.out);
        };
        let n = self.current.frame.number;
        let draw = || a.uniform();
        let step = self.r().chain().another_again(
            resume,
            short.class,
            AttemptKind::Retry,
            n + 1,
            &mut self.current.ticket,
            &draw,
        );
        match step {
            Step::Go => self.schedule_out_of_line(short.out, Some(short.class), short.hint, a),
            Step::Wait(delay, resume) => {
                let short = Short {
                    resume: Some(resume),
                    ..short
                };
                self.wait_admission(short, delay, a)
            }
            Step::Refused(stop) => self.retry_stopped(short.out, short.class, short.hint, stop, a),
        }
    }

    /// Steps 3 to 5 for the last attempt's outcome, without waiting (a retry that must first
    /// wait for the bucket's refill is kept in `Retrying::pending`).
    fn judge(&mut self, out: R, a: &Around) -> Settled<R> {
        let n = self.current.frame.number;
        let last = n >= self.max_attempts(a);
        let nested_retried = self.current.frame.take_nested_retried();
        let Err(err) = out.as_result() else {
            // `finish` booked every `Ok` and passed on only the ones polled again.
            return self.poll_again(out, last, a);
        };

        // 3 for an error: its class.
        let expired = self.timing.fired();
        let class = if expired.is_some() {
            ErrorClass::Timeout
        } else {
            self.hooks.class(err)
        };
        self.current.trace.attempt_ended(Some(class));
        if let Some(previous) = self.polling_cut_by_deadline(expired) {
            self.ended_early(a, n, Some(ErrorClass::Timeout), EarlyEnd::Deadline);
            return self.ends(previous);
        }
        // The attempt ran and failed: its cost stays out.
        let ticket = std::mem::take(&mut self.current.ticket);
        let r = self.retrying();
        r.after_throttle = class == ErrorClass::Throttling;
        r.failed = true;
        if self.r().extras {
            self.book_end(ticket, n == 1, Some(class));
        }
        if self.repeats == Repeats::Keyed && !self.current.frame.key_sent() {
            let r = self.r();
            observe::key_not_sent(r.who(), &r.key_warned, n);
        }
        match decide::after_error(class, last, self.idempotent()) {
            AfterError::Return => {
                self.returned(class);
                return self.ends(out);
            }
            AfterError::EndEarly(why) => {
                self.ended_early(a, n, Some(class), why);
                return self.ends(out);
            }
            AfterError::Retry if nested_retried => {
                let r = self.r();
                let depth = self.current.frame.depth();
                observe::nested_retry(r.who(), &r.nested_warned, n, depth, class);
            }
            AfterError::Retry => {}
        }
        let hint = self.hooks.hint(err);

        // 4. The protections' admission: what they allow, the retry's cost, the guards.
        let draw = || a.uniform();
        let step = self.r().chain().another(
            class,
            AttemptKind::Retry,
            n + 1,
            &mut self.current.ticket,
            &draw,
        );
        match step {
            Step::Go => self.schedule(out, Some(class), hint, a),
            Step::Wait(delay, resume) => {
                let short = Short {
                    out,
                    class,
                    hint,
                    resume: Some(resume),
                };
                self.wait_admission(short, delay, a)
            }
            Step::Refused(stop) => self.retry_stopped(out, class, hint, stop, a),
        }
    }

    /// Step 4 when the admission asks to wait (a bucket's refill, a guard): the retry waits in
    /// `Retrying::pending`, unless the wait reaches the deadline.
    fn wait_admission(&mut self, short: Short<R>, delay: Duration, a: &Around) -> Settled<R> {
        if short.resume == Some(Resume::Line) {
            // A wait in line lasts as long as the deadline allows.
            let left = self.current.frame.deadline.map(|d| {
                d.checked_duration_since(Instant::now())
                    .unwrap_or(Duration::ZERO)
            });
            if left != Some(Duration::ZERO) {
                self.retrying().pending = Some(short);
                return Settled::Line(left.map_or(delay, |left| delay.min(left)));
            }
        }
        if self.reaches_deadline(delay) {
            self.release();
            let n = self.current.frame.number;
            self.ended_early(a, n, Some(short.class), EarlyEnd::Deadline);
            return self.ends(short.out);
        }
        self.retrying().pending = Some(short);
        self.slept(delay);
        Settled::Wait(delay)
    }

    /// Step 4 when a protection refused the retry: the call ends early, at once, or after its
    /// backoff for a long-polling call the bucket refused. Out of line: the retry path only
    /// tests for it.
    #[cold]
    #[inline(never)]
    fn retry_stopped(
        &mut self,
        out: R,
        class: ErrorClass,
        hint: Option<Duration>,
        stop: Stop,
        a: &Around,
    ) -> Settled<R> {
        self.release();
        let why = EarlyEnd::of(stop, self.reaches_deadline(Duration::ZERO));
        self.ended_early(a, self.current.frame.number, Some(class), why);
        if stop.lingers() && self.r().long_polling && why != EarlyEnd::Deadline {
            return self.linger(out, class, hint, a);
        }
        self.ends(out)
    }

    /// A long-polling call the bucket refused a retry: it sleeps the backoff the retry would
    /// have had (the server's hint as the behavior takes it), unless that reaches the
    /// deadline, and then returns `out` (kept in `Retrying::pending` across the sleep).
    fn linger(
        &mut self,
        out: R,
        class: ErrorClass,
        hint: Option<Duration>,
        a: &Around,
    ) -> Settled<R> {
        // A hint too long to obey leaves the backoff: the call ends after its wait anyway.
        let delay = match self.delay(Some(class), hint, a) {
            Ok(delay) => delay,
            Err(_) => self.backoff(a, false),
        };
        if delay.is_zero() || a.skips_waits() || self.reaches_deadline(delay) {
            return self.ends(out);
        }
        self.retrying().pending = Some(Short {
            out,
            class,
            hint,
            resume: None,
        });
        self.slept(delay);
        Settled::Wait(delay)
    }

    /// A polling repeat: no retry cost, the backoff, the same limits.
    fn poll_again(&mut self, out: R, last: bool, a: &Around) -> Settled<R> {
        self.current.trace.attempt_ended(None);
        if last {
            self.ends(out)
        } else {
            self.schedule_out_of_line(out, None, None, a)
        }
    }

    /// [`schedule`](Self::schedule) for the paths off the retry path (a polling repeat, a
    /// retry after a bucket's refill), out of line so that only the retry path inlines it.
    #[inline(never)]
    fn schedule_out_of_line(
        &mut self,
        out: R,
        class: Option<ErrorClass>,
        hint: Option<Duration>,
        a: &Around,
    ) -> Settled<R> {
        self.schedule(out, class, hint, a)
    }

    /// Steps 5 and 6 but the sleep: the delay (the server's hint, else the jittered backoff),
    /// the deadline check, the hook and the event. `class` is `None` for a polling repeat.
    /// Inlined into the retry path (`judge`); the other paths call it out of line.
    #[inline(always)]
    fn schedule(
        &mut self,
        out: R,
        class: Option<ErrorClass>,
        hint: Option<Duration>,
        a: &Around,
    ) -> Settled<R> {
        let n = self.current.frame.number;
        let delay = match self.delay(class, hint, a) {
            Ok(delay) => delay,
            Err(why) => {
                self.release();
                self.ended_early(a, n, class, why);
                return self.ends(out);
            }
        };

        // 5. No sleep crosses the deadline (an instant scope's sleeps count as zero).
        let slept = if a.skips_waits() {
            Duration::ZERO
        } else {
            delay
        };
        if self.reaches_deadline(slept) {
            self.release();
            self.ended_early(a, n, class, EarlyEnd::Deadline);
            return self.ends(out);
        }

        // 6. Hook and event; the caller sleeps.
        let class = class.unwrap_or(ErrorClass::Transient);
        self.hooks.on_retry(&RetryEvent {
            call: &self.current,
            attempt: n,
            delay,
            error: out.as_result().err(),
            class,
            hedge: false,
        });
        observe::retrying(&self.current, a, class, delay, hint);
        self.retrying().last = Some(out);
        self.slept(slept);
        Settled::after(delay, a)
    }

    /// Step 5's delay after a failure of `class` (`None`: a polling repeat) that gave `hint`,
    /// by the function's rule for hints: `Err` when the hint ends the call.
    #[inline(always)]
    fn delay(
        &mut self,
        class: Option<ErrorClass>,
        hint: Option<Duration>,
        a: &Around,
    ) -> Result<Duration, EarlyEnd> {
        match self.r().hints {
            // The classic behavior starts every backoff at `initial_backoff`.
            Hints::Classic => match hint {
                Some(h) => decide::hint(h, self.r().settings.max_backoff),
                None => Ok(self.backoff(a, false)),
            },
            Hints::Aws2026 => {
                let throttled = class == Some(ErrorClass::Throttling);
                Ok(decide::delay_2026(hint, self.backoff(a, throttled)))
            }
            Hints::Grpc => Ok(self.grpc_delay(hint, a)),
        }
    }

    /// Step 5 under gRFC A6: the server's pushback is the delay, whatever its length, and the
    /// backoff after it starts again from `initial_backoff` (its exponent counts the retries
    /// since the last pushback).
    fn grpc_delay(&mut self, hint: Option<Duration>, a: &Around) -> Duration {
        let n = self.current.frame.number;
        let r = self.retrying();
        match hint {
            Some(pushback) => {
                r.pushed_at = n;
                pushback
            }
            None => {
                let since = n - r.pushed_at;
                self.backoff_at(a, since, false)
            }
        }
    }

    /// Step 5's backoff after the current attempt (`throttled`: it failed with a throttling
    /// error), jittered with the ambient's randomness. Without jitter there is nothing to draw.
    /// Inlined where it is used: the retry path's `schedule`, and the cold `linger`.
    #[inline(always)]
    fn backoff(&mut self, a: &Around, throttled: bool) -> Duration {
        let n = self.current.frame.number;
        self.backoff_at(a, n, throttled)
    }

    /// The backoff as after attempt `n` (the `n`-th retry's).
    #[inline(always)]
    fn backoff_at(&mut self, a: &Around, n: u32, throttled: bool) -> Duration {
        let settings = &self.r().settings;
        match settings.jitter {
            Jitter::None => settings.backoff_after(n, throttled),
            // Only decorrelated jitter grows from the last delay.
            Jitter::Decorrelated => {
                let bounds = (settings.backoff_after(1, throttled), settings.max_backoff);
                let r = self.retrying();
                let d = a.draw(|rng| Jitter::decorrelated(bounds, r.previous_delay, rng));
                r.previous_delay = d;
                d
            }
            jitter => a.draw(|rng| jitter.apply(settings.backoff_after(n, throttled), rng)),
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

#[cfg(test)]
mod tests {
    //! The call's own steps, on tokio's paused clock. The loop as a whole is tested through
    //! the attribute and `Call::run` by the workspace's tests.
    use super::hooks::{never_repeat, no_hook};
    use super::timer::Armed;
    use super::*;
    use crate::protect::bucket::TokenBucket;
    use crate::spec::Keys;
    use tokio::time::advance;

    type Out = Result<(), ErrorClass>;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn call(
        site: &'static Site,
    ) -> Call<'static, Out, Untimed, impl Fn(&()) -> bool, impl OnFailure<Out>> {
        Call::new(site, true, Untimed, ByTrait, never_repeat::<()>, no_hook)
    }

    fn timed_call(
        site: &'static Site,
    ) -> Call<'static, Out, Timed<ErrorClass>, impl Fn(&()) -> bool, impl OnFailure<Out>> {
        let conversion: fn(TimedOut) -> ErrorClass = |_| ErrorClass::Timeout;
        Call::new(
            site,
            true,
            Timed(conversion),
            ByTrait,
            never_repeat::<()>,
            no_hook,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_timer_is_the_attempt_timeout_until_the_deadline_comes_first() {
        let site: &Site = Box::leak(Box::new(Site::new(
            "f",
            Keys::new().attempt_timeout(S(3)).deadline(S(5)),
        )));
        let start = Instant::now();
        let mut call = timed_call(site);
        assert_eq!(call.arm(1), Some(start + S(3)));
        assert_eq!(call.timing.armed, Armed::By(TimeoutKind::Attempt));
        advance(S(3)).await;
        // 3 s more would pass the deadline at 5 s: the deadline cuts this attempt.
        assert_eq!(call.arm(2), Some(start + S(5)));
        assert_eq!(call.timing.armed, Armed::By(TimeoutKind::Deadline));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_attempt_says_which_limit_cut_it() {
        let site: &Site = Box::leak(Box::new(Site::new(
            "f",
            Keys::new().attempt_timeout(S(3)).deadline(S(5)),
        )));
        let mut call = timed_call(site);
        call.current.frame.number = 1;
        call.arm(1);
        // The conversion here keeps only the class; the cutoff remembers the kind for `settle`.
        assert_eq!(call.timed_out(), Err(ErrorClass::Timeout));
        assert_eq!(call.timing.armed, Armed::Fired(TimeoutKind::Attempt));
        advance(S(3)).await;
        call.current.frame.number = 2;
        call.arm(2);
        let _ = call.timed_out();
        assert_eq!(call.timing.armed, Armed::Fired(TimeoutKind::Deadline));
    }

    #[test]
    fn a_permanent_error_returns_and_takes_nothing() {
        static B: TokenBucket = TokenBucket::standard();
        let site: &Site = Box::leak(Box::new(Site::new("f", Keys::new()).bucket(&B)));
        let mut call = call(site);
        call.current.frame.number = 1;
        assert!(matches!(
            call.settle(Some(Err(ErrorClass::Permanent))),
            Settled::Return(Err(ErrorClass::Permanent))
        ));
        assert_eq!(B.available(), 500);
    }

    #[test]
    fn a_retry_holds_its_cost_until_the_call_is_dropped() {
        static B: TokenBucket = TokenBucket::standard();
        let site: &Site = Box::leak(Box::new(Site::new("f", Keys::new()).bucket(&B)));
        let mut call = call(site);
        call.current.frame.number = 1;
        assert!(matches!(
            call.settle(Some(Err(ErrorClass::Timeout))),
            Settled::Sleep(_)
        ));
        assert_eq!(B.available(), 490, "a timeout's retry costs 10");
        drop(call);
        assert_eq!(B.available(), 500, "the retry never ran: its cost is back");
    }

    #[test]
    fn a_retry_that_failed_keeps_its_cost_out() {
        static B: TokenBucket = TokenBucket::standard();
        let site: &Site = Box::leak(Box::new(Site::new("f", Keys::new()).bucket(&B)));
        let mut call = call(site);
        call.current.frame.number = 1;
        let _ = call.settle(Some(Err(ErrorClass::Transient)));
        call.current.frame.number = 2;
        let _ = call.settle(Some(Err(ErrorClass::Transient)));
        assert_eq!(B.available(), 490, "two retries of 5 were taken");
        drop(call);
        assert_eq!(
            B.available(),
            495,
            "the one that never ran is back, the one that ran is not"
        );
    }

    #[test]
    fn a_call_told_to_make_one_attempt_ends_at_its_failure_with_its_class() {
        static B: TokenBucket = TokenBucket::standard();
        let site: &Site = Box::leak(Box::new(
            Site::new("f", Keys::new().max_attempts(5)).bucket(&B),
        ));
        let mut call = call(site).once();
        call.current.frame.number = 1;
        assert!(matches!(
            call.settle(Some(Err(ErrorClass::Transient))),
            Settled::Return(Err(ErrorClass::Transient))
        ));
        assert_eq!(B.available(), 500, "the last attempt takes no retry cost");
    }

    #[test]
    fn settling_after_a_wait_with_nothing_pending_retries() {
        let site: &Site = Box::leak(Box::new(Site::new("f", Keys::new())));
        let mut call = call(site);
        assert!(matches!(call.settle(None), Settled::Retry));
    }
}
