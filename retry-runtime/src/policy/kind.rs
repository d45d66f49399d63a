//! What a [`Policy`](super::Policy)'s first type parameter says: how its closures' errors are
//! classified, and, through that, what they must convert.
//!
//! A policy classified by the errors' [`Classify`] impls names in its type what its closures'
//! error type must convert (`()`, [`TimedOut`], [`Refused`] or both): the error type is not
//! known until a call, so the type says what the call will ask of it, and awaiting the call
//! asks it. A policy given a classifier function is a `Policy<fn(&E) -> R>`: its error type is
//! known, so each builder asks what it needs of `E` where it is called, and keeps the
//! conversion in the policy.

use super::Policy;
use super::call::{self, ClassifierSlot, HookSlot, Parts, Ready, RepeatSlot};
use super::sealed::Sealed;
use crate::classify::{Classify, ErrorClass, TimedOut};
use crate::engine::{
    ByTrait, Classifier, IntoErrorClass, NoConversion, OnStop, Timed, Timer, TimerKind, Untimed,
};
use crate::protect::guard::Refused;
use crate::runtime::Instant;
use core::future::Future;
use std::time::Duration;

/// The kinds of a policy whose errors are classified by their [`Classify`] impl, each named by
/// what its closures' error type must convert: `()` (`Policy`, nothing), [`TimedOut`] once the
/// policy writes `attempt_timeout` or `deadline`, [`Refused`] once it has a breaker or a guard,
/// `(TimedOut, Refused)` with both. The builders set it; a `static` writes the result:
///
/// ```
/// use retry_runtime::{Bulkhead, Policy, Refused, TimedOut};
/// use std::time::Duration;
///
/// static POOL: Bulkhead = Bulkhead::new(8);
/// static PLAIN: Policy = Policy::new().max_attempts(4);
/// static TIMED: Policy<TimedOut> = Policy::new().deadline(Duration::from_secs(5));
/// static GUARDED: Policy<(TimedOut, Refused)> = Policy::new()
///     .deadline(Duration::from_secs(5))
///     .guard(&POOL);
/// let broken: Policy<Refused> = Policy::new().breaker("50%");
/// # let _ = (&PLAIN, &TIMED, &GUARDED, broken);
/// ```
#[doc(hidden)]
pub trait ByClassify: Kind<Convert = (), Own = ByTrait> {
    /// The kind once a timeout is written in code.
    type Timed: ByClassify;
    /// The kind once a breaker or a guard is given.
    type Guarded: ByClassify;
    /// Whether its calls can time out.
    const TIMED: bool;
    /// Whether its calls can be refused.
    const GUARDED: bool;
}

impl ByClassify for () {
    type Timed = TimedOut;
    type Guarded = Refused;
    const TIMED: bool = false;
    const GUARDED: bool = false;
}

impl ByClassify for TimedOut {
    type Timed = TimedOut;
    type Guarded = (TimedOut, Refused);
    const TIMED: bool = true;
    const GUARDED: bool = false;
}

impl ByClassify for Refused {
    type Timed = (TimedOut, Refused);
    type Guarded = Refused;
    const TIMED: bool = false;
    const GUARDED: bool = true;
}

impl ByClassify for (TimedOut, Refused) {
    type Timed = (TimedOut, Refused);
    type Guarded = (TimedOut, Refused);
    const TIMED: bool = true;
    const GUARDED: bool = true;
}

/// What a [`Policy`](super::Policy)'s first type parameter can be: what its closures' error
/// type must convert, for a policy classified by the errors' `Classify` impls (`()`,
/// [`TimedOut`], [`Refused`], `(TimedOut, Refused)`), or the function given to
/// [`Policy::classify`](super::Policy::classify), `fn(&E) -> R` (`R`: `bool` or
/// [`ErrorClass`]), with the one given to [`Policy::retry_after`](super::Policy::retry_after)
/// beside it, `(fn(&E) -> R, fn(&E) -> Option<Duration>)`.
#[diagnostic::on_unimplemented(
    message = "`Policy<{Self}>` is not the type of a policy",
    label = "not a kind of policy",
    note = "a policy classified by the errors' `Classify` impls is a `Policy` (nothing asked of its error type), a `Policy<TimedOut>` (a timeout written in code), a `Policy<Refused>` (a breaker or a guard) or a `Policy<(TimedOut, Refused)>` (both, in that order); one given a classifier function is a `Policy<fn(&E) -> R>`"
)]
pub trait Kind: Sealed + Copy {
    /// What the policy keeps to classify errors: the function, or nothing (the `Classify`
    /// impls).
    #[doc(hidden)]
    type Own: Copy;
    /// What the builders keep of the error type's conversions (nothing for a kind whose type
    /// says them).
    #[doc(hidden)]
    type Convert: Copy;
    /// The timer of a call whose closure returns `Result<V, E>`.
    #[doc(hidden)]
    type Timer<V, E>: Split<Result<V, E>> + Send + Sync;
    /// What a call refused by a breaker or a guard returns.
    #[doc(hidden)]
    type Stopped<V, E>: OnStop<Result<V, E>> + Send + Sync;

    /// The loop of a call of a policy of this kind, started at its first poll: built for the
    /// one timer a `ByClassify` kind's type tells, or for each timer a classifier
    /// function's policy may have.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    fn launch<'p, P, O, F, V, E, Cx, Px, Ox>(
        parts: Parts<'p, Policy<Self, P, O>, F, (Cx, Px, Ox)>,
        ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Stopped<V, E>>,
    ) -> impl Future<Output = Result<V, E>>
    where
        F: call::AttemptFn<Fut: Future<Output = Result<V, E>>>,
        Cx: ClassifierSlot<'p, Self, E>,
        Px: RepeatSlot<'p, P, V>,
        Ox: HookSlot<'p, O, E>;
}

/// [`Kind::launch`], by `$start` (`start` or `start_either`).
macro_rules! launch {
    ($start:ident) => {
        fn launch<'p, P, O, F, V, E, Cx, Px, Ox>(
            parts: Parts<'p, Policy<Self, P, O>, F, (Cx, Px, Ox)>,
            ready: Ready<Self::Timer<V, E>, Cx::Prepared, Self::Stopped<V, E>>,
        ) -> impl Future<Output = Result<V, E>>
        where
            F: call::AttemptFn<Fut: Future<Output = Result<V, E>>>,
            Cx: ClassifierSlot<'p, Self, E>,
            Px: RepeatSlot<'p, P, V>,
            Ox: HookSlot<'p, O, E>,
        {
            call::$start(parts, ready, call::Anything)
        }
    };
}

impl Kind for () {
    type Own = ByTrait;
    type Convert = ();
    type Timer<V, E> = Untimed;
    type Stopped<V, E> = NoConversion;

    launch!(start);
}

impl Kind for TimedOut {
    type Own = ByTrait;
    type Convert = ();
    type Timer<V, E> = Timed<E>;
    type Stopped<V, E> = NoConversion;

    launch!(start);
}

impl Kind for Refused {
    type Own = ByTrait;
    type Convert = ();
    type Timer<V, E> = Untimed;
    type Stopped<V, E> = fn(Refused) -> Result<V, E>;

    launch!(start);
}

impl Kind for (TimedOut, Refused) {
    type Own = ByTrait;
    type Convert = ();
    type Timer<V, E> = Timed<E>;
    type Stopped<V, E> = fn(Refused) -> Result<V, E>;

    launch!(start);
}

impl<X, R> Kind for fn(&X) -> R {
    type Own = Self;
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Stopped<V, E> = Conversions<E>;

    launch!(start_either);
}

impl<X, R> Kind for (fn(&X) -> R, fn(&X) -> Option<Duration>) {
    type Own = Self;
    type Convert = Conversions<X>;
    type Timer<V, E> = Option<Timed<E>>;
    type Stopped<V, E> = Conversions<E>;

    launch!(start_either);
}

/// The conversions of a policy with a classifier function, kept by the builders that asked
/// for them (`deadline`, `breaker`, `guard`): `None` where the policy needs none.
#[doc(hidden)]
pub struct Conversions<E> {
    pub(super) timed_out: Option<fn(TimedOut) -> E>,
    pub(super) refused: Option<fn(Refused) -> E>,
}

impl<E> Conversions<E> {
    /// The conversions a `ByClassify` policy of kind `K` asks of `E`.
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
    /// The conversion a `ByClassify` policy's type asks for.
    #[doc(hidden)]
    const TIMED_OUT: Option<fn(TimedOut) -> E>;
    /// The timer of a call.
    #[doc(hidden)]
    fn timer<V>(convert: &Self::Convert) -> Self::Timer<V, E>;
}

/// [`TimeoutsFor`] of the `ByClassify` kinds `$kind` whose calls cannot time out.
macro_rules! untimed {
    ($($kind:ty),*) => {$(
        // Not listed as other implementors when one is refused: the note says what leaving
        // the timeouts out means.
        #[diagnostic::do_not_recommend]
        impl<E> TimeoutsFor<E> for $kind {
            const TIMED_OUT: Option<fn(TimedOut) -> E> = None;

            fn timer<V>((): &()) -> Untimed {
                Untimed
            }
        }
    )*};
}

/// [`TimeoutsFor`] of the `ByClassify` kinds `$kind` whose calls can time out.
macro_rules! timed {
    ($($kind:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<E: From<TimedOut>> TimeoutsFor<E> for $kind {
            const TIMED_OUT: Option<fn(TimedOut) -> E> = Some(<E as From<TimedOut>>::from);

            fn timer<V>((): &()) -> Timed<E> {
                Timed(<E as From<TimedOut>>::from)
            }
        }
    )*};
}

untimed!((), Refused);
timed!(TimedOut, (TimedOut, Refused));

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
    /// The conversion a `ByClassify` policy's type asks for.
    #[doc(hidden)]
    const REFUSED: Option<fn(Refused) -> E>;
}

/// [`GuardsFor`] and [`Stops`] of the `ByClassify` kinds `$kind` whose calls nothing refuses.
macro_rules! unguarded {
    ($($kind:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<E> GuardsFor<E> for $kind {
            const REFUSED: Option<fn(Refused) -> E> = None;
        }

        impl<V, E> Stops<V, E> for $kind {
            fn stopped((): &()) -> NoConversion {
                NoConversion
            }
        }
    )*};
}

/// [`GuardsFor`] and [`Stops`] of the `ByClassify` kinds `$kind` whose calls a breaker or a
/// guard may refuse.
macro_rules! guarded {
    ($($kind:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<E: From<Refused>> GuardsFor<E> for $kind {
            const REFUSED: Option<fn(Refused) -> E> = Some(<E as From<Refused>>::from);
        }

        impl<V, E> Stops<V, E> for $kind {
            fn stopped((): &()) -> fn(Refused) -> Result<V, E>
            where
                Self: GuardsFor<E>,
            {
                |refused| Err(converted(<Self as GuardsFor<E>>::REFUSED, refused))
            }
        }
    )*};
}

unguarded!((), TimedOut);
guarded!(Refused, (TimedOut, Refused));

#[diagnostic::do_not_recommend]
impl<E, R> GuardsFor<E> for fn(&E) -> R {
    const REFUSED: Option<fn(Refused) -> E> = None;
}

#[diagnostic::do_not_recommend]
impl<E, R> GuardsFor<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    const REFUSED: Option<fn(Refused) -> E> = None;
}

/// Whether a policy takes calls whose closures return `Result<V, E>`: a policy classified by
/// `Classify` (`ByClassify`) takes any error type (its other needs are its own bounds), a
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

/// The needs every `ByClassify` kind `$kind` shares: any error type, classified by its
/// `Classify` impl.
macro_rules! by_classify {
    ($($kind:ty),*) => {$(
        impl<V, E> ErrorTypeFor<V, E> for $kind where
            Self: TimeoutsFor<E> + GuardsFor<E> + Stops<V, E>
        {
        }

        impl<E> ErrorArg<E> for $kind {
            type Arg = E;

            #[inline]
            fn arg(err: &E) -> &E {
                err
            }
        }

        #[diagnostic::do_not_recommend]
        impl<E: Classify> ClassifiesWith<E> for $kind {}
    )*};
}

by_classify!((), TimedOut, Refused, (TimedOut, Refused));

impl<V, E, R> ErrorTypeFor<V, E> for fn(&E) -> R {}

impl<V, E, R> ErrorTypeFor<V, E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {}

/// The argument a policy's classifier function takes, for a call whose error type is `E`: `E`
/// itself, the only type it is implemented for (a `ByClassify` policy takes any).
#[doc(hidden)]
pub trait ErrorArg<E>: Sealed {
    /// `E`.
    type Arg;
    /// The error, as the classifier's argument.
    fn arg(err: &E) -> &Self::Arg;
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

/// What classifies a call's error type `E`: its `Classify` impl for a `ByClassify` kind, or
/// a classifier function.
///
/// The functions implement it through one blanket impl (over [`GivenClassifier`]): with two
/// candidate impls, a missing `Classify` is reported with this trait's message alone, and the
/// function forms are not listed as other types that implement it.
#[diagnostic::on_unimplemented(
    message = "`Policy::retry` cannot tell whether `{E}` is worth retrying",
    label = "`{E}` does not implement `retry_runtime::Classify`",
    note = "derive it (`#[derive(retry_runtime::Classify)]`, with `#[classify(transient)]`... on its variants), implement it, or give the call a classifier: `.retry(|| ..).classify(|e| ..)`"
)]
pub trait ClassifiesWith<E>: Kind<Own: Classifier<E>> {}

impl<E, G: GivenClassifier + Kind<Own = G> + Classifier<E>> ClassifiesWith<E> for G {}

/// A classifier given as a function, to [`Policy::classify`](super::Policy::classify) (with
/// or without [`Policy::retry_after`](super::Policy::retry_after)). Sealed, so that no
/// other crate can implement it for a `ByClassify` kind: the blanket impl of
/// [`ClassifiesWith`] is then disjoint from theirs.
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
/// `ByClassify` policy's is known from its type (the other side is [`Never`]), a policy with a
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
