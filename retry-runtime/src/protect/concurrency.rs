//! A concurrency budget for retries (Envoy's retry budget): the retries and hedges in flight
//! are bounded by a share of all the attempts in flight, with a floor, so that retries never
//! outgrow the traffic they ride on, however long each one takes.

use crate::protect::guard::{Admit, AttemptKind, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicU64, Ordering};

/// Fixed point: a thousandth of an attempt.
const MILLI: u64 = 1000;

/// A concurrency budget, a [`Guard`] shared by every function that names it (`guard = PATH`):
/// retries and hedges in flight at most `max(min, ratio x attempts in flight)`.
///
/// It is Envoy's retry budget (`envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget`:
/// `budget_percent`, `min_retry_concurrency`, 20 % and 3 by default), counted as envoy issue
/// #30205 asks: a retry holds its place from its admission, through its backoff sleep, to its
/// end, since the engine admits a retry before it sleeps. Unlike a
/// [`RetryBudget`](crate::RetryBudget), which bounds retries per unit of time, it bounds how
/// many are out at once: slow retries take more of it than fast ones.
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, ConcurrencyBudget, Guard, GuardContext, GuardOutcome};
///
/// // Retries and hedges at most 20 % of the attempts in flight, and 3 whatever the traffic.
/// static ORDERS: ConcurrencyBudget = ConcurrencyBudget::ratio(0.2);
/// // 10 %, and none without traffic.
/// static STRICT: ConcurrencyBudget = ConcurrencyBudget::ratio(0.1).with_min_concurrency(0);
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// assert_eq!(ORDERS.admit(&first), Admit::Go);
/// let retry = GuardContext::new(AttemptKind::Retry, 2);
/// assert_eq!(ORDERS.admit(&retry), Admit::Go);
/// assert_eq!((ORDERS.in_flight(), ORDERS.retries_in_flight()), (2, 1));
/// ORDERS.settle(&retry, GuardOutcome::Success);
/// ORDERS.settle(&first, GuardOutcome::Cancelled);
/// assert_eq!((ORDERS.in_flight(), ORDERS.retries_in_flight()), (0, 0));
///
/// assert_eq!(STRICT.admit(&retry), Admit::Refuse, "no traffic, no floor");
/// ```
///
/// - Attempts in flight are all the attempts it admitted and that have not been settled:
///   first attempts, retries (sleeping their backoff included) and hedges. A first attempt is
///   always admitted, and counted.
/// - A retry or a hedge is admitted when, counting it, the retries and hedges in flight are at
///   most the bound of the attempts in flight counting it too: `retries + 1 <= min`, or
///   `retries + 1 <= ratio x (attempts + 1)` (the same as `floor(ratio x (attempts + 1))`,
///   both sides being whole). So the bound holds right after every admission, the retry being
///   one of the attempts it is a share of. Envoy compares before counting the retry
///   (`retries < max(min, floor(ratio x attempts))`), which is one retry short of the bound.
/// - [`settle`](Guard::settle) gives the place back by the attempt's kind: a first attempt
///   leaves the attempts in flight, a retry or a hedge leaves both counts.
///
/// The bound is checked at admission: first attempts that end can leave more retries in flight
/// than the bound of what remains, until those retries end (as in Envoy). Both counts are one
/// atomic word, changed by compare-and-swap, so an admission sees and changes them together:
/// two retries racing for the last place take it once, and no settle is lost.
#[derive(Debug)]
pub struct ConcurrencyBudget {
    /// Retries allowed per attempt in flight, in thousandths (0 to 1000).
    ratio: u64,
    min: u32,
    /// `attempts in flight << 32 | of them, retries and hedges`.
    word: AtomicU64,
}

impl ConcurrencyBudget {
    /// Retries and hedges in flight at most `ratio` of the attempts in flight, and at least 3
    /// (Envoy's `min_retry_concurrency`) whatever the traffic. `ratio` is clamped to [0, 1]
    /// (a share of the attempts, of which retries are some) and kept to the thousandth; a NaN
    /// is 0, leaving the floor alone.
    #[must_use]
    pub const fn ratio(ratio: f64) -> ConcurrencyBudget {
        ConcurrencyBudget {
            ratio: thousandths(ratio),
            min: 3,
            word: AtomicU64::new(0),
        }
    }

    /// The retries and hedges always allowed in flight, whatever the traffic (3 unless set; 0
    /// leaves the ratio alone).
    #[must_use]
    pub const fn with_min_concurrency(mut self, min: u32) -> ConcurrencyBudget {
        self.min = min;
        self
    }

    /// The attempts it admitted that have not ended: first attempts, retries and hedges.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        self.counts().0
    }

    /// The retries and hedges it admitted that have not ended (sleeping ones included).
    #[must_use]
    pub fn retries_in_flight(&self) -> u32 {
        self.counts().1
    }

    /// Both counts, read together: `(attempts, of them retries and hedges)`.
    fn counts(&self) -> (u32, u32) {
        unpack(self.word.load(Ordering::Acquire))
    }

    /// Whether `retries` retries in flight are within the bound of `attempts` in flight.
    fn within(&self, retries: u32, attempts: u32) -> bool {
        retries <= self.min || u64::from(retries) * MILLI <= self.ratio * u64::from(attempts)
    }

    /// Takes a place for an attempt of `kind`; `false` takes nothing.
    fn take(&self, kind: AttemptKind) -> bool {
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let (attempts, retries) = unpack(word);
                // 2^32 - 1 attempts in flight: the counter's end, refused rather than wrapped.
                let attempts = attempts.checked_add(1)?;
                match kind {
                    AttemptKind::First => Some(pack(attempts, retries)),
                    AttemptKind::Retry | AttemptKind::Hedge => {
                        let retries = retries.saturating_add(1);
                        self.within(retries, attempts)
                            .then(|| pack(attempts, retries))
                    }
                }
            })
            .is_ok()
    }

    /// Gives back the place of an attempt of `kind` (never below 0).
    fn give_back(&self, kind: AttemptKind) {
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let (attempts, retries) = unpack(word);
                let retries = match kind {
                    AttemptKind::First => retries,
                    AttemptKind::Retry | AttemptKind::Hedge => retries.saturating_sub(1),
                };
                Some(pack(attempts.saturating_sub(1), retries))
            });
    }
}

impl Guard for ConcurrencyBudget {
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if self.take(attempt.kind()) {
            Admit::Go
        } else {
            Admit::Refuse
        }
    }

    fn settle(&self, attempt: &GuardContext<'_>, _: GuardOutcome) {
        self.give_back(attempt.kind());
    }

    fn name(&self) -> &'static str {
        "concurrency_budget"
    }
}

fn pack(attempts: u32, retries: u32) -> u64 {
    u64::from(attempts) << 32 | u64::from(retries)
}

fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// `x` in thousandths, clamped to [0, 1000] (0 for NaN), decimals beyond the third dropped.
/// Below 1, `x * 1000` of a ratio written with three decimals is that whole number exactly
/// (a test checks all 999), so none loses a thousandth to the truncation.
const fn thousandths(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.0 {
        MILLI
    } else {
        (x * 1000.0) as u64
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;

    fn cx(kind: AttemptKind) -> GuardContext<'static> {
        GuardContext::new(kind, 1)
    }

    fn admit(b: &ConcurrencyBudget, kind: AttemptKind) -> Admit {
        b.admit(&cx(kind))
    }

    fn counts(b: &ConcurrencyBudget) -> (u32, u32) {
        let counts = b.counts();
        assert_eq!(counts, (b.in_flight(), b.retries_in_flight()));
        counts
    }

    #[test]
    fn first_attempts_are_always_admitted_and_counted() {
        let b = ConcurrencyBudget::ratio(0.0).with_min_concurrency(0);
        for _ in 0..100 {
            assert_eq!(admit(&b, AttemptKind::First), Admit::Go);
        }
        assert_eq!(counts(&b), (100, 0));
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Refuse);
        assert_eq!(admit(&b, AttemptKind::Hedge), Admit::Refuse);
        assert_eq!(counts(&b), (100, 0), "a refusal takes nothing");
    }

    #[test]
    fn without_traffic_the_floor_is_envoys_three() {
        let b = ConcurrencyBudget::ratio(0.2);
        for _ in 0..3 {
            assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        }
        assert_eq!(admit(&b, AttemptKind::Hedge), Admit::Refuse);
        assert_eq!(counts(&b), (3, 3));
    }

    #[test]
    fn retries_are_a_share_of_the_attempts_in_flight_counting_themselves() {
        let b = ConcurrencyBudget::ratio(0.2).with_min_concurrency(0);
        for _ in 0..20 {
            admit(&b, AttemptKind::First);
        }
        // 5 of 25 is 20 %; a sixth would be 6 of 26.
        let admitted = (0..10)
            .take_while(|i| {
                let kind = if i % 2 == 0 {
                    AttemptKind::Retry
                } else {
                    AttemptKind::Hedge
                };
                admit(&b, kind) == Admit::Go
            })
            .count();
        assert_eq!(admitted, 5);
        assert_eq!(counts(&b), (25, 5));
        // Five more first attempts make room for one more retry: 6 of 31.
        for _ in 0..5 {
            admit(&b, AttemptKind::First);
        }
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Refuse);
        assert_eq!(counts(&b), (31, 6));
    }

    #[test]
    fn the_floor_and_the_ratio_each_admit() {
        // 50 %, at least 2: with one first attempt in flight, the floor admits 2, the ratio
        // no more (3 of 4 is above half).
        let b = ConcurrencyBudget::ratio(0.5).with_min_concurrency(2);
        admit(&b, AttemptKind::First);
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Refuse);
        // Three more first attempts: 3 of 7 is within half.
        for _ in 0..3 {
            admit(&b, AttemptKind::First);
        }
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        assert_eq!(counts(&b), (7, 3));
    }

    #[test]
    fn settling_gives_back_by_the_attempts_kind() {
        let b = ConcurrencyBudget::ratio(0.0).with_min_concurrency(1);
        assert_eq!(admit(&b, AttemptKind::First), Admit::Go);
        assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        assert_eq!(admit(&b, AttemptKind::Hedge), Admit::Refuse);
        assert_eq!(counts(&b), (2, 1));
        b.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        assert_eq!(counts(&b), (1, 1), "a first attempt frees no retry's place");
        b.settle(&cx(AttemptKind::Retry), GuardOutcome::Cancelled);
        assert_eq!(counts(&b), (0, 0));
        assert_eq!(
            admit(&b, AttemptKind::Hedge),
            Admit::Go,
            "the place came back"
        );
        b.settle(&cx(AttemptKind::Hedge), GuardOutcome::Success);
        // A settle without an admission never wraps.
        b.settle(&cx(AttemptKind::Hedge), GuardOutcome::Success);
        assert_eq!(counts(&b), (0, 0));
    }

    #[test]
    fn the_ratio_is_clamped_and_kept_to_the_thousandth() {
        assert_eq!(ConcurrencyBudget::ratio(f64::NAN).ratio, 0);
        assert_eq!(ConcurrencyBudget::ratio(-0.5).ratio, 0);
        for k in 1..1000 {
            let x: f64 = format!("0.{k:03}").parse().unwrap();
            assert_eq!(thousandths(x), k, "{x}");
        }
        assert_eq!(thousandths(0.0009), 0);
        assert_eq!(ConcurrencyBudget::ratio(0.2).ratio, 200);
        assert_eq!(ConcurrencyBudget::ratio(7.0).ratio, 1000);
        // A ratio of 1 bounds nothing: every attempt in flight may be a retry.
        let b = ConcurrencyBudget::ratio(7.0).with_min_concurrency(0);
        for _ in 0..10 {
            assert_eq!(admit(&b, AttemptKind::Retry), Admit::Go);
        }
        // NaN: the floor alone.
        let b = ConcurrencyBudget::ratio(f64::NAN);
        admit(&b, AttemptKind::First);
        let admitted = (0..5)
            .filter(|_| admit(&b, AttemptKind::Retry) == Admit::Go)
            .count();
        assert_eq!(admitted, 3);
    }

    #[test]
    fn concurrent_admissions_and_settles_conserve_places() {
        static B: ConcurrencyBudget = ConcurrencyBudget::ratio(0.25).with_min_concurrency(2);
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for i in 0..20_000u32 {
                        let kind = match (i + t) % 3 {
                            0 => AttemptKind::First,
                            1 => AttemptKind::Retry,
                            _ => AttemptKind::Hedge,
                        };
                        if admit(&B, kind) == Admit::Go {
                            let (all, retries) = B.counts();
                            assert!(retries <= all);
                            B.settle(&cx(kind), GuardOutcome::Success);
                        }
                    }
                });
            }
        });
        assert_eq!(counts(&B), (0, 0));
    }

    #[test]
    fn its_name() {
        assert_eq!(ConcurrencyBudget::ratio(0.2).name(), "concurrency_budget");
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    /// A budget, its word made by the model's main thread.
    fn budget(b: ConcurrencyBudget) -> Arc<ConcurrencyBudget> {
        let b = Arc::new(b);
        assert_eq!(b.in_flight(), 0);
        b
    }

    fn cx(kind: AttemptKind) -> GuardContext<'static> {
        GuardContext::new(kind, 1)
    }

    /// Two retries race for the one place the floor leaves (min 1, ratio 0): exactly one
    /// takes it, and its settle gives it back once.
    #[test]
    fn loom_two_retries_racing_for_the_last_place_take_it_once() {
        let runs = model(|| {
            let b = budget(ConcurrencyBudget::ratio(0.0).with_min_concurrency(1));
            let retry = || -> Box<dyn FnOnce() -> Admit + Send> {
                let b = b.clone();
                Box::new(move || b.admit(&cx(AttemptKind::Retry)))
            };
            let admits = concurrently(vec![retry(), retry()]);
            assert_eq!(
                admits.iter().filter(|a| **a == Admit::Go).count(),
                1,
                "{admits:?}"
            );
            assert_eq!((b.in_flight(), b.retries_in_flight()), (1, 1));
            b.settle(&cx(AttemptKind::Retry), GuardOutcome::Success);
            assert_eq!((b.in_flight(), b.retries_in_flight()), (0, 0));
        });
        report("concurrency budget last place", runs);
    }

    /// A first attempt in flight ends, and another comes and goes, as a retry is admitted
    /// against them (ratio 0.5, no floor: the retry fits only beside a first attempt): in
    /// every order the retry sees both counts together, and every place comes back once.
    #[test]
    fn loom_admissions_and_settles_racing_leave_no_place_behind() {
        let runs = model(|| {
            let b = budget(ConcurrencyBudget::ratio(0.5).with_min_concurrency(0));
            assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
            let (firsts, retries) = (b.clone(), b.clone());
            let admitted = concurrently::<bool>(vec![
                Box::new(move || {
                    firsts.settle(&cx(AttemptKind::First), GuardOutcome::Success);
                    assert_eq!(
                        firsts.admit(&cx(AttemptKind::First)),
                        Admit::Go,
                        "a first attempt is always admitted"
                    );
                    firsts.settle(&cx(AttemptKind::First), GuardOutcome::Cancelled);
                    true
                }),
                Box::new(move || {
                    if retries.admit(&cx(AttemptKind::Retry)) != Admit::Go {
                        return false;
                    }
                    let (all, retried) = retries.counts();
                    assert!((1..=all).contains(&retried), "{retried} retries of {all}");
                    retries.settle(&cx(AttemptKind::Retry), GuardOutcome::Success);
                    true
                }),
            ]);
            assert!(admitted[0]);
            assert_eq!(b.counts(), (0, 0), "retry admitted: {}", admitted[1]);
        });
        report("concurrency budget settles", runs);
    }
}
