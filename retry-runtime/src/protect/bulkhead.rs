//! A bulkhead: at most so many attempts in flight at once, every kind counted, so that one
//! dependency's slowness holds a bounded share of the client (the pattern of Nygard's
//! "Release It!", as resilience4j's semaphore bulkhead and Polly's bulkhead build it).

use crate::protect::guard::{Admit, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// How often an attempt waiting for a place asks again, in milliseconds.
const POLL_MS: u64 = 10;

/// A bulkhead, a [`Guard`] shared by every function that names it (`guard = PATH`): at most
/// `max_concurrent` attempts in flight.
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, Bulkhead, Guard, GuardContext, GuardOutcome};
/// use std::time::Duration;
///
/// // At most 8 attempts at once; one beyond it is refused.
/// static B: Bulkhead = Bulkhead::new(8);
/// // At most 2, and one beyond waits up to 50 ms for a place.
/// static NARROW: Bulkhead = Bulkhead::new(2).with_max_wait(Duration::from_millis(50));
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// assert_eq!(B.admit(&first), Admit::Go);
/// assert_eq!(B.in_flight(), 1);
/// B.settle(&first, GuardOutcome::Success);
/// assert_eq!(B.in_flight(), 0);
///
/// assert_eq!(NARROW.admit(&first), Admit::Go);
/// assert_eq!(NARROW.admit(&first), Admit::Go);
/// // Full: ask again in 10 ms...
/// assert_eq!(NARROW.admit(&first), Admit::Wait(Duration::from_millis(10)));
/// // ...and, once the wait is spent, the attempt is refused.
/// let waited = first.with_waited(Duration::from_millis(50));
/// assert_eq!(NARROW.admit(&waited), Admit::Refuse);
/// ```
///
/// - Every attempt is counted, first attempts, retries and hedges alike: each is a request
///   the dependency holds. A retry holds its place from its admission, through its backoff
///   sleep, to its end, as the engine admits a retry before it sleeps: a retry never finds
///   its place taken when it wakes, at the price of a place idle while it sleeps.
/// - An attempt that finds it full is refused at once, or, with
///   [`with_max_wait`](Self::with_max_wait), answered [`Admit::Wait`]: the engine asks again
///   after the delay, every 10 ms, until a place is free or the wait is spent. The wait is
///   counted by [`GuardContext::waited`], which is whole milliseconds and includes waits at
///   the call's other guards for the same attempt; a delay is never past what is left of
///   `max_wait`, so the wait ends by it (and by the call's deadline, which the engine
///   applies). Waiters are not queued: a place that frees goes to whoever asks first, and an
///   attempt waits at most 10 ms past the moment its place frees. 10 ms is short next to the
///   waits a bulkhead is given (tens to hundreds of milliseconds) and keeps a waiter's wakes
///   to 100 a second.
/// - [`settle`](Guard::settle) frees the place, whatever the outcome.
///
/// The count is one atomic word, taken and given back by compare-and-swap: it never passes
/// `max_concurrent`, two attempts racing for the last place take it once, and a settle never
/// takes it below 0.
#[derive(Debug)]
pub struct Bulkhead {
    max_concurrent: u32,
    /// 0: no wait.
    max_wait_ms: u64,
    in_flight: AtomicU32,
}

impl Bulkhead {
    /// At most `max_concurrent` attempts in flight (at least 1: a bulkhead that admitted none
    /// would refuse every call), and one beyond refused at once.
    #[must_use]
    pub const fn new(max_concurrent: u32) -> Bulkhead {
        Bulkhead {
            max_concurrent: if max_concurrent == 0 {
                1
            } else {
                max_concurrent
            },
            max_wait_ms: 0,
            in_flight: AtomicU32::new(0),
        }
    }

    /// How long an attempt that finds it full waits for a place before it is refused (none
    /// unless set: refused at once). Kept to the millisecond, as waits are counted; below
    /// 1 ms is no wait. The call's deadline bounds the wait too.
    #[must_use]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Bulkhead {
        let ms = max_wait.as_millis();
        self.max_wait_ms = if ms > u64::MAX as u128 {
            u64::MAX
        } else {
            ms as u64
        };
        self
    }

    /// The attempts it admitted that have not ended.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Acquire)
    }

    /// The most attempts it lets be in flight.
    #[must_use]
    pub const fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// How long an attempt waits for a place (`None`: refused at once).
    #[must_use]
    pub const fn max_wait(&self) -> Option<Duration> {
        if self.max_wait_ms == 0 {
            None
        } else {
            Some(Duration::from_millis(self.max_wait_ms))
        }
    }

    /// Takes a place; `false` if there is none (taking nothing).
    fn take(&self) -> bool {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_concurrent).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a place back (never below 0).
    fn give_back(&self) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}

impl Guard for Bulkhead {
    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if self.take() {
            return Admit::Go;
        }
        let waited = u64::try_from(attempt.waited().as_millis()).unwrap_or(u64::MAX);
        match self.max_wait_ms.saturating_sub(waited) {
            0 => Admit::Refuse,
            left => Admit::Wait(Duration::from_millis(left.min(POLL_MS))),
        }
    }

    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {
        self.give_back();
    }

    fn name(&self) -> &'static str {
        "bulkhead"
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use crate::protect::guard::AttemptKind;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn cx(kind: AttemptKind) -> GuardContext<'static> {
        GuardContext::new(kind, 1)
    }

    #[test]
    fn every_kind_takes_a_place_and_settling_frees_it() {
        let b = Bulkhead::new(2);
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        assert_eq!(b.admit(&cx(AttemptKind::Retry)), Admit::Go);
        assert_eq!(b.in_flight(), 2);
        assert_eq!(b.admit(&cx(AttemptKind::Hedge)), Admit::Refuse);
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Refuse);
        assert_eq!(b.in_flight(), 2, "a refusal takes nothing");
        b.settle(&cx(AttemptKind::Retry), GuardOutcome::Cancelled);
        assert_eq!(b.admit(&cx(AttemptKind::Hedge)), Admit::Go);
        for kind in [AttemptKind::Hedge, AttemptKind::First] {
            b.settle(&cx(kind), GuardOutcome::Success);
        }
        assert_eq!(b.in_flight(), 0);
        b.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        assert_eq!(
            b.in_flight(),
            0,
            "a settle without an admission never wraps"
        );
    }

    #[test]
    fn a_full_bulkhead_asks_to_wait_in_polls_never_past_max_wait() {
        let b = Bulkhead::new(1).with_max_wait(MS(25));
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        let waiting = |waited| b.admit(&cx(AttemptKind::Retry).with_waited(MS(waited)));
        assert_eq!(waiting(0), Admit::Wait(MS(10)));
        assert_eq!(waiting(10), Admit::Wait(MS(10)));
        assert_eq!(waiting(20), Admit::Wait(MS(5)), "what is left of the wait");
        assert_eq!(waiting(24), Admit::Wait(MS(1)));
        assert_eq!(waiting(25), Admit::Refuse);
        assert_eq!(waiting(90), Admit::Refuse);
        b.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        assert_eq!(
            waiting(20),
            Admit::Go,
            "a freed place goes to the next asker"
        );
        assert_eq!(b.in_flight(), 1);
    }

    #[test]
    fn bounds_are_clamped() {
        let b = Bulkhead::new(0);
        assert_eq!(b.max_concurrent(), 1);
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Refuse);
        let b = Bulkhead::new(1).with_max_wait(Duration::from_micros(900));
        assert_eq!(b.max_wait(), None, "below a millisecond is no wait");
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Refuse);
        let b = Bulkhead::new(1).with_max_wait(Duration::from_secs(600));
        assert_eq!(
            b.max_wait(),
            Some(Duration::from_secs(600)),
            "no cap below the call's deadline"
        );
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        let almost = cx(AttemptKind::First).with_waited(MS(599_995));
        assert_eq!(b.admit(&almost), Admit::Wait(MS(5)));
        let spent = cx(AttemptKind::First).with_waited(Duration::from_secs(600));
        assert_eq!(b.admit(&spent), Admit::Refuse, "once it waited as long");
        assert_eq!(Bulkhead::new(3).max_wait(), None);
        assert_eq!(
            Bulkhead::new(3).with_max_wait(MS(1500)).max_wait(),
            Some(MS(1500))
        );
    }

    /// The engine's waits, played on tokio's paused clock: one attempt holds the only place
    /// for 23 ms, another asks at 0 and every 10 ms after, with `waited` as the engine counts
    /// it, and is admitted when it asks at 30 ms; on a bulkhead that stays full, an attempt
    /// with 15 ms of wait asks at 0, 10 and 15 ms, and is refused at 15 ms.
    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_the_place_that_frees_within_its_wait() {
        static B: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_millis(40));
        static SHORT: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_millis(15));
        let start = tokio::time::Instant::now();
        assert_eq!(B.admit(&cx(AttemptKind::First)), Admit::Go);
        assert_eq!(SHORT.admit(&cx(AttemptKind::First)), Admit::Go);
        let holder = tokio::spawn(async {
            tokio::time::sleep(MS(23)).await;
            B.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        });
        let wait_at = |b: &'static Bulkhead| async move {
            let mut waited = Duration::ZERO;
            loop {
                match b.admit(&cx(AttemptKind::Retry).with_waited(waited)) {
                    Admit::Wait(d) => {
                        tokio::time::sleep(d).await;
                        waited += d;
                    }
                    other => return (other, start.elapsed().as_millis()),
                }
            }
        };
        assert_eq!(wait_at(&B).await, (Admit::Go, 30));
        assert_eq!(wait_at(&SHORT).await, (Admit::Refuse, 45));
        holder.await.unwrap();
        assert_eq!(B.in_flight(), 1, "the waiter holds the place");
    }

    #[test]
    fn concurrent_admissions_never_pass_the_bound_and_conserve_places() {
        static B: Bulkhead = Bulkhead::new(3);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        if B.admit(&cx(AttemptKind::Retry)) == Admit::Go {
                            assert!(B.in_flight() <= 3);
                            B.settle(&cx(AttemptKind::Retry), GuardOutcome::Success);
                        }
                    }
                });
            }
        });
        assert_eq!(B.in_flight(), 0);
    }

    #[test]
    fn its_name() {
        assert_eq!(Bulkhead::new(1).name(), "bulkhead");
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::guard::AttemptKind;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    /// A bulkhead, its count made by the model's main thread.
    fn bulkhead(b: Bulkhead) -> Arc<Bulkhead> {
        let b = Arc::new(b);
        assert_eq!(b.in_flight(), 0);
        b
    }

    fn cx() -> GuardContext<'static> {
        GuardContext::new(AttemptKind::Retry, 2)
    }

    /// Two attempts race for the last place of a bulkhead of 2 (one held): exactly one takes
    /// it, the other is refused, and the count never passes 2.
    #[test]
    fn loom_two_attempts_racing_for_the_last_place_take_it_once() {
        let runs = model(|| {
            let b = bulkhead(Bulkhead::new(2));
            assert_eq!(b.admit(&cx()), Admit::Go);
            let ask = || -> Box<dyn FnOnce() -> Admit + Send> {
                let b = b.clone();
                Box::new(move || {
                    let admit = b.admit(&cx());
                    assert!(b.in_flight() <= 2);
                    admit
                })
            };
            let admits = concurrently(vec![ask(), ask()]);
            assert_eq!(
                admits.iter().filter(|a| **a == Admit::Go).count(),
                1,
                "{admits:?}"
            );
            assert_eq!(b.in_flight(), 2);
        });
        report("bulkhead last place", runs);
    }

    /// Two attempts are each admitted and settled on a bulkhead of 1 as the attempt holding
    /// its place is settled: every place taken is given back once, none is lost, an admitted
    /// attempt is alone in flight, and the count ends at 0.
    #[test]
    fn loom_admissions_and_settles_racing_leave_it_empty() {
        let runs = model(|| {
            let b = bulkhead(Bulkhead::new(1));
            assert_eq!(b.admit(&cx()), Admit::Go);
            let held = b.clone();
            let attempt = || -> Box<dyn FnOnce() + Send> {
                let b = b.clone();
                Box::new(move || {
                    if b.admit(&cx()) == Admit::Go {
                        assert_eq!(b.in_flight(), 1);
                        b.settle(&cx(), GuardOutcome::Success);
                    }
                })
            };
            concurrently(vec![
                Box::new(move || held.settle(&cx(), GuardOutcome::Cancelled)),
                attempt(),
                attempt(),
            ]);
            assert_eq!(b.in_flight(), 0);
        });
        report("bulkhead settles", runs);
    }
}
