//! One call of a [`Policy`]: the [`Retry`] future that [`Policy::retry`] returns.
//!
//! The future is built in two steps, so that the closure's types are known before anything is
//! asked of them: [`Policy::retry`] takes the attempt closure (which fixes `T` and `E`); the
//! chained [`Retry::classify`], [`Retry::retry_if_ok`] and [`Retry::on_retry`] take closures
//! whose argument types are then inferred; and awaiting it asks what the policy needs of `E`
//! (a classifier, and the conversions the policy's type names: `From<TimedOut>` for a
//! `Policy<TimedOut>`) and that a chained classifier returns `bool` or `ErrorClass`.
//!
//! Everything that can fail is asked by the bounds of `Retry`'s `Future` impl, each directly
//! (not through a trait of the call's parts), and by nothing else: each unmet need is then one
//! error at the `.await`, with its own message and no engine trait between it and the user's
//! code. A bound that could fail on `retry` or `classify` would be reported three times: at
//! the call, and again wherever its opaque return type is used (an opaque type carries the
//! bounds of the function that returns it). rustc adds "remove the `.await`" to an unmet bound
//! that an `.await` asks, whatever the bound; that is the price of the one error. A closure of
//! another error type than a classifier function's policy takes fails [`ErrorTypeFor`], which
//! implies the needs that fail with it, so that it is the one reported.
//!
//! The loop is the engine's, the one `#[retry]` runs, started in place in this future at its
//! first poll by the start function its policy's [`Kind`] gives, which the `Retry`'s [`Drive`]
//! names.

#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
use super::{Choice, Split};
use super::{
    ClassOutput, ClassifiesWith, ErrorTypeFor, GuardsFor, Hook, Kind, Policy, Repeat, Stops,
    TimeoutsFor,
};
use crate::classify::ErrorClass;
use crate::engine::{Classifier, Timer};
use crate::observe::event::RetryEvent;
use crate::runtime::AsyncRuntime;
use core::future::Future;
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;

pin_project_lite::pin_project! {
    /// The future of one [`Policy::retry`] call: it resolves to the last attempt's `Result`.
    ///
    /// Before it is awaited, [`classify`](Self::classify), [`retry_if_ok`](Self::retry_if_ok)
    /// and [`on_retry`](Self::on_retry) give this call a classifier, a polling predicate or a
    /// hook of its own in place of the policy's, and their closures' argument types are
    /// inferred from the attempt closure's `Result`:
    ///
    /// ```
    /// use retry_runtime::Policy;
    ///
    /// #[derive(Debug)]
    /// struct ApiError {
    ///     status: u16,
    /// }
    ///
    /// async fn fetch() -> Result<u32, ApiError> {
    ///     Ok(1)
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let out = Policy::new()
    ///     .max_attempts(3)
    ///     .retry(|| fetch())
    ///     .classify(|e| e.status >= 500)
    ///     .await;
    /// assert_eq!(out.unwrap(), 1);
    /// # }
    /// ```
    ///
    /// Its parameter, which no other crate names, is what starts the call's loop at its first
    /// poll, from the policy, the closure and the call's own plugs. It is `Send` when the
    /// closure, its futures and their outputs are, so it can be spawned; it allocates nothing
    /// (but for a hedged policy's loop).
    #[must_use = "a retry does nothing until it is awaited"]
    pub struct Retry<D>
    where
        D: Drive,
    {
        #[pin]
        state: State<D::Parts, D, D::Fut>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    #[project_replace = StateTake]
    enum State<A, D, Fut> {
        Idle { parts: A, drive: D },
        Running { #[pin] fut: Fut },
        Done,
    }
}

impl<D: Drive> Retry<D> {
    /// The parts, before the first poll.
    fn into_parts(self) -> D::Parts {
        match self.state {
            State::Idle { parts, .. } => parts,
            // A `Retry` is only ever handed out idle; its builders take it by value.
            State::Running { .. } | State::Done => unreachable!("a Retry is built idle"),
        }
    }
}

// What the call asks of its types, each need one bound of this impl (see the module's doc).
impl<'p, C, P, O, F, Fut, V, E, Cx, Px, Ox, D> Future for Retry<D>
where
    D: Drive<Parts = PolicyParts<'p, C, P, O, F, Cx, Px, Ox>>,
    C: Kind,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<V, E>>,
    C: TimeoutsFor<E>,
    Cx: ClassifierSlot<'p, C, E>,
    Cx::Asks: ClassifiesWith<E>,
    Cx::Returns: ClassOutput,
    C: GuardsFor<E>,
    C: Stops<V, E>,
    C: ErrorTypeFor<V, E>,
    Result<V, E>: AsyncRuntime,
    Policy<C, P, O>: 'p,
{
    type Output = <D::Fut as Future>::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        if let StateProj::Idle { .. } = state.as_mut().project() {
            if let StateTake::Idle { parts, drive } = state.as_mut().project_replace(State::Done) {
                let ready = prepare::<C, P, O, V, E, Cx>(parts.policy);
                // Over `Done`, which has nothing to drop.
                state.as_mut().project_replace(State::Running {
                    fut: drive.drive(parts, ready),
                });
            }
        }
        match state.project() {
            StateProj::Running { fut } => fut.poll(cx),
            // Polled again after it completed.
            StateProj::Idle { .. } | StateProj::Done => Poll::Pending,
        }
    }
}

/// An attempt closure, `FnMut() -> Fut`, with its future's type an associated type rather than
/// a parameter of its own: a future whose type is generic over both, with the bound between
/// them, cannot be proven `Send` when the closure borrows (rustc checks auto traits of an
/// `async` block's opaque types with their lifetimes made independent, and the bound then
/// ties two types it sees as different: rust-lang/rust#71723).
#[doc(hidden)]
pub trait AttemptFn {
    /// The attempt's future.
    type Fut: Future;
    /// Starts an attempt.
    fn start(&mut self) -> Self::Fut;
}

impl<F, Fut> AttemptFn for F
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    type Fut = Fut;

    #[inline(always)]
    fn start(&mut self) -> Fut {
        self()
    }
}

/// What a [`Retry`] holds until its first poll: the policy, the attempt closure, and this
/// call's own plugs (a classifier, a polling predicate and a hook, each [`Own`] unless one was
/// chained).
pub struct Parts<'p, Pol, F, X> {
    pub(super) policy: &'p Pol,
    pub(super) attempt: F,
    pub(super) plugs: X,
}

/// What the caller of a call allows beyond its policy: whether an attempt whose request may
/// have reached the server may be repeated (a tower layer's POST may not), and whether only one
/// attempt may be made (a request whose body cannot be sent again). A type, so that a
/// `Policy::retry` call, which allows whatever the policy says, answers with constants.
#[cfg_attr(
    not(any(
        feature = "tokio",
        feature = "smol",
        all(target_arch = "wasm32", target_os = "unknown")
    )),
    allow(dead_code, reason = "the loop, which asks, needs a runtime")
)]
pub(crate) trait Allows: Copy {
    /// An attempt whose request may have reached the server may be repeated.
    fn idempotent(self) -> bool;
    /// One attempt only.
    fn once(self) -> bool;
}

/// A [`Retry`]: whatever the policy says.
#[derive(Clone, Copy)]
pub(crate) struct Anything;

impl Allows for Anything {
    fn idempotent(self) -> bool {
        true
    }

    fn once(self) -> bool {
        false
    }
}

/// A tower layer's request: its own limits.
#[cfg(feature = "tower")]
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) idempotent: bool,
    pub(crate) once: bool,
}

#[cfg(feature = "tower")]
impl Allows for Limits {
    fn idempotent(self) -> bool {
        self.idempotent
    }

    fn once(self) -> bool {
        self.once
    }
}

/// The policy's own plug: no per-call one was chained.
#[derive(Clone, Copy, Debug, Default)]
pub struct Own;

/// This call's classifier ([`Retry::classify`]), returning `R`.
#[derive(Clone, Copy, Debug)]
pub struct ClassifyBy<G, R>(G, PhantomData<fn() -> R>);

/// This call's polling predicate ([`Retry::retry_if_ok`]).
#[derive(Clone, Copy, Debug)]
pub struct RepeatBy<G>(G);

/// This call's hook ([`Retry::on_retry`]).
#[derive(Clone, Copy, Debug)]
pub struct HookBy<G>(G);

/// The types of one call, known from its parts alone (nothing asked of them).
pub trait Shape {
    /// What the first poll prepares: the timer, the classifier and what a refused call
    /// returns.
    type Ready;
}

impl<'p, C, P, O, F, Fut, V, E, Cx, Px, Ox> Shape for PolicyParts<'p, C, P, O, F, Cx, Px, Ox>
where
    C: Kind,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<V, E>>,
    Cx: ClassifierSlot<'p, C, E>,
{
    type Ready = Ready<C::Timer<V, E>, Cx::Prepared, C::Stopped<V, E>>;
}

/// Starts the loop from a call's parts and what its first poll prepared.
///
/// The parts and the loop's future are associated types, not parameters, so that a [`Retry`]
/// names the lifetime of the policy it borrows once (inside its driver's type): a future
/// that awaits a `Retry` can then be proven `Send` (a projection whose trait named the
/// lifetime a second time could not, under `tokio::spawn`).
pub trait Drive {
    /// The call's parts.
    type Parts: Shape;
    /// The loop's future.
    type Fut: Future;
    /// Starts it.
    #[doc(hidden)]
    fn drive(self, parts: Self::Parts, ready: <Self::Parts as Shape>::Ready) -> Self::Fut;
}

/// The loop's start function (`start`, for a call's parts of type `A`) as a [`Drive`]: its
/// type names the function, so the first poll calls it directly.
pub struct Driver<A, G> {
    start: G,
    parts: PhantomData<fn(A)>,
}

impl<A: Shape, G, Fut> Drive for Driver<A, G>
where
    G: FnOnce(A, A::Ready) -> Fut,
    Fut: Future,
{
    type Parts = A;
    type Fut = Fut;

    #[inline]
    fn drive(self, parts: A, ready: A::Ready) -> Fut {
        (self.start)(parts, ready)
    }
}

/// What the first poll of a call prepares.
pub struct Ready<K, C, X> {
    pub(super) timer: K,
    pub(super) classify: C,
    pub(super) refusal: X,
}

/// What a call of `policy` prepares before its loop starts: its timer, its classifier and what
/// a refused call returns (the bounds are its caller's, which report an unmet one).
#[inline]
#[allow(clippy::type_complexity)]
fn prepare<'p, C, P, O, V, E, Cx>(
    policy: &'p Policy<C, P, O>,
) -> Ready<C::Timer<V, E>, Cx::Prepared, C::Stopped<V, E>>
where
    C: Kind + TimeoutsFor<E> + GuardsFor<E> + Stops<V, E>,
    Cx: ClassifierSlot<'p, C, E>,
    Cx::Asks: ClassifiesWith<E>,
    Cx::Returns: ClassOutput,
{
    Ready {
        timer: C::timer::<V>(&policy.convert),
        classify: Cx::prepare(&policy.classify),
        refusal: C::stopped(&policy.convert),
    }
}

/// A call's classifier: the policy's or its own, prepared at the first poll, where what it
/// needs is asked (and reported).
///
/// Its needs are two types the first poll's bounds name directly: the policy's classifier
/// must classify `E` (`Asks: ClassifiesWith<E>`), and this call's must return a class
/// (`Returns: ClassOutput`); the slot that does not use one names a type that always meets it.
/// What the loop then consults asks nothing more (its functions were taken where the bounds
/// held), so that nothing before the first poll asks anything of the error type.
pub trait ClassifierSlot<'p, C: Kind, E> {
    /// What must classify `E`: the policy's classifier, or (for this call's) a function type.
    type Asks;
    /// What this call's classifier returns ([`ErrorClass`] for the policy's).
    type Returns;
    /// What the first poll prepares for it.
    type Prepared;
    /// The classifier the loop consults.
    type Use: Classifier<E>;
    /// It, from the policy's classifier.
    fn prepare(own: &'p C::Own) -> Self::Prepared
    where
        Self::Asks: ClassifiesWith<E>,
        Self::Returns: ClassOutput;
    /// It.
    fn using(self, prepared: Self::Prepared) -> Self::Use;
}

impl<'p, C: Kind<Own: 'p>, E> ClassifierSlot<'p, C, E> for Own {
    type Asks = C;
    type Returns = ErrorClass;
    type Prepared = Erased<'p, C::Own, E>;
    type Use = Erased<'p, C::Own, E>;

    #[inline]
    fn prepare(own: &'p C::Own) -> Self::Prepared
    where
        Self::Asks: ClassifiesWith<E>,
    {
        Erased {
            own,
            class: <C::Own as Classifier<E>>::class,
            hint: <C::Own as Classifier<E>>::hint,
        }
    }

    #[inline]
    fn using(self, prepared: Self::Prepared) -> Self::Use {
        prepared
    }
}

/// The policy's classifier, with its functions for this error type taken where its bound was
/// checked (the first poll), so that nothing before asks it of the error type.
pub struct Erased<'p, C, E> {
    own: &'p C,
    class: fn(&C, &E) -> ErrorClass,
    hint: fn(&C, &E) -> Option<Duration>,
}

impl<C, E> Classifier<E> for Erased<'_, C, E> {
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        (self.class)(self.own, err)
    }

    #[inline]
    fn hint(&self, err: &E) -> Option<Duration> {
        (self.hint)(self.own, err)
    }
}

impl<'p, C: Kind, E, G, R> ClassifierSlot<'p, C, E> for ClassifyBy<G, R>
where
    G: Fn(&E) -> R,
{
    // The policy's classifier is not consulted: a type that classifies any `E`.
    type Asks = fn(&E) -> ErrorClass;
    type Returns = R;
    type Prepared = fn(R) -> ErrorClass;
    type Use = Converted<G, R>;

    #[inline]
    fn prepare(_: &'p C::Own) -> Self::Prepared
    where
        Self::Returns: ClassOutput,
    {
        R::class
    }

    #[inline]
    fn using(self, class: Self::Prepared) -> Self::Use {
        Converted { f: self.0, class }
    }
}

/// This call's classifier, with the conversion of what it returns taken where its bound was
/// checked (the first poll).
pub struct Converted<G, R> {
    f: G,
    class: fn(R) -> ErrorClass,
}

impl<E, G: Fn(&E) -> R, R> Classifier<E> for Converted<G, R> {
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        (self.class)((self.f)(err))
    }

    #[inline]
    fn hint(&self, _: &E) -> Option<Duration> {
        None
    }
}

/// A call's polling predicate: the policy's or its own.
pub trait RepeatSlot<'p, P, T> {
    /// The predicate the loop consults.
    type Use: Repeat<T>;
    /// It.
    fn using(self, own: &'p P) -> Self::Use;
}

impl<'p, P: Repeat<T> + 'p, T> RepeatSlot<'p, P, T> for Own {
    type Use = Ref<'p, P>;

    #[inline]
    fn using(self, own: &'p P) -> Ref<'p, P> {
        Ref(own)
    }
}

impl<'p, P, T, G: Fn(&T) -> bool> RepeatSlot<'p, P, T> for RepeatBy<G> {
    type Use = G;

    #[inline]
    fn using(self, _: &'p P) -> G {
        self.0
    }
}

/// A call's hook: the policy's or its own.
pub trait HookSlot<'p, O, E> {
    /// The hook the loop calls.
    type Use: Hook<E>;
    /// It.
    fn using(self, own: &'p O) -> Self::Use;
}

impl<'p, O: Hook<E> + 'p, E> HookSlot<'p, O, E> for Own {
    type Use = Ref<'p, O>;

    #[inline]
    fn using(self, own: &'p O) -> Ref<'p, O> {
        Ref(own)
    }
}

/// The policy's own predicate or hook, borrowed for one call.
#[derive(Debug)]
pub struct Ref<'p, X>(&'p X);

impl<T, P: Repeat<T>> Repeat<T> for Ref<'_, P> {
    const POLLS: bool = P::POLLS;

    #[inline]
    fn repeat(&self, value: &T) -> bool {
        self.0.repeat(value)
    }
}

impl<E, O: Hook<E>> Hook<E> for Ref<'_, O> {
    #[inline]
    fn on_retry(&self, event: &RetryEvent<'_, E>) {
        self.0.on_retry(event);
    }
}

impl<'p, O, E, G: Fn(&RetryEvent<'_, E>)> HookSlot<'p, O, E> for HookBy<G> {
    type Use = G;

    #[inline]
    fn using(self, _: &'p O) -> G {
        self.0
    }
}

type PolicyParts<'p, C, P, O, F, Cx, Px, Ox> = Parts<'p, Policy<C, P, O>, F, (Cx, Px, Ox)>;

/// The steps of one call's loop with the timer `$timer`, in the `async` block of a start
/// function: the engine's loop, as `#[retry]` runs it, or the hedged loop for a hedged policy,
/// boxed, since its slots would double every call's future.
///
/// Each branch builds its own call (by a function) and the hedged one borrows the closure:
/// neither is moved in one branch only, which would keep a drop flag for it in the future,
/// set on every call.
#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
macro_rules! run_loop {
    ($policy:ident, $attempt:ident, $plugs:ident, $allows:ident, $timer:ident,
     $classify:ident, $refusal:ident, $V:ty, $Px:ty) => {{
        let (idempotent, once) = ($allows.idempotent(), $allows.once());
        // Most policies do not hedge: that is looked at first, and the rest out of line.
        if $policy.site.hedged() && hedges::<_, _, _, $V, $Px>($policy, idempotent, once) {
            let call = engine(
                $policy, $plugs, idempotent, false, $timer, $classify, $refusal,
            );
            return Box::pin(call.run_hedged(&mut $attempt)).await;
        }
        let mut call = engine(
            $policy, $plugs, idempotent, once, $timer, $classify, $refusal,
        );
        let call = &mut call;
        crate::__retry_loop!(call, $attempt())
    }};
}

/// The loop of one call whose timer its policy's type tells (a `ByClassify` kind's),
/// started at its first poll.
///
/// An `async` block over the parts taken apart, rather than an `async fn`, which would first
/// move each argument into a slot of its body.
#[allow(clippy::type_complexity)]
#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
pub(super) fn start<'p, C, P, O, F, V, E, Cx, Px, Ox>(
    parts: PolicyParts<'p, C, P, O, F, Cx, Px, Ox>,
    ready: Ready<C::Timer<V, E>, Cx::Prepared, C::Stopped<V, E>>,
    allows: impl Allows,
) -> impl Future<Output = Result<V, E>>
where
    C: Kind,
    C::Timer<V, E>: Timer<Result<V, E>>,
    F: AttemptFn<Fut: Future<Output = Result<V, E>>>,
    Cx: ClassifierSlot<'p, C, E>,
    Px: RepeatSlot<'p, P, V>,
    Ox: HookSlot<'p, O, E>,
{
    let Parts {
        policy,
        attempt: mut attempts,
        plugs,
    } = parts;
    let mut attempt = move || attempts.start();
    let Ready {
        timer,
        classify,
        refusal,
    } = ready;
    async move {
        run_loop!(
            policy, attempt, plugs, allows, timer, classify, refusal, V, Px
        )
    }
}

/// The loop of one call whose timer its policy's builders chose (a policy with a classifier
/// function), started at its first poll: one loop is built for each timer, and the call runs
/// the one its policy has.
#[allow(clippy::type_complexity)]
#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
pub(super) fn start_either<'p, C, P, O, F, V, E, Cx, Px, Ox>(
    parts: PolicyParts<'p, C, P, O, F, Cx, Px, Ox>,
    ready: Ready<C::Timer<V, E>, Cx::Prepared, C::Stopped<V, E>>,
    allows: impl Allows,
) -> impl Future<Output = Result<V, E>>
where
    C: Kind,
    F: AttemptFn<Fut: Future<Output = Result<V, E>>>,
    Cx: ClassifierSlot<'p, C, E>,
    Px: RepeatSlot<'p, P, V>,
    Ox: HookSlot<'p, O, E>,
{
    let Parts {
        policy,
        attempt: mut attempts,
        plugs,
    } = parts;
    let mut attempt = move || attempts.start();
    let Ready {
        timer,
        classify,
        refusal,
    } = ready;
    async move {
        match timer.split() {
            Choice::Untimed(timer) => {
                run_loop!(
                    policy, attempt, plugs, allows, timer, classify, refusal, V, Px
                )
            }
            Choice::Timed(timer) => {
                run_loop!(
                    policy, attempt, plugs, allows, timer, classify, refusal, V, Px
                )
            }
        }
    }
}

/// The loop of a build without a runtime feature, which no program reaches: awaiting a
/// [`Retry`] asks `AsyncRuntime`, which nothing meets there (see `runtime::none`).
#[allow(clippy::type_complexity)]
#[cfg(not(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
)))]
pub(super) fn start<'p, C, P, O, F, V, E, Cx, Px, Ox>(
    parts: PolicyParts<'p, C, P, O, F, Cx, Px, Ox>,
    ready: Ready<C::Timer<V, E>, Cx::Prepared, C::Stopped<V, E>>,
    allows: impl Allows,
) -> impl Future<Output = Result<V, E>>
where
    C: Kind,
    F: AttemptFn<Fut: Future<Output = Result<V, E>>>,
    Cx: ClassifierSlot<'p, C, E>,
{
    let Ready {
        timer,
        classify,
        refusal,
    } = ready;
    drop((parts, timer, classify, refusal, allows));
    core::future::pending()
}

#[cfg(not(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
)))]
pub(super) use start as start_either;

/// Whether a call of a policy that hedges runs the hedged loop: its attempts may run side by
/// side.
#[cold]
#[inline(never)]
#[cfg_attr(
    not(any(
        feature = "tokio",
        feature = "smol",
        all(target_arch = "wasm32", target_os = "unknown")
    )),
    allow(dead_code)
)]
fn hedges<'p, C: Kind, P, O, V, Px>(
    policy: &'p Policy<C, P, O>,
    idempotent: bool,
    once: bool,
) -> bool
where
    Px: RepeatSlot<'p, P, V>,
{
    !once && idempotent && policy.idempotent.hedged && !<Px::Use as Repeat<V>>::POLLS
}

/// The engine's call for a call of `policy` with these plugs and what its first poll prepared.
/// Always inlined: the loop's block calls it in two branches, and left to the inliner the call
/// is not built directly in its slot (BENCHMARKS.md records what that costs each path).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(
    not(any(
        feature = "tokio",
        feature = "smol",
        all(target_arch = "wasm32", target_os = "unknown")
    )),
    allow(dead_code)
)]
fn engine<'p, C, P, O, V, E, K, Cx, Px, Ox>(
    policy: &'p Policy<C, P, O>,
    (cx, px, ox): (Cx, Px, Ox),
    idempotent: bool,
    once: bool,
    timer: K,
    classify: Cx::Prepared,
    refusal: C::Stopped<V, E>,
) -> crate::engine::Call<
    'p,
    Result<V, E>,
    K,
    impl Fn(&V) -> bool,
    crate::engine::Hooks<Cx::Use, impl Fn(&RetryEvent<'_, E>), C::Stopped<V, E>>,
>
where
    C: Kind,
    K: Timer<Result<V, E>>,
    Cx: ClassifierSlot<'p, C, E>,
    Px: RepeatSlot<'p, P, V>,
    Ox: HookSlot<'p, O, E>,
{
    let repeat = px.using(&policy.repeat);
    let hook = ox.using(&policy.on_retry);
    crate::engine::Call::of_all(
        &policy.site,
        policy.idempotent.retried && idempotent,
        once,
        timer,
        cx.using(classify),
        move |value: &V| repeat.repeat(value),
        move |event: &RetryEvent<'_, E>| hook.on_retry(event),
        refusal,
    )
}

/// Runs a call of `policy` at once, without the [`Retry`] wrapper (no per-call plugs to wait
/// for): the tower layer's call, whose limits are set before it starts.
#[cfg(feature = "tower")]
pub(crate) fn run_now<'p, C, P, O, F, Fut, V, E>(
    parts: PolicyParts<'p, C, P, O, F, Own, Own, Own>,
    limits: Limits,
) -> impl Future<Output = Result<V, E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<V, E>>,
    C: Kind + TimeoutsFor<E> + GuardsFor<E> + Stops<V, E> + ClassifiesWith<E>,
    C::Timer<V, E>: Timer<Result<V, E>>,
    P: Repeat<V>,
    O: Hook<E>,
    Policy<C, P, O>: 'p,
{
    let ready = prepare::<C, P, O, V, E, Own>(parts.policy);
    start(parts, ready, limits)
}

/// Starts a [`Retry`] of `policy` with these plugs.
#[inline]
#[allow(clippy::type_complexity)]
pub(super) fn retry<'p, C, P, O, F, Fut, V, E, Cx, Px, Ox>(
    parts: PolicyParts<'p, C, P, O, F, Cx, Px, Ox>,
) -> Retry<
    impl Drive<
        Parts = PolicyParts<'p, C, P, O, F, Cx, Px, Ox>,
        Fut = impl Future<Output = Result<V, E>>,
    >,
>
where
    C: Kind,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<V, E>>,
    Cx: ClassifierSlot<'p, C, E>,
    Px: RepeatSlot<'p, P, V>,
    Ox: HookSlot<'p, O, E>,
{
    Retry {
        state: State::Idle {
            parts,
            drive: Driver {
                start: C::launch::<'p, P, O, F, V, E, Cx, Px, Ox>,
                parts: PhantomData,
            },
        },
    }
}

impl<'p, C, P, O, F, Fut, V, E, Cx, Px, Ox, D> Retry<D>
where
    C: Kind,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<V, E>>,
    Cx: ClassifierSlot<'p, C, E>,
    Px: RepeatSlot<'p, P, V>,
    Ox: HookSlot<'p, O, E>,
    Policy<C, P, O>: 'p,
    D: Drive<Parts = PolicyParts<'p, C, P, O, F, Cx, Px, Ox>>,
{
    /// Classifies this call's errors with `f` (returning [`ErrorClass`] or `bool`, as
    /// `retry_on`) instead of the policy's classifier; `f`'s argument is the closure's error.
    /// (That it returns one of those is asked where the call is awaited, with the policy's
    /// other needs.)
    #[allow(clippy::type_complexity)]
    pub fn classify<G, R>(
        self,
        f: G,
    ) -> Retry<
        impl Drive<
            Parts = PolicyParts<'p, C, P, O, F, ClassifyBy<G, R>, Px, Ox>,
            Fut = impl Future<Output = Result<V, E>>,
        >,
    >
    where
        G: Fn(&E) -> R,
    {
        let parts = self.into_parts();
        let (_, px, ox) = parts.plugs;
        retry(Parts {
            policy: parts.policy,
            attempt: parts.attempt,
            plugs: (ClassifyBy(f, PhantomData), px, ox),
        })
    }

    /// Repeats this call's successful attempts while `f` returns `true` (polling), as
    /// `retry_if_ok`, instead of the policy's predicate.
    #[allow(clippy::type_complexity)]
    pub fn retry_if_ok<G>(
        self,
        f: G,
    ) -> Retry<
        impl Drive<
            Parts = PolicyParts<'p, C, P, O, F, Cx, RepeatBy<G>, Ox>,
            Fut = impl Future<Output = Result<V, E>>,
        >,
    >
    where
        G: Fn(&V) -> bool,
    {
        let parts = self.into_parts();
        let (cx, _, ox) = parts.plugs;
        retry(Parts {
            policy: parts.policy,
            attempt: parts.attempt,
            plugs: (cx, RepeatBy(f), ox),
        })
    }

    /// Calls `f` before each of this call's sleeps, as `on_retry`, instead of the policy's
    /// hook.
    #[allow(clippy::type_complexity)]
    pub fn on_retry<G>(
        self,
        f: G,
    ) -> Retry<
        impl Drive<
            Parts = PolicyParts<'p, C, P, O, F, Cx, Px, HookBy<G>>,
            Fut = impl Future<Output = Result<V, E>>,
        >,
    >
    where
        G: Fn(&RetryEvent<'_, E>),
    {
        let parts = self.into_parts();
        let (cx, px, _) = parts.plugs;
        retry(Parts {
            policy: parts.policy,
            attempt: parts.attempt,
            plugs: (cx, px, HookBy(f)),
        })
    }
}
