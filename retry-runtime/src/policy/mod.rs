//! The engine without the attribute: a [`Policy`] value whose [`retry`](Policy::retry) runs a
//! closure's attempts with the same loop, the same shared state and the same semantics as a
//! `#[retry]` function.

mod call;

pub use call::Retry;
use call::{Drive, Own, Parts};

use crate::classify::{Classify, ErrorClass};
use crate::engine::site::{BreakerRef, BudgetRef, Site};
use crate::engine::{
    ByTrait, Classifier, FromCircuitOpen, FromRefused, FromTimedOut, IntoErrorClass, NoBreaker,
    OnRefusal, Timed, Timer, TimerKind, Untimed,
};
use crate::observe::event::RetryEvent;
use crate::protect::breaker::{CircuitBreaker, CircuitOpen};
use crate::protect::bucket::TokenBucket;
use crate::protect::budget::RetryBudget;
use crate::protect::guard::{Guard, Refused};
use crate::protect::limiter::RateLimiter;
use crate::protect::partition::Partition;
use crate::runtime::AsyncRuntime;
use crate::spec::HedgeSpec;
use crate::spec::{Behavior, Jitter, Keys, Mode, core_keys};
use core::future::Future;
use std::fmt;
use std::time::Duration;

/// A retry policy as a value: the attribute's keys as `const fn` builders, with the same
/// defaults, and [`retry`](Self::retry) to run a closure under it.
///
/// ```
/// use retry_runtime::{ErrorClass, Policy, Timeouts};
/// use std::time::Duration;
///
/// // Built once (a `static`, or from configuration), shared by every call: its retry bucket
/// // is shared too, as a `#[retry]` function's is. A deadline makes it a `Policy<Timeouts>`.
/// static FETCH: Policy<Timeouts> = Policy::new()
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
/// [`Retry::classify`] (a closure, whose argument is inferred). A policy that writes
/// `attempt_timeout` or `deadline` is a `Policy<Timeouts>`, and `E` must then represent a
/// timeout: `From<TimedOut>`, which `std::io::Error`, `anyhow::Error`,
/// `Box<dyn Error + Send + Sync>`, `String`, `ErrorClass` and `tonic::Status` have. Without
/// them (`Policy<NoTimeouts>`, the default) `E` needs nothing, and a timeout from the
/// environment or a config file is one warning and ignored, as for a `#[retry]` function
/// without timeouts.
///
/// The other type parameters say what the builders gave: a classifier, a polling predicate,
/// a hook, a breaker; a `static` names them (`Policy<NoTimeouts, fn(&MyError) -> bool>` after
/// `classify`).
///
/// A policy without a partition or a bucket of its own has its own retry bucket and rate
/// limiter, shared by the calls made through that value: build it once and keep it (a
/// `static`, a field, an `Arc`) for the bucket to bound a fleet's retries; a policy built for
/// each call starts each call with a full bucket.
pub struct Policy<T = NoTimeouts, C = ByTrait, P = NoRepeat, O = NoHook, B = NoBreaker> {
    site: Site,
    idempotent: bool,
    timeouts: T,
    classify: C,
    repeat: P,
    on_retry: O,
    breaker: B,
    /// What builders taking a string found wrong with it, for [`build`](Self::build).
    problems: Vec<String>,
}

impl Policy {
    /// The attribute's defaults: 3 attempts, backoff from 1 s doubling to 20 s with full
    /// jitter, no timeouts, standard mode, idempotent, classified by `Classify`.
    #[must_use]
    pub const fn new() -> Policy {
        Policy {
            site: Site::new("policy", Keys::new()).of_policy(),
            idempotent: true,
            timeouts: NoTimeouts,
            classify: ByTrait,
            repeat: NoRepeat,
            on_retry: NoHook,
            breaker: NoBreaker,
            problems: Vec::new(),
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
/// `Policy<NoTimeouts, ..>` they make it a `Policy<Timeouts, ..>`, whose calls can time out, so
/// that its closures' error type needs `From<TimedOut>`; on a `Policy<Timeouts, ..>` they set
/// the value.
macro_rules! timeout_builders {
    ($($key:ident,)*) => {
        impl<C: Copy, P: Copy, O: Copy, B: Copy> Policy<NoTimeouts, C, P, O, B> {
            $(
                #[doc = concat!("`", stringify!($key), "`, as the attribute's key (see [`Keys`]): the")]
                /// policy becomes a `Policy<Timeouts, ..>`, whose closures' error type needs
                /// `From<TimedOut>`. (Written before `retry_if_ok` or `on_retry` with a closure
                /// that owns data.)
                #[must_use]
                pub const fn $key(self, value: Duration) -> Policy<Timeouts, C, P, O, B> {
                    self.timed().$key(value)
                }
            )*

            /// The same policy, with timeouts.
            #[allow(clippy::mem_replace_with_default)] // `mem::take` is not a `const fn`
            const fn timed(mut self) -> Policy<Timeouts, C, P, O, B> {
                // Moved field by field without running a destructor (which a `const fn`
                // cannot): the values that own memory are swapped out for empty ones.
                let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
                let problems = core::mem::replace(&mut self.problems, Vec::new());
                let (idempotent, classify, repeat, on_retry, breaker) =
                    (self.idempotent, self.classify, self.repeat, self.on_retry, self.breaker);
                core::mem::forget(self);
                Policy {
                    site,
                    idempotent,
                    timeouts: Timeouts,
                    classify,
                    repeat,
                    on_retry,
                    breaker,
                    problems,
                }
            }
        }

        impl<C, P, O, B> Policy<Timeouts, C, P, O, B> {
            $(
                #[doc = concat!("`", stringify!($key), "`, as the attribute's key.")]
                #[must_use]
                pub const fn $key(mut self, value: Duration) -> Self {
                    self.site.keys = self.site.keys.$key(value);
                    self
                }
            )*
        }
    };
}

timeout_builders!(attempt_timeout, deadline,);

impl<T, C, P, O, B> Policy<T, C, P, O, B> {
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
    #[must_use]
    pub const fn aws_config(mut self, aws_config: bool) -> Self {
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
            Err(problem) => self.problems.push(problem),
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

    /// Bounds retries by a budget too, as `budget`: a `static` [`RetryBudget`], or a share
    /// of the requests such as `"20%"` (the partition's budget if the policy names one, else
    /// one of the policy's own). Not `const`, as it takes either form; a share that does not
    /// parse is a problem that [`build`](Self::build) reports.
    #[must_use]
    pub fn budget(mut self, budget: impl BudgetValue) -> Self {
        match budget.budget() {
            Ok(b) => self.site = self.site.budget(b),
            Err(problem) => self.problems.push(problem),
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
    pub fn retry_if_ok<F>(self, f: F) -> Policy<T, C, F, O, B> {
        let Policy {
            site,
            idempotent,
            timeouts,
            classify,
            on_retry,
            breaker,
            problems,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            timeouts,
            classify,
            repeat: f,
            on_retry,
            breaker,
            problems,
        }
    }

    /// Calls `f` before each sleep, as `on_retry`. (One call's own hook, whose argument is
    /// inferred: [`Retry::on_retry`].)
    #[must_use]
    pub fn on_retry<F>(self, f: F) -> Policy<T, C, P, F, B> {
        let Policy {
            site,
            idempotent,
            timeouts,
            classify,
            repeat,
            breaker,
            problems,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            timeouts,
            classify,
            repeat,
            on_retry: f,
            breaker,
            problems,
        }
    }

    /// Puts the calls' attempts behind a circuit breaker, as `breaker`: a `static`
    /// [`CircuitBreaker`], or a failure ratio such as `"50%"` (the partition's breaker if the
    /// policy names one, else one of the policy's own). An open breaker refuses a call at once
    /// with `E::from(CircuitOpen)`, so the closure's error type needs `From<CircuitOpen>`
    /// (which `std::io::Error`, `String` and `tonic::Status` have). Not `const`, as it takes
    /// either form.
    #[must_use]
    pub fn breaker(self, breaker: impl BreakerValue) -> Policy<T, C, P, O, B::AndBreaker>
    where
        B: Refusals,
    {
        self.with_breaker(breaker).guarded()
    }

    /// Gives the policy `breaker`, or notes what is wrong with it for [`build`](Self::build),
    /// keeping its kind (the builder and the serde form change it each in their own way).
    fn with_breaker(mut self, breaker: impl BreakerValue) -> Self {
        match breaker.breaker() {
            Ok(b) => self.site = self.site.breaker(b),
            Err(problem) => self.problems.push(problem),
        }
        self
    }

    /// The same policy, of the kind whose calls a breaker may refuse (with no breaker yet).
    fn guarded(self) -> Policy<T, C, P, O, B::AndBreaker>
    where
        B: Refusals,
    {
        let Policy {
            site,
            idempotent,
            timeouts,
            classify,
            repeat,
            on_retry,
            problems,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            timeouts,
            classify,
            repeat,
            on_retry,
            breaker: B::AND_BREAKER,
            problems,
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
        let mut problems = self.problems.clone();
        problems.extend(self.site.keys.problems());
        if self.site.hedged() && !self.idempotent {
            problems.push(
                "hedge_after needs an idempotent policy: a hedge sends another copy of a \
                 request while the first may still reach the server"
                    .to_owned(),
            );
        }
        if self.site.guards.overflowed() {
            problems.push(format!(
                "guard: at most {} guards; the ones after are not asked",
                crate::protect::guard::MAX_GUARDS
            ));
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
    /// classifier (`E: Classify`, or one given), `From<TimedOut>` if the policy writes
    /// `attempt_timeout` or `deadline` (a `Policy<Timeouts>`), `From<CircuitOpen>` if it has a
    /// breaker, `From<Refused>` if it has a guard.
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
        T: TimeoutKind<E>,
        T::Kind: Timer<Result<V, E>>,
        P: Repeat<V>,
        O: Hook<E>,
        B: BreakerKind<Result<V, E>>,
        Result<V, E>: AsyncRuntime,
    {
        call::retry(Parts {
            policy: self,
            attempt,
            plugs: (Own, Own, Own),
            idempotent: true,
            once: false,
        })
    }
}

impl<T: Copy, C: Copy, P: Copy, O: Copy, B: Refusals> Policy<T, C, P, O, B> {
    /// Asks `guard` before each attempt of every call, after the built-in protections and
    /// the guards given before it (callable more than once; at most 8 guards, which
    /// [`build`](Self::build) checks). A refused first attempt ends the call at once with
    /// `E::from(Refused)`, so the closure's error type needs `From<Refused>` (which
    /// `std::io::Error`, `String`, `ErrorClass` and `tonic::Status` have); a refused retry ends
    /// the call with its last error.
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
    #[allow(clippy::mem_replace_with_default)] // `mem::take` is not const
    pub const fn guard<G: Guard>(mut self, guard: &'static G) -> Policy<T, C, P, O, B::AndGuard> {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        let problems = core::mem::replace(&mut self.problems, Vec::new());
        let (idempotent, timeouts, classify, repeat, on_retry) = (
            self.idempotent,
            self.timeouts,
            self.classify,
            self.repeat,
            self.on_retry,
        );
        core::mem::forget(self);
        Policy {
            site: site.guard(guard),
            idempotent,
            timeouts,
            classify,
            repeat,
            on_retry,
            breaker: B::AND_GUARD,
            problems,
        }
    }
}

impl<T: Copy, P: Copy, O: Copy, B: Copy> Policy<T, ByTrait, P, O, B> {
    /// Classifies errors with `f` (returning [`ErrorClass`] or `bool`, as `retry_on`) instead
    /// of their `Classify` impl: a function, or a closure that captures nothing, so that the
    /// policy can be a `static` (whose type names the error, and infers the closure's
    /// argument):
    ///
    /// ```
    /// use retry_runtime::{NoTimeouts, Policy};
    ///
    /// #[derive(Debug)]
    /// struct ApiError {
    ///     status: u16,
    /// }
    ///
    /// static API: Policy<NoTimeouts, fn(&ApiError) -> bool> =
    ///     Policy::new().max_attempts(4).classify(|e| e.status >= 500);
    /// # let _ = &API;
    /// ```
    ///
    /// A classifier that captures its environment is given to one call:
    /// [`Retry::classify`].
    #[must_use]
    #[allow(clippy::type_complexity, clippy::mem_replace_with_default)] // `mem::take` is not const
    pub const fn classify<E, R>(mut self, f: fn(&E) -> R) -> Policy<T, fn(&E) -> R, P, O, B> {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        let problems = core::mem::replace(&mut self.problems, Vec::new());
        let (idempotent, timeouts, repeat, on_retry, breaker) = (
            self.idempotent,
            self.timeouts,
            self.repeat,
            self.on_retry,
            self.breaker,
        );
        core::mem::forget(self);
        Policy {
            site,
            idempotent,
            timeouts,
            classify: f,
            repeat,
            on_retry,
            breaker,
            problems,
        }
    }
}

impl<T: Copy, E, R, P: Copy, O: Copy, B: Copy> Policy<T, fn(&E) -> R, P, O, B> {
    /// Reads the server's hint from an error with `f`, as `retry_after` (after
    /// [`classify`](Self::classify)).
    #[must_use]
    #[allow(clippy::type_complexity, clippy::mem_replace_with_default)] // `mem::take` is not const
    pub const fn retry_after(
        mut self,
        f: fn(&E) -> Option<Duration>,
    ) -> Policy<T, (fn(&E) -> R, fn(&E) -> Option<Duration>), P, O, B> {
        let site = core::mem::replace(&mut self.site, Site::new("", Keys::new()));
        let problems = core::mem::replace(&mut self.problems, Vec::new());
        let (idempotent, timeouts, classify, repeat, on_retry, breaker) = (
            self.idempotent,
            self.timeouts,
            self.classify,
            self.repeat,
            self.on_retry,
            self.breaker,
        );
        core::mem::forget(self);
        Policy {
            site,
            idempotent,
            timeouts,
            classify: (classify, f),
            repeat,
            on_retry,
            breaker,
            problems,
        }
    }
}

impl<T, C, P, O, B> Policy<T, C, P, O, B> {
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
        T: TimeoutsFor<E>,
        T::Kind: Timer<Result<V, E>>,
        C: ClassifiesWith<E>,
        P: Repeat<V>,
        O: Hook<E>,
        B: BreakerPlug<V, E> + GuardPlug<V, E>,
        Result<V, E>: AsyncRuntime,
    {
        call::run_now(Parts {
            policy: self,
            attempt,
            plugs: (Own, Own, Own),
            idempotent,
            once,
        })
    }
}

impl<T, C, P, O, B> Policy<T, C, P, O, B> {
    /// The same policy as one whose calls can time out (a tower layer's, whose error type
    /// always can).
    #[cfg(any(feature = "tower", feature = "serde"))]
    pub(crate) fn with_timeouts(self) -> Policy<Timeouts, C, P, O, B> {
        let Policy {
            site,
            idempotent,
            classify,
            repeat,
            on_retry,
            breaker,
            problems,
            ..
        } = self;
        Policy {
            site,
            idempotent,
            timeouts: Timeouts,
            classify,
            repeat,
            on_retry,
            breaker,
            problems,
        }
    }
}

impl<T, C, P, O, B> fmt::Debug for Policy<T, C, P, O, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.site.name)
            .field("keys", &self.site.keys)
            .field("partition", &self.site.partition)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

/// A policy without a timeout written in code (`Policy<NoTimeouts, ..>`, the default): its
/// closures' error type needs no `From<TimedOut>`, and a timeout set from the environment or a
/// config file is ignored, with a warning, as for a `#[retry]` function without one.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTimeouts;

/// A policy with `attempt_timeout` or `deadline` written in code (`Policy<Timeouts, ..>`): its
/// closures' error type needs `From<TimedOut>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeouts;

/// What a policy's timeouts make of a call's attempts ([`NoTimeouts`] or [`Timeouts`]).
pub trait TimeoutKind<E>: sealed::Sealed {
    /// The engine's timer.
    type Kind: TimerKind;
}

impl<E> TimeoutKind<E> for NoTimeouts {
    type Kind = Untimed;
}

impl<E> TimeoutKind<E> for Timeouts {
    type Kind = Timed<E>;
}

/// What a policy's timeouts ask of the error type.
#[diagnostic::on_unimplemented(
    message = "this policy writes `attempt_timeout` or `deadline`, so `Policy::retry` needs `{E}` to represent a timeout",
    label = "`{E}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add `impl From<retry_runtime::TimedOut> for {E}` (a variant that keeps the `TimedOut` is enough), or leave the timeouts out of the policy"
)]
pub trait TimeoutsFor<E>: TimeoutKind<E> {
    /// The engine's timer.
    fn timer() -> Self::Kind;
}

// Not listed as another implementor when a `Policy<Timeouts>` is refused: the note says what
// leaving the timeouts out means.
#[diagnostic::do_not_recommend]
impl<E> TimeoutsFor<E> for NoTimeouts {
    #[inline]
    fn timer() -> Untimed {
        Untimed
    }
}

#[diagnostic::do_not_recommend]
impl<E: FromTimedOut> TimeoutsFor<E> for Timeouts {
    #[inline]
    fn timer() -> Timed<E> {
        Timed(E::from_timed_out)
    }
}

/// What a policy classifies with: `ByTrait` (the error's `Classify` impl), or the functions
/// given to [`Policy::classify`] and [`Policy::retry_after`].
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
impl<E: Classify> ClassifiesWith<E> for ByTrait {}

impl<E, G: GivenClassifier + Classifier<E>> ClassifiesWith<E> for G {}

/// A classifier given as a function, to [`Policy::classify`] (with or without
/// [`Policy::retry_after`]). Not generic, so that no other crate can implement it for
/// `ByTrait`: the blanket impl of [`ClassifiesWith`] is then disjoint from `ByTrait`'s.
pub trait GivenClassifier: sealed::Sealed {}

impl<E, R> GivenClassifier for fn(&E) -> R {}

impl<E, R> GivenClassifier for (fn(&E) -> R, fn(&E) -> Option<Duration>) {}

/// What a classifier given as a function ([`Policy::classify`], [`Retry::classify`]) returns:
/// `bool` or [`ErrorClass`].
#[diagnostic::on_unimplemented(
    message = "a classifier given to `Policy::retry` must return `bool` or `ErrorClass`, not `{Self}`",
    label = "the classifier returns `{Self}`",
    note = "`true` retries the error as `Transient`; return an `ErrorClass` to say more"
)]
pub trait ClassOutput {
    /// The class.
    fn class(self) -> ErrorClass;
}

#[diagnostic::do_not_recommend]
impl<R: IntoErrorClass> ClassOutput for R {
    #[inline]
    fn class(self) -> ErrorClass {
        self.into_error_class()
    }
}

impl<E, R: ClassOutput> Classifier<E> for fn(&E) -> R {
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        self(err).class()
    }

    #[inline]
    fn hint(&self, _: &E) -> Option<Duration> {
        None
    }
}

impl<E, R: ClassOutput> Classifier<E> for (fn(&E) -> R, fn(&E) -> Option<Duration>) {
    #[inline]
    fn class(&self, err: &E) -> ErrorClass {
        (self.0)(err).class()
    }

    #[inline]
    fn hint(&self, err: &E) -> Option<Duration> {
        (self.1)(err)
    }
}

/// A policy with a breaker ([`Policy::breaker`]).
#[derive(Clone, Copy, Debug)]
pub struct WithBreaker;

/// A policy with guards ([`Policy::guard`]).
#[derive(Clone, Copy, Debug)]
pub struct WithGuard;

/// A policy with a breaker and guards.
#[derive(Clone, Copy, Debug)]
pub struct WithBreakerAndGuard;

/// What a policy's calls may be refused by: the kind after a breaker or a guard is added.
pub trait Refusals: sealed::Sealed + Copy {
    /// The kind with a breaker too.
    type AndBreaker: Copy;
    /// The kind with guards too.
    type AndGuard: Copy;
    /// The value of [`AndBreaker`](Refusals::AndBreaker).
    const AND_BREAKER: Self::AndBreaker;
    /// The value of [`AndGuard`](Refusals::AndGuard).
    const AND_GUARD: Self::AndGuard;
}

impl Refusals for NoBreaker {
    type AndBreaker = WithBreaker;
    type AndGuard = WithGuard;
    const AND_BREAKER: WithBreaker = WithBreaker;
    const AND_GUARD: WithGuard = WithGuard;
}

impl Refusals for WithBreaker {
    type AndBreaker = WithBreaker;
    type AndGuard = WithBreakerAndGuard;
    const AND_BREAKER: WithBreaker = WithBreaker;
    const AND_GUARD: WithBreakerAndGuard = WithBreakerAndGuard;
}

impl Refusals for WithGuard {
    type AndBreaker = WithBreakerAndGuard;
    type AndGuard = WithGuard;
    const AND_BREAKER: WithBreakerAndGuard = WithBreakerAndGuard;
    const AND_GUARD: WithGuard = WithGuard;
}

impl Refusals for WithBreakerAndGuard {
    type AndBreaker = WithBreakerAndGuard;
    type AndGuard = WithBreakerAndGuard;
    const AND_BREAKER: WithBreakerAndGuard = WithBreakerAndGuard;
    const AND_GUARD: WithBreakerAndGuard = WithBreakerAndGuard;
}

/// What a call refused by a policy's breaker or guard returns.
pub trait BreakerKind<R>: sealed::Sealed {
    /// The engine's conversion.
    type Refusal: OnRefusal<R>;
}

impl<R> BreakerKind<R> for NoBreaker {
    type Refusal = NoBreaker;
}

impl<T, E> BreakerKind<Result<T, E>> for WithBreaker {
    type Refusal = fn(CircuitOpen) -> Result<T, E>;
}

impl<T, E> BreakerKind<Result<T, E>> for WithGuard {
    type Refusal = fn(Refused) -> Result<T, E>;
}

impl<T, E> BreakerKind<Result<T, E>> for WithBreakerAndGuard {
    type Refusal = (fn(CircuitOpen) -> Result<T, E>, fn(Refused) -> Result<T, E>);
}

/// What a policy's breaker asks of the error type `E` (of a closure returning `Result<T, E>`).
#[diagnostic::on_unimplemented(
    message = "this policy has a `breaker`, so `Policy::retry` needs `{E}` to represent a refused call",
    label = "`{E}` does not implement `From<retry_runtime::CircuitOpen>`",
    note = "add `impl From<retry_runtime::CircuitOpen> for {E}` (a variant that keeps the `CircuitOpen` is enough), or leave the breaker out of the policy"
)]
pub trait BreakerPlug<T, E>: BreakerKind<Result<T, E>> + GuardConv<T, E> {
    /// The conversion, given the guards' (see [`GuardPlug`]).
    fn refusal(refused: Self::Conv) -> Self::Refusal;
}

// Not listed as another implementor when a policy with a breaker is refused.
#[diagnostic::do_not_recommend]
impl<T, E> BreakerPlug<T, E> for NoBreaker {
    #[inline]
    fn refusal((): ()) -> NoBreaker {
        NoBreaker
    }
}

#[diagnostic::do_not_recommend]
impl<T, E: FromCircuitOpen> BreakerPlug<T, E> for WithBreaker {
    #[inline]
    fn refusal((): ()) -> Self::Refusal {
        |open| Err(E::from_circuit_open(open))
    }
}

#[diagnostic::do_not_recommend]
impl<T, E> BreakerPlug<T, E> for WithGuard {
    fn refusal(refused: fn(Refused) -> Result<T, E>) -> Self::Refusal {
        refused
    }
}

#[diagnostic::do_not_recommend]
impl<T, E: FromCircuitOpen> BreakerPlug<T, E> for WithBreakerAndGuard {
    fn refusal(refused: fn(Refused) -> Result<T, E>) -> Self::Refusal {
        (|open| Err(E::from_circuit_open(open)), refused)
    }
}

/// The type of a policy kind's conversion of [`Refused`]: nothing for a kind without guards.
pub trait GuardConv<T, E>: sealed::Sealed {
    /// The conversion's type.
    type Conv;
}

impl<T, E> GuardConv<T, E> for NoBreaker {
    type Conv = ();
}

impl<T, E> GuardConv<T, E> for WithBreaker {
    type Conv = ();
}

impl<T, E> GuardConv<T, E> for WithGuard {
    type Conv = fn(Refused) -> Result<T, E>;
}

impl<T, E> GuardConv<T, E> for WithBreakerAndGuard {
    type Conv = fn(Refused) -> Result<T, E>;
}

/// What a policy's guards ask of the error type `E` (of a closure returning `Result<T, E>`).
#[diagnostic::on_unimplemented(
    message = "this policy has a `guard`, so `Policy::retry` needs `{E}` to represent a refused call",
    label = "`{E}` does not implement `From<retry_runtime::Refused>`",
    note = "add `impl From<retry_runtime::Refused> for {E}` (a variant that keeps the `Refused` is enough), or leave the guard out of the policy"
)]
pub trait GuardPlug<T, E>: GuardConv<T, E> {
    /// The conversion.
    fn refused() -> Self::Conv;
}

#[diagnostic::do_not_recommend]
impl<T, E> GuardPlug<T, E> for NoBreaker {
    fn refused() {}
}

#[diagnostic::do_not_recommend]
impl<T, E> GuardPlug<T, E> for WithBreaker {
    fn refused() {}
}

#[diagnostic::do_not_recommend]
impl<T, E: FromRefused> GuardPlug<T, E> for WithGuard {
    fn refused() -> Self::Conv {
        |refused| Err(E::from_refused(refused))
    }
}

#[diagnostic::do_not_recommend]
impl<T, E: FromRefused> GuardPlug<T, E> for WithBreakerAndGuard {
    fn refused() -> Self::Conv {
        |refused| Err(E::from_refused(refused))
    }
}

/// A value `hedge_after` takes: a [`Duration`], or a percentile (or a duration) written as the
/// attribute writes it (`"p95"`, `"50ms"`).
pub trait HedgeValue: sealed::Sealed {
    /// The delay, or what is wrong with it.
    #[doc(hidden)]
    fn hedge(self) -> Result<HedgeSpec, String>;
}

impl HedgeValue for Duration {
    fn hedge(self) -> Result<HedgeSpec, String> {
        Ok(HedgeSpec::Fixed(self))
    }
}

impl HedgeValue for &str {
    fn hedge(self) -> Result<HedgeSpec, String> {
        retry_keys::parse_hedge(self).map_err(|e| format!("hedge_after: {e}"))
    }
}

/// A value `budget` takes: a `static` [`RetryBudget`], or a share of the requests such as
/// `"20%"`.
pub trait BudgetValue: sealed::Sealed {
    /// The budget, or what is wrong with it.
    #[doc(hidden)]
    fn budget(self) -> Result<BudgetRef, String>;
}

impl BudgetValue for &'static RetryBudget {
    fn budget(self) -> Result<BudgetRef, String> {
        Ok(BudgetRef::Static(self))
    }
}

impl BudgetValue for &str {
    fn budget(self) -> Result<BudgetRef, String> {
        retry_keys::parse_budget_share(self)
            .map(BudgetRef::Share)
            .ok_or_else(|| {
                format!("budget: {self:?} is not a share of the requests such as \"20%\"")
            })
    }
}

/// A value `breaker` takes: a `static` [`CircuitBreaker`], or a failure ratio such as
/// `"50%"`.
pub trait BreakerValue: sealed::Sealed {
    /// The breaker, or what is wrong with it.
    #[doc(hidden)]
    fn breaker(self) -> Result<BreakerRef, String>;
}

impl BreakerValue for &'static CircuitBreaker {
    fn breaker(self) -> Result<BreakerRef, String> {
        Ok(BreakerRef::Static(self))
    }
}

impl BreakerValue for &str {
    fn breaker(self) -> Result<BreakerRef, String> {
        retry_keys::parse_failure_ratio(self)
            .map(BreakerRef::Ratio)
            .ok_or_else(|| {
                format!("breaker: {self:?} is not a failure ratio such as \"50%\" (above 0%, at most 100%)")
            })
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoTimeouts {}
    impl Sealed for super::Timeouts {}
    impl Sealed for crate::engine::NoBreaker {}
    impl Sealed for super::WithBreaker {}
    impl Sealed for super::WithGuard {}
    impl Sealed for super::WithBreakerAndGuard {}
    impl Sealed for std::time::Duration {}
    impl Sealed for &str {}
    impl Sealed for &'static super::RetryBudget {}
    impl Sealed for &'static super::CircuitBreaker {}
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
/// strings with a unit), plus `idempotent` (a bool), `partition` and `profile` (names),
/// `budget` (a share such as `"20%"`), `breaker` (a failure ratio such as `"50%"`) and
/// `bucket = "none"`. Unknown keys and values that do not hold together are errors that name
/// them.
///
/// The policy's type says what its closures' error type must convert, as in code. A [`Policy`]
/// (`Policy<NoTimeouts>`) takes no `attempt_timeout` or `deadline`, since its error type need
/// not represent a timeout; a `Policy<Timeouts>` takes them (and its error type needs
/// `From<TimedOut>`). Likewise only a `Policy<_, _, _, _, WithBreaker>` takes a `breaker` (its
/// error type needs `From<CircuitOpen>`; without the key it has no breaker). The keys whose
/// values are code (`retry_on`, `retry_after`, `retry_if_ok`, `on_retry`, `idempotent_if`,
/// `rate_limiter`, a `static` bucket, budget or breaker) are builders only.
///
/// ```
/// # #[cfg(feature = "config-file")] {
/// use retry_runtime::{Policy, Timeouts, WithBreaker};
///
/// let policy: Policy<Timeouts> = toml::from_str(
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
/// assert!(untimed.unwrap_err().to_string().contains("Policy<Timeouts>"));
///
/// let guarded: Policy<Timeouts, _, _, _, WithBreaker> =
///     toml::from_str(r#"breaker = "50%""#).unwrap();
/// # let _ = guarded;
/// let unguarded: Result<Policy, _> = toml::from_str(r#"breaker = "50%""#);
/// assert!(unguarded.unwrap_err().to_string().contains("WithBreaker"));
/// # }
/// ```
#[cfg(feature = "serde")]
impl<'de, T: FromConfig, B: BreakerConfig> serde::Deserialize<'de>
    for Policy<T, ByTrait, NoRepeat, NoHook, B>
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PolicyVisitor(core::marker::PhantomData))
    }
}

/// A breaker kind that configuration can describe: [`NoBreaker`] (no `breaker` key) or
/// [`WithBreaker`] (a `breaker` ratio such as `"50%"`, or none).
#[cfg(feature = "serde")]
pub trait BreakerConfig: Sized + sealed::Sealed {
    /// Whether its calls can be refused by a breaker.
    #[doc(hidden)]
    const BREAKER: bool;
    /// `policy`, of this kind.
    #[doc(hidden)]
    fn of<T>(policy: Policy<T>) -> Policy<T, ByTrait, NoRepeat, NoHook, Self>;
}

#[cfg(feature = "serde")]
impl BreakerConfig for NoBreaker {
    const BREAKER: bool = false;
    fn of<T>(policy: Policy<T>) -> Policy<T> {
        policy
    }
}

#[cfg(feature = "serde")]
impl BreakerConfig for WithBreaker {
    const BREAKER: bool = true;
    fn of<T>(policy: Policy<T>) -> Policy<T, ByTrait, NoRepeat, NoHook, WithBreaker> {
        policy.guarded()
    }
}

/// A policy type that configuration can describe: [`NoTimeouts`] or [`Timeouts`].
#[cfg(feature = "serde")]
pub trait FromConfig: Sized + sealed::Sealed {
    /// A policy of this kind with the attribute's defaults.
    #[doc(hidden)]
    fn empty() -> Policy<Self>;
    /// Whether its calls can time out.
    #[doc(hidden)]
    const TIMED: bool;
}

#[cfg(feature = "serde")]
impl FromConfig for NoTimeouts {
    fn empty() -> Policy<NoTimeouts> {
        Policy::new()
    }
    const TIMED: bool = false;
}

#[cfg(feature = "serde")]
impl FromConfig for Timeouts {
    fn empty() -> Policy<Timeouts> {
        Policy::new().with_timeouts()
    }
    const TIMED: bool = true;
}

#[cfg(feature = "serde")]
struct PolicyVisitor<T, B>(core::marker::PhantomData<(T, B)>);

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
impl<'de, T: FromConfig, B: BreakerConfig> serde::de::Visitor<'de> for PolicyVisitor<T, B> {
    type Value = Policy<T, ByTrait, NoRepeat, NoHook, B>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a retry policy: a map of the attribute's keys")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use crate::spec::Key;
        use serde::de::Error;
        let mut policy = T::empty();
        while let Some(name) = map.next_key::<String>()? {
            if let Some(key) = Key::from_name(&name) {
                if !T::TIMED && matches!(key, Key::AttemptTimeout | Key::Deadline) {
                    return Err(A::Error::custom(format_args!(
                        "{name}: a `Policy` without timeouts cannot take one (its closures' \
                         error type need not represent a timeout); read a \
                         `Policy<Timeouts>`, whose error type converts `TimedOut`"
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
                "idempotent" => policy.idempotent = map.next_value()?,
                "long_polling" => policy.site.long_polling = map.next_value()?,
                "aws_config" => policy.site.aws_config = map.next_value()?,
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
                    if !B::BREAKER {
                        return Err(A::Error::custom(
                            "breaker: a `Policy` without a breaker cannot take one (a refused \
                             call asks its closures' error type for `From<CircuitOpen>`); read \
                             a `Policy<_, _, _, _, WithBreaker>`, whose error type converts \
                             `CircuitOpen`",
                        ));
                    }
                    let ratio: String = map.next_value()?;
                    policy = policy.with_breaker(ratio.as_str());
                }
                other => return Err(A::Error::unknown_field(other, FIELDS)),
            }
        }
        B::of(policy).build().map_err(A::Error::custom)
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
