//! The engine without the attribute: a [`Policy`] value whose [`retry`](Policy::retry) runs a
//! closure's attempts with the same loop, the same shared state and the same semantics as a
//! `#[retry]` function.

use crate::classify::{ErrorClass, TimedOut};
use crate::engine::site::{BreakerRef, Site};
use crate::engine::{
    ByTrait, Call, Classifier, FromCircuitOpen, FromTimedOut, IntoErrorClass, NoBreaker, OnRefusal,
    Timed,
};
use crate::observe::event::RetryEvent;
use crate::protect::breaker::{CircuitBreaker, CircuitOpen};
use crate::protect::bucket::TokenBucket;
use crate::protect::budget::RetryBudget;
use crate::protect::limiter::RateLimiter;
use crate::protect::partition::Partition;
use crate::spec::HedgeSpec;
use crate::spec::{Jitter, Keys, Mode, core_keys};
use core::future::Future;
use std::fmt;
use std::time::Duration;

/// A retry policy as a value: the attribute's keys as `const fn` builders, with the same
/// defaults, and [`retry`](Self::retry) to run a closure under it.
///
/// ```
/// use retry_runtime::{ErrorClass, Policy};
/// use std::time::Duration;
///
/// // Built once (a `static`, or from configuration), shared by every call: its retry bucket
/// // is shared too, as a `#[retry]` function's is.
/// static FETCH: Policy = Policy::new()
///     .max_attempts(4)
///     .initial_backoff(Duration::from_millis(100))
///     .deadline(Duration::from_secs(5));
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut calls = 0;
/// let out: Result<u32, std::io::Error> = FETCH
///     .retry(|| {
///         calls += 1;
///         let n = calls;
///         async move {
///             if n < 3 {
///                 Err(std::io::ErrorKind::ConnectionReset.into())
///             } else {
///                 Ok(n)
///             }
///         }
///     })
///     .await;
/// assert_eq!(out.unwrap(), 3);
///
/// // Built where it is used, with a classifier of its own.
/// let polled = Policy::new()
///     .max_attempts(2)
///     .classify(|e: &String| if e == "busy" { ErrorClass::Throttling } else { ErrorClass::Permanent })
///     .retry(|| async { Err::<(), _>("busy".to_string()) })
///     .await;
/// assert!(polled.is_err());
/// # }
/// ```
///
/// The closure makes one attempt's future each time it is called; inside it,
/// [`attempt()`](crate::attempt) tells which attempt it is. The closure's error type `E` is
/// classified by its [`Classify`](crate::Classify) impl, or by [`classify`](Self::classify);
/// and since a policy may carry timeouts (from the environment or a config file too), `E` must
/// be able to represent one: `From<TimedOut>`, which `std::io::Error`, `anyhow::Error`,
/// `Box<dyn Error + Send + Sync>`, `String` and `tonic::Status` have.
///
/// A policy without a partition or a bucket of its own has its own retry bucket and rate
/// limiter, shared by the calls made through that value: build it once and keep it (a
/// `static`, a field, an `Arc`) for the bucket to bound a fleet's retries; a policy built for
/// each call starts each call with a full bucket.
pub struct Policy<C = ByTrait, P = NoRepeat, O = NoHook, B = NoBreaker> {
    site: Site,
    idempotent: bool,
    classify: C,
    repeat: P,
    on_retry: O,
    breaker: B,
}

impl Policy {
    /// The attribute's defaults: 3 attempts, backoff from 1 s doubling to 20 s with full
    /// jitter, no timeouts, standard mode, idempotent, classified by `Classify`.
    #[must_use]
    pub const fn new() -> Policy {
        Policy {
            site: Site::new("policy", Keys::new()).of_policy(),
            idempotent: true,
            classify: ByTrait,
            repeat: NoRepeat,
            on_retry: NoHook,
            breaker: NoBreaker,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new()
    }
}

macro_rules! key_builders {
    ($($(#[$doc:meta])* $key:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub const fn $key(mut self, value: $ty) -> Self {
                self.site.keys = self.site.keys.$key(value);
                self
            }
        )*
    };
}

impl<C, P, O, B> Policy<C, P, O, B> {
    core_keys!(key_builders);

    /// The name events, metrics and [`attempt()`](crate::attempt) report (`"policy"` unless
    /// set).
    #[must_use]
    pub const fn name(mut self, name: &'static str) -> Self {
        self.site.name = name;
        self
    }

    /// Whether an attempt may be repeated after its request may have reached the server
    /// (`true` unless set; `false` retries only `NotSent` and `Throttling` failures).
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Shares the bucket and rate limiter of the named partition with every function and
    /// policy that names it.
    #[must_use]
    pub const fn partition(mut self, name: &'static str) -> Self {
        self.site.partition = Some(name);
        self
    }

    /// Shares the partition called `name` (a name read at run time, from configuration).
    #[must_use]
    pub fn partition_named(mut self, name: &str) -> Self {
        self.site.partition = Some(Partition::named(name).name());
        self
    }

    /// Draws retries from a `static` bucket (instead of the partition's or its own).
    #[must_use]
    pub const fn bucket(mut self, bucket: &'static TokenBucket) -> Self {
        self.site.bucket = Some(bucket);
        self
    }

    /// Paces sends with a `static` rate limiter in adaptive mode.
    #[must_use]
    pub const fn rate_limiter(mut self, limiter: &'static RateLimiter) -> Self {
        self.site.limiter = Some(limiter);
        self
    }

    /// Hedges the calls, as `hedge_after = "..."` with a duration: an attempt that has not
    /// answered within `delay` gets a copy beside it (idempotent calls only: a policy with
    /// `idempotent(false)`, a tower layer's POST, or a policy that polls with `retry_if_ok`
    /// runs its attempts one at a time). The closure is called once per attempt, and its
    /// futures may run side by side. A hedged policy call allocates its loop once (a
    /// `#[retry(hedge_after = ...)]` function does not).
    #[must_use]
    pub const fn hedge_after(mut self, delay: Duration) -> Self {
        self.site.keys = self.site.keys.hedge_after(HedgeSpec::Fixed(delay));
        self
    }

    /// At most `n` attempts of a hedged call at once, as `max_in_flight` (2 unless set).
    #[must_use]
    pub const fn max_in_flight(mut self, n: u32) -> Self {
        self.site.keys = self.site.keys.max_in_flight(n);
        self
    }

    /// Bounds retries by a `static` budget too.
    #[must_use]
    pub const fn budget(mut self, budget: &'static RetryBudget) -> Self {
        self.site.budget = Some(budget);
        self
    }

    /// The profile under which the environment and the config file may set what the policy
    /// leaves out, as for a `#[retry(profile = "...")]` function.
    #[must_use]
    pub const fn profile(mut self, profile: &'static str) -> Self {
        self.site.profile = Some(profile);
        self
    }

    /// Classifies errors with `f` (returning [`ErrorClass`] or `bool`, as `retry_on`) instead
    /// of their `Classify` impl.
    #[must_use]
    pub fn classify<F>(self, f: F) -> Policy<ClassifyFn<F>, P, O, B> {
        self.replug(|_, p, o, b| (ClassifyFn(f, NoHint), p, o, b))
    }

    /// Repeats a successful attempt while `f` returns `true` (polling), as `retry_if_ok`.
    #[must_use]
    pub fn retry_if_ok<F>(self, f: F) -> Policy<C, F, O, B> {
        self.replug(|c, _, o, b| (c, f, o, b))
    }

    /// Calls `f` before each sleep, as `on_retry`.
    #[must_use]
    pub fn on_retry<F>(self, f: F) -> Policy<C, P, F, B> {
        self.replug(|c, p, _, b| (c, p, f, b))
    }

    /// Puts the calls' attempts behind a `static` circuit breaker, as `breaker = STATIC`: an
    /// open breaker refuses a call at once with `E::from(CircuitOpen)`, so the closure's error
    /// type needs `From<CircuitOpen>` (which `std::io::Error`, `String` and `tonic::Status`
    /// have).
    #[must_use]
    pub fn breaker(mut self, breaker: &'static CircuitBreaker) -> Policy<C, P, O, WithBreaker> {
        self.site.breaker = Some(BreakerRef::Static(breaker));
        self.replug(|c, p, o, _| (c, p, o, WithBreaker))
    }

    /// The same policy with its plugs mapped by `f`.
    fn replug<C2, P2, O2, B2>(
        self,
        f: impl FnOnce(C, P, O, B) -> (C2, P2, O2, B2),
    ) -> Policy<C2, P2, O2, B2> {
        let (classify, repeat, on_retry, breaker) =
            f(self.classify, self.repeat, self.on_retry, self.breaker);
        Policy {
            site: self.site,
            idempotent: self.idempotent,
            classify,
            repeat,
            on_retry,
            breaker,
        }
    }

    /// The policy if its values hold together (the checks the attribute makes at compile
    /// time), or every way they do not.
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// use std::time::Duration;
    ///
    /// let bad = Policy::new()
    ///     .attempt_timeout(Duration::from_secs(10))
    ///     .deadline(Duration::from_secs(5))
    ///     .build();
    /// assert_eq!(
    ///     bad.err().unwrap().to_string(),
    ///     "attempt_timeout (10s) is longer than deadline (5s)"
    /// );
    /// ```
    pub fn build(self) -> Result<Self, PolicyError> {
        let mut problems = self.site.keys.problems();
        if self.site.hedged() && !self.idempotent {
            problems.push(
                "hedge_after needs an idempotent policy: a hedge sends another copy of a \
                 request while the first may still reach the server"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(PolicyError { problems })
        }
    }

    /// Runs `attempt`'s futures, one per attempt, under this policy; the caller gets the last
    /// attempt's own `Result`. The same loop, timelines and shared state as a `#[retry]`
    /// function with the same keys.
    pub fn retry<F, Fut, T, E>(&self, attempt: F) -> impl Future<Output = Result<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: FromTimedOut,
        C: Classifier<E>,
        P: Repeat<T>,
        O: Hook<E>,
        B: BreakerPlug<Result<T, E>>,
    {
        self.retry_as(true, false, attempt)
    }

    /// [`retry`](Self::retry) for one call that may not be repeated after its request may
    /// have reached the server (`idempotent` false: a tower layer's POST), or not at all
    /// (`once`: a request whose body cannot be sent again), whatever the policy says.
    pub(crate) async fn retry_as<F, Fut, T, E>(
        &self,
        idempotent: bool,
        once: bool,
        attempt: F,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: FromTimedOut,
        C: Classifier<E>,
        P: Repeat<T>,
        O: Hook<E>,
        B: BreakerPlug<Result<T, E>>,
    {
        let conversion: fn(TimedOut) -> E = E::from_timed_out;
        let call = Call::of(
            &self.site,
            self.idempotent && idempotent,
            Timed(conversion),
            &self.classify,
            |value: &T| self.repeat.repeat(value),
            |event: &RetryEvent<'_, E>| self.on_retry.on_retry(event),
        )
        .with_refusal(B::refusal());
        if once {
            return call.once().run(attempt).await;
        }
        if self.site.hedged() && self.idempotent && idempotent && !P::POLLS {
            // Boxed: the hedged loop's slots would double the future of every policy call.
            Box::pin(call.run_hedged(attempt)).await
        } else {
            call.run(attempt).await
        }
    }
}

/// A policy with a breaker ([`Policy::breaker`]).
#[derive(Clone, Copy, Debug)]
pub struct WithBreaker;

/// What a call refused by a policy's breaker returns.
pub trait BreakerPlug<R> {
    /// The engine's conversion.
    type Refusal: OnRefusal<R>;
    /// It.
    fn refusal() -> Self::Refusal;
}

impl<R> BreakerPlug<R> for NoBreaker {
    type Refusal = NoBreaker;
    fn refusal() -> NoBreaker {
        NoBreaker
    }
}

impl<T, E: FromCircuitOpen> BreakerPlug<Result<T, E>> for WithBreaker {
    type Refusal = fn(CircuitOpen) -> Result<T, E>;
    fn refusal() -> Self::Refusal {
        |open| Err(E::from_circuit_open(open))
    }
}

impl<F, P, O, B> Policy<ClassifyFn<F>, P, O, B> {
    /// Reads the server's hint from an error with `f`, as `retry_after`.
    #[must_use]
    pub fn retry_after<H>(self, f: H) -> Policy<ClassifyFn<F, H>, P, O, B> {
        self.replug(|c, p, o, b| (ClassifyFn(c.0, f), p, o, b))
    }
}

impl<C, P, O, B> fmt::Debug for Policy<C, P, O, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.site.name)
            .field("keys", &self.site.keys)
            .field("partition", &self.site.partition)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

/// What [`Policy::build`] found wrong, every problem at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    problems: Vec<String>,
}

impl PolicyError {
    /// Each problem, as a sentence.
    #[must_use]
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for PolicyError {}

/// Classification by a function (`Policy::classify`), with an optional hint reader.
#[derive(Clone, Copy, Debug)]
pub struct ClassifyFn<F, H = NoHint>(F, H);

/// No hint reader.
#[derive(Clone, Copy, Debug)]
pub struct NoHint;

/// Reads a server hint from an error.
pub trait HintFn<E> {
    /// The hint in `err`.
    fn hint(&self, err: &E) -> Option<Duration>;
}

impl<E> HintFn<E> for NoHint {
    fn hint(&self, _: &E) -> Option<Duration> {
        None
    }
}

impl<E, H: Fn(&E) -> Option<Duration>> HintFn<E> for H {
    fn hint(&self, err: &E) -> Option<Duration> {
        self(err)
    }
}

impl<E, F, T, H> Classifier<E> for ClassifyFn<F, H>
where
    F: Fn(&E) -> T,
    T: IntoErrorClass,
    H: HintFn<E>,
{
    fn class(&self, err: &E) -> ErrorClass {
        (self.0)(err).into_error_class()
    }

    fn hint(&self, err: &E) -> Option<Duration> {
        self.1.hint(err)
    }
}

/// No polling: a success ends the call.
#[derive(Clone, Copy, Debug)]
pub struct NoRepeat;

/// Whether a success is polled again (`Policy::retry_if_ok`).
pub trait Repeat<T> {
    /// Whether a success may be repeated (a hedged policy that polls runs its attempts one
    /// at a time).
    const POLLS: bool = true;
    /// `true`: make another attempt.
    fn repeat(&self, value: &T) -> bool;
}

impl<T> Repeat<T> for NoRepeat {
    const POLLS: bool = false;
    #[inline]
    fn repeat(&self, _: &T) -> bool {
        false
    }
}

impl<T, F: Fn(&T) -> bool> Repeat<T> for F {
    #[inline]
    fn repeat(&self, value: &T) -> bool {
        self(value)
    }
}

/// No hook.
#[derive(Clone, Copy, Debug)]
pub struct NoHook;

/// The hook called before each sleep (`Policy::on_retry`).
pub trait Hook<E> {
    /// A retry is about to sleep.
    fn on_retry(&self, event: &RetryEvent<'_, E>);
}

impl<E> Hook<E> for NoHook {
    #[inline]
    fn on_retry(&self, _: &RetryEvent<'_, E>) {}
}

impl<E, F: Fn(&RetryEvent<'_, E>)> Hook<E> for F {
    #[inline]
    fn on_retry(&self, event: &RetryEvent<'_, E>) {
        self(event);
    }
}

/// A policy from configuration (feature `serde`): a map of the attribute's keys, with values
/// written as the attribute, the environment and the config file write them (durations as
/// strings with a unit), plus `idempotent` (a bool) and `partition` (a name). Unknown keys and
/// values that do not hold together are errors that name them.
///
/// ```
/// # #[cfg(feature = "config-file")] {
/// use retry_runtime::Policy;
///
/// let policy: Policy = toml::from_str(
///     r#"
///     max_attempts = 5
///     initial_backoff = "200ms"
///     deadline = "10s"
///     partition = "billing"
///     "#,
/// )
/// .unwrap();
/// # let _ = policy;
/// # }
/// ```
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PolicyVisitor)
    }
}

#[cfg(feature = "serde")]
struct PolicyVisitor;

#[cfg(feature = "serde")]
const FIELDS: &[&str] = &retry_keys::POLICY_FIELDS;

#[cfg(feature = "serde")]
impl<'de> serde::de::Visitor<'de> for PolicyVisitor {
    type Value = Policy;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a retry policy: a map of the attribute's keys")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Policy, A::Error> {
        use crate::spec::Key;
        use serde::de::Error;
        let mut policy = Policy::new();
        while let Some(name) = map.next_key::<String>()? {
            if let Some(key) = Key::from_name(&name) {
                let value = match map.next_value::<Raw>()? {
                    Raw::Str(s) => key.parse(&s).map_err(|e| e.to_string()),
                    #[allow(clippy::cast_precision_loss)] // counts and factors, far below 2^53
                    Raw::Int(i) => key.from_number(i as f64, true).map_err(|e| e.to_string()),
                    Raw::Float(x) => key.from_number(x, false).map_err(|e| e.to_string()),
                    Raw::Bool => Err(key.expected()),
                };
                let value = value.map_err(A::Error::custom)?;
                policy.site.keys = policy.site.keys.with(key, value);
                continue;
            }
            match name.as_str() {
                "idempotent" => policy.idempotent = map.next_value()?,
                "partition" => {
                    let partition: String = map.next_value()?;
                    policy = policy.partition_named(&partition);
                }
                other => return Err(A::Error::unknown_field(other, FIELDS)),
            }
        }
        policy.build().map_err(A::Error::custom)
    }
}

/// A value as configuration formats write it.
#[cfg(feature = "serde")]
enum Raw {
    Str(String),
    Int(i64),
    Float(f64),
    Bool,
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RawVisitor;
        impl serde::de::Visitor<'_> for RawVisitor {
            type Value = Raw;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, a number or a bool")
            }
            fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
                Ok(Raw::Str(v.to_owned()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
                Ok(Raw::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Raw, E> {
                i64::try_from(v)
                    .map(Raw::Int)
                    .map_err(|_| E::custom("a number too large"))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
                Ok(Raw::Float(v))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Raw, E> {
                Ok(Raw::Bool)
            }
        }
        deserializer.deserialize_any(RawVisitor)
    }
}
