//! One function's site: what the expansion of `#[retry]` keeps in a `static` (and a `Policy`
//! value holds), and what its calls read once it is resolved.

use crate::config::{self, Writer};
use crate::hedge::Latency;
#[cfg(feature = "metrics")]
use crate::observe::meters::Meters;
use crate::observe::{Levels, Who};
use crate::protect::Held;
use crate::protect::breaker::CircuitBreaker;
use crate::protect::bucket::{Costs, TokenBucket};
use crate::protect::budget::RetryBudget;
use crate::protect::chain::{BREAKER, BUCKET, BUDGET, Chain, Entry};
use crate::protect::guard::{Guard, Guards};
use crate::protect::limiter::RateLimiter;
use crate::protect::partition::Partition;
use crate::spec::{HedgeSpec, Keys, Mode, Settings};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// One `#[retry]` function: its settings and where its shared state lives. The expansion keeps
/// it in a `static`, so every call of the function (every instantiation of a generic one)
/// shares its per-function bucket and limiter.
#[doc(hidden)]
#[derive(Debug)]
pub struct Site {
    pub(crate) name: &'static str,
    pub(crate) keys: Keys,
    /// What wrote the keys: the attribute, or a `Policy`.
    writer: Writer,
    pub(crate) partition: Option<&'static str>,
    pub(crate) profile: Option<&'static str>,
    pub(crate) bucket: Option<&'static TokenBucket>,
    pub(crate) limiter: Option<&'static RateLimiter>,
    /// `long_polling = true`.
    pub(crate) long_polling: bool,
    /// `idempotency_key = true`.
    pub(crate) idempotency_key: bool,
    /// `aws_config = true`.
    pub(crate) aws_config: bool,
    /// A gRPC service config's policy: gRFC A6's rules for the server's pushback, and no
    /// setting from the environment or a file (see [`Site::grpc`]).
    pub(crate) grpc: bool,
    pub(crate) budget: Option<&'static RetryBudget>,
    /// `budget = "N%"`: that share, the partition's budget or one of the function's own.
    budget_share: Option<f64>,
    pub(crate) breaker: Option<BreakerRef>,
    /// A budget and a breaker the site owns (built at run time), before the ones above.
    owned: Owned,
    /// `guard = ...`: the user's guards, in order.
    pub(crate) guards: Guards,
    /// `hedge_after = "pNN"`: the function's latency estimate.
    latency: Option<&'static Latency>,
    /// What a `Policy`'s builders that take a string found wrong with it.
    pub(crate) bad_values: Vec<String>,
    shared: OnceLock<&'static Partition>,
    resolved: OnceLock<Resolved>,
}

impl Site {
    /// A function called `name` with `keys`, and its own bucket and limiter.
    #[must_use]
    pub const fn new(name: &'static str, keys: Keys) -> Site {
        Site {
            name,
            keys,
            writer: Writer::Attribute,
            partition: None,
            profile: None,
            bucket: None,
            limiter: None,
            long_polling: false,
            idempotency_key: false,
            aws_config: false,
            grpc: false,
            budget: None,
            budget_share: None,
            breaker: None,
            owned: Owned {
                budget: None,
                breaker: None,
            },
            guards: Guards::NONE,
            latency: None,
            bad_values: Vec::new(),
            shared: OnceLock::new(),
            resolved: OnceLock::new(),
        }
    }

    /// The site of a `Policy` value: its keys are the builders', as its warnings say.
    pub(crate) const fn of_policy(mut self) -> Site {
        self.writer = Writer::Policy;
        self
    }

    /// Shares the bucket and limiter of the named partition.
    #[must_use]
    pub const fn partition(mut self, name: &'static str) -> Site {
        self.partition = Some(name);
        self
    }

    /// Backs off, then returns the error, when the bucket refuses a retry (`long_polling`): the
    /// AWS SDKs' rule for long-polling operations, which would otherwise answer at once again
    /// and again while the quota is empty.
    #[must_use]
    pub const fn long_polling(mut self, long_polling: bool) -> Site {
        self.long_polling = long_polling;
        self
    }

    /// Sends the call's invocation id as the `Idempotency-Key` of every attempt
    /// (`idempotency_key`), as `wire::WithAttempt` and the tower layer write it.
    #[must_use]
    pub const fn idempotency_key(mut self, idempotency_key: bool) -> Site {
        self.idempotency_key = idempotency_key;
        self
    }

    /// Also reads the AWS SDKs' settings (`aws_config`): `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`,
    /// `AWS_NEW_RETRIES_2026` and the shared config file, below the `RETRY_*` ones. (Without the
    /// `aws-config` feature the attribute's `aws_config = true` is refused by
    /// [`needs_aws_config`](crate::__private::needs_aws_config), before it comes here.)
    #[must_use]
    pub const fn aws_config(mut self, aws_config: bool) -> Site {
        self.aws_config = aws_config;
        self
    }

    /// A gRPC service config's policy (gRFC A6): the server's pushback is obeyed whatever its
    /// length and restarts the backoff, and nothing from the environment or a file changes
    /// the keys, which the service config wrote.
    #[must_use]
    #[cfg(feature = "grpc-config")]
    pub(crate) const fn grpc(mut self) -> Site {
        self.grpc = true;
        self
    }

    /// Uses a user's `static` bucket.
    #[must_use]
    pub const fn bucket(mut self, bucket: &'static TokenBucket) -> Site {
        self.bucket = Some(bucket);
        self
    }

    /// Uses a user's `static` rate limiter.
    #[must_use]
    pub const fn rate_limiter(mut self, limiter: &'static RateLimiter) -> Site {
        self.limiter = Some(limiter);
        self
    }

    /// Bounds retries by a budget too (the bucket still applies): a user's `static`, or a
    /// share of the requests, shared by the partition's functions if it has one.
    #[must_use]
    pub const fn budget(mut self, budget: BudgetRef) -> Site {
        match budget {
            BudgetRef::Static(b) => self.budget = Some(b),
            BudgetRef::Share(share) => self.budget_share = Some(share),
        }
        self
    }

    /// Puts the function's attempts behind a circuit breaker: a user's `static`, or one with
    /// a failure ratio, shared by the partition's functions if it has one.
    #[must_use]
    pub const fn breaker(mut self, breaker: BreakerRef) -> Site {
        self.breaker = Some(breaker);
        self
    }

    /// Asks `guard` about each attempt, after the guards given before it.
    #[must_use]
    pub const fn guard(mut self, guard: &'static dyn Guard) -> Site {
        // Moved out and back without a destructor, which a `const fn` cannot run.
        let guards = core::mem::replace(&mut self.guards, Guards::NONE);
        core::mem::forget(core::mem::replace(&mut self.guards, guards.with(guard)));
        self
    }

    /// Asks `guard`, which the site owns, about each attempt, after the guards given before
    /// it.
    #[must_use]
    pub fn guard_shared(mut self, guard: Arc<dyn Guard>) -> Site {
        self.guards = self.guards.with_owned(guard);
        self
    }

    /// Bounds retries by `budget`, which the site owns (the bucket still applies).
    #[must_use]
    pub fn budget_shared(mut self, budget: Arc<RetryBudget>) -> Site {
        self.owned.budget = Some(budget);
        self
    }

    /// Puts the function's attempts behind `breaker`, which the site owns.
    #[must_use]
    pub fn breaker_shared(mut self, breaker: Arc<CircuitBreaker>) -> Site {
        self.owned.breaker = Some(breaker);
        self
    }

    /// The latency estimate of a function hedged by a percentile (`hedge_after = "pNN"`).
    #[must_use]
    pub const fn latency(mut self, latency: &'static Latency) -> Site {
        self.latency = Some(latency);
        self
    }

    /// Whether the function's attempts may run side by side (its attribute or policy sets
    /// `hedge_after`).
    pub(crate) fn hedged(&self) -> bool {
        self.keys.hedges()
    }

    /// Names the profile under which the environment and config file may set mode and
    /// max_attempts.
    #[must_use]
    pub const fn profile(mut self, profile: &'static str) -> Site {
        self.profile = Some(profile);
        self
    }

    /// The function's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The partition's name, if the function names one.
    #[must_use]
    pub fn partition_name(&self) -> Option<&'static str> {
        self.partition
    }

    fn shared(&self) -> Option<&'static Partition> {
        self.partition
            .map(|name| *self.shared.get_or_init(|| Partition::named(name)))
    }

    /// The retry token bucket this function draws from. A bucket of the function's own is
    /// made with its resolution: this resolves the function if no call has yet (as one whose
    /// attempts run under a timer).
    #[must_use]
    pub fn token_bucket(&self) -> &TokenBucket {
        self.resolved(true).chain.bucket()
    }

    /// The rate limiter this function paces its sends with in adaptive mode (resolving the
    /// function, as [`token_bucket`](Self::token_bucket) does).
    #[must_use]
    pub fn limiter(&self) -> &RateLimiter {
        self.resolved(true).chain.limiter()
    }

    /// What the function's calls read on every call, resolved on the first: its settings
    /// after the environment and config file, and the shared state it uses. `timed`: whether
    /// its calls run attempts under a timer (a timeout from outside applies only then).
    #[inline]
    pub(crate) fn resolved(&self, timed: bool) -> &Resolved {
        match self.resolved.get() {
            Some(r) => r,
            None => self.resolve(timed),
        }
    }

    /// Every way the site's values do not hold together (a `Policy`'s, which `Policy::build`
    /// reports; an attribute's are compile errors): what its builders that take a string
    /// found wrong, its keys' own problems, guards beyond the most.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = self.bad_values.clone();
        problems.extend(self.keys.problems());
        if self.guards.overflowed() {
            problems.push(format!(
                "guard: at most {} guards; the ones after are not asked",
                crate::protect::guard::MAX_GUARDS
            ));
        }
        problems
    }

    /// The partition's `key` (`budget`, `breaker`) in `cell`, made from `own` if this function
    /// is the first of the partition's to run. One made with another share (in thousandths)
    /// than this function's is still the one used: one warning says so.
    fn partitions<T>(
        &self,
        p: &'static Partition,
        key: &str,
        cell: &'static OnceLock<T>,
        own: T,
        share: impl Fn(&T) -> Option<u64>,
    ) -> &'static T {
        let mine = share(&own);
        let shared = cell.get_or_init(|| own);
        let used = share(shared);
        if mine == used {
            return shared;
        }
        let percent = |t: Option<u64>| match t {
            Some(t) if t % 10 == 0 => format!("\"{}%\"", t / 10),
            Some(t) => format!("\"{}.{}%\"", t / 10, t % 10),
            None => "gRPC throttling".to_owned(),
        };
        config::warn_once(format!(
            "`{}` writes {key} = {}, but partition `{}` shares one {key}, made with {} by the \
             first of its functions to run, which `{0}` uses: write the same share on each \
             function of the partition, or give `{0}` a `static` of its own",
            self.name,
            percent(mine),
            p.name(),
            percent(used),
        ));
        shared
    }

    fn resolve(&self, timed: bool) -> &Resolved {
        self.resolved.get_or_init(|| {
            // A `Policy` that was not checked with `build` runs, and says once what is wrong
            // with it, as a value from the environment does.
            if self.writer == Writer::Policy {
                for problem in self.problems() {
                    config::warn_once(format!(
                        "`{}`'s Policy has a problem that `Policy::build` refuses, and runs with \
                         what it can use of it: {problem}",
                        self.name
                    ));
                }
            }
            let config::Resolution { settings, .. } = config::resolve(
                self.name,
                &self.keys,
                self.writer,
                self.profile,
                timed,
                self.aws_config,
                !self.grpc,
                self.guards.names().collect(),
            );
            let budget = match (&self.owned.budget, self.budget) {
                (Some(b), _) => Some(Held::Owned(Arc::clone(b))),
                (None, Some(b)) => Some(Held::Static(b)),
                (None, None) => self.budget_share.map(|share| {
                    let make = || RetryBudget::ratio(share);
                    match self.shared() {
                        Some(p) => Held::Static(self.partitions(
                            p,
                            "budget",
                            &p.budget,
                            make(),
                            RetryBudget::share_thousandths,
                        )),
                        // The function's own, kept with its resolution.
                        None => Held::Owned(Arc::new(make())),
                    }
                }),
            };
            let breaker = match (&self.owned.breaker, self.breaker) {
                (Some(b), _) => Some(Held::Owned(Arc::clone(b))),
                (None, Some(BreakerRef::Static(b))) => Some(Held::Static(b)),
                (None, Some(BreakerRef::Ratio(ratio))) => {
                    let make = || CircuitBreaker::new().with_failure_ratio(ratio);
                    Some(match self.shared() {
                        Some(p) => {
                            Held::Static(self.partitions(p, "breaker", &p.breaker, make(), |b| {
                                Some(b.failure_thousandths())
                            }))
                        }
                        None => Held::Owned(Arc::new(make())),
                    })
                }
                (None, None) => None,
            };
            // A percentile or a hedge budget chosen from outside for a function whose attribute
            // wrote a fixed delay (or a `Policy` from configuration): an estimate of its own,
            // made once and kept with the resolution, so it goes with the site.
            let percentile = settings
                .hedge
                .is_some_and(|h| matches!(h.after, HedgeSpec::Percentile(_)) || h.budget.is_some());
            let own_latency =
                (self.latency.is_none() && percentile).then(|| Box::new(Latency::new()));
            let adaptive = settings.mode == Mode::Adaptive;
            if self.guards.overflowed() {
                let max = crate::protect::guard::MAX_GUARDS;
                config::warn_once(format!(
                    "{}: more than {max} guards; only the first {max} are asked",
                    self.name,
                ));
            }
            let guarded = !self.guards.is_empty();
            let bucket = self.bucket.or_else(|| self.shared().map(|p| &p.bucket));
            // A user's `static` bucket keeps its own costs.
            let costs = if settings.aws2026() && self.bucket.is_none() {
                Costs::AWS_2026
            } else {
                bucket.map_or(TokenBucket::standard().costs(), TokenBucket::costs)
            };
            let (has_budget, has_breaker) = (budget.is_some(), breaker.is_some());
            let limiter = self.limiter.or_else(|| self.shared().map(|p| &p.limiter));
            let mut chain = Chain::new(self.name, self.partition, costs, settings.behavior)
                .with_guards(&self.guards)
                .with_limiter(limiter, adaptive);
            if let Some(bucket) = bucket {
                chain = chain.with(BUCKET, Entry::Bucket(bucket));
            }
            if let Some(breaker) = breaker {
                chain = chain.with(BREAKER, Entry::Breaker(breaker));
            }
            if let Some(budget) = budget {
                chain = chain.with(BUDGET, Entry::Budget(budget));
            }
            #[cfg(feature = "metrics")]
            let tokens = chain.bucket().available();
            Resolved {
                chain,
                settings,
                #[cfg(feature = "metrics")]
                meters: Meters::new(self.name, self.partition, self.guards.names(), tokens),
                latency: self.latency,
                own_latency,
                hints: if self.grpc {
                    Hints::Grpc
                } else if settings.aws2026() {
                    Hints::Aws2026
                } else {
                    Hints::Classic
                },
                long_polling: self.long_polling,
                idempotency_key: self.idempotency_key,
                gated: adaptive || has_breaker || guarded,
                extras: adaptive || has_budget || has_breaker || guarded,
                nested_warned: AtomicBool::new(false),
                key_warned: AtomicBool::new(false),
            }
        })
    }
}

/// The shared state a site owns, built at run time rather than named as a `static`.
#[derive(Debug)]
struct Owned {
    budget: Option<Arc<RetryBudget>>,
    breaker: Option<Arc<CircuitBreaker>>,
}

/// How a retry's delay comes from the server's hint and the backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hints {
    /// The hint, unless it asks for more than `max_backoff` (the call then ends); else the
    /// backoff.
    Classic,
    /// The AWS SDKs' 2026 behavior: the hint kept within [backoff, backoff + 5 s].
    Aws2026,
    /// gRFC A6: the server's pushback, whatever its length; the backoff restarts after one.
    Grpc,
}

/// What `budget = ...` names: a user's `static`, or a share of the requests.
#[derive(Debug, Clone, Copy)]
pub enum BudgetRef {
    /// A `static RetryBudget`.
    Static(&'static RetryBudget),
    /// `RetryBudget::ratio(share)`, the partition's or the function's own.
    Share(f64),
}

/// What `breaker = ...` names: a user's `static`, or a failure ratio.
#[derive(Debug, Clone, Copy)]
pub enum BreakerRef {
    /// A `static CircuitBreaker`.
    Static(&'static CircuitBreaker),
    /// `CircuitBreaker::new().with_failure_ratio(ratio)`, the partition's or the function's
    /// own.
    Ratio(f64),
}

/// A function's site as its calls use it, resolved once per process (see [`Site::resolved`]):
/// its settings in effect and the shared state they name, a bucket and limiter of the
/// function's own included. The one value the engine reads.
///
/// Its protections come first (`repr(C)` keeps the order), and their chain starts with the
/// function's own bucket: choosing between it and a shared bucket, which every success does,
/// then needs no address computed for it.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Resolved {
    /// The protections its calls meet, in the one order a call meets them.
    pub(crate) chain: Chain,
    /// The settings in effect: the attribute's, and where it left a key open, the
    /// environment's or the config file's.
    pub(crate) settings: Settings,
    /// The function's metric handles.
    #[cfg(feature = "metrics")]
    pub(crate) meters: Meters,
    /// The latency estimate of a function hedged by a percentile: its attribute's...
    latency: Option<&'static Latency>,
    /// ...or one of its own, when the percentile came from outside.
    own_latency: Option<Box<Latency>>,
    /// How the server's hints and the backoff go together.
    pub(crate) hints: Hints,
    /// When the bucket refuses a retry, back off before returning the error.
    pub(crate) long_polling: bool,
    /// Every attempt's requests carry the call's invocation id as their idempotency key.
    pub(crate) idempotency_key: bool,
    /// Adaptive mode, a breaker or guards: an attempt waits at the loop's gate for a send
    /// token, the breaker's leave or the guards' admission (one test on the success path).
    pub(crate) gated: bool,
    /// Adaptive mode, a budget, a breaker or guards: an attempt's end has more to book than
    /// the bucket's reward (one test on the success path for all).
    pub(crate) extras: bool,
    /// The WARN about retries at two levels was emitted.
    pub(crate) nested_warned: AtomicBool,
    /// The WARN about an attempt that did not write its idempotency key was emitted.
    pub(crate) key_warned: AtomicBool,
}

impl Resolved {
    /// The latency estimate of a function hedged by a percentile.
    pub(crate) fn latency(&self) -> Option<&Latency> {
        match self.latency {
            Some(l) => Some(l),
            None => self.own_latency.as_deref(),
        }
    }

    /// The function's name.
    pub(crate) fn function(&self) -> &'static str {
        self.chain.names.function
    }

    /// The function's partition, if it names one.
    pub(crate) fn partition(&self) -> Option<&'static str> {
        self.chain.names.partition
    }

    /// The protections its calls meet, in the one order a call meets them.
    pub(crate) fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The function, as its reports name it.
    pub(crate) fn who(&self) -> Who<'_> {
        Who {
            function: self.function(),
            partition: self.partition(),
            #[cfg(feature = "metrics")]
            meters: &self.meters,
            #[cfg(not(feature = "metrics"))]
            unused: core::marker::PhantomData,
        }
    }

    /// The levels its reports carry: the bucket's tokens, and in adaptive mode the limiter's
    /// fill rate.
    #[cfg_attr(
        not(any(feature = "tracing", feature = "metrics")),
        allow(dead_code, reason = "read by tracing and metrics only")
    )]
    pub(crate) fn levels(&self) -> Levels {
        Levels {
            tokens: self.chain.bucket().available(),
            fill_rate: self.chain.pacing().map(|l| l.fill_rate()),
        }
    }
}
