//! What a [`Policy`](super::Policy)'s first type parameter says: how its closures' errors are
//! classified, and, through that, what they must convert.
//!
//! A policy classified by the errors' [`Classify`] impls is a `Policy<ByClassify<..>>`: the
//! error type is not known until a call, so the type says what the call will ask of it
//! (`From<TimedOut>` with a timeout written in code, `From<CircuitOpen>` with a breaker,
//! `From<Refused>` with a guard), and awaiting the call asks it. A policy given a classifier
//! function is a `Policy<fn(&E) -> R>`: its error type is known, so each builder asks what it
//! needs of `E` where it is called, and keeps the conversion in the policy.

use super::Policy;
use super::call::{self, ClassifierSlot, HookSlot, Parts, Ready, RepeatSlot};
use super::sealed::Sealed;
use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::engine::{
    Classifier, FromCircuitOpen, FromRefused, FromTimedOut, IntoErrorClass, NoBreaker, OnRefusal,
    Refusing, Timed, Timer, TimerKind, Untimed,
};
use crate::protect::breaker::CircuitOpen;
use crate::protect::guard::Refused;
use crate::runtime::Instant;
use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use std::time::Duration;

/// A policy's errors classified by their [`Classify`] impl: the first type parameter of every
/// [`Policy`](super::Policy) without a classifier function (`Policy` is `Policy<ByClassify>`).
///
/// Its parameters say what the closures' error type must convert, each `()` or the type:
/// `T` is [`TimedOut`] once the policy writes `attempt_timeout` or `deadline`, `B` is
/// [`CircuitOpen`] once it has a breaker, `G` is [`Refused`] once it has a guard. The builders
/// set them; a `static` writes the result:
///
/// ```
/// use retry_runtime::policy::ByClassify;
/// use retry_runtime::{CircuitOpen, Policy, TimedOut};
/// use std::time::Duration;
///
/// static PLAIN: Policy = Policy::new().max_attempts(4);
/// static TIMED: Policy<ByClassify<TimedOut>> = Policy::new().deadline(Duration::from_secs(5));
/// let broken: Policy<ByClassify<TimedOut, CircuitOpen>> = Policy::new()
///     .deadline(Duration::from_secs(5))
///     .breaker("50%");
/// # let _ = (&PLAIN, &TIMED, broken);
/// ```
pub struct ByClassify<T = (), B = (), G = ()>(PhantomData<fn(T, B, G)>);

impl<T, B, G> ByClassify<T, B, G> {
    pub(crate) const fn new() -> Self {
        ByClassify(PhantomData)
    }
}

impl<T, B, G> Clone for ByClassify<T, B, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, B, G> Copy for ByClassify<T, B, G> {}

impl<T, B, G> fmt::Debug for ByClassify<T, B, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ByClassify")
    }
}

/// What a [`Policy`](super::Policy)'s first type parameter can be: [`ByClassify`] (the errors'
/// `Classify` impls), or the function given to
/// [`Policy::classify`](super::Policy::classify), `fn(&E) -> R` (`R`: `bool` or
/// [`ErrorClass`]), with the one given to [`Policy::retry_after`](super::Policy::retry_after)
/// beside it, `(fn(&E) -> R, fn(&E) -> Option<Duration>)`.
pub trait Kind: Sealed + Copy {
    /// What the builders keep of the error type's conversions (nothing for [`ByClassify`],
    /// whose type says them).
    #[doc(hidden)]
    type Convert: Copy;
    /// The timer of a call whose closure returns `Result<V, E>`.
    #[doc(hidden)]
    type Timer<V, E>: Split<Result<V, E>> + Send + Sync;
    /// What a call refused by a breaker or a guard returns.
    #[doc(hidden)]
    type Refusal<V, E>: OnRefusal<Result<V, E>> + Send + Sync;

    /// The loop of a call of a policy of this kind, started at its first poll: built for the
    /// one timer a [`ByClassify`] kind's type tells, or for each timer a classifier
    /// function's policy may have.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    fn launch<'p, P, O, F, Fut, V, E, Cx, Px, Ox>(
        parts: Parts<'p, Policy<Self, P, O>, F, (Cx, Px, Ox)>,
        ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Refusal<V, E>>,
    ) -> impl Future<Output = Result<V, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        Cx: ClassifierSlot<'p, Self, E>,
        Px: RepeatSlot<'p, P, V>,
        Ox: HookSlot<'p, O, E>;
}

/// [`Kind::launch`], by `$start` (`start` or `start_either`).
macro_rules! launch {
    ($start:ident) => {
        fn launch<'p, P, O, F, Fut, V, E, Cx, Px, Ox>(
            parts: Parts<'p, Policy<Self, P, O>, F, (Cx, Px, Ox)>,
            ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Refusal<V, E>>,
        ) -> impl Future<Output = Result<V, E>>
        where
            F: FnMut() -> Fut,
            Fut: Future<Output = Result<V, E>>,
            Cx: ClassifierSlot<'p, Self, E>,
            Px: RepeatSlot<'p, P, V>,
            Ox: HookSlot<'p, O, E>,
        {
            call::$start(parts, ready, call::Anything)
        }
    };
}

impl<B, G> Kind for ByClassify<(), B, G>
where
    ByClassify<(), B, G>: Refusals,
{
    type Convert = ();
    type Timer<V, E> = Untimed;
    type Refusal<V, E> = <Self as Refusals>::Refusal<V, E>;

    launch!(start);
}

impl<B, G> Kind for ByClassify<TimedOut, B, G>
where
    ByClassify<TimedOut, B, G>: Refusals,
{
    type Convert = ();
    type Timer<V, E> = Timed<E>;
    type Refusal<V, E> = <Self as Refusals>::Refusal<V, E>;

    launch!(start);
}

impl<X, R> Kind for fn(&X) -> R {
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Refusal<V, E> = Conversions<E>;

    launch!(start_either);
}

impl<X, R> Kind for (fn(&X) -> R, fn(&X) -> Option<Duration>) {
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Refusal<V, E> = Conversions<E>;

    launch!(start_either);
}

/// What a call of a [`ByClassify`] policy refused by its breaker or a guard returns, by its
/// breaker and guard parameters.
#[doc(hidden)]
pub trait Refusals: Sealed {
    /// The engine's conversion.
    type Refusal<V, E>: OnRefusal<Result<V, E>> + Send + Sync;
}

impl<T> Refusals for ByClassify<T, (), ()> {
    type Refusal<V, E> = NoBreaker;
}

impl<T> Refusals for ByClassify<T, CircuitOpen, ()> {
    type Refusal<V, E> = fn(CircuitOpen) -> Result<V, E>;
}

impl<T> Refusals for ByClassify<T, (), Refused> {
    type Refusal<V, E> = fn(Refused) -> Result<V, E>;
}

impl<T> Refusals for ByClassify<T, CircuitOpen, Refused> {
    type Refusal<V, E> = (fn(CircuitOpen) -> Result<V, E>, fn(Refused) -> Result<V, E>);
}

/// The conversions of a policy with a classifier function, kept by the builders that asked
/// for them (`deadline`, `breaker`, `guard`): `None` where the policy needs none.
#[doc(hidden)]
pub struct Conversions<E> {
    pub(super) timed_out: Option<fn(TimedOut) -> E>,
    pub(super) open: Option<fn(CircuitOpen) -> E>,
    pub(super) refused: Option<fn(Refused) -> E>,
}

impl<E> Conversions<E> {
    /// The conversions a [`ByClassify`] policy of kind `K` asks of `E`.
    pub(super) const fn of<K: TimeoutsFor<E> + BreakerFor<E> + GuardFor<E>>() -> Self {
        Conversions {
            timed_out: K::TIMED_OUT,
            open: K::OPEN,
            refused: K::REFUSED,
        }
    }
}

impl<E> Clone for Conversions<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Conversions<E> {}

impl<V, E> OnRefusal<Result<V, E>> for Conversions<E> {
    fn refuse(&self, why: Refusing) -> Option<Result<V, E>> {
        match why {
            Refusing::Open(open) => self.open.map(|f| Err(f(open))),
            Refusing::Guard(refused) => self.refused.map(|f| Err(f(refused))),
        }
    }
}

/// What a policy's timeouts ask of the error type.
#[diagnostic::on_unimplemented(
    message = "this policy writes `attempt_timeout` or `deadline`, so its error type `{E}` must represent a timeout",
    label = "`{E}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add `impl From<retry_runtime::TimedOut> for {E}` (a variant that keeps the `TimedOut` is enough), or leave the timeouts out of the policy"
)]
pub trait TimeoutsFor<E>: Kind {
    /// The conversion a [`ByClassify`] policy's type asks for.
    #[doc(hidden)]
    const TIMED_OUT: Option<fn(TimedOut) -> E>;
    /// The timer of a call.
    #[doc(hidden)]
    fn timer<V>(convert: &Self::Convert) -> Self::Timer<V, E>;
}

// Not listed as other implementors when one is refused: the note says what leaving the
// timeouts out means.
#[diagnostic::do_not_recommend]
impl<B, G, E> TimeoutsFor<E> for ByClassify<(), B, G>
where
    Self: Refusals,
{
    const TIMED_OUT: Option<fn(TimedOut) -> E> = None;

    fn timer<V>((): &()) -> Untimed {
        Untimed
    }
}

#[diagnostic::do_not_recommend]
impl<B, G, E: FromTimedOut> TimeoutsFor<E> for ByClassify<TimedOut, B, G>
where
    Self: Refusals,
{
    const TIMED_OUT: Option<fn(TimedOut) -> E> = Some(E::from_timed_out);

    fn timer<V>((): &()) -> Timed<E> {
        Timed(E::from_timed_out)
    }
}

#[diagnostic::do_not_recommend]
impl<E, R> TimeoutsFor<E> for fn(&E) -> R {
    const TIMED_OUT: Option<fn(TimedOut) -> E> = None;

    fn timer<V>(convert: &Conversions<E>) -> Option<Timed<E>> {
        convert.timed_out.map(Timed)
    }
}

#[diagnostic::do_not_recommend]
impl<E, R> TimeoutsFor<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    const TIMED_OUT: Option<fn(TimedOut) -> E> = None;

    fn timer<V>(convert: &Conversions<E>) -> Option<Timed<E>> {
        convert.timed_out.map(Timed)
    }
}

/// What a policy's breaker asks of the error type.
#[diagnostic::on_unimplemented(
    message = "this policy has a `breaker`, so its error type `{E}` must represent a refused call",
    label = "`{E}` does not implement `From<retry_runtime::CircuitOpen>`",
    note = "add `impl From<retry_runtime::CircuitOpen> for {E}` (a variant that keeps the `CircuitOpen` is enough), or leave the breaker out of the policy"
)]
pub trait BreakerFor<E>: Kind {
    /// The conversion a [`ByClassify`] policy's type asks for.
    #[doc(hidden)]
    const OPEN: Option<fn(CircuitOpen) -> E>;
}

#[diagnostic::do_not_recommend]
impl<T, G, E> BreakerFor<E> for ByClassify<T, (), G>
where
    Self: Kind,
{
    const OPEN: Option<fn(CircuitOpen) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<T, G, E: FromCircuitOpen> BreakerFor<E> for ByClassify<T, CircuitOpen, G>
where
    Self: Kind,
{
    const OPEN: Option<fn(CircuitOpen) -> E> = Some(E::from_circuit_open);
}

#[diagnostic::do_not_recommend]
impl<E, R> BreakerFor<E> for fn(&E) -> R {
    const OPEN: Option<fn(CircuitOpen) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<E, R> BreakerFor<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    const OPEN: Option<fn(CircuitOpen) -> E> = None;
}

/// What a policy's guards ask of the error type.
#[diagnostic::on_unimplemented(
    message = "this policy has a `guard`, so its error type `{E}` must represent a refused call",
    label = "`{E}` does not implement `From<retry_runtime::Refused>`",
    note = "add `impl From<retry_runtime::Refused> for {E}` (a variant that keeps the `Refused` is enough), or leave the guard out of the policy"
)]
pub trait GuardFor<E>: Kind {
    /// The conversion a [`ByClassify`] policy's type asks for.
    #[doc(hidden)]
    const REFUSED: Option<fn(Refused) -> E>;
}

#[diagnostic::do_not_recommend]
impl<T, B, E> GuardFor<E> for ByClassify<T, B, ()>
where
    Self: Kind,
{
    const REFUSED: Option<fn(Refused) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<T, B, E: FromRefused> GuardFor<E> for ByClassify<T, B, Refused>
where
    Self: Kind,
{
    const REFUSED: Option<fn(Refused) -> E> = Some(E::from_refused);
}

#[diagnostic::do_not_recommend]
impl<E, R> GuardFor<E> for fn(&E) -> R {
    const REFUSED: Option<fn(Refused) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<E, R> GuardFor<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    const REFUSED: Option<fn(Refused) -> E> = None;
}

/// Whether a policy takes calls whose closures return `Result<V, E>`: a policy classified by
/// `Classify` ([`ByClassify`]) takes any error type (its other needs are its own bounds), a
/// policy given a classifier function takes the error type the function takes, and no other,
/// even with a call's own classifier (the conversions its builders kept are that type's).
///
/// Its supertraits are the needs it sums up, so that a call with another error type is told
/// this, once, rather than each of them.
#[diagnostic::on_unimplemented(
    message = "this policy classifies errors of another type than `{E}`, the error type of this call's closure",
    label = "the closure returns `Result<_, {E}>`",
    note = "a `Policy<{Self}>` retries closures that fail with the error type its classifier takes: convert the closure's error into that type (`.map_err(..)`), or use a policy without a classifier and classify each call: `Policy::new().retry(|| ..).classify(|e| ..)`"
)]
pub trait ErrorTypeFor<V, E>:
    ErrorArg<E> + TimeoutsFor<E> + BreakerFor<E> + GuardFor<E> + Refuse<V, E>
{
}

impl<T, B, G, V, E> ErrorTypeFor<V, E> for ByClassify<T, B, G> where
    Self: TimeoutsFor<E> + BreakerFor<E> + GuardFor<E> + Refuse<V, E>
{
}

impl<V, E, R> ErrorTypeFor<V, E> for fn(&E) -> R {}

impl<V, E, R> ErrorTypeFor<V, E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {}

/// The argument a policy's classifier function takes, for a call whose error type is `E`: `E`
/// itself, the only type it is implemented for (a [`ByClassify`] policy takes any).
#[doc(hidden)]
pub trait ErrorArg<E>: Sealed {
    /// `E`.
    type Arg;
    /// The error, as the classifier's argument.
    fn arg(err: &E) -> &Self::Arg;
}

impl<T, B, G, E> ErrorArg<E> for ByClassify<T, B, G> {
    type Arg = E;

    #[inline]
    fn arg(err: &E) -> &E {
        err
    }
}

impl<E, R> ErrorArg<E> for fn(&E) -> R {
    type Arg = E;

    #[inline]
    fn arg(err: &E) -> &E {
        err
    }
}

impl<E, R> ErrorArg<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    type Arg = E;

    #[inline]
    fn arg(err: &E) -> &E {
        err
    }
}

/// What a call refused by its breaker or a guard returns, made where the policy's needs of
/// the error type are known to hold.
#[doc(hidden)]
pub trait Refuse<V, E>: Kind {
    /// The conversion.
    fn refusal(convert: &Self::Convert) -> Self::Refusal<V, E>
    where
        Self: BreakerFor<E> + GuardFor<E>;
}

impl<T, V, E> Refuse<V, E> for ByClassify<T, (), ()>
where
    Self: Kind<Refusal<V, E> = NoBreaker>,
{
    fn refusal(_: &Self::Convert) -> NoBreaker {
        NoBreaker
    }
}

impl<T, V, E> Refuse<V, E> for ByClassify<T, CircuitOpen, ()>
where
    Self: Kind<Refusal<V, E> = fn(CircuitOpen) -> Result<V, E>>,
{
    fn refusal(_: &Self::Convert) -> fn(CircuitOpen) -> Result<V, E>
    where
        Self: BreakerFor<E> + GuardFor<E>,
    {
        |open| Err(converted(<Self as BreakerFor<E>>::OPEN, open))
    }
}

impl<T, V, E> Refuse<V, E> for ByClassify<T, (), Refused>
where
    Self: Kind<Refusal<V, E> = fn(Refused) -> Result<V, E>>,
{
    fn refusal(_: &Self::Convert) -> fn(Refused) -> Result<V, E>
    where
        Self: BreakerFor<E> + GuardFor<E>,
    {
        |refused| Err(converted(<Self as GuardFor<E>>::REFUSED, refused))
    }
}

impl<T, V, E> Refuse<V, E> for ByClassify<T, CircuitOpen, Refused>
where
    Self: Kind<Refusal<V, E> = (fn(CircuitOpen) -> Result<V, E>, fn(Refused) -> Result<V, E>)>,
{
    fn refusal(_: &Self::Convert) -> (fn(CircuitOpen) -> Result<V, E>, fn(Refused) -> Result<V, E>)
    where
        Self: BreakerFor<E> + GuardFor<E>,
    {
        (
            |open| Err(converted(<Self as BreakerFor<E>>::OPEN, open)),
            |refused| Err(converted(<Self as GuardFor<E>>::REFUSED, refused)),
        )
    }
}

impl<V, E, R> Refuse<V, E> for fn(&E) -> R {
    fn refusal(convert: &Self::Convert) -> Self::Refusal<V, E> {
        *convert
    }
}

impl<V, E, R> Refuse<V, E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    fn refusal(convert: &Self::Convert) -> Self::Refusal<V, E> {
        *convert
    }
}

/// `x` converted by `conversion`, which a kind whose type asks for it always has.
fn converted<X, E>(conversion: Option<fn(X) -> E>, x: X) -> E {
    match conversion {
        Some(convert) => convert(x),
        None => unreachable!("a policy kind that refuses calls converts the refusal"),
    }
}

/// What classifies a call's error type `E`: a [`ByClassify`] policy's `Classify` impl, or a
/// classifier function.
///
/// The functions implement it through one blanket impl (over [`GivenClassifier`]): with two
/// candidate impls, a missing `Classify` is reported with this trait's message alone, and the
/// function forms are not listed as other types that implement it.
#[diagnostic::on_unimplemented(
    message = "`Policy::retry` cannot tell whether `{E}` is worth retrying",
    label = "`{E}` does not implement `retry_runtime::Classify`",
    note = "derive it (`#[derive(retry_runtime::Classify)]`, with `#[classify(transient)]`... on its variants), implement it, or give the call a classifier: `.retry(|| ..).classify(|e| ..)`"
)]
pub trait ClassifiesWith<E>: Classifier<E> {}

#[diagnostic::do_not_recommend]
impl<T, B, G, E: Classify> ClassifiesWith<E> for ByClassify<T, B, G> {}

impl<E, G: GivenClassifier + Classifier<E>> ClassifiesWith<E> for G {}

impl<T, B, G, E: Classify> Classifier<E> for ByClassify<T, B, G> {
    fn class(&self, err: &E) -> ErrorClass {
        err.classify()
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        err.retry_after()
    }
}

/// A classifier given as a function, to [`Policy::classify`](super::Policy::classify) (with
/// or without [`Policy::retry_after`](super::Policy::retry_after)). Not generic, so that no
/// other crate can implement it for [`ByClassify`]: the blanket impl of [`ClassifiesWith`] is
/// then disjoint from `ByClassify`'s.
#[doc(hidden)]
pub trait GivenClassifier: Sealed {}

impl<E, R> GivenClassifier for fn(&E) -> R {}

impl<E, R> GivenClassifier for (fn(&E) -> R, fn(&E) -> Option<Duration>) {}

/// What a classifier given as a function ([`Policy::classify`](super::Policy::classify),
/// [`Retry::classify`](super::Retry::classify)) returns: `bool` or [`ErrorClass`].
#[diagnostic::on_unimplemented(
    message = "a classifier given to `Policy::retry` must return `bool` or `ErrorClass`, not `{Self}`",
    label = "the classifier returns `{Self}`",
    note = "`true` retries the error as `Transient`; return an `ErrorClass` to say more"
)]
pub trait ClassOutput {
    /// The class.
    #[doc(hidden)]
    fn class(self) -> ErrorClass;
}

#[diagnostic::do_not_recommend]
impl<R: IntoErrorClass> ClassOutput for R {
    fn class(self) -> ErrorClass {
        self.into_error_class()
    }
}

// Implemented for any argument type, through `ErrorArg`: a policy classifier that takes
// another type than the call's error type then fails on `ErrorArg`, which `ErrorTypeFor`
// (asked of the same call) implies, so the call is told once, by `ErrorTypeFor`.
impl<X, E, R: ClassOutput> Classifier<E> for fn(&X) -> R
where
    Self: ErrorArg<E, Arg = X>,
{
    fn class(&self, err: &E) -> ErrorClass {
        self(Self::arg(err)).class()
    }

    fn hint(&self, _: &E) -> Option<Duration> {
        None
    }
}

impl<X, E, R: ClassOutput> Classifier<E> for (fn(&X) -> R, fn(&X) -> Option<Duration>)
where
    Self: ErrorArg<E, Arg = X>,
{
    fn class(&self, err: &E) -> ErrorClass {
        (self.0)(Self::arg(err)).class()
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        (self.1)(Self::arg(err))
    }
}

/// A call's timer split by whether it arms timers, so that the loop is built for each: a
/// [`ByClassify`] policy's is known from its type (the other side is [`Never`]), a policy with a
/// classifier function's from what its builders kept.
#[doc(hidden)]
pub trait Split<R> {
    /// The timer without timeouts.
    type Untimed: Timer<R> + Send + Sync;
    /// The timer with timeouts.
    type Timed: Timer<R> + Send + Sync;
    /// Which it is.
    fn split(self) -> Choice<Self::Untimed, Self::Timed>;
}

/// A timer of one side or the other.
#[doc(hidden)]
pub enum Choice<A, B> {
    /// No timeouts.
    Untimed(A),
    /// Timeouts.
    Timed(B),
}

impl<R> Split<R> for Untimed {
    type Untimed = Untimed;
    type Timed = Never;

    fn split(self) -> Choice<Untimed, Never> {
        Choice::Untimed(self)
    }
}

impl<V, E> Split<Result<V, E>> for Timed<E> {
    type Untimed = Never;
    type Timed = Timed<E>;

    fn split(self) -> Choice<Never, Timed<E>> {
        Choice::Timed(self)
    }
}

impl<V, E> Split<Result<V, E>> for Option<Timed<E>> {
    type Untimed = Untimed;
    type Timed = Timed<E>;

    fn split(self) -> Choice<Untimed, Timed<E>> {
        match self {
            None => Choice::Untimed(Untimed),
            Some(timed) => Choice::Timed(timed),
        }
    }
}

/// The side of a [`Choice`] a policy's type rules out: no value of it exists.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Never {}

impl TimerKind for Never {
    const TIMED: bool = false;
    type Timing = ();
}

impl<R> Timer<R> for Never {
    type Attempt<F: Future<Output = R>> = F;
    type Output = R;

    fn arm<F: Future<Output = R>>(attempt: F, _: Option<Instant>) -> F {
        attempt
    }

    fn outcome(out: R) -> Option<R> {
        Some(out)
    }

    fn timed_out(&self, _: TimedOut) -> R {
        match *self {}
    }
}
