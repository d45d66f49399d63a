//! What a [`Policy`](super::Policy)'s first type parameter says: how its closures' errors are
//! classified, and, through that, what they must convert.
//!
//! A policy classified by the errors' [`Classify`] impls is a `Policy<ByClassify<..>>`: the
//! error type is not known until a call, so the type says what the call will ask of it
//! (`From<TimedOut>` with a timeout written in code, `From<Refused>` with a breaker or a
//! guard), and awaiting the call asks it. A policy given a classifier
//! function is a `Policy<fn(&E) -> R>`: its error type is known, so each builder asks what it
//! needs of `E` where it is called, and keeps the conversion in the policy.

use super::Policy;
use super::call::{self, ClassifierSlot, HookSlot, Parts, Ready, RepeatSlot};
use super::sealed::Sealed;
use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::engine::{
    Classifier, FromStopped, FromTimedOut, IntoErrorClass, NoConversion, OnStop, Timed, Timer,
    TimerKind, Untimed,
};
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
/// `T` is [`TimedOut`] once the policy writes `attempt_timeout` or `deadline`, `G` is
/// [`Refused`] once it has a breaker or a guard (whose refusals are one type). The builders set
/// them; a `static` writes the result:
///
/// ```
/// use retry_runtime::policy::ByClassify;
/// use retry_runtime::{Bulkhead, Policy, Refused, TimedOut};
/// use std::time::Duration;
///
/// static POOL: Bulkhead = Bulkhead::new(8);
/// static PLAIN: Policy = Policy::new().max_attempts(4);
/// static TIMED: Policy<ByClassify<TimedOut>> = Policy::new().deadline(Duration::from_secs(5));
/// static GUARDED: Policy<ByClassify<TimedOut, Refused>> = Policy::new()
///     .deadline(Duration::from_secs(5))
///     .guard(&POOL);
/// let broken: Policy<ByClassify<TimedOut, Refused>> = Policy::new()
///     .deadline(Duration::from_secs(5))
///     .breaker("50%");
/// # let _ = (&PLAIN, &TIMED, &GUARDED, broken);
/// ```
pub struct ByClassify<T = (), G = ()>(PhantomData<fn(T, G)>);

impl<T, G> ByClassify<T, G> {
    pub(crate) const fn new() -> Self {
        ByClassify(PhantomData)
    }
}

impl<T, G> Clone for ByClassify<T, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, G> Copy for ByClassify<T, G> {}

impl<T, G> fmt::Debug for ByClassify<T, G> {
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
    type Stopped<V, E>: OnStop<Result<V, E>> + Send + Sync;

    /// The loop of a call of a policy of this kind, started at its first poll: built for the
    /// one timer a [`ByClassify`] kind's type tells, or for each timer a classifier
    /// function's policy may have.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    fn launch<'p, P, O, F, Fut, V, E, Cx, Px, Ox>(
        parts: Parts<'p, Policy<Self, P, O>, F, (Cx, Px, Ox)>,
        ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Stopped<V, E>>,
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
            ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Stopped<V, E>>,
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

impl<G> Kind for ByClassify<(), G>
where
    ByClassify<(), G>: Guarded,
{
    type Convert = ();
    type Timer<V, E> = Untimed;
    type Stopped<V, E> = <Self as Guarded>::Stopped<V, E>;

    launch!(start);
}

impl<G> Kind for ByClassify<TimedOut, G>
where
    ByClassify<TimedOut, G>: Guarded,
{
    type Convert = ();
    type Timer<V, E> = Timed<E>;
    type Stopped<V, E> = <Self as Guarded>::Stopped<V, E>;

    launch!(start);
}

impl<X, R> Kind for fn(&X) -> R {
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Stopped<V, E> = Conversions<E>;

    launch!(start_either);
}

impl<X, R> Kind for (fn(&X) -> R, fn(&X) -> Option<Duration>) {
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Stopped<V, E> = Conversions<E>;

    launch!(start_either);
}

/// What a call of a [`ByClassify`] policy refused by its breaker or a guard returns, by its
/// second parameter.
#[doc(hidden)]
pub trait Guarded: Sealed {
    /// The engine's conversion.
    type Stopped<V, E>: OnStop<Result<V, E>> + Send + Sync;
}

impl<T> Guarded for ByClassify<T, ()> {
    type Stopped<V, E> = NoConversion;
}

impl<T> Guarded for ByClassify<T, Refused> {
    type Stopped<V, E> = fn(Refused) -> Result<V, E>;
}

/// The conversions of a policy with a classifier function, kept by the builders that asked
/// for them (`deadline`, `breaker`, `guard`): `None` where the policy needs none.
#[doc(hidden)]
pub struct Conversions<E> {
    pub(super) timed_out: Option<fn(TimedOut) -> E>,
    pub(super) refused: Option<fn(Refused) -> E>,
}

impl<E> Conversions<E> {
    /// The conversions a [`ByClassify`] policy of kind `K` asks of `E`.
    pub(super) const fn of<K: TimeoutsFor<E> + GuardsFor<E>>() -> Self {
        Conversions {
            timed_out: K::TIMED_OUT,
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

impl<V, E> OnStop<Result<V, E>> for Conversions<E> {
    fn refuse(&self, refused: Refused) -> Option<Result<V, E>> {
        self.refused.map(|f| Err(f(refused)))
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
impl<G, E> TimeoutsFor<E> for ByClassify<(), G>
where
    Self: Guarded,
{
    const TIMED_OUT: Option<fn(TimedOut) -> E> = None;

    fn timer<V>((): &()) -> Untimed {
        Untimed
    }
}

#[diagnostic::do_not_recommend]
impl<G, E: FromTimedOut> TimeoutsFor<E> for ByClassify<TimedOut, G>
where
    Self: Guarded,
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

/// What a policy's breaker and guards ask of the error type.
#[diagnostic::on_unimplemented(
    message = "this policy has a `breaker` or a `guard`, so its error type `{E}` must represent a refused call",
    label = "`{E}` does not implement `From<retry_runtime::Refused>`",
    note = "add `impl From<retry_runtime::Refused> for {E}` (a variant that keeps the `Refused` is enough; `CircuitOpen` is the same type), or leave the breaker and the guards out of the policy"
)]
pub trait GuardsFor<E>: Kind {
    /// The conversion a [`ByClassify`] policy's type asks for.
    #[doc(hidden)]
    const REFUSED: Option<fn(Refused) -> E>;
}

#[diagnostic::do_not_recommend]
impl<T, E> GuardsFor<E> for ByClassify<T, ()>
where
    Self: Kind,
{
    const REFUSED: Option<fn(Refused) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<T, E: FromStopped> GuardsFor<E> for ByClassify<T, Refused>
where
    Self: Kind,
{
    const REFUSED: Option<fn(Refused) -> E> = Some(E::from_refused);
}

#[diagnostic::do_not_recommend]
impl<E, R> GuardsFor<E> for fn(&E) -> R {
    const REFUSED: Option<fn(Refused) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<E, R> GuardsFor<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
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
pub trait ErrorTypeFor<V, E>: ErrorArg<E> + TimeoutsFor<E> + GuardsFor<E> + Stops<V, E> {}

impl<T, G, V, E> ErrorTypeFor<V, E> for ByClassify<T, G> where
    Self: TimeoutsFor<E> + GuardsFor<E> + Stops<V, E>
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

impl<T, G, E> ErrorArg<E> for ByClassify<T, G> {
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
pub trait Stops<V, E>: Kind {
    /// The conversion.
    fn stopped(convert: &Self::Convert) -> Self::Stopped<V, E>
    where
        Self: GuardsFor<E>;
}

impl<T, V, E> Stops<V, E> for ByClassify<T, ()>
where
    Self: Kind<Stopped<V, E> = NoConversion>,
{
    fn stopped(_: &Self::Convert) -> NoConversion {
        NoConversion
    }
}

impl<T, V, E> Stops<V, E> for ByClassify<T, Refused>
where
    Self: Kind<Stopped<V, E> = fn(Refused) -> Result<V, E>>,
{
    fn stopped(_: &Self::Convert) -> fn(Refused) -> Result<V, E>
    where
        Self: GuardsFor<E>,
    {
        |refused| Err(converted(<Self as GuardsFor<E>>::REFUSED, refused))
    }
}

impl<V, E, R> Stops<V, E> for fn(&E) -> R {
    fn stopped(convert: &Self::Convert) -> Self::Stopped<V, E> {
        *convert
    }
}

impl<V, E, R> Stops<V, E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    fn stopped(convert: &Self::Convert) -> Self::Stopped<V, E> {
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
impl<T, G, E: Classify> ClassifiesWith<E> for ByClassify<T, G> {}

impl<E, G: GivenClassifier + Classifier<E>> ClassifiesWith<E> for G {}

impl<T, G, E: Classify> Classifier<E> for ByClassify<T, G> {
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
