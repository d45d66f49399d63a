//! What a service config asks of one method's calls: a [`GrpcPolicy`].

use super::codes::Codes;
/// A6 keeps no AWS retry quota: a call's only limits are its attempts, its timeout and the
/// config's retry throttling.
static NO_QUOTA: TokenBucket = TokenBucket::unlimited();

/// The engine's site of a method's policy: its keys as A6 sets them, the config's throttle as
/// its budget, no retry quota, nothing from the environment or a file.
fn site(policy: &GrpcPolicy) -> Site {
    let keys = Keys::new().mode(Mode::Standard).jitter(Jitter::Full);
    let keys = match policy.method().rule {
        Rule::None => keys.max_attempts(1),
        Rule::Retry(r) => keys
            .max_attempts(r.max_attempts)
            // The engine's backoff grows by a factor of at least 1 (a multiplier below 1 keeps
            // the initial backoff); the first is never above the cap.
            .initial_backoff(r.initial_backoff.min(r.max_backoff))
            .multiplier(r.multiplier.max(1.0))
            .max_backoff(r.max_backoff),
        Rule::Hedging(h) => keys
            .max_attempts(h.max_attempts)
            // A non-fatal failure sends the next hedge at once.
            .initial_backoff(Duration::ZERO)
            .max_backoff(Duration::ZERO)
            // A delay of zero sends every hedge at once: the engine's shortest delay.
            .hedge_after(HedgeSpec::Fixed(h.delay.max(Duration::from_nanos(1))))
            .max_in_flight(h.max_attempts),
    };
    let keys = match policy.timeout().filter(|t| !t.is_zero()) {
        Some(timeout) => keys.deadline(timeout),
        None => keys,
    };
    let site = Site::new("grpc", keys).grpc().bucket(&NO_QUOTA);
    match policy.throttle() {
        Some(throttle) => site.budget_shared(throttle.budget()),
        None => site,
    }
}

#[cfg(test)]
use super::pushback::Pushback;
use super::throttle::Throttle;
use crate::engine::site::Site;
use crate::protect::bucket::TokenBucket;
use crate::spec::{HedgeSpec, Jitter, Keys, Mode};
#[cfg(test)]
use ::tonic::Code;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What a service config asks of the calls of one method: retries (`retryPolicy`), hedging
/// (`hedgingPolicy`) or neither, the method's `timeout`, and the service config's retry
/// throttling.
///
/// Made by [`ServiceConfig::policy`](super::ServiceConfig::policy). A clone is two reference
/// counts: every policy of one [`ServiceConfig`](super::ServiceConfig) shares its method's
/// settings and the config's one retry throttle.
#[derive(Clone, Debug)]
pub struct GrpcPolicy {
    method: Arc<MethodPolicy>,
    throttle: Option<Arc<Throttle>>,
}

/// Which of gRFC A6's policies a method has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// Neither a `retryPolicy` nor a `hedgingPolicy`: one attempt.
    None,
    /// A `retryPolicy`: attempts one after the other, with exponential backoff, while the
    /// status is one of `retryableStatusCodes`.
    Retry,
    /// A `hedgingPolicy`: attempts started `hedgingDelay` apart without waiting for the earlier
    /// ones, and the first success wins.
    Hedging,
}

/// One method config's policy and timeout, shared by the [`GrpcPolicy`]s made from it.
#[derive(Debug)]
pub(crate) struct MethodPolicy {
    pub(crate) rule: Rule,
    pub(crate) timeout: Option<Duration>,
    /// The engine's site of its calls, made at the first (its settings resolved once).
    site: OnceLock<Site>,
}

impl MethodPolicy {
    /// Neither retries nor hedging, and no timeout: what a method without a method config has.
    pub(crate) const fn none() -> MethodPolicy {
        MethodPolicy::new(Rule::None, None)
    }

    /// A method config's policy and timeout.
    pub(crate) const fn new(rule: Rule, timeout: Option<Duration>) -> MethodPolicy {
        MethodPolicy {
            rule,
            timeout,
            site: OnceLock::new(),
        }
    }
}

/// A method config's `retryPolicy` or `hedgingPolicy`, or neither.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rule {
    None,
    Retry(RetryRule),
    Hedging(HedgingRule),
}

/// A validated `retryPolicy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RetryRule {
    /// 2 to 5 from `from_json` (larger values were lowered to 5); 2 or more from
    /// `from_google_json`, `u32::MAX` for no limit but the method's timeout.
    pub(crate) max_attempts: u32,
    /// Above zero.
    pub(crate) initial_backoff: Duration,
    /// Above zero.
    pub(crate) max_backoff: Duration,
    /// Above zero, finite.
    pub(crate) multiplier: f64,
    /// Not empty.
    pub(crate) retryable: Codes,
}

/// A validated `hedgingPolicy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HedgingRule {
    /// 2 to 5: larger values were lowered to 5.
    pub(crate) max_attempts: u32,
    /// Zero when the config leaves it out.
    pub(crate) delay: Duration,
    /// Empty when the config leaves it out.
    pub(crate) non_fatal: Codes,
}

impl GrpcPolicy {
    pub(crate) fn new(method: Arc<MethodPolicy>, throttle: Option<Arc<Throttle>>) -> GrpcPolicy {
        GrpcPolicy { method, throttle }
    }

    /// The method config's policy.
    pub(crate) fn method(&self) -> &MethodPolicy {
        &self.method
    }

    /// The engine's site of the method's calls (made at the first call of any policy of the
    /// method: they share its config's throttle).
    pub(crate) fn site(&self) -> &Site {
        self.method.site.get_or_init(|| site(self))
    }

    /// The service config's retry throttle (`retryThrottling`), the same `Arc` for every policy
    /// of one [`ServiceConfig`](super::ServiceConfig); `None` without one. Its calls consult it
    /// as their budget: every attempt's end counts.
    pub(crate) fn throttle(&self) -> Option<&Arc<Throttle>> {
        self.throttle.as_ref()
    }

    /// The codes that let a call go on: retryable under a retry policy, non-fatal under a
    /// hedging policy, none without a policy.
    pub(crate) fn continue_codes(&self) -> Codes {
        match self.method.rule {
            Rule::None => Codes::EMPTY,
            Rule::Retry(r) => r.retryable,
            Rule::Hedging(h) => h.non_fatal,
        }
    }

    /// Whether the method retries, hedges, or does neither.
    #[must_use]
    pub fn kind(&self) -> PolicyKind {
        match self.method.rule {
            Rule::None => PolicyKind::None,
            Rule::Retry(_) => PolicyKind::Retry,
            Rule::Hedging(_) => PolicyKind::Hedging,
        }
    }

    /// The most attempts of one call, the first included: the policy's `maxAttempts` (at most
    /// 5, as gRFC A6 caps it, from [`ServiceConfig::from_json`](super::ServiceConfig::from_json);
    /// as written from [`ServiceConfig::from_google_json`](super::ServiceConfig::from_google_json),
    /// and `u32::MAX`, no limit but the method's timeout, for a retry policy without one), or 1
    /// without a policy.
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        match self.method.rule {
            Rule::None => 1,
            Rule::Retry(r) => r.max_attempts,
            Rule::Hedging(h) => h.max_attempts,
        }
    }

    /// The method config's `timeout`: the longest a call may take, all its attempts and the
    /// waits between them included (`None` if its method config has none).
    #[must_use]
    pub fn timeout(&self) -> Option<Duration> {
        self.method.timeout
    }
}

// What the tests read of a policy (the call reads its rule, in `call.rs`).
#[cfg(test)]
impl GrpcPolicy {
    /// The retry policy's `initialBackoff` (zero without one).
    pub(crate) fn initial_backoff(&self) -> Duration {
        self.retry_rule()
            .map_or(Duration::ZERO, |r| r.initial_backoff)
    }

    /// The retry policy's `maxBackoff` (zero without one).
    pub(crate) fn max_backoff(&self) -> Duration {
        self.retry_rule().map_or(Duration::ZERO, |r| r.max_backoff)
    }

    /// The retry policy's `backoffMultiplier` (1 without one).
    pub(crate) fn backoff_multiplier(&self) -> f64 {
        self.retry_rule().map_or(1.0, |r| r.multiplier)
    }

    /// The retry policy's `retryableStatusCodes` (none without one).
    pub(crate) fn retryable_codes(&self) -> Codes {
        self.retry_rule().map_or(Codes::EMPTY, |r| r.retryable)
    }

    /// The hedging policy's `hedgingDelay` (zero without one, or when it leaves it out).
    pub(crate) fn hedging_delay(&self) -> Duration {
        self.hedging_rule().map_or(Duration::ZERO, |h| h.delay)
    }

    /// The hedging policy's `nonFatalStatusCodes` (none without one, or when it leaves them
    /// out).
    pub(crate) fn non_fatal_codes(&self) -> Codes {
        self.hedging_rule().map_or(Codes::EMPTY, |h| h.non_fatal)
    }

    /// Whether a response with `code` lets the call go on: a retryable code under a retry
    /// policy (retry it after the backoff), a non-fatal code under a hedging policy (send the
    /// next hedge now). Never without a policy, never for `OK`.
    pub(crate) fn continues_on(&self, code: Code) -> bool {
        code != Code::Ok && self.continue_codes().contains(code)
    }

    /// Whether a failed response counts as a failure for retry throttling (A6: only a code that
    /// is retryable or non-fatal, or a pushback that says not to retry; an `INVALID_ARGUMENT`
    /// says nothing of the server's health).
    pub(crate) fn counts_as_throttle_failure(&self, code: Code, pushback: Pushback) -> bool {
        code != Code::Ok && (pushback == Pushback::Stop || self.continues_on(code))
    }

    /// The ceiling of the backoff before the `retry_index`-th retry (1 for the first retry
    /// after a first attempt or after a pushback, A6 counting from the last pushback):
    /// `min(initialBackoff * backoffMultiplier^(retry_index - 1), maxBackoff)`, of which the
    /// caller waits a random part (A6: `random(0, ceiling)`). An index of 0 reads as 1. Zero
    /// without a retry policy.
    ///
    /// Exact to the nanosecond while the product is below `u64::MAX` nanoseconds; from any
    /// index where the product exceeds `maxBackoff` (an overflow to infinity included) the
    /// ceiling is `maxBackoff` itself.
    pub(crate) fn backoff_ceiling(&self, retry_index: u32) -> Duration {
        let Some(r) = self.retry_rule() else {
            return Duration::ZERO;
        };
        let exponent = i32::try_from(retry_index.saturating_sub(1)).unwrap_or(i32::MAX);
        let factor = r.multiplier.powi(exponent);
        let nanos = r.initial_backoff.as_nanos() as f64 * factor;
        // A NaN, which a finite initial backoff and multiplier above zero never make, would
        // give the maximum too.
        if nanos.is_nan() || nanos >= r.max_backoff.as_nanos() as f64 {
            return r.max_backoff;
        }
        if nanos < 18_446_744_073_709_551_615.0 {
            // Below u64::MAX and not negative: the cast keeps the value.
            Duration::from_nanos(nanos.round() as u64)
        } else {
            // Beyond 584 years, below a maximum that is.
            Duration::try_from_secs_f64(nanos / 1e9).unwrap_or(r.max_backoff)
        }
    }

    fn retry_rule(&self) -> Option<RetryRule> {
        match self.method.rule {
            Rule::Retry(r) => Some(r),
            _ => None,
        }
    }

    fn hedging_rule(&self) -> Option<HedgingRule> {
        match self.method.rule {
            Rule::Hedging(h) => Some(h),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(initial: Duration, max: Duration, multiplier: f64) -> GrpcPolicy {
        GrpcPolicy::new(
            Arc::new(MethodPolicy::new(
                Rule::Retry(RetryRule {
                    max_attempts: 5,
                    initial_backoff: initial,
                    max_backoff: max,
                    multiplier,
                    retryable: Codes::EMPTY.with(14),
                }),
                None,
            )),
            None,
        )
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn backoff_ceiling_doubles_up_to_max_backoff() {
        let p = retry(ms(100), ms(30_000), 2.0);
        let ceilings: Vec<_> = (1..=10).map(|n| p.backoff_ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1600),
                ms(3200),
                ms(6400),
                ms(12_800),
                ms(25_600),
                ms(30_000)
            ]
        );
        assert_eq!(p.backoff_ceiling(0), ms(100), "0 reads as the first retry");
        for huge in [64, 1100, 1_000_000, u32::MAX] {
            assert_eq!(p.backoff_ceiling(huge), ms(30_000), "{huge}");
        }
    }

    /// A6's example (`initialBackoff: "0.1s"`, `maxBackoff: "1s"`, `backoffMultiplier: 2`).
    #[test]
    fn backoff_ceiling_of_a6_example() {
        let p = retry(ms(100), ms(1000), 2.0);
        let ceilings: Vec<_> = (1..=10).map(|n| p.backoff_ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1000),
                ms(1000),
                ms(1000),
                ms(1000),
                ms(1000),
                ms(1000)
            ]
        );
    }

    #[test]
    fn backoff_ceiling_with_other_multipliers() {
        let p = retry(Duration::new(1, 340_012), Duration::from_secs(10), 1.5);
        assert_eq!(p.backoff_ceiling(1), Duration::new(1, 340_012));
        assert_eq!(p.backoff_ceiling(2), Duration::new(1, 500_510_018));
        assert_eq!(p.backoff_ceiling(3), Duration::new(2, 250_765_027));
        assert_eq!(p.backoff_ceiling(7), Duration::from_secs(10));

        // A multiplier of 1 keeps the initial backoff; one below 1 shrinks it toward zero.
        let flat = retry(ms(250), ms(1000), 1.0);
        assert_eq!(flat.backoff_ceiling(u32::MAX), ms(250));
        let shrinking = retry(ms(800), ms(1000), 0.5);
        assert_eq!(shrinking.backoff_ceiling(2), ms(400));
        assert_eq!(shrinking.backoff_ceiling(4), ms(100));
        assert_eq!(shrinking.backoff_ceiling(u32::MAX), Duration::ZERO);

        // An initial backoff above the maximum is capped at once.
        let capped = retry(ms(5000), ms(1000), 2.0);
        assert_eq!(capped.backoff_ceiling(1), ms(1000));
    }

    #[test]
    fn backoff_ceiling_of_huge_durations() {
        let max = Duration::from_secs(315_576_000_000);
        let p = retry(Duration::from_secs(100_000_000_000), max, 3.0);
        assert_eq!(p.backoff_ceiling(1), Duration::from_secs(100_000_000_000));
        // Beyond u64::MAX nanoseconds.
        assert_eq!(p.backoff_ceiling(2), Duration::from_secs(300_000_000_000));
        assert_eq!(p.backoff_ceiling(3), max);
        assert_eq!(p.backoff_ceiling(u32::MAX), max);
        let huge_multiplier = retry(ms(1), max, f64::MAX);
        assert_eq!(huge_multiplier.backoff_ceiling(2), max);
        assert_eq!(huge_multiplier.backoff_ceiling(3), max, "infinity");
        let tiny = retry(Duration::from_nanos(1), ms(1), f64::MIN_POSITIVE);
        assert_eq!(tiny.backoff_ceiling(u32::MAX), Duration::ZERO);
    }

    #[test]
    fn a_policy_without_rule_reads_as_one_attempt() {
        let p = GrpcPolicy::new(Arc::new(MethodPolicy::none()), None);
        assert_eq!(p.kind(), PolicyKind::None);
        assert_eq!(p.max_attempts(), 1);
        assert_eq!(p.timeout(), None);
        assert_eq!(p.backoff_ceiling(1), Duration::ZERO);
        assert_eq!(p.initial_backoff(), Duration::ZERO);
        assert_eq!(p.max_backoff(), Duration::ZERO);
        assert_eq!(p.backoff_multiplier(), 1.0);
        assert_eq!(p.hedging_delay(), Duration::ZERO);
        assert!(p.retryable_codes().is_empty());
        assert!(p.non_fatal_codes().is_empty());
        assert!(p.throttle().is_none());
        assert!(!p.continues_on(Code::Unavailable));
        assert!(!p.counts_as_throttle_failure(Code::Unavailable, Pushback::None));
        assert!(p.counts_as_throttle_failure(Code::Unavailable, Pushback::Stop));
    }

    #[test]
    fn which_responses_count_against_the_throttle() {
        let p = retry(ms(100), ms(1000), 2.0);
        assert!(p.continues_on(Code::Unavailable));
        assert!(!p.continues_on(Code::InvalidArgument));
        assert!(p.counts_as_throttle_failure(Code::Unavailable, Pushback::None));
        assert!(p.counts_as_throttle_failure(Code::Unavailable, Pushback::After(ms(5))));
        assert!(!p.counts_as_throttle_failure(Code::InvalidArgument, Pushback::None));
        assert!(!p.counts_as_throttle_failure(Code::InvalidArgument, Pushback::After(ms(5))));
        assert!(p.counts_as_throttle_failure(Code::InvalidArgument, Pushback::Stop));
        assert!(!p.counts_as_throttle_failure(Code::Ok, Pushback::Stop));

        let hedged = GrpcPolicy::new(
            Arc::new(MethodPolicy::new(
                Rule::Hedging(HedgingRule {
                    max_attempts: 3,
                    delay: ms(50),
                    non_fatal: Codes::EMPTY.with(13),
                }),
                Some(ms(2000)),
            )),
            None,
        );
        assert_eq!(hedged.kind(), PolicyKind::Hedging);
        assert_eq!(hedged.max_attempts(), 3);
        assert_eq!(hedged.hedging_delay(), ms(50));
        assert_eq!(hedged.timeout(), Some(ms(2000)));
        assert!(hedged.continues_on(Code::Internal));
        assert!(!hedged.continues_on(Code::Unavailable));
        assert!(hedged.counts_as_throttle_failure(Code::Internal, Pushback::None));
        assert_eq!(hedged.backoff_ceiling(3), Duration::ZERO);
    }
}
