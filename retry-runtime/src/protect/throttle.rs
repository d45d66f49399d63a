//! Client-side adaptive throttling, from the Google SRE book ("Handling Overload"): a client
//! counts, over a sliding window, the requests it attempted and those the backend accepted, and
//! refuses its own attempts with a probability that grows as the requests outgrow `k` times the
//! accepts, so that a backend rejecting most of what it gets is not sent the retries of it too.

use crate::classify::ErrorClass;
use crate::protect::guard::{Admit, AttemptKind, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::AtomicU64;
use crate::protect::window::{SLOTS, add, shortest_window, slot, sum};
use crate::runtime::Instant;
use std::sync::OnceLock;
use std::time::Duration;

/// Client-side adaptive throttling, a [`Guard`] shared by every function that names it
/// (`guard = PATH`).
///
/// It refuses an attempt with probability `max(0, (requests - k * accepts) / (requests + 1))`,
/// `requests` and `accepts` counted over a sliding window (2 minutes unless
/// [`with_window`](Self::with_window) says otherwise): the adaptive throttling of the Google SRE
/// book's "Handling Overload" chapter (<https://sre.google/sre-book/handling-overload/>), as
/// Google's Rust client libraries apply it to retries (the `AdaptiveThrottler` of
/// google-cloud-rust's `src/gax/src/retry_throttler.rs`). While the backend accepts at least
/// one request in `k`, nothing is refused; past that, the client sheds its own load before it
/// reaches the backend. The book recommends `k = 2`; a lower `k` refuses sooner, a higher one
/// later.
///
/// ```
/// use retry_runtime::{
///     AdaptiveThrottle, Admit, AttemptKind, ErrorClass, Guard, GuardContext, GuardOutcome,
/// };
/// use std::time::Duration;
///
/// // Retries and hedges refused, more and more often, once the backend accepts less than
/// // half of what it is sent.
/// static BACKEND: AdaptiveThrottle = AdaptiveThrottle::new(2.0);
/// // Every attempt gated, over the last minute, as the SRE book's client does.
/// static STRICT: AdaptiveThrottle = AdaptiveThrottle::new(2.0)
///     .with_window(Duration::from_secs(60))
///     .with_first_attempts(true);
/// # let _ = &STRICT;
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// assert_eq!(BACKEND.admit(&first), Admit::Go);
/// BACKEND.settle(&first, GuardOutcome::Failure(ErrorClass::Throttling));
/// // One request, none accepted: (1 - 2 * 0) / (1 + 1).
/// assert_eq!(BACKEND.rejection_probability(), 0.5);
/// // The retry draws 0.5 (the test context's draw), which is not below 0.5: it goes.
/// let retry = GuardContext::new(AttemptKind::Retry, 2);
/// assert_eq!(BACKEND.admit(&retry), Admit::Go);
/// BACKEND.settle(&retry, GuardOutcome::Success);
/// assert_eq!(BACKEND.window_counts(), (2, 1));
/// ```
///
/// What it counts:
///
/// - An attempt that failed as [`Transient`](ErrorClass::Transient),
///   [`Timeout`](ErrorClass::Timeout), [`Throttling`](ErrorClass::Throttling) or
///   [`NotSent`](ErrorClass::NotSent) is a request the backend did not accept; a success or a
///   [`Permanent`](ErrorClass::Permanent) failure is one it accepted (it answered it). An attempt
///   settled [`Cancelled`](GuardOutcome::Cancelled) counts nothing. The outcomes of every attempt
///   it admitted, first attempts included, are counted, whatever it gates.
/// - By default it gates retries and hedges only: a first attempt always goes (as Google's Rust
///   client libraries throttle retries only), and a retry or hedge it refuses counts nothing,
///   as google-cloud-rust's retry loop, which does not report a throttled retry to its
///   throttler: the counts are then those of what the backend was sent.
/// - With [`with_first_attempts(true)`](Self::with_first_attempts) it gates every attempt, as
///   the book's client does, and, as the book counts `requests`, an attempt it refuses counts
///   as a request not accepted. That is what bounds what is sent to about `k` times what is
///   accepted: with the refusals counted, `requests` is the offered load, and the share let
///   through is `(k * accepts + 1) / (requests + 1)`; without them the share let through would
///   depend on the backend's acceptance ratio alone, not on the load offered.
///
/// The draw is the attempt's [`GuardContext::random`] (a `testing` scope's seeded generator
/// makes it repeatable); an attempt is refused when the draw is below the probability, and
/// nothing is drawn while the probability is 0. The probability is below 1 whatever the
/// counts, so an attempt now and then still probes the backend.
///
/// The counts are two sliding windows of ten slots, lock-free (as a
/// [`RetryBudget`](crate::RetryBudget)'s): an attempt that ends adds to them with one
/// compare-and-swap each, and a look sums them. A look racing an outcome may see its request
/// without its accept yet; the next look sees both.
#[derive(Debug)]
pub struct AdaptiveThrottle {
    k: f64,
    window: Duration,
    first_attempts: bool,
    /// Per slot: `tag << 32 | requests` (attempts that ended with an outcome, and in
    /// `first_attempts` mode those refused).
    requests: [AtomicU64; SLOTS],
    /// Per slot: `tag << 32 | of them, accepted by the backend`.
    accepts: [AtomicU64; SLOTS],
    /// The throttle's first look at the clock: slots are counted from there.
    epoch: OnceLock<Instant>,
}

impl AdaptiveThrottle {
    /// A throttle with multiplier `k` over a 2-minute window, gating retries and hedges. A
    /// negative or NaN `k` is 0 (every request beyond none accepted is throttled, the most
    /// cautious setting); an infinite `k` refuses nothing once the window holds one accept.
    #[must_use]
    pub const fn new(k: f64) -> AdaptiveThrottle {
        AdaptiveThrottle {
            k: if k.is_nan() || k <= 0.0 { 0.0 } else { k },
            window: Duration::from_secs(120),
            first_attempts: false,
            requests: [const { AtomicU64::new(0) }; SLOTS],
            accepts: [const { AtomicU64::new(0) }; SLOTS],
            epoch: OnceLock::new(),
        }
    }

    /// The window requests and accepts are counted over (2 minutes unless set; at least
    /// 10 ms). It slides by a tenth of its length.
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> AdaptiveThrottle {
        self.window = shortest_window(window);
        self
    }

    /// Whether first attempts are gated too (`false` unless set: retries and hedges only).
    /// Gated, a first attempt it refuses ends the call with `E::from(Refused)`, and every
    /// attempt it refuses counts as a request not accepted.
    #[must_use]
    pub const fn with_first_attempts(mut self, gate: bool) -> AdaptiveThrottle {
        self.first_attempts = gate;
        self
    }

    /// The probability that an attempt it gates is refused now.
    #[must_use]
    pub fn rejection_probability(&self) -> f64 {
        self.probability_at(Instant::now())
    }

    /// The requests and, of them, the accepts counted in the window now.
    #[must_use]
    pub fn window_counts(&self) -> (u64, u64) {
        self.counts_at(Instant::now())
    }

    fn counts_at(&self, now: Instant) -> (u64, u64) {
        let slot = self.slot(now);
        (sum(&self.requests, slot), sum(&self.accepts, slot))
    }

    fn probability_at(&self, now: Instant) -> f64 {
        let (requests, accepts) = self.counts_at(now);
        probability(self.k, requests, accepts)
    }

    fn admit_at(&self, attempt: &GuardContext<'_>, now: Instant) -> Admit {
        if attempt.kind() == AttemptKind::First && !self.first_attempts {
            return Admit::Go;
        }
        let p = self.probability_at(now);
        if p > 0.0 && attempt.random() < p {
            if self.first_attempts {
                add(&self.requests, self.slot(now));
            }
            Admit::Refuse
        } else {
            Admit::Go
        }
    }

    fn settle_at(&self, outcome: GuardOutcome, now: Instant) {
        let accepted = match outcome {
            GuardOutcome::Cancelled => return,
            GuardOutcome::Success | GuardOutcome::Failure(ErrorClass::Permanent) => true,
            GuardOutcome::Failure(
                ErrorClass::Transient
                | ErrorClass::Timeout
                | ErrorClass::Throttling
                | ErrorClass::NotSent,
            ) => false,
        };
        let slot = self.slot(now);
        add(&self.requests, slot);
        if accepted {
            add(&self.accepts, slot);
        }
    }

    fn slot(&self, now: Instant) -> u64 {
        slot(&self.epoch, self.window, now)
    }
}

/// `max(0, (requests - k * accepts) / (requests + 1))`; `k * accepts` is 0 without accepts
/// (so that an infinite `k` gives no NaN).
fn probability(k: f64, requests: u64, accepts: u64) -> f64 {
    let requests = requests as f64;
    let accepted = if accepts == 0 {
        0.0
    } else {
        k * accepts as f64
    };
    let p = (requests - accepted) / (requests + 1.0);
    if p > 0.0 { p } else { 0.0 }
}

impl Guard for AdaptiveThrottle {
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        self.admit_at(attempt, Instant::now())
    }

    fn settle(&self, _: &GuardContext<'_>, outcome: GuardOutcome) {
        self.settle_at(outcome, Instant::now());
    }

    fn name(&self) -> &'static str {
        "adaptive_throttle"
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use tokio::time::advance;

    const TRANSIENT: GuardOutcome = GuardOutcome::Failure(ErrorClass::Transient);

    fn cx(kind: AttemptKind) -> GuardContext<'static> {
        GuardContext::new(kind, 1)
    }

    fn settle(t: &AdaptiveThrottle, outcome: GuardOutcome, times: usize) {
        for _ in 0..times {
            t.settle(&cx(AttemptKind::First), outcome);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_probability_is_the_sre_books() {
        let t = AdaptiveThrottle::new(2.0);
        assert_eq!(t.rejection_probability(), 0.0, "nothing counted");
        settle(&t, TRANSIENT, 10);
        assert_eq!(t.window_counts(), (10, 0));
        assert_eq!(t.rejection_probability(), 10.0 / 11.0);
        settle(&t, GuardOutcome::Success, 3);
        // (13 - 2 * 3) / 14.
        assert_eq!(t.window_counts(), (13, 3));
        assert_eq!(t.rejection_probability(), 0.5);
        settle(&t, GuardOutcome::Success, 4);
        // 17 - 2 * 7 = 3: 3 / 18.
        assert_eq!(t.rejection_probability(), 3.0 / 18.0);
        settle(&t, GuardOutcome::Success, 2);
        assert_eq!(t.window_counts(), (19, 9));
        assert_eq!(t.rejection_probability(), 1.0 / 20.0);
        settle(&t, GuardOutcome::Success, 1);
        assert_eq!(t.rejection_probability(), 0.0, "never below 0");
    }

    #[tokio::test(start_paused = true)]
    async fn outcomes_count_by_whether_the_backend_answered() {
        let t = AdaptiveThrottle::new(2.0);
        for class in [
            ErrorClass::Transient,
            ErrorClass::Timeout,
            ErrorClass::Throttling,
            ErrorClass::NotSent,
        ] {
            settle(&t, GuardOutcome::Failure(class), 1);
        }
        assert_eq!(t.window_counts(), (4, 0), "requests not accepted");
        settle(&t, GuardOutcome::Failure(ErrorClass::Permanent), 1);
        settle(&t, GuardOutcome::Success, 1);
        assert_eq!(t.window_counts(), (6, 2), "the backend answered both");
        settle(&t, GuardOutcome::Cancelled, 5);
        assert_eq!(
            t.window_counts(),
            (6, 2),
            "a cancelled attempt counts nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn by_default_retries_and_hedges_are_gated_and_a_refusal_counts_nothing() {
        let t = AdaptiveThrottle::new(2.0);
        settle(&t, TRANSIENT, 1);
        assert_eq!(t.rejection_probability(), 0.5);
        let low = || 0.499;
        let high = || 0.5;
        // A first attempt goes whatever it draws.
        assert_eq!(
            t.admit(&cx(AttemptKind::First).with_random(&low)),
            Admit::Go
        );
        for kind in [AttemptKind::Retry, AttemptKind::Hedge] {
            assert_eq!(t.admit(&cx(kind).with_random(&low)), Admit::Refuse);
            assert_eq!(t.admit(&cx(kind).with_random(&high)), Admit::Go);
        }
        assert_eq!(
            t.window_counts(),
            (1, 0),
            "refusals and admissions count nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn gating_first_attempts_counts_each_refusal_as_a_request() {
        let t = AdaptiveThrottle::new(2.0).with_first_attempts(true);
        settle(&t, TRANSIENT, 1);
        let low = || 0.0;
        assert_eq!(
            t.admit(&cx(AttemptKind::First).with_random(&low)),
            Admit::Refuse
        );
        assert_eq!(t.window_counts(), (2, 0));
        assert_eq!(t.rejection_probability(), 2.0 / 3.0);
        assert_eq!(
            t.admit(&cx(AttemptKind::Retry).with_random(&low)),
            Admit::Refuse
        );
        assert_eq!(t.window_counts(), (3, 0));
        let high = || 0.75;
        assert_eq!(
            t.admit(&cx(AttemptKind::First).with_random(&high)),
            Admit::Go
        );
        assert_eq!(
            t.window_counts(),
            (3, 0),
            "an admission counts at its outcome"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_drawn_while_nothing_would_be_refused() {
        let t = AdaptiveThrottle::new(2.0).with_first_attempts(true);
        let never = || -> f64 { panic!("drawn") };
        assert_eq!(
            t.admit(&cx(AttemptKind::Retry).with_random(&never)),
            Admit::Go
        );
        settle(&t, GuardOutcome::Success, 1);
        assert_eq!(
            t.admit(&cx(AttemptKind::Retry).with_random(&never)),
            Admit::Go
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_slides_a_tenth_at_a_time() {
        let t = AdaptiveThrottle::new(2.0).with_window(Duration::from_secs(10));
        settle(&t, TRANSIENT, 3);
        advance(Duration::from_secs(5)).await;
        settle(&t, GuardOutcome::Success, 1);
        advance(Duration::from_millis(4500)).await;
        assert_eq!(t.window_counts(), (4, 1));
        advance(Duration::from_millis(500)).await;
        assert_eq!(
            t.window_counts(),
            (1, 1),
            "the first slot has left the window"
        );
        assert_eq!(t.rejection_probability(), 0.0);
        advance(Duration::from_secs(5)).await;
        assert_eq!(t.window_counts(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_window_is_two_minutes() {
        let t = AdaptiveThrottle::new(2.0);
        settle(&t, TRANSIENT, 1);
        advance(Duration::from_secs(119)).await;
        assert_eq!(t.window_counts(), (1, 0));
        advance(Duration::from_secs(1)).await;
        assert_eq!(t.window_counts(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn k_and_the_window_are_clamped() {
        for k in [-1.0, f64::NAN, 0.0] {
            let t = AdaptiveThrottle::new(k);
            assert_eq!(t.k, 0.0);
            settle(&t, GuardOutcome::Success, 4);
            assert_eq!(t.rejection_probability(), 0.8, "k = {k}: 4 / 5");
        }
        let t = AdaptiveThrottle::new(f64::INFINITY);
        settle(&t, TRANSIENT, 4);
        assert_eq!(t.rejection_probability(), 0.8, "no accepts: 4 / 5");
        settle(&t, GuardOutcome::Success, 1);
        assert_eq!(t.rejection_probability(), 0.0);
        let t = AdaptiveThrottle::new(2.0).with_window(Duration::ZERO);
        assert_eq!(t.window, Duration::from_millis(10));
    }

    #[test]
    fn its_name() {
        assert_eq!(AdaptiveThrottle::new(2.0).name(), "adaptive_throttle");
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    /// Two attempts, a first and a retry, are admitted and settled at once (one succeeds, one
    /// fails): whichever order their adds land in, each outcome is counted once, in both
    /// windows where it belongs.
    #[test]
    fn loom_racing_outcomes_are_each_counted_once() {
        let runs = model(|| {
            let now = Instant::now();
            let t = Arc::new(AdaptiveThrottle::new(2.0));
            // The counters of the slot, made by the model's main thread.
            assert_eq!(t.counts_at(now), (0, 0));
            let attempt =
                |kind: AttemptKind, outcome: GuardOutcome| -> Box<dyn FnOnce() -> Admit + Send> {
                    let t = t.clone();
                    Box::new(move || {
                        let cx = GuardContext::new(kind, 1);
                        let admit = t.admit_at(&cx, now);
                        if admit == Admit::Go {
                            t.settle_at(outcome, now);
                        }
                        admit
                    })
                };
            let admits = concurrently(vec![
                attempt(AttemptKind::First, GuardOutcome::Success),
                attempt(
                    AttemptKind::Retry,
                    GuardOutcome::Failure(ErrorClass::Transient),
                ),
            ]);
            // The retry saw at most one failure and no success: p <= 1/2, and it draws 0.5.
            assert_eq!(admits, [Admit::Go, Admit::Go]);
            assert_eq!(t.counts_at(now), (2, 1));
        });
        report("throttle outcomes", runs);
    }
}
