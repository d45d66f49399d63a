//! Retry budgets: retries bounded by a share of the requests of a sliding window plus a floor
//! per second (Finagle's `RetryBudget`, tower's `TpsBudget`; Envoy's retry budget bounds
//! retries in flight instead, which is `ConcurrencyBudget`), or by
//! gRPC's retry throttling (gRFC A6) as a preset. Unlike the AWS bucket, which bounds
//! amplification only once its tokens are spent, a budget bounds it from the first second and
//! grows with traffic.

use crate::classify::ErrorClass;
use crate::protect::guard::{Admit, AttemptKind, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicU64, Ordering};
use crate::protect::window::{SLOTS, add, shortest_window, slot, sum};
use crate::runtime::Instant;
use std::sync::OnceLock;
use std::time::Duration;

/// Fixed point: a thousandth of a request or a token.
const MILLI: u64 = 1000;

/// A retry budget, shared by every function that names it (`budget = PATH`); `budget = "20%"`
/// gives the function one of its own, or its partition's, shared by the partition's functions
/// and readable from [`Partition::retry_budget`](crate::Partition::retry_budget).
///
/// ```
/// use retry_runtime::RetryBudget;
/// use std::time::Duration;
///
/// // Retries at most 20 % of the requests of the last 10 s, plus 10 per second.
/// static ORDERS: RetryBudget = RetryBudget::ratio(0.2)
///     .with_floor_per_sec(10)
///     .with_window(Duration::from_secs(10));
///
/// // gRPC's retry throttling (a service config's `maxTokens: 10, tokenRatio: 0.1`).
/// static GRPC: RetryBudget = RetryBudget::grpc_throttling(10, 0.1);
/// # let _ = (&ORDERS, &GRPC);
/// ```
///
/// A ratio budget counts first attempts (requests) and retries in a window of ten slots, each
/// one atomic word per counter tagged with the slot's number since the budget's first use: a
/// counter whose tag is not the current slot's is restarted at its first use, and a sum over
/// the window counts only tags of the last ten slots, so the window slides by a tenth of its
/// length and nothing needs sweeping. A retry is allowed while the window's retries stay
/// within `ratio x requests + floor x window`. Concurrent retries that look at the same instant
/// may each see room for one more: the overshoot is bounded by the number of concurrent
/// lookers.
#[derive(Debug)]
pub struct RetryBudget {
    kind: Kind,
    /// Per slot: `tag << 32 | first attempts`.
    requests: [AtomicU64; SLOTS],
    /// Per slot: `tag << 32 | retries`.
    retries: [AtomicU64; SLOTS],
    /// gRPC throttling's token count, in thousandths of a token.
    tokens: AtomicU64,
    /// The budget's first look at the clock: slots are counted from there.
    epoch: OnceLock<Instant>,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Ratio {
        /// Retries allowed per request, in thousandths.
        ratio: u64,
        floor_per_sec: u64,
        window: Duration,
    },
    Grpc {
        /// In thousandths of a token.
        max_tokens: u64,
        token_ratio: u64,
    },
}

impl RetryBudget {
    /// The share of the requests a ratio budget allows, in thousandths (`None` for gRPC
    /// throttling).
    pub(crate) fn share_thousandths(&self) -> Option<u64> {
        match self.kind {
            Kind::Ratio { ratio, .. } => Some(ratio),
            Kind::Grpc { .. } => None,
        }
    }

    /// Retries at most `ratio` of the first attempts of the window (10 s unless
    /// [`with_window`](Self::with_window) says otherwise), plus 10 per second. `ratio` is
    /// clamped to [0, 1000] and kept to the thousandth.
    #[must_use]
    pub const fn ratio(ratio: f64) -> RetryBudget {
        RetryBudget::new(Kind::Ratio {
            ratio: thousandths(ratio),
            floor_per_sec: 10,
            window: Duration::from_secs(10),
        })
    }

    /// gRPC retry throttling (gRFC A6): the budget holds `max_tokens` tokens and starts full;
    /// a failed attempt takes 1, a success gives back `token_ratio` (kept to the thousandth),
    /// and retries (and hedges) stop while it holds half or less.
    #[must_use]
    pub const fn grpc_throttling(max_tokens: u32, token_ratio: f64) -> RetryBudget {
        let max_tokens = max_tokens as u64 * MILLI;
        let mut b = RetryBudget::new(Kind::Grpc {
            max_tokens,
            token_ratio: thousandths(token_ratio),
        });
        b.tokens = AtomicU64::new(max_tokens);
        b
    }

    const fn new(kind: Kind) -> RetryBudget {
        RetryBudget {
            kind,
            requests: [const { AtomicU64::new(0) }; SLOTS],
            retries: [const { AtomicU64::new(0) }; SLOTS],
            tokens: AtomicU64::new(0),
            epoch: OnceLock::new(),
        }
    }

    /// Retries that are always allowed per second of the window, whatever the traffic (a
    /// ratio budget; 10 unless set).
    #[must_use]
    pub const fn with_floor_per_sec(mut self, floor: u32) -> RetryBudget {
        if let Kind::Ratio { floor_per_sec, .. } = &mut self.kind {
            *floor_per_sec = floor as u64;
        }
        self
    }

    /// The window a ratio budget counts over (10 s unless set; at least 10 ms).
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> RetryBudget {
        if let Kind::Ratio { window: w, .. } = &mut self.kind {
            *w = shortest_window(window);
        }
        self
    }

    /// Whether a retry would be allowed now (a snapshot for metrics: it takes nothing).
    #[must_use]
    pub fn allows_retry(&self) -> bool {
        self.room(Instant::now())
    }

    /// The first attempts and retries counted in the window now (a ratio budget; zeros for
    /// gRPC throttling).
    #[must_use]
    pub fn window_counts(&self) -> (u64, u64) {
        let slot = self.slot(Instant::now());
        (sum(&self.requests, slot), sum(&self.retries, slot))
    }

    /// gRPC throttling's token count now (`None` for a ratio budget).
    #[must_use]
    pub fn tokens(&self) -> Option<f64> {
        match self.kind {
            Kind::Grpc { .. } => Some(self.tokens.load(Ordering::Relaxed) as f64 / MILLI as f64),
            Kind::Ratio { .. } => None,
        }
    }

    /// gRPC throttling's `(maxTokens, tokenRatio, tokens now)`, in thousandths of a token.
    #[cfg(all(test, feature = "grpc-config"))]
    pub(crate) fn grpc_milli(&self) -> Option<(u64, u64, u64)> {
        match self.kind {
            Kind::Grpc {
                max_tokens,
                token_ratio,
            } => Some((max_tokens, token_ratio, self.tokens.load(Ordering::Relaxed))),
            Kind::Ratio { .. } => None,
        }
    }

    /// A first attempt is about to be sent at `now`.
    pub(crate) fn on_request(&self, now: Instant) {
        if let Kind::Ratio { .. } = self.kind {
            add(&self.requests, self.slot(now));
        }
    }

    /// An attempt ended: a success, or a failure of `class`.
    pub(crate) fn on_outcome(&self, class: Option<ErrorClass>) {
        let Kind::Grpc {
            max_tokens,
            token_ratio,
        } = self.kind
        else {
            return;
        };
        match class {
            None => update(&self.tokens, |t| (t + token_ratio).min(max_tokens)),
            Some(ErrorClass::Permanent) => {}
            Some(_) => update(&self.tokens, |t| t.saturating_sub(MILLI)),
        }
    }

    /// Takes a retry at `now` if the budget has room for it: `false` takes nothing.
    #[cfg(all(test, not(retry_loom)))]
    fn try_retry(&self, now: Instant) -> bool {
        if !self.room(now) {
            return false;
        }
        self.count_retry(now);
        true
    }

    /// A retry is about to run (a ratio budget counts it).
    pub(crate) fn count_retry(&self, now: Instant) {
        if let Kind::Ratio { .. } = self.kind {
            add(&self.retries, self.slot(now));
        }
    }

    /// Whether the budget has room for one more retry at `now`.
    pub(crate) fn room(&self, now: Instant) -> bool {
        match self.kind {
            Kind::Ratio {
                ratio,
                floor_per_sec,
                window,
            } => {
                let slot = self.slot(now);
                let allowed =
                    ratio * sum(&self.requests, slot) + floor_per_sec * window_millis(window);
                (sum(&self.retries, slot) + 1) * MILLI <= allowed
            }
            Kind::Grpc { max_tokens, .. } => self.tokens.load(Ordering::Acquire) > max_tokens / 2,
        }
    }

    /// The number of the slot `now` falls in, counted from the budget's first look at the
    /// clock.
    fn slot(&self, now: Instant) -> u64 {
        let Kind::Ratio { window, .. } = self.kind else {
            return 0;
        };
        slot(&self.epoch, window, now)
    }
}

/// `x` in thousandths, decimals beyond the third dropped, clamped to [0, 1000] (0 for NaN).
/// `x * 1000` falls just below a whole number for a decimal such as `1.001` (1000.999...): the
/// next thousandth counts when its own nearest `f64` is not above `x`, so a number written with
/// three decimals keeps them all.
const fn thousandths(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1000.0 {
        1000 * MILLI
    } else {
        let t = (x * 1000.0) as u64;
        if (t + 1) as f64 / 1000.0 <= x {
            t + 1
        } else {
            t
        }
    }
}

/// `floor x window` is counted in thousandths of a retry: the window in milliseconds.
fn window_millis(window: Duration) -> u64 {
    u64::try_from(window.as_millis()).unwrap_or(u64::MAX)
}

/// Applies `f` to `word` atomically.
fn update(word: &AtomicU64, f: impl Fn(u64) -> u64) {
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |t| Some(f(t)));
}

/// The budget as a guard in a call's list (`guard = BUDGET`,
/// [`Policy::guard`](crate::Policy::guard)), with its semantics as the `budget` key gives them:
/// a retry or a hedge is admitted while the budget has room (and a ratio budget counts it), a
/// first attempt always is; an attempt's end is counted (a ratio budget's requests, a gRPC
/// budget's tokens); an attempt that never ran counts nothing.
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, Guard, GuardContext, GuardOutcome, RetryBudget};
///
/// // gRPC's retry throttling: 2 tokens, a failure takes 1, a retry needs more than half.
/// static BUDGET: RetryBudget = RetryBudget::grpc_throttling(2, 0.5);
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// assert_eq!(BUDGET.admit(&first), Admit::Go);
/// BUDGET.settle(&first, GuardOutcome::Failure(retry_runtime::ErrorClass::Transient));
/// assert_eq!(BUDGET.admit(&GuardContext::new(AttemptKind::Retry, 2)), Admit::Refuse);
/// ```
impl Guard for RetryBudget {
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if attempt.kind() == AttemptKind::First {
            return Admit::Go;
        }
        let now = Instant::now();
        if self.room(now) {
            self.count_retry(now);
            Admit::Go
        } else {
            Admit::Refuse
        }
    }

    fn settle(&self, attempt: &GuardContext<'_>, outcome: GuardOutcome) {
        let failure = match outcome {
            GuardOutcome::Success => None,
            GuardOutcome::Failure(class) => Some(class),
            GuardOutcome::Cancelled => return,
        };
        if attempt.kind() == AttemptKind::First {
            self.on_request(Instant::now());
        }
        self.on_outcome(failure);
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use tokio::time::advance;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[tokio::test(start_paused = true)]
    async fn the_floor_allows_retries_without_traffic() {
        // 2 per second over 1 s: 2 retries, the third refused.
        let b = RetryBudget::ratio(0.2)
            .with_floor_per_sec(2)
            .with_window(S(1));
        let now = Instant::now();
        assert!(b.try_retry(now) && b.try_retry(now));
        assert!(!b.try_retry(now));
        assert_eq!(b.window_counts(), (0, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_are_a_share_of_the_requests_of_the_window() {
        let b = RetryBudget::ratio(0.2)
            .with_floor_per_sec(0)
            .with_window(S(10));
        let now = Instant::now();
        for _ in 0..50 {
            b.on_request(now);
        }
        // 20 % of 50.
        let allowed = (0..20).take_while(|_| b.try_retry(now)).count();
        assert_eq!(allowed, 10);
        assert!(!b.allows_retry());
        // More traffic, more room.
        for _ in 0..5 {
            b.on_request(now);
        }
        assert!(b.try_retry(now));
        assert!(!b.try_retry(now));
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_slides_a_tenth_at_a_time() {
        let b = RetryBudget::ratio(1.0)
            .with_floor_per_sec(0)
            .with_window(S(10));
        let start = Instant::now();
        for _ in 0..3 {
            b.on_request(start);
        }
        assert!(b.try_retry(start) && b.try_retry(start) && b.try_retry(start));
        assert!(!b.try_retry(start));
        // 9.5 s later the slot of `start` is still in the window.
        advance(Duration::from_millis(9500)).await;
        assert_eq!(b.window_counts(), (3, 3));
        assert!(!b.allows_retry());
        // 10 s later it has left: nothing is counted, and nothing allowed without traffic.
        advance(Duration::from_millis(500)).await;
        assert_eq!(b.window_counts(), (0, 0));
        assert!(!b.allows_retry());
        b.on_request(Instant::now());
        assert!(b.try_retry(Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_reused_after_a_full_turn_starts_again() {
        let b = RetryBudget::ratio(1.0)
            .with_floor_per_sec(0)
            .with_window(S(1));
        for _ in 0..4 {
            b.on_request(Instant::now());
        }
        // Ten slots later the same counter serves a new slot: it restarts at 1.
        advance(S(1)).await;
        b.on_request(Instant::now());
        assert_eq!(b.window_counts(), (1, 0));
    }

    #[test]
    fn grpc_throttling_stops_retries_at_half_its_tokens() {
        // maxTokens 10, tokenRatio 0.5: starts at 10; retries allowed above 5.
        let b = RetryBudget::grpc_throttling(10, 0.5);
        let now = Instant::now();
        assert_eq!(b.tokens(), Some(10.0));
        for _ in 0..4 {
            b.on_outcome(Some(ErrorClass::Transient));
        }
        assert_eq!(b.tokens(), Some(6.0));
        assert!(b.try_retry(now));
        b.on_outcome(Some(ErrorClass::Timeout));
        assert_eq!(b.tokens(), Some(5.0));
        assert!(!b.try_retry(now), "5 is not above half of 10");
        b.on_outcome(Some(ErrorClass::Permanent));
        assert_eq!(
            b.tokens(),
            Some(5.0),
            "a permanent failure is not the server's load"
        );
        b.on_outcome(None);
        assert_eq!(b.tokens(), Some(5.5));
        assert!(b.try_retry(now));
        for _ in 0..20 {
            b.on_outcome(None);
        }
        assert_eq!(b.tokens(), Some(10.0), "never above max_tokens");
        for _ in 0..20 {
            b.on_outcome(Some(ErrorClass::Throttling));
        }
        assert_eq!(b.tokens(), Some(0.0), "never below zero");
    }

    #[test]
    fn ratios_are_clamped_and_kept_to_the_thousandth() {
        assert!(matches!(
            RetryBudget::ratio(-1.0).kind,
            Kind::Ratio { ratio: 0, .. }
        ));
        assert!(matches!(
            RetryBudget::ratio(f64::NAN).kind,
            Kind::Ratio { ratio: 0, .. }
        ));
        assert!(matches!(
            RetryBudget::ratio(0.2).kind,
            Kind::Ratio { ratio: 200, .. }
        ));
        assert!(matches!(
            RetryBudget::grpc_throttling(3, 0.1234).kind,
            Kind::Grpc {
                max_tokens: 3000,
                token_ratio: 123
            }
        ));
    }

    /// Every decimal with three places keeps them: `1.001` is 1001 thousandths, not 1000 (as
    /// `1.001 * 1000` truncated would give), and so are the 5,906 others from 0.001 to 1000
    /// that the multiplication alone loses a thousandth of.
    #[test]
    fn three_decimals_are_kept_exactly() {
        assert!(matches!(
            RetryBudget::grpc_throttling(10, 1.001).kind,
            Kind::Grpc {
                token_ratio: 1001,
                ..
            }
        ));
        for k in 1..=1_000_000u64 {
            let x: f64 = format!("{}.{:03}", k / 1000, k % 1000).parse().unwrap();
            assert_eq!(thousandths(x), k, "{x}");
        }
        assert_eq!(thousandths(0.0009), 0);
        assert_eq!(thousandths(1.0009999), 1000);
    }
}
