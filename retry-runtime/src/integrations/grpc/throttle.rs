//! gRPC retry throttling (gRFC A6, "Throttling Retry Attempts and Hedged RPCs"): one token
//! count per service config, shared by every method it configures.
//!
//! The count starts full at `maxTokens`; a failure takes one token (never below zero), a
//! success gives back `tokenRatio` (never above `maxTokens`), and a retry or a hedge is allowed
//! only while the count is above `maxTokens / 2`. A6 counts tokens in fixed point to three
//! decimals, so the count here is in thousandths of a token, one atomic word changed without a
//! lock.

#[cfg(test)]
use crate::classify::ErrorClass;
use crate::protect::budget::RetryBudget;
use std::sync::Arc;

/// Thousandths of a token in one token.
pub(crate) const MILLI: u32 = 1000;

/// The retry throttle of one service config's `retryThrottling`: the engine's
/// [`RetryBudget::grpc_throttling`], which the calls of every policy of the config consult as
/// their budget, made once per config and owned with it (the config, its policies and their
/// sites hold it; the last of them releases it).
#[derive(Debug)]
pub(crate) struct Throttle {
    budget: Arc<RetryBudget>,
}

impl Throttle {
    /// A full throttle of `max_tokens` thousandths of a token that gives back `token_ratio`
    /// thousandths per success (at most `max_tokens`: a larger ratio refills as much).
    pub(crate) fn new(max_tokens: u32, token_ratio: u32) -> Throttle {
        let ratio = f64::from(token_ratio.min(max_tokens)) / f64::from(MILLI);
        let budget = RetryBudget::grpc_throttling(max_tokens / MILLI, ratio);
        Throttle {
            budget: Arc::new(budget),
        }
    }

    /// The budget the calls consult.
    pub(crate) fn budget(&self) -> Arc<RetryBudget> {
        Arc::clone(&self.budget)
    }

    /// `(maxTokens, tokenRatio, tokens now)` in thousandths.
    #[cfg(test)]
    fn milli(&self) -> (u32, u32, u32) {
        let (max, ratio, now) = self.budget.grpc_milli().unwrap_or_default();
        let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        (narrow(max), narrow(ratio), narrow(now))
    }

    /// A response counted as a failure (its status is retryable, or non-fatal under a hedging
    /// policy): one token less, down to zero.
    #[cfg(test)]
    pub(crate) fn on_failure(&self) {
        self.budget.on_outcome(Some(ErrorClass::Transient));
    }

    /// A successful response: `tokenRatio` more, up to `maxTokens`.
    #[cfg(test)]
    pub(crate) fn on_success(&self) {
        self.budget.on_outcome(None);
    }

    /// Whether a retry or a hedge may be sent now: the count is above `maxTokens / 2`.
    #[cfg(test)]
    pub(crate) fn allows(&self) -> bool {
        self.budget.allows_retry()
    }

    /// The token count now, in thousandths of a token.
    #[cfg(test)]
    pub(crate) fn tokens(&self) -> u32 {
        self.milli().2
    }

    /// `maxTokens`, in thousandths of a token.
    #[cfg(test)]
    pub(crate) fn max_tokens(&self) -> u32 {
        self.milli().0
    }

    /// What a success gives back, in thousandths of a token.
    #[cfg(test)]
    pub(crate) fn token_ratio(&self) -> u32 {
        self.milli().1
    }
}

/// A non-negative number in thousandths, decimals beyond the third dropped (A6: `0.5466` is
/// `0.546`), saturating at `u32::MAX`; `None` for a negative number or NaN.
///
/// The number is the one a JSON text wrote, read as the nearest `f64`: multiplying by 1000 and
/// dropping the fraction would lose a thousandth wherever that `f64` lies just below the
/// decimal (`1.001` is `1.000999...`, and `1.001 * 1000` is `1000.999...`). So the candidate
/// is the nearest whole number of thousandths, kept if its own nearest `f64` is not above `x`
/// (the decimal it stands for is then not above the one written), else one less.
pub(crate) fn thousandths(x: f64) -> Option<u32> {
    if x.is_nan() || x < 0.0 {
        return None;
    }
    let scaled = x * f64::from(MILLI);
    if scaled >= f64::from(u32::MAX) {
        return Some(u32::MAX);
    }
    // In range and non-negative: the cast neither truncates nor loses the sign.
    let nearest = scaled.round() as u32;
    if f64::from(nearest) / f64::from(MILLI) <= x {
        Some(nearest)
    } else {
        Some(nearest - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_full() {
        let t = Throttle::new(10 * MILLI, 100);
        assert_eq!(t.tokens(), 10_000);
        assert_eq!(t.max_tokens(), 10_000);
        assert_eq!(t.token_ratio(), 100);
        assert!(t.allows());
    }

    #[test]
    fn a_failure_takes_one_token_down_to_zero() {
        let t = Throttle::new(3 * MILLI, 100);
        t.on_failure();
        assert_eq!(t.tokens(), 2000);
        t.on_success();
        assert_eq!(t.tokens(), 2100);
        t.on_failure();
        t.on_failure();
        assert_eq!(t.tokens(), 100);
        t.on_failure();
        assert_eq!(t.tokens(), 0, "a failure below one token empties the count");
        t.on_failure();
        assert_eq!(t.tokens(), 0);
    }

    #[test]
    fn a_success_gives_back_the_ratio_up_to_max_tokens() {
        let t = Throttle::new(2 * MILLI, 546);
        t.on_failure();
        assert_eq!(t.tokens(), 1000);
        t.on_success();
        assert_eq!(t.tokens(), 1546);
        t.on_success();
        assert_eq!(t.tokens(), 2000, "capped at maxTokens");
        t.on_success();
        assert_eq!(t.tokens(), 2000);
    }

    #[test]
    fn a_ratio_above_max_tokens_refills_at_once() {
        let t = Throttle::new(2 * MILLI, u32::MAX);
        assert_eq!(t.token_ratio(), 2000);
        t.on_failure();
        t.on_failure();
        t.on_success();
        assert_eq!(t.tokens(), 2000);
    }

    /// A6's example: `maxTokens: 10`, the threshold is 5, and a count of exactly 5 refuses.
    #[test]
    fn the_threshold_is_strictly_above_half() {
        let t = Throttle::new(10 * MILLI, 100);
        for _ in 0..4 {
            t.on_failure();
        }
        assert_eq!(t.tokens(), 6000);
        assert!(t.allows());
        t.on_failure();
        assert_eq!(t.tokens(), 5000);
        assert!(!t.allows(), "5 tokens of 10 is not above half");
        t.on_success();
        assert_eq!(t.tokens(), 5100);
        assert!(t.allows(), "5.1 tokens is");
        t.on_failure();
        for _ in 0..9 {
            t.on_success();
        }
        assert_eq!(t.tokens(), 5000);
        assert!(!t.allows());
        t.on_success();
        assert!(t.allows());
    }

    /// An odd maximum in thousandths has a half that is not a whole thousandth: 1.5 tokens of 3
    /// is not above half, 1.501 is.
    #[test]
    fn the_threshold_of_an_odd_maximum() {
        let t = Throttle::new(3 * MILLI, 1);
        t.on_failure();
        t.on_failure();
        assert_eq!(t.tokens(), 1000);
        for _ in 0..500 {
            t.on_success();
        }
        assert_eq!(t.tokens(), 1500);
        assert!(!t.allows());
        t.on_success();
        assert_eq!(t.tokens(), 1501);
        assert!(t.allows());
    }

    #[test]
    fn thousandths_drop_decimals_beyond_the_third() {
        assert_eq!(thousandths(0.5466), Some(546));
        assert_eq!(thousandths(0.1), Some(100));
        assert_eq!(thousandths(0.0009), Some(0));
        assert_eq!(thousandths(0.001), Some(1));
        assert_eq!(thousandths(0.0), Some(0));
        assert_eq!(thousandths(1.0), Some(1000));
        assert_eq!(thousandths(0.9999), Some(999));
        assert_eq!(thousandths(0.999_999_999_9), Some(999));
        assert_eq!(thousandths(1e300), Some(u32::MAX));
        assert_eq!(thousandths(-0.5), None);
        assert_eq!(thousandths(f64::NAN), None);
    }

    /// The decimals whose `f64` lies just below them: `x * 1000` truncated would lose one.
    #[test]
    fn thousandths_of_decimals_just_below_their_value() {
        assert!((1.001_f64 * 1000.0).floor() < 1001.0);
        assert!((1.005_f64 * 1000.0).floor() < 1005.0);
        assert_eq!(thousandths(1.001), Some(1001));
        assert_eq!(thousandths(1.005), Some(1005));
        assert_eq!(thousandths(2.675), Some(2675));
        assert_eq!(thousandths(1.0019), Some(1001));
        for written in 1..200_000_u32 {
            let text = format!("{}.{:03}", written / 1000, written % 1000);
            let x: f64 = text.parse().expect("a decimal");
            assert_eq!(thousandths(x), Some(written), "{text}");
            let longer: f64 = format!("{text}9").parse().expect("a decimal");
            assert_eq!(thousandths(longer), Some(written), "{text}9");
        }
    }

    /// Threads taking and giving back tokens at once, never near zero or the maximum: every
    /// update counts, and the count ends where it began.
    #[test]
    fn concurrent_updates_are_each_counted() {
        let t = Throttle::new(1000 * MILLI, 250);
        for _ in 0..500 {
            t.on_failure();
        }
        assert_eq!(t.tokens(), 500_000);
        // At most 8 x 50 = 400 tokens taken or given back in any order: the count stays
        // within (100, 900) tokens, away from both bounds.
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        t.on_failure();
                        for _ in 0..4 {
                            t.on_success();
                        }
                    }
                });
            }
        });
        assert_eq!(t.tokens(), 500_000);

        // Past the bounds, in any order: the floor and the cap hold exactly.
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        t.on_failure();
                    }
                });
            }
        });
        assert_eq!(t.tokens(), 0);
        assert!(!t.allows());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        t.on_success();
                    }
                });
            }
        });
        assert_eq!(t.tokens(), 1_000_000);
        assert!(t.allows());
    }
}
