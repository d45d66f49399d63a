//! The engine without the attribute: a [`Policy`] value whose [`retry`](Policy::retry) runs a
//! closure's attempts with the same loop, the same shared state and the same semantics as a
//! `#[retry]` function.
//!
//! A policy's type names at most how it classifies errors ([`Kind`]): `Policy` (classified by
//! the errors' `Classify` impls, needing nothing else of them), `Policy<TimedOut>`,
//! `Policy<Refused>` or `Policy<(TimedOut, Refused)>` (the same, with what a timeout, a breaker
//! or a guard asks of them), or `Policy<fn(&E) -> R>` (classified by a function, its builders
//! asking what they need of `E` where they are called). A call whose error type misses one of
//! those needs is told which at its `.await`, in words (the traits that state the needs are
//! the crate's own, sealed: no other crate names or implements them).

mod args;
mod call;
mod kind;

pub use args::{NoHook, NoRepeat};
pub use call::Retry;
pub use kind::Kind;

pub(crate) use args::{AwsConfig, BreakerValue, BudgetValue, HedgeValue, Hook, Repeat};
use call::{Drive, Own, Parts};
pub(crate) use kind::{
    ByClassify, ClassOutput, ClassifiesWith, Conversions, ErrorTypeFor, GuardsFor, Stops,
    TimeoutsFor,
};
// The loop's two sides, which only a build with an async runtime starts.
#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
use kind::{Choice, Split};

use crate::classify::TimedOut;
use crate::engine::ByTrait;
use crate::engine::site::{BreakerRef, BudgetRef, Site};
use crate::protect::breaker::CircuitBreaker;
use crate::protect::bucket::TokenBucket;
use crate::protect::budget::RetryBudget;
use crate::protect::guard::{Guard, Refused};
use crate::protect::limiter::RateLimiter;
use crate::protect::partition::Partition;
use crate::spec::{Behavior, Jitter, Keys, Mode, core_keys};
use core::future::Future;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A retry policy as a value: the attribute's keys as `const fn` builders, with the same
/// defaults, and [`retry`](Self::retry) to run a closure under it.
///
/// ```
/// use retry_runtime::{ErrorClass, Policy, TimedOut};
/// use std::time::Duration;
///
/// // Built once (a `static`, or from configuration), shared by every call: its retry bucket
/// // is shared too, as a `#[retry]` function's is. A deadline makes its closures' error type
/// // convert `TimedOut`, which its type says.
/// static FETCH: Policy<TimedOut> = Policy::new()
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
/// classified by its [`Classify`](crate::Classify) impl, by [`classify`](Self::classify) (a
/// function, so that the policy can be a `static`), or by the call's own
/// [`Retry::classify`] (a closure, whose argument is inferred).
///
/// The first type parameter says which ([`Kind`]), and so what the policy asks of `E`:
///
/// - `Policy` (`Policy<()>`): classified by `Classify`, nothing else asked. A timeout from the
///   environment or a config file is one warning and ignored, as for a `#[retry]` function
///   without timeouts.
/// - `Policy<TimedOut>` once `attempt_timeout` or `deadline` is written in code,
///   `Policy<Refused>` with a [`breaker`](Self::breaker) or a [`guard`](Self::guard), and
///   `Policy<(TimedOut, Refused)>` with both: awaiting a call asks `E: From<TimedOut>` (which
///   `std::io::Error`, `anyhow::Error`, `Box<dyn Error + Send + Sync>`, `String`, `ErrorClass`
///   and `tonic::Status` have), and `From<Refused>` (`CircuitOpen` is the same type).
/// - `Policy<fn(&E) -> R>` after [`classify`](Self::classify): `E` is known, so
///   `attempt_timeout`, `deadline`, `breaker` and `guard` ask for its conversion where they
///   are called, whatever their order, and the type stays the same. Its calls' closures return
///   `E`, also under a call's own classifier: the conversions kept are `E`'s.
///
/// The other two parameters are the policy's own polling predicate and hook
/// ([`retry_if_ok`](Self::retry_if_ok), [`on_retry`](Self::on_retry)), closures whose types
/// are inferred where the policy is built.
///
/// A policy without a partition or a bucket of its own has its own retry bucket and rate
/// limiter, shared by the calls made through that value: build it once and keep it (a
/// `static`, a field, an `Arc`) for the bucket to bound a fleet's retries; a policy built for
/// each call starts each call with a full bucket.
pub struct Policy<C: Kind = (), P = NoRepeat, O = NoHook> {
    site: Site,
    idempotent: Idempotency,
    /// What classifies the errors: the function a policy was given, or the engine's `ByTrait`
    /// (their `Classify` impls).
    classify: C::Own,
    /// The conversions the builders asked of the error type, for a policy whose classifier
    /// function names it (its type does not say them).
    convert: C::Convert,
    repeat: P,
    on_retry: O,
}

impl Policy {
    /// The attribute's defaults: 3 attempts, backoff from 1 s doubling to 20 s with full
    /// jitter, no timeouts, standard mode, idempotent, classified by `Classify`.
    #[must_use]
    pub const fn new() -> Policy {
        Policy {
            site: Site::new("policy", Keys::new()).of_policy(),
            idempotent: Idempotency {
                declared: None,
                retried: true,
                hedged: true,
            },
            classify: ByTrait,
            convert: (),
            repeat: NoRepeat,
            on_retry: NoHook,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new()
    }
}

/// What a policy says of idempotency: what [`Policy::idempotent`] declared, if anything, and
/// how its calls are retried and hedged.
#[derive(Clone, Copy, Debug)]
struct Idempotency {
    declared: Option<bool>,
    /// Its calls are retried as idempotent ones after any attempt: declared so, or by default
    /// for a policy that does not send idempotency keys. (One that sends keys and says nothing
    /// is retried as an idempotent one after an attempt that wrote its key.)
    retried: bool,
    /// Its calls may be hedged: idempotent, or sending idempotency keys.
    hedged: bool,
}

impl Idempotency {
    /// What `declared` means for a policy that sends idempotency keys (`keyed`) or not.
    const fn of(declared: Option<bool>, keyed: bool) -> Idempotency {
        let retried = match declared {
            Some(d) => d,
            None => !keyed,
        };
        Idempotency {
            declared,
            retried,
            hedged: retried || keyed,
        }
    }
}

macro_rules! key_builders {
    ($($(#[$doc:meta])* $key:ident: $ty:ty;)*) => {
        $( key_builders!(@one $(#[$doc])* $key: $ty); )*
    };
    // A timeout written in code: see `timeout_builders`.
    (@one $(#[$doc:meta])* attempt_timeout: $ty:ty) => {};
    (@one $(#[$doc:meta])* deadline: $ty:ty) => {};
    (@one $(#[$doc:meta])* $key:ident: $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub const fn $key(mut self, value: $ty) -> Self {
            self.site.keys = self.site.keys.$key(value);
            self
        }
    };
}

/// The builders of the keys that write a timeout in code (`attempt_timeout`, `deadline`): on a
/// policy classified by `Classify` they make it a `Policy<TimedOut>` (or
/// `Policy<(TimedOut, Refused)>`), whose closures' error type needs `From<TimedOut>`; on a
/// policy with a classifier function they ask that of its error type at once, and keep the
/// conversion.
macro_rules! timeout_builders {
    ($($key:ident,)*) => {
        impl<C: ByClassify, P: Copy, O: Copy> Policy<C, P, O> {
            $(
                #[doc = concat!("`", stringify!($key), "`, as the attribute's key (see [`Keys`]):")]
                /// the policy becomes a `Policy<TimedOut>` (`Policy<(TimedOut, Refused)>` with
                /// a breaker or a guard), whose closures' error type needs `From<TimedOut>`.
                /// (Written before `retry_if_ok` or `on_retry` with a closure that owns data.)
                #[must_use]
                pub const fn $key(self, value: Duration) -> Policy<C::Timed, P, O> {
                    let mut timed = self.into_kind(ByTrait, ());
                    timed.site.keys = timed.site.keys.$key(value);
                    timed
                }
            )*
        }

        impl<E, R, P, O> Policy<fn(&E) -> R, P, O> {
            $(
                #[doc = concat!("`", stringify!($key), "`, as the attribute's key: the error")]
                /// type the classifier takes needs `From<TimedOut>`.
                #[must_use]
                pub const fn $key(mut self, value: Duration) -> Self
                where
                    E: From<TimedOut>,
                {
                    self.convert.timed_out = Some(<E as From<TimedOut>>::from);
                    self.site.keys = self.site.keys.$key(value);
                    self
                }
            )*
        }

        impl<E, R, P, O> Policy<(fn(&E) -> R, fn(&E) -> Option<Duration>), P, O> {
            $(
                #[doc = concat!("`", stringify!($key), "`, as the attribute's key: the error")]
                /// type the classifier takes needs `From<TimedOut>`.
                #[must_use]
                pub const fn $key(mut self, value: Duration) -> Self
                where
                    E: From<TimedOut>,
                {
                    self.convert.timed_out = Some(<E as From<TimedOut>>::from);
                    self.site.keys = self.site.keys.$key(value);
                    self
                }
            )*
        }
    };
}

timeout_builders!(attempt_timeout, deadline,);

impl<C: Kind, P, O> Policy<C, P, O> {
    core_keys!(key_builders);

    /// The name events, metrics and [`attempt()`](crate::attempt) report (`"policy"` unless
    /// set).
    #[must_use]
    pub const fn name(mut self, name: &'static str) -> Self {
        self.site.name = name;
        self
    }

    /// Whether an attempt may be repeated after its request may have reached the server
    /// (`true` unless set; `false` retries only `NotSent` and `Throttling` failures). A policy
    /// that sends idempotency keys ([`idempotency_key`](Self::idempotency_key)) is retried as
    /// an idempotent one after every attempt that wrote its key, whatever this says; after an
    /// attempt that did not, as this says, `false` unless set.
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Idempotency::of(Some(idempotent), self.site.idempotency_key);
        self
    }

    /// Sends an idempotency key with every attempt, as `idempotency_key`: each attempt (and
    /// each hedge) of a call carries the call's invocation id as its `Idempotency-Key` header
    /// ([`wire::IDEMPOTENCY_KEY`](crate::wire::IDEMPOTENCY_KEY)), written by
    /// [`WithAttempt::with_attempt`](crate::wire::WithAttempt::with_attempt) in the closure and
    /// by the tower layer, and an attempt that wrote its key is retried as an idempotent one,
    /// whatever [`idempotent`](Self::idempotent) says: the server (the IETF httpapi draft
    /// draft-ietf-httpapi-idempotency-key-header) runs a request once per key and answers a
    /// repeat with the first answer. An attempt that wrote none (a closure that forgot
    /// `with_attempt`) is retried only as `idempotent` allows (`false` unless set: never a
    /// second `POST` without its key), and the process warns once per policy name. A keyed request's `409 Conflict` (the same key still being
    /// processed) is then `Throttling` and its `422 Unprocessable Content` (the key used with
    /// another payload) `Permanent` (see [`wire`](crate::wire#idempotency-keys)).
    ///
    /// ```
    /// use retry_runtime::{Policy, attempt};
    ///
    /// static CREATE: Policy = Policy::new().idempotent(false).idempotency_key(true);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let key = CREATE
    ///     .retry(|| async {
    ///         let a = attempt().expect("inside the closure's future");
    ///         // What `client.post(url).with_attempt()` sends as `Idempotency-Key`.
    ///         std::io::Result::Ok(a.idempotency_key().map(|key| key == a.invocation_id()))
    ///     })
    ///     .await;
    /// assert_eq!(key.unwrap(), Some(true));
    /// # }
    /// ```
    #[must_use]
    pub const fn idempotency_key(mut self, idempotency_key: bool) -> Self {
        self.site.idempotency_key = idempotency_key;
        self.idempotent = Idempotency::of(self.idempotent.declared, idempotency_key);
        self
    }

    /// Backs off, then returns the error, when the retry bucket refuses a retry, as
    /// `long_polling`: the AWS SDKs' rule for long-polling operations (SQS `ReceiveMessage`),
    /// which would otherwise call again at once, over and over, while the quota is empty.
    #[must_use]
    pub const fn long_polling(mut self, long_polling: bool) -> Self {
        self.site.long_polling = long_polling;
        self
    }

    /// Also reads the AWS SDKs' settings, as `aws_config`: `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`,
    /// `AWS_NEW_RETRIES_2026` and the shared config file (`AWS_CONFIG_FILE`, else
    /// `~/.aws/config`, profile `AWS_PROFILE`, else `default`), below the `RETRY_*` variables.
    /// Needs the `aws-config` feature (off by default): without it, a call is a compile error
    /// that names the feature.
    #[must_use]
    pub const fn aws_config(mut self, aws_config: bool) -> Self
    where
        C: AwsConfig,
    {
        self.site.aws_config = aws_config;
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

    /// Draws retries from another bucket than the partition's or its own, as `bucket`: a
    /// `static` [`TokenBucket`] (custom capacity and costs), or [`TokenBucket::none()`] for
    /// the attribute's `bucket = "none"`: no bucket at all (retries bounded by the attempts,
    /// and by a [`budget`](Self::budget) if one is set).
    ///
    /// ```
    /// use retry_runtime::{Policy, TokenBucket};
    ///
    /// static SMALL: TokenBucket = TokenBucket::standard().with_capacity(50);
    /// static SHARED: Policy = Policy::new().bucket(&SMALL);
    /// let unbounded = Policy::new().budget("20%").bucket(TokenBucket::none());
    /// # let _ = (&SHARED, unbounded);
    /// ```
    ///
    /// (`const`, so that a `static` policy can name its bucket: it takes a bucket, and `"none"`
    /// is one too, the bucket that never refuses.)
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

    /// Hedges the calls, as `hedge_after`: after a fixed delay (a [`Duration`]), or after a
    /// percentile of the policy's own latency (`"p50"`, `"p90"`, `"p95"` or `"p99"`, hedging
    /// at `max_hedge_after` until it knows enough, and within `[min_hedge_after,
    /// max_hedge_after]`). An attempt that has not answered by then gets a
    /// copy beside it (idempotent calls only: a policy with `idempotent(false)`, a tower
    /// layer's POST, or a policy that polls with `retry_if_ok` runs its attempts one at a
    /// time). The closure is called once per attempt, and its futures may run side by side. A
    /// hedged policy call allocates its loop once (a `#[retry(hedge_after = ...)]` function
    /// does not).
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// use std::time::Duration;
    ///
    /// let fixed = Policy::new().hedge_after(Duration::from_millis(50));
    /// let tail = Policy::new().hedge_after("p95").max_hedge_after(Duration::from_secs(1));
    /// assert!(fixed.build().is_ok() && tail.build().is_ok());
    /// assert!(Policy::new().hedge_after("p955").build().is_err());
    /// ```
    ///
    /// A string that is neither a percentile nor a duration (such as `"50ms"`) is a problem
    /// that [`build`](Self::build) reports, and leaves the policy unhedged. (This builder
    /// takes either form, so it is not `const`: a shared policy that hedges is built once, in
    /// a `LazyLock` or an `Arc`.)
    #[must_use]
    pub fn hedge_after(mut self, when: impl HedgeValue) -> Self {
        match when.hedge() {
            Ok(spec) => self.site.keys = self.site.keys.hedge_after(spec),
            Err(problem) => self.site.bad_values.push(problem),
        }
        self
    }

    /// At most `n` attempts of a hedged call at once, as `max_in_flight` (2 unless set).
    #[must_use]
    pub const fn max_in_flight(mut self, n: u32) -> Self {
        self.site.keys = self.site.keys.max_in_flight(n);
        self
    }

    /// The shortest delay a percentile `hedge_after` may give, as `min_hedge_after`.
    #[must_use]
    pub const fn min_hedge_after(mut self, delay: Duration) -> Self {
        self.site.keys = self.site.keys.min_hedge_after(delay);
        self
    }

    /// The longest delay a percentile `hedge_after` may give (and the delay until the
    /// latency is known), as `max_hedge_after`.
    #[must_use]
    pub const fn max_hedge_after(mut self, delay: Duration) -> Self {
        self.site.keys = self.site.keys.max_hedge_after(delay);
        self
    }

    /// Bounds the hedges to about `share` of the calls (0.02: 2 %), as `hedge_budget = "2%"`:
    /// the hedge delay rises above `hedge_after`'s as far as that takes, learned from how many
    /// of the policy's calls sent a hedge (see `hedge_after` in the crate's documentation). A
    /// share not above 0 or above 1 is a problem that [`build`](Self::build) reports.
    ///
    /// ```
    /// use retry_runtime::Policy;
    ///
    /// let tail = Policy::new().hedge_after("p95").max_in_flight(3).hedge_budget(0.02);
    /// assert!(tail.build().is_ok());
    /// assert!(Policy::new().hedge_after("p95").hedge_budget(2.0).build().is_err());
    /// ```
    #[must_use]
    pub const fn hedge_budget(mut self, share: f64) -> Self {
        self.site.keys = self.site.keys.hedge_budget(share);
        self
    }

    /// Bounds retries by a budget too, as `budget`: a `static` [`RetryBudget`], or a share
    /// of the requests such as `"20%"` (the partition's budget if the policy names one, else
    /// one of the policy's own). Not `const`, as it takes either form; a share that does not
    /// parse is a problem that [`build`](Self::build) reports.
    #[must_use]
    pub fn budget(mut self, budget: impl BudgetValue) -> Self {
        match budget.budget() {
            Ok(b) => self.site = self.site.budget(b),
            Err(problem) => self.site.bad_values.push(problem),
        }
        self
    }

    /// The profile under which the environment and the config file may set what the policy
    /// leaves out, as for a `#[retry(profile = "...")]` function.
    #[must_use]
    pub const fn profile(mut self, profile: &'static str) -> Self {
        self.site.profile = Some(profile);
        self
    }

    /// Repeats a successful attempt while `f` returns `true` (polling), as `retry_if_ok`.
    /// (One call's own predicate, whose argument is inferred: [`Retry::retry_if_ok`].)
    #[must_use]
    pub fn retry_if_ok<F>(self, f: F) -> Policy<C, F, O> {
        let Policy {
            site,
            idempotent,
            classify,
            convert,
            on_retry,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            classify,
            convert,
            repeat: f,
            on_retry,
        }
    }

    /// Calls `f` before each sleep, as `on_retry`. (One call's own hook, whose argument is
    /// inferred: [`Retry::on_retry`].)
    #[must_use]
    pub fn on_retry<F>(self, f: F) -> Policy<C, P, F> {
        let Policy {
            site,
            idempotent,
            classify,
            convert,
            repeat,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            classify,
            convert,
            repeat,
            on_retry: f,
        }
    }

    /// Gives the policy `breaker`, or notes what is wrong with it for [`build`](Self::build),
    /// keeping its kind (the builders and the serde form change it each in their own way).
    fn with_breaker(mut self, breaker: impl BreakerValue) -> Self {
        match breaker.breaker() {
            Ok(b) => self.site = self.site.breaker(b),
            Err(problem) => self.site.bad_values.push(problem),
        }
        self
    }

    /// Whether its calls send idempotency keys ([`idempotency_key`](Self::idempotency_key)).
    #[cfg(feature = "tower")]
    pub(crate) fn sends_idempotency_keys(&self) -> bool {
        self.site.idempotency_key
    }

    /// The policy if its values hold together (the checks the attribute makes at compile
    /// time), or every way they do not. A policy used without it runs with what it can use of
    /// its values (`max_attempts(0)` makes one attempt; a `budget` that is not a share is no
    /// budget) and says once, as its first call resolves, what this would have refused: a
    /// warning, as a bad value from the environment is.
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
        let mut problems = self.site.problems();
        if self.site.hedged() && !self.idempotent.hedged {
            problems.push(
                "hedge_after needs an idempotent policy: a hedge sends another copy of a \
                 request while the first may still reach the server (make the copies safe with \
                 `idempotency_key(true)`, or remove `idempotent(false)`)"
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
    ///
    /// The returned [`Retry`] takes this call's own classifier, polling predicate or hook
    /// before it is awaited (`.retry(|| ..).classify(|e| ..)`), their arguments' types
    /// inferred. Awaiting it asks of the closure's error type `E` what the policy needs: a
    /// classifier (`E: Classify`, or one given), and, for a `Policy<TimedOut>` and the like, the
    /// conversions its type names (`From<TimedOut>` with a timeout written in code,
    /// `From<Refused>` with a breaker or a guard).
    #[allow(clippy::type_complexity)]
    pub fn retry<F, Fut, V, E>(
        &self,
        attempt: F,
    ) -> Retry<
        impl Drive<
            Parts = Parts<'_, Self, F, (Own, Own, Own)>,
            Fut = impl Future<Output = Result<V, E>>,
        >,
    >
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        P: Repeat<V>,
        O: Hook<E>,
    {
        call::retry(Parts {
            policy: self,
            attempt,
            plugs: (Own, Own, Own),
        })
    }
}

impl<C: Kind, P, O> Policy<C, P, O> {
    /// The same policy, asking `guard` too (`const`: the site is moved out and back without
    /// running a destructor).
    #[allow(clippy::mem_replace_with_default)] // `mem::take` is not a `const fn`
    const fn guarded<X: Guard>(mut self, guard: &'static X) -> Self {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        core::mem::forget(core::mem::replace(&mut self.site, site.guard(guard)));
        self
    }
}

impl<C: Kind, P, O> Policy<C, P, O> {
    /// The same policy, asking `guard` too, which it owns a share of.
    fn owning(mut self, guard: Arc<dyn Guard>) -> Self {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        self.site = site.guard_shared(guard);
        self
    }
}

impl<C: Kind, P: Copy, O: Copy> Policy<C, P, O> {
    /// The same policy, of another kind (`const`: the fields that own memory are moved out
    /// without running a destructor, which a `const fn` cannot).
    #[allow(clippy::mem_replace_with_default)] // `mem::take` is not a `const fn`
    const fn into_kind<D: Kind>(
        mut self,
        classify: D::Own,
        convert: D::Convert,
    ) -> Policy<D, P, O> {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        let (idempotent, repeat, on_retry) = (self.idempotent, self.repeat, self.on_retry);
        core::mem::forget(self);
        Policy {
            site,
            idempotent,
            classify,
            convert,
            repeat,
            on_retry,
        }
    }
}

impl<C: ByClassify, P, O> Policy<C, P, O> {
    /// Puts the calls' attempts behind a circuit breaker, as `breaker`: a `static`
    /// [`CircuitBreaker`], or a failure ratio such as `"50%"` (the partition's breaker if the
    /// policy names one, else one of the policy's own). An open breaker refuses a call at once
    /// with `E::from(Refused)` (by `"CircuitBreaker"`; `CircuitOpen` is the same type), so the
    /// policy becomes a `Policy<Refused>` (`Policy<(TimedOut, Refused)>` with a timeout),
    /// whose closures' error type needs `From<Refused>` (which `std::io::Error`, `String` and
    /// `tonic::Status` have), as a guard's does. Not `const`, as it takes either form.
    #[must_use]
    pub fn breaker(self, breaker: impl BreakerValue) -> Policy<C::Guarded, P, O> {
        self.with_breaker(breaker).into_guarded()
    }

    /// The same policy, of the kind whose calls a breaker or a guard may refuse.
    fn into_guarded(self) -> Policy<C::Guarded, P, O> {
        let Policy {
            site,
            idempotent,
            repeat,
            on_retry,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            classify: ByTrait,
            convert: (),
            repeat,
            on_retry,
        }
    }
}

impl<E, R, P, O> Policy<fn(&E) -> R, P, O> {
    /// Puts the calls' attempts behind a circuit breaker, as `breaker` (see
    /// [`Policy::breaker`]): the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub fn breaker(mut self, breaker: impl BreakerValue) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.with_breaker(breaker)
    }
}

impl<E, R, P, O> Policy<(fn(&E) -> R, fn(&E) -> Option<Duration>), P, O> {
    /// Puts the calls' attempts behind a circuit breaker, as `breaker` (see
    /// [`Policy::breaker`]): the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub fn breaker(mut self, breaker: impl BreakerValue) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.with_breaker(breaker)
    }
}

impl<C: ByClassify, P: Copy, O: Copy> Policy<C, P, O> {
    /// Asks `guard` before each attempt of every call, after the built-in protections and the
    /// guards given before it (callable more than once; at most 8 guards, which
    /// [`build`](Self::build) checks). A refused first attempt ends the call at once with
    /// `E::from(Refused)`, so the policy becomes a `Policy<Refused>` (`Policy<(TimedOut, Refused)>`
    /// with a timeout), whose closures' error type needs `From<Refused>` (which `std::io::Error`,
    /// `String`, `ErrorClass` and `tonic::Status` have); a refused retry ends the call with its
    /// last error.
    ///
    /// ```
    /// use retry_runtime::{Admit, Guard, GuardContext, GuardOutcome, Policy};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// /// Counts the attempts it let through (a real guard would refuse some).
    /// struct Count(AtomicU32);
    ///
    /// impl Guard for Count {
    ///     fn admit(&self, _: &GuardContext<'_>) -> Admit {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///         Admit::Go
    ///     }
    ///     fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
    /// }
    ///
    /// static COUNT: Count = Count(AtomicU32::new(0));
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let out = Policy::new()
    ///     .guard(&COUNT)
    ///     .classify(|_: &std::io::Error| false)
    ///     .retry(|| async { Ok::<_, std::io::Error>(7) })
    ///     .await;
    /// assert_eq!(out.unwrap(), 7);
    /// assert_eq!(COUNT.0.load(Ordering::Relaxed), 1);
    /// # }
    /// ```
    ///
    /// `const`, so that a `static` policy takes guards: call it before `on_retry` or
    /// `retry_if_ok` with a closure that captures (a value that is not `Copy`).
    #[must_use]
    pub const fn guard<X: Guard>(self, guard: &'static X) -> Policy<C::Guarded, P, O> {
        self.into_kind(ByTrait, ()).guarded(guard)
    }

    /// Asks `guard`, a guard built at run time, before each attempt of every call, as
    /// [`guard`](Self::guard) asks a `static`: the policy owns its share of it, and the last
    /// policy (and call) holding the `Arc` releases it.
    ///
    /// ```
    /// use retry_runtime::{Bulkhead, Policy};
    /// use std::sync::Arc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // A bulkhead sized from configuration read at start-up.
    /// let places: u32 = "16".parse().unwrap();
    /// let bulkhead = Arc::new(Bulkhead::new(places));
    /// let policy = Policy::new().guard_shared(Arc::clone(&bulkhead));
    /// let out = policy.retry(|| async { Ok::<_, std::io::Error>(7) }).await;
    /// assert_eq!(out.unwrap(), 7);
    /// drop(policy);
    /// assert_eq!(Arc::strong_count(&bulkhead), 1, "released with the policy");
    /// # }
    /// ```
    #[must_use]
    pub fn guard_shared<X: Guard + 'static>(self, guard: Arc<X>) -> Policy<C::Guarded, P, O> {
        self.into_kind(ByTrait, ()).owning(guard)
    }

    /// Classifies errors with `f` (returning [`ErrorClass`](crate::ErrorClass) or `bool`, as
    /// `retry_on`) instead of their `Classify` impl: a function, or a closure that captures
    /// nothing, so that the policy can be a `static`, whose type names the function's (and
    /// infers the closure's argument):
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// use std::time::Duration;
    ///
    /// #[derive(Debug)]
    /// struct ApiError {
    ///     status: u16,
    /// }
    ///
    /// impl From<retry_runtime::TimedOut> for ApiError {
    ///     fn from(_: retry_runtime::TimedOut) -> Self {
    ///         ApiError { status: 504 }
    ///     }
    /// }
    ///
    /// static API: Policy<fn(&ApiError) -> bool> = Policy::new()
    ///     .max_attempts(4)
    ///     .deadline(Duration::from_secs(5))
    ///     .classify(|e| e.status >= 500);
    /// static AFTER: Policy<fn(&ApiError) -> bool> = Policy::new()
    ///     .classify(|e: &ApiError| e.status >= 500)
    ///     .deadline(Duration::from_secs(5));
    /// # let _ = (&API, &AFTER);
    /// ```
    ///
    /// What the policy asks of the error type so far (a timeout, a breaker, a guard written
    /// before) is asked of `E` here; the builders after ask it where they are called. (A
    /// closure's argument is inferred from the `static`'s type when `classify` is the last
    /// builder; before others, name it: `|e: &ApiError|`.) A classifier that captures its
    /// environment is given to one call: [`Retry::classify`].
    #[must_use]
    pub const fn classify<E, R>(self, f: fn(&E) -> R) -> Policy<fn(&E) -> R, P, O>
    where
        C: TimeoutsFor<E> + GuardsFor<E>,
    {
        self.into_kind(f, Conversions::of::<C>())
    }
}

impl<E, R, P: Copy, O: Copy> Policy<fn(&E) -> R, P, O> {
    /// Asks `guard` before each attempt of every call, as `guard` (see [`Policy::guard`]):
    /// the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub const fn guard<X: Guard>(mut self, guard: &'static X) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.guarded(guard)
    }

    /// Asks `guard`, built at run time, before each attempt of every call (see
    /// [`Policy::guard_shared`]): the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub fn guard_shared<X: Guard + 'static>(mut self, guard: Arc<X>) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.owning(guard)
    }
}

impl<E, R, P: Copy, O: Copy> Policy<(fn(&E) -> R, fn(&E) -> Option<Duration>), P, O> {
    /// Asks `guard` before each attempt of every call, as `guard` (see [`Policy::guard`]):
    /// the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub const fn guard<X: Guard>(mut self, guard: &'static X) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.guarded(guard)
    }

    /// Asks `guard`, built at run time, before each attempt of every call (see
    /// [`Policy::guard_shared`]): the error type the classifier takes needs `From<Refused>`.
    #[must_use]
    pub fn guard_shared<X: Guard + 'static>(mut self, guard: Arc<X>) -> Self
    where
        E: From<Refused>,
    {
        self.convert.refused = Some(<E as From<Refused>>::from);
        self.owning(guard)
    }
}

impl<E, R, P: Copy, O: Copy> Policy<fn(&E) -> R, P, O> {
    /// Reads the server's hint from an error with `f`, as `retry_after` (after
    /// [`classify`](Self::classify)).
    #[must_use]
    #[allow(clippy::type_complexity)]
    pub const fn retry_after(
        self,
        f: fn(&E) -> Option<Duration>,
    ) -> Policy<(fn(&E) -> R, fn(&E) -> Option<Duration>), P, O> {
        let (classify, convert) = (self.classify, self.convert);
        self.into_kind((classify, f), convert)
    }
}

impl<C: Kind, P, O> Policy<C, P, O> {
    /// Runs a call at once (no per-call plugs) that may not repeat an attempt whose request
    /// may have reached the server (`idempotent` false) or may make one attempt only (`once`),
    /// whatever the policy says: the tower layer's call.
    #[cfg(feature = "tower")]
    pub(crate) fn retry_limited<F, Fut, V, E>(
        &self,
        idempotent: bool,
        once: bool,
        attempt: F,
    ) -> impl Future<Output = Result<V, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        C: TimeoutsFor<E> + GuardsFor<E> + Stops<V, E> + ClassifiesWith<E>,
        C::Timer<V, E>: crate::engine::Timer<Result<V, E>>,
        P: Repeat<V>,
        O: Hook<E>,
    {
        call::run_now(
            Parts {
                policy: self,
                attempt,
                plugs: (Own, Own, Own),
            },
            call::Limits { idempotent, once },
        )
    }
}

impl<C: ByClassify, P, O> Policy<C, P, O> {
    /// The same policy as one whose calls can time out (a tower layer's, whose error type
    /// always can).
    #[cfg(any(feature = "tower", feature = "serde"))]
    pub(crate) fn with_timeouts(self) -> Policy<C::Timed, P, O> {
        let Policy {
            site,
            idempotent,
            repeat,
            on_retry,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            classify: ByTrait,
            convert: (),
            repeat,
            on_retry,
        }
    }
}

impl<C: Kind, P, O> fmt::Debug for Policy<C, P, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.site.name)
            .field("keys", &self.site.keys)
            .field("partition", &self.site.partition)
            .field("idempotent", &self.idempotent.retried)
            .field("idempotency_key", &self.site.idempotency_key)
            .finish_non_exhaustive()
    }
}

impl BudgetValue for &'static RetryBudget {
    fn budget(self) -> Result<BudgetRef, String> {
        Ok(BudgetRef::Static(self))
    }
}

impl BreakerValue for &'static CircuitBreaker {
    fn breaker(self) -> Result<BreakerRef, String> {
        Ok(BreakerRef::Static(self))
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for () {}
    impl Sealed for super::TimedOut {}
    impl Sealed for super::Refused {}
    impl Sealed for (super::TimedOut, super::Refused) {}
    impl<E, R> Sealed for fn(&E) -> R {}
    impl<E, R> Sealed for (fn(&E) -> R, fn(&E) -> Option<std::time::Duration>) {}
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

/// A policy from configuration (feature `serde`): a map of the attribute's keys, with values
/// written as the attribute, the environment and the config file write them (durations as
/// strings with a unit), plus `idempotent`, `idempotency_key`, `long_polling` and `aws_config`
/// (bools), `partition` and `profile` (names),
/// `budget` (a share such as `"20%"`), `breaker` (a failure ratio such as `"50%"`) and
/// `bucket = "none"`. Unknown keys and values that do not hold together are errors that name
/// them.
///
/// The policy's type says what its closures' error type must convert, as in code. A [`Policy`]
/// takes no `attempt_timeout` or `deadline`, since its error type need not represent a
/// timeout; a `Policy<TimedOut>` takes them (and its error type needs `From<TimedOut>`).
/// Likewise only a `Policy<Refused>` or `Policy<(TimedOut, Refused)>` takes a `breaker` (its
/// error type needs `From<Refused>`, which is `From<CircuitOpen>`; without the key it has no
/// breaker). The keys whose values are code (`retry_on`, `retry_after`, `retry_if_ok`,
/// `on_retry`, `idempotent_if`, `rate_limiter`, `guard`, a `static` bucket, budget or breaker)
/// are builders only.
///
/// ```
/// # #[cfg(feature = "config-file")] {
/// use retry_runtime::{Policy, Refused, TimedOut};
///
/// let policy: Policy<TimedOut> = toml::from_str(
///     r#"
///     max_attempts = 5
///     initial_backoff = "200ms"
///     deadline = "10s"
///     partition = "billing"
///     budget = "20%"
///     "#,
/// )
/// .unwrap();
/// # let _ = policy;
/// let untimed: Result<Policy, _> = toml::from_str(r#"deadline = "10s""#);
/// assert!(untimed.unwrap_err().to_string().contains("Policy<TimedOut>"));
///
/// let guarded: Policy<(TimedOut, Refused)> = toml::from_str(r#"breaker = "50%""#).unwrap();
/// # let _ = guarded;
/// let unguarded: Result<Policy, _> = toml::from_str(r#"breaker = "50%""#);
/// assert!(unguarded.unwrap_err().to_string().contains("Policy<Refused>"));
/// # }
/// ```
#[cfg(feature = "serde")]
impl<'de, C: ByClassify> serde::Deserialize<'de> for Policy<C> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PolicyVisitor(core::marker::PhantomData))
    }
}

#[cfg(feature = "serde")]
struct PolicyVisitor<C>(core::marker::PhantomData<C>);

#[cfg(feature = "serde")]
const FIELDS: &[&str] = &retry_keys::POLICY_FIELDS;

/// The profile named `name`, for as long as the process runs (each name kept once).
#[cfg(feature = "serde")]
fn profile_named(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let kept: &'static str = Box::leak(name.into());
    names.push(kept);
    kept
}

#[cfg(feature = "serde")]
impl<'de, C: ByClassify> serde::de::Visitor<'de> for PolicyVisitor<C> {
    type Value = Policy<C>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a retry policy: a map of the attribute's keys")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use crate::spec::Key;
        use serde::de::Error;
        // Read as a policy of the kind asked for: its builders keep the kind.
        let mut policy = Policy::new().into_kind::<C>(ByTrait, ());
        while let Some(name) = map.next_key::<String>()? {
            if let Some(key) = Key::from_name(&name) {
                if !C::TIMED && matches!(key, Key::AttemptTimeout | Key::Deadline) {
                    return Err(A::Error::custom(format_args!(
                        "{name}: a `Policy` without timeouts cannot take one (its closures' \
                         error type need not represent a timeout); read a \
                         `Policy<TimedOut>`, whose error type converts `TimedOut`"
                    )));
                }
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
                "idempotent" => policy = policy.idempotent(map.next_value()?),
                "idempotency_key" => policy = policy.idempotency_key(map.next_value()?),
                "long_polling" => policy.site.long_polling = map.next_value()?,
                "aws_config" => {
                    let aws_config: bool = map.next_value()?;
                    if aws_config && !cfg!(feature = "aws-config") {
                        return Err(A::Error::custom(
                            "aws_config: reading the AWS SDKs' settings needs the `aws-config` \
                             feature of `retry-runtime`",
                        ));
                    }
                    policy.site.aws_config = aws_config;
                }
                "partition" => {
                    let partition: String = map.next_value()?;
                    policy = policy.partition_named(&partition);
                }
                "profile" => {
                    let profile: String = map.next_value()?;
                    if !retry_keys::is_profile_name(&profile) {
                        return Err(A::Error::custom(format_args!(
                            "profile: {profile:?} is not a profile name (letters, digits, \
                             `_` and `-`)"
                        )));
                    }
                    policy.site.profile = Some(profile_named(&profile));
                }
                "budget" => {
                    let share: String = map.next_value()?;
                    policy = policy.budget(share.as_str());
                }
                "bucket" => {
                    let bucket: String = map.next_value()?;
                    if bucket != "none" {
                        return Err(A::Error::custom(format_args!(
                            "bucket: {bucket:?} is not \"none\" (a `static TokenBucket` is \
                             given in code, with `Policy::bucket`)"
                        )));
                    }
                    policy = policy.bucket(TokenBucket::none());
                }
                "breaker" => {
                    if !C::GUARDED {
                        return Err(A::Error::custom(
                            "breaker: a `Policy` without a breaker cannot take one (a refused \
                             call asks its closures' error type for `From<CircuitOpen>`); read \
                             a `Policy<Refused>` (or `Policy<(TimedOut, Refused)>`), whose \
                             error type converts `Refused` (`CircuitOpen`)",
                        ));
                    }
                    let ratio: String = map.next_value()?;
                    policy = policy.with_breaker(ratio.as_str());
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
