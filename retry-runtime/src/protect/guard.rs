//! The public seam a protection plugs into: [`Guard`], asked before each attempt of a call
//! (its first, each retry, each hedge) and told once how each attempt it admitted ended.
//!
//! A call holds one ordered list of guards ([`Guards`]): a `#[retry]` function's `guard = ...`,
//! a `Policy`'s [`guard`](crate::Policy::guard) calls. The engine asks them in that order, after
//! the protections it keeps itself (the breaker, the budget, the bucket), and before the
//! adaptive rate limiter's pacing, so that a send token is spent as soon as it is had.
//!
//! Every protection of the crate implements [`Guard`]: the three that exist only as guards
//! ([`Bulkhead`](crate::Bulkhead), [`ConcurrencyBudget`](crate::ConcurrencyBudget),
//! [`AdaptiveThrottle`](crate::AdaptiveThrottle)) and the four the engine also asks through
//! keys of their own ([`TokenBucket`](crate::TokenBucket), [`RetryBudget`](crate::RetryBudget),
//! [`CircuitBreaker`](crate::CircuitBreaker), [`RateLimiter`](crate::RateLimiter)). Named by
//! their keys (`bucket`, `budget`, `breaker`, `rate_limiter`), those four are asked in the
//! chain's fixed places ([`chain`](super::chain)), where what they keep of an attempt (the
//! bucket's cost, the breaker's probe pass, the limiter's place in line) lives in the call's
//! ticket and a breaker's refusal reports its changes of state; listed as guards,
//! they are asked in the list's order, with what the attempt's [`GuardContext`] tells them.

use super::Change;
use super::line::WaitLine;
use super::{Held, Ticket};
use crate::classify::{Classify, ErrorClass};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A protection that admits or refuses each attempt of a call, and learns how each attempt it
/// admitted ended: a bulkhead, a concurrency budget, client-side throttling, or one of your
/// own.
///
/// The engine calls [`admit`](Guard::admit) before an attempt starts: before a call's first
/// attempt, before each retry's backoff is slept (so what a retry holds, it holds through its
/// sleep, as the bucket holds its cost), and before each hedge. For every attempt it admitted,
/// it calls [`settle`](Guard::settle) exactly once: with the attempt's outcome, or with
/// [`GuardOutcome::Cancelled`] when the call is dropped, when a guard later in the list
/// refuses the same attempt, or when the attempt is never sent (its deadline came first, a
/// breaker refused it at its start). An attempt is settled before the next attempt of the same
/// call is admitted.
///
/// Guards live in `static`s and are shared by every call that names them, from any thread:
/// keep their state in atomics.
///
/// ```
/// use retry_runtime::{Admit, Guard, GuardContext, GuardOutcome, Refused, retry};
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// /// At most `max` attempts of any call at once.
/// struct AtMost {
///     in_flight: AtomicU32,
///     max: u32,
/// }
///
/// impl Guard for AtMost {
///     fn admit(&self, _: &GuardContext<'_>) -> Admit {
///         let taken = self.in_flight.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
///             (n < self.max).then_some(n + 1)
///         });
///         if taken.is_ok() { Admit::Go } else { Admit::Refuse }
///     }
///
///     fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {
///         self.in_flight.fetch_sub(1, Ordering::AcqRel);
///     }
///
///     fn name(&self) -> &'static str {
///         "at_most"
///     }
/// }
///
/// static FOUR: AtMost = AtMost { in_flight: AtomicU32::new(0), max: 4 };
///
/// #[derive(Debug)]
/// enum Error {
///     Busy,
///     Refused(Refused),
/// }
///
/// impl From<Refused> for Error {
///     fn from(r: Refused) -> Self {
///         Error::Refused(r)
///     }
/// }
///
/// # impl retry_runtime::Classify for Error {
/// #     fn classify(&self) -> retry_runtime::ErrorClass {
/// #         match self {
/// #             Error::Busy => retry_runtime::ErrorClass::Transient,
/// #             Error::Refused(r) => r.classify(),
/// #         }
/// #     }
/// # }
/// #[retry(guard = FOUR, initial_backoff = "1ms")]
/// async fn call() -> Result<u32, Error> {
///     Ok(7)
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// assert_eq!(call().await.unwrap(), 7);
/// assert_eq!(FOUR.in_flight.load(Ordering::Acquire), 0, "settled");
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a guard",
    label = "`guard` takes a `static` whose type implements `retry_runtime::Guard`",
    note = "implement `Guard` for `{Self}` (`admit` and `settle`), or name a `static` of one of the crate's guards (the implementors in `Guard`'s documentation)"
)]
pub trait Guard: Send + Sync {
    /// May this attempt start? [`Admit::Go`] lets it (and commits the guard to one
    /// [`settle`](Guard::settle) call for it), [`Admit::Refuse`] refuses it, and
    /// [`Admit::Wait`] asks the engine to ask again after that delay (the call's deadline still
    /// bounds the wait: a wait that would reach it ends the call).
    fn admit(&self, attempt: &GuardContext<'_>) -> Admit;

    /// An attempt this guard admitted ended with `outcome`. Called exactly once per admitted
    /// attempt.
    fn settle(&self, attempt: &GuardContext<'_>, outcome: GuardOutcome);

    /// The line an attempt this guard answered [`Admit::Wait`] stands in, if it keeps one
    /// ([`WaitLine`]): the engine then joins it (asking `admit` again under the line's lock)
    /// and waits until the guard hands the attempt a place ([`WaitLine::free`], which admits
    /// it), or until the delay `admit` gave, or the call's deadline, comes. By default none:
    /// the engine asks again after the delay. `admit` must not free places of the line itself.
    fn line(&self) -> Option<&WaitLine> {
        None
    }

    /// Whether `settle` reads [`GuardContext::elapsed`]. By default `true`. A guard that never
    /// reads it may say `false`: when no guard of a call is timed, its attempts read no clock
    /// for the guards (two reads an attempt) and `elapsed()` is zero.
    fn timed(&self) -> bool {
        true
    }

    /// The guard's name, as a refusal reports it ([`Refused::by`], the early end's reason, the
    /// WARN event). By default, the name of its type without its path.
    fn name(&self) -> &'static str {
        let name = core::any::type_name::<Self>();
        let name = name.split('<').next().unwrap_or(name);
        name.rsplit("::").next().unwrap_or(name)
    }
}

/// Which attempt of a call a guard is asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptKind {
    /// The call's first attempt.
    First,
    /// An attempt after a failure, admitted before its backoff is slept.
    Retry,
    /// An attempt started beside another still in flight (`hedge_after`).
    Hedge,
}

impl AttemptKind {
    /// The kind as a label writes it: `first`, `retry`, `hedge`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            AttemptKind::First => "first",
            AttemptKind::Retry => "retry",
            AttemptKind::Hedge => "hedge",
        }
    }

    /// The kind of attempt `number` when the gate asks about it first: the call's first
    /// attempt, or a retry (a hedge is asked at its admission, before its gate).
    pub(crate) fn at_gate(number: u32) -> AttemptKind {
        if number <= 1 {
            AttemptKind::First
        } else {
            AttemptKind::Retry
        }
    }
}

/// What a guard answers for an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admit {
    /// The attempt may start; the guard will be told how it ended.
    Go,
    /// The attempt may not start. A refused first attempt ends the call with
    /// `E::from(Refused)`; a refused retry or hedge ends the call with the last attempt's own
    /// error, as an empty retry bucket does.
    Refuse,
    /// Ask again after this delay (the call's deadline bounds the wait). A delay shorter than
    /// a millisecond waits a millisecond, so that a guard that asks to be asked again at once
    /// lets time pass instead of spinning the call.
    Wait(Duration),
}

/// How an attempt a guard admitted ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuardOutcome {
    /// It succeeded (a `retry_if_ok` repeat included: the attempt itself answered).
    Success,
    /// It failed with an error of this class (`Timeout` when its timer cut it off).
    Failure(ErrorClass),
    /// It did not end with an outcome of its own: the call was dropped, a later guard refused
    /// it, another attempt of the call won, or it was never sent.
    Cancelled,
}

/// What a guard knows of the attempt it is asked about (or told the end of).
#[derive(Clone, Copy)]
pub struct GuardContext<'a> {
    about: About<'a>,
    random: &'a dyn Fn() -> f64,
    /// Where a guard's own changes of state go (`None`: nowhere, as in a guard's own tests and
    /// in `admit`).
    report: Option<&'a dyn Fn(Change)>,
}

/// The attempt a context tells of: the engine's ticket, read as the guard asks (a copy of its
/// 24 bytes and the address of the function's names are all a call writes for each question),
/// or each field given, for a guard's own tests (a `with_` method on the engine's reads them
/// all then).
#[derive(Clone, Copy)]
enum About<'a> {
    /// An attempt of a call: its ticket (its kind, number, last class, what it waited and when
    /// it was sent), and its function's names.
    Ticket(Ticket, &'a Names),
    /// Each field given ([`GuardContext::new`] and the `with_` methods).
    Given(Given),
}

/// A function's names, as its guards' contexts tell them: the list of its protections keeps
/// them, and a context points at them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Names {
    /// The `#[retry]` function's name (or the `Policy`'s `name`).
    pub(crate) function: &'static str,
    /// Its partition, if it names one.
    pub(crate) partition: Option<&'static str>,
}

/// A context's fields, given.
#[derive(Clone, Copy)]
struct Given {
    kind: AttemptKind,
    number: u32,
    function: &'static str,
    partition: Option<&'static str>,
    last_class: Option<ErrorClass>,
    waited: Duration,
    elapsed: Duration,
}

fn half() -> f64 {
    0.5
}

impl GuardContext<'static> {
    /// A context for attempt `number` (1-based) of kind `kind`, for a guard's own tests: of a
    /// function called `"guard_test"`, no partition, no last class, nothing waited, and a
    /// [`random`](GuardContext::random) that draws 0.5 (see the `with_` methods).
    #[must_use]
    pub fn new(kind: AttemptKind, number: u32) -> GuardContext<'static> {
        GuardContext {
            about: About::Given(Given {
                kind,
                number,
                function: "guard_test",
                partition: None,
                last_class: None,
                waited: Duration::ZERO,
                elapsed: Duration::ZERO,
            }),
            random: &half,
            report: None,
        }
    }
}

impl<'a> GuardContext<'a> {
    /// The context the engine gives for the attempt `ticket` is for, of the function `names`
    /// names, with the call's generator as `random`.
    pub(crate) fn of(ticket: Ticket, names: &'a Names, random: &'a dyn Fn() -> f64) -> Self {
        GuardContext {
            about: About::Ticket(ticket, names),
            random,
            report: None,
        }
    }

    /// The same context, whose guard reports its changes of state to `report`.
    pub(crate) fn reporting(mut self, report: &'a dyn Fn(Change)) -> Self {
        self.report = Some(report);
        self
    }

    /// A guard's change of state, to the call's one hook for them (nothing in a guard's own
    /// tests).
    pub(crate) fn report(&self, change: Change) {
        if let Some(report) = self.report {
            report(change);
        }
    }

    /// The context's fields, read from the ticket, or as given.
    fn given(&self) -> Given {
        Given {
            kind: self.kind(),
            number: self.number(),
            function: self.function(),
            partition: self.partition(),
            last_class: self.last_class(),
            waited: self.waited(),
            elapsed: self.elapsed(),
        }
    }

    /// The same context with a field given.
    fn with(self, set: impl FnOnce(&mut Given)) -> Self {
        let mut given = self.given();
        set(&mut given);
        GuardContext {
            about: About::Given(given),
            ..self
        }
    }

    /// Whether this is the call's first attempt, a retry or a hedge.
    #[must_use]
    pub fn kind(&self) -> AttemptKind {
        match self.about {
            About::Ticket(ticket, _) => ticket.of.kind(),
            About::Given(given) => given.kind,
        }
    }

    /// The attempt's number, 1-based, hedges counted with the other attempts.
    #[must_use]
    pub fn number(&self) -> u32 {
        match self.about {
            About::Ticket(ticket, _) => ticket.number,
            About::Given(given) => given.number,
        }
    }

    /// The `#[retry]` function's name (or the `Policy`'s `name`).
    #[must_use]
    pub fn function(&self) -> &'static str {
        match self.about {
            About::Ticket(_, names) => names.function,
            About::Given(given) => given.function,
        }
    }

    /// The function's partition, if it names one.
    #[must_use]
    pub fn partition(&self) -> Option<&'static str> {
        match self.about {
            About::Ticket(_, names) => names.partition,
            About::Given(given) => given.partition,
        }
    }

    /// The class of the failure a retry follows; `None` for a first attempt or a hedge.
    #[must_use]
    pub fn last_class(&self) -> Option<ErrorClass> {
        match self.about {
            About::Ticket(ticket, _) => ticket.of.last_class(),
            About::Given(given) => given.last_class,
        }
    }

    /// How long this attempt has waited at the guards so far: the sum of the
    /// [`Admit::Wait`] delays the engine slept for it, to the millisecond. A guard that bounds
    /// a wait (a bulkhead's `max_wait`) reads it.
    #[must_use]
    pub fn waited(&self) -> Duration {
        match self.about {
            About::Ticket(ticket, _) => ticket.waited_for(),
            About::Given(given) => given.waited,
        }
    }

    /// In [`settle`](Guard::settle), how long the attempt ran: the time since it was sent
    /// (zero for an attempt never sent). Zero in [`admit`](Guard::admit), and for a call none
    /// of whose guards is [`timed`](Guard::timed). A limit that follows the attempts' latency
    /// reads it.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        match self.about {
            About::Ticket(ticket, _) => ticket.started.elapsed(),
            About::Given(given) => given.elapsed,
        }
    }

    /// A uniform draw in `[0, 1)` from the call's generator: a `testing` scope's seeded one,
    /// else the thread's. A guard that refuses at random (client-side throttling) draws here,
    /// so that a test scope makes it repeatable.
    #[must_use]
    pub fn random(&self) -> f64 {
        (self.random)()
    }

    /// The same context, of a function called `name`.
    #[must_use]
    pub fn with_function(self, name: &'static str) -> Self {
        self.with(|g| g.function = name)
    }

    /// The same context, in partition `name`.
    #[must_use]
    pub fn with_partition(self, name: &'static str) -> Self {
        self.with(|g| g.partition = Some(name))
    }

    /// The same context, following a failure of `class`.
    #[must_use]
    pub fn with_last_class(self, class: ErrorClass) -> Self {
        self.with(|g| g.last_class = Some(class))
    }

    /// The same context, having waited `waited` at the guards.
    #[must_use]
    pub fn with_waited(self, waited: Duration) -> Self {
        self.with(|g| g.waited = waited)
    }

    /// The same context, of an attempt that ran for `elapsed` (what [`settle`](Guard::settle)
    /// is told).
    #[must_use]
    pub fn with_elapsed(self, elapsed: Duration) -> Self {
        self.with(|g| g.elapsed = elapsed)
    }

    /// The same context, drawing from `random`.
    #[must_use]
    pub fn with_random<'b>(self, random: &'b dyn Fn() -> f64) -> GuardContext<'b> {
        GuardContext {
            about: About::Given(self.given()),
            random,
            report: None,
        }
    }
}

impl fmt::Debug for GuardContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let given = self.given();
        f.debug_struct("GuardContext")
            .field("kind", &given.kind)
            .field("number", &given.number)
            .field("function", &given.function)
            .field("partition", &given.partition)
            .field("last_class", &given.last_class)
            .field("waited", &given.waited)
            .field("elapsed", &given.elapsed)
            .finish_non_exhaustive()
    }
}

/// A call whose first attempt a protection refused, before its body ran: one of its guards,
/// or its circuit breaker (whose refusal is the same type, [`CircuitOpen`]).
///
/// The loop turns it into the function's error type with `E::from(Refused)`, so a function or
/// policy with a guard or a breaker needs `impl From<Refused> for E`. The runtime provides it
/// for `std::io::Error` (kind `Other`, wrapping this), `String`, [`ErrorClass`] and, with their
/// features, `retry_runtime::reqwest::Error` and `tonic::Status` (`UNAVAILABLE` for an open
/// breaker, `RESOURCE_EXHAUSTED` for a guard). It classifies as
/// [`Permanent`](ErrorClass::Permanent): an outer retry loop does not spin on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Refused {
    by: &'static str,
    retry_in: Duration,
}

/// What an open circuit breaker refuses a call with: a [`Refused`] whose
/// [`by`](Refused::by) is `"CircuitBreaker"` and whose [`retry_in`](Refused::retry_in) is the
/// time to the breaker's next probe. An error type's `From<CircuitOpen>` is its
/// `From<Refused>`.
///
/// ```
/// use retry_runtime::{CircuitOpen, Classify, ErrorClass};
///
/// #[derive(Debug)]
/// enum StoreError {
///     Unavailable,
///     Refused(CircuitOpen),
/// }
///
/// impl From<CircuitOpen> for StoreError {
///     fn from(refused: CircuitOpen) -> Self {
///         StoreError::Refused(refused)
///     }
/// }
///
/// impl Classify for StoreError {
///     fn classify(&self) -> ErrorClass {
///         match self {
///             StoreError::Unavailable => ErrorClass::Transient,
///             StoreError::Refused(refused) => refused.classify(),
///         }
///     }
/// }
/// ```
pub type CircuitOpen = Refused;

impl Refused {
    /// A refusal by the guard called `by`.
    #[must_use]
    pub const fn new(by: &'static str) -> Refused {
        Refused {
            by,
            retry_in: Duration::ZERO,
        }
    }

    /// A refusal by `by`, which may admit again in `retry_in` (an open breaker's break).
    pub(crate) const fn until(by: &'static str, retry_in: Duration) -> Refused {
        Refused { by, retry_in }
    }

    /// The name of the protection that refused ([`Guard::name`]; `"CircuitBreaker"` for an
    /// open circuit breaker).
    #[must_use]
    pub const fn by(&self) -> &'static str {
        self.by
    }

    /// How long until the protection that refused may admit an attempt again, when it says:
    /// an open circuit breaker's time to its next probe (zero when half-open and its probes
    /// are out); zero for a guard's refusal.
    #[must_use]
    pub const fn retry_in(&self) -> Duration {
        self.retry_in
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused by guard `{}`: the call was not made", self.by)?;
        if !self.retry_in.is_zero() {
            write!(f, " (it admits again in {:?})", self.retry_in)?;
        }
        Ok(())
    }
}

impl std::error::Error for Refused {}

impl Classify for Refused {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}

impl From<Refused> for ErrorClass {
    fn from(_: Refused) -> Self {
        ErrorClass::Permanent
    }
}

/// For a closure or function whose error is a message: the refusal's description.
impl From<Refused> for String {
    fn from(refused: Refused) -> Self {
        refused.to_string()
    }
}

/// The most guards one function or policy takes.
pub const MAX_GUARDS: usize = 8;

/// One function's or policy's guards, in the order they are asked: built by `const fn`, so
/// that it lives in the function's `static` site or a `static` policy, from `static`s and,
/// for a policy built at run time, guards it owns.
#[doc(hidden)]
#[derive(Clone)]
pub struct Guards {
    list: [Option<Held<dyn Guard>>; MAX_GUARDS],
    len: u8,
    /// More than [`MAX_GUARDS`] were given: the ones beyond are not asked, and resolving the
    /// function warns.
    overflow: bool,
}

impl Guards {
    /// No guards.
    pub const NONE: Guards = Guards {
        list: [const { None }; MAX_GUARDS],
        len: 0,
        overflow: false,
    };

    /// The same list with `guard` last.
    #[must_use]
    pub const fn with(mut self, guard: &'static dyn Guard) -> Guards {
        if (self.len as usize) < MAX_GUARDS {
            // The slot past the last guard holds nothing to drop (which a `const fn` cannot).
            core::mem::forget(self.list[self.len as usize].replace(Held::Static(guard)));
            self.len += 1;
        } else {
            self.overflow = true;
        }
        self
    }

    /// The same list with `guard`, owned, last.
    pub(crate) fn with_owned(mut self, guard: Arc<dyn Guard>) -> Guards {
        if (self.len as usize) < MAX_GUARDS {
            self.list[self.len as usize] = Some(Held::Owned(guard));
            self.len += 1;
        } else {
            self.overflow = true;
        }
        self
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether more than [`MAX_GUARDS`] were given.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflow
    }

    /// The guards, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &dyn Guard> + '_ {
        self.list[..self.len as usize]
            .iter()
            .flatten()
            .map(|g| &**g)
    }

    /// The guards as they are held, in order.
    pub(crate) fn held(&self) -> impl Iterator<Item = &Held<dyn Guard>> + '_ {
        self.list[..self.len as usize].iter().flatten()
    }

    /// The guards' names, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.iter().map(|g| g.name())
    }
}

impl fmt::Debug for Guards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;

    /// A guard that admits every attempt.
    struct Scripted {
        name: &'static str,
    }

    impl Scripted {
        const fn new(name: &'static str) -> Scripted {
            Scripted { name }
        }
    }

    impl Guard for Scripted {
        fn admit(&self, _: &GuardContext<'_>) -> Admit {
            Admit::Go
        }

        fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}

        fn name(&self) -> &'static str {
            self.name
        }
    }

    #[test]
    fn a_list_keeps_at_most_its_capacity_and_says_it_overflowed() {
        static A: Scripted = Scripted::new("a");
        let mut guards = Guards::NONE;
        for _ in 0..MAX_GUARDS {
            guards = guards.with(&A);
        }
        assert!(!guards.overflowed());
        let guards = guards.with(&A);
        assert!(guards.overflowed());
        assert_eq!(guards.held().count(), MAX_GUARDS);
    }

    #[test]
    fn the_default_name_is_the_type_without_its_path() {
        struct Plain;
        impl Guard for Plain {
            fn admit(&self, _: &GuardContext<'_>) -> Admit {
                Admit::Go
            }
            fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
        }
        assert_eq!(Plain.name(), "Plain");
    }

    #[test]
    fn an_engine_context_reads_its_ticket_and_names_and_a_with_keeps_the_rest() {
        use crate::protect::{Of, Stamp};
        let names = Names {
            function: "get_object",
            partition: Some("s3"),
        };
        let ticket = Ticket {
            number: 3,
            waited_ms: 1_500,
            of: Of::AfterThrottling,
            ..Ticket::NONE
        };
        let draw = || 0.25;
        let cx = GuardContext::of(ticket, &names, &draw);
        assert_eq!(cx.kind(), AttemptKind::Retry);
        assert_eq!(cx.number(), 3);
        assert_eq!(cx.function(), "get_object");
        assert_eq!(cx.partition(), Some("s3"));
        assert_eq!(cx.last_class(), Some(ErrorClass::Throttling));
        assert_eq!(cx.waited(), Duration::from_millis(1_500));
        assert_eq!(ticket.started, Stamp::NONE);
        assert_eq!(cx.elapsed(), Duration::ZERO);
        assert_eq!(cx.random(), 0.25);

        // A `with_` method gives one field and keeps every other, the draw included.
        let given = cx.with_partition("other");
        assert_eq!(given.partition(), Some("other"));
        assert_eq!(given.function(), "get_object");
        assert_eq!(given.kind(), AttemptKind::Retry);
        assert_eq!(given.last_class(), Some(ErrorClass::Throttling));
        assert_eq!(given.waited(), Duration::from_millis(1_500));
        assert_eq!(given.random(), 0.25);
        assert_eq!(format!("{cx:?}"), format!("{:?}", cx.with_partition("s3")));
    }

    #[test]
    fn a_refusal_is_permanent_and_says_who_refused() {
        let r = Refused::new("bulkhead");
        assert_eq!(r.by(), "bulkhead");
        assert_eq!(r.classify(), ErrorClass::Permanent);
        assert_eq!(ErrorClass::from(r), ErrorClass::Permanent);
        assert_eq!(
            String::from(r),
            "refused by guard `bulkhead`: the call was not made"
        );
    }
}
