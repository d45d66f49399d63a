//! A send quota: at most so many attempts a period, retries and hedges among them, so that a
//! client keeps to a dependency's published rate limit ("10 requests a second") by itself and
//! its retries never take it over. It keeps the limit as the generic cell rate algorithm
//! (GCRA, from ATM networks' traffic policing, ITU-T I.371) does, as the `governor` crate
//! does: one word, the time the schedule's next turn comes.

use crate::protect::guard::{Admit, Guard, GuardContext, GuardOutcome};
use crate::protect::whole_millis;
use crate::protect::sync::atomic::{AtomicU64, Ordering};
use crate::runtime::Instant;
use std::sync::OnceLock;
use std::time::Duration;

/// A send quota, a [`Guard`] shared by every function that names it (`guard = PATH`): at most
/// `n` attempts a period, one every `period / n`, and up to `n` at once after a quiet spell.
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, Guard, GuardContext, Quota, retry};
/// use std::time::Duration;
///
/// // At most 10 attempts a second, retries included: 10 at once after a quiet spell, then
/// // one every 100 ms.
/// static API: Quota = Quota::per_second(10);
/// // One every 500 ms; an attempt over it waits up to a second for its turn.
/// static STRICT: Quota = Quota::per_second(2)
///     .with_burst(1)
///     .with_max_wait(Duration::from_secs(1));
///
/// #[retry(guard = API)]
/// async fn list(prefix: &str) -> Result<Vec<String>, retry_runtime::ErrorClass> {
///     Ok(vec![prefix.to_owned()])
/// }
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// assert_eq!(STRICT.available(), 1);
/// assert_eq!(STRICT.admit(&first), Admit::Go);
/// assert_eq!(STRICT.available(), 0);
/// // Over the quota: wait for the next turn, at most 500 ms from now...
/// assert!(matches!(STRICT.admit(&first), Admit::Wait(d) if d <= Duration::from_millis(500)));
/// // ...unless the attempt has already waited so long that the turn comes too late.
/// let waited = first.with_waited(Duration::from_millis(600));
/// assert_eq!(STRICT.admit(&waited), Admit::Refuse);
/// ```
///
/// - Every attempt takes a turn, first attempts, retries and hedges alike: each is a request
///   the dependency counts. Over any stretch of time `T`, it admits at most
///   `burst + T * n / period` attempts: `n` a period once the burst is spent.
///   [`with_burst(1)`](Self::with_burst) spaces every attempt evenly, for a dependency that
///   counts in every window of a period.
/// - A retry takes its turn when it is admitted, before its backoff sleep (the engine admits a
///   retry then, as the bucket takes its cost then), so its request goes out up to its backoff
///   after its turn: over any stretch longer than the longest backoff the requests keep to the
///   quota, and within a shorter one the retries admitted before it may add to it.
/// - An attempt over the quota is refused at once, or, with
///   [`with_max_wait`](Self::with_max_wait), answered [`Admit::Wait`] until its turn comes, if
///   it comes within what is left of its wait ([`GuardContext::waited`], which counts its
///   waits at the call's other guards too; the call's deadline bounds it as well), and refused
///   if not. The engine asks again when the turn comes; attempts waiting for the same turn are
///   not served in order of arrival: the first to ask again takes it.
/// - [`settle`](Guard::settle) does nothing: a turn taken is spent, whatever the outcome.
///
/// The schedule is one atomic word, moved on by compare-and-swap: two attempts racing for the
/// last turn take it once.
#[derive(Debug)]
pub struct Quota {
    /// Nanoseconds between two turns at the quota's rate; `u64::MAX`: a quota of none.
    interval: u64,
    /// Turns that may be taken at once after a quiet spell (at least 1).
    burst: u32,
    /// 0: no wait.
    max_wait_ms: u64,
    /// The origin of `next`: the first look at the clock.
    epoch: OnceLock<Instant>,
    /// When the schedule's next turn comes, in nanoseconds since `epoch` (GCRA's theoretical
    /// arrival time): each admission moves it one interval on, from itself or from now,
    /// whichever is later, and an attempt goes while it is at most `burst - 1` intervals
    /// ahead of now.
    next: AtomicU64,
}

impl Quota {
    /// At most `n` attempts a second.
    #[must_use]
    pub const fn per_second(n: u32) -> Quota {
        Quota::new(n, Duration::from_secs(1))
    }

    /// At most `n` attempts per `period`, one every `period / n`, and up to `n` at once after a
    /// quiet spell (see [`with_burst`](Self::with_burst)); an attempt over it is refused at once
    /// (see [`with_max_wait`](Self::with_max_wait)). A quota of 0 admits nothing; a `period`
    /// of zero, everything.
    #[must_use]
    pub const fn new(n: u32, period: Duration) -> Quota {
        let interval = if n == 0 {
            u64::MAX
        } else {
            let ns = period.as_nanos() / n as u128;
            // Below `u64::MAX`, which means a quota of none (a period of centuries).
            if ns >= u64::MAX as u128 {
                u64::MAX - 1
            } else {
                ns as u64
            }
        };
        Quota {
            interval,
            burst: if n == 0 { 1 } else { n },
            max_wait_ms: 0,
            epoch: OnceLock::new(),
            next: AtomicU64::new(0),
        }
    }

    /// How many attempts may go at once after a quiet spell (`n` unless set; at least 1).
    #[must_use]
    pub const fn with_burst(mut self, burst: u32) -> Quota {
        self.burst = if burst == 0 { 1 } else { burst };
        self
    }

    /// How long an attempt over the quota may wait for its turn before it is refused (none
    /// unless set: refused at once). Kept to the millisecond, as waits are counted. The call's
    /// deadline bounds the wait too.
    #[must_use]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Quota {
        self.max_wait_ms = whole_millis(max_wait);
        self
    }

    /// How many attempts it would admit now, one after the other.
    #[must_use]
    pub fn available(&self) -> u32 {
        self.available_at(self.now())
    }

    /// The time since the quota's first look at the clock, in nanoseconds.
    fn now(&self) -> u64 {
        let now = Instant::now();
        let epoch = *self.epoch.get_or_init(|| now);
        u64::try_from(now.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The turns left at `now`: the burst, less the intervals the schedule runs ahead of now
    /// (a part of one counting as one).
    fn available_at(&self, now: u64) -> u32 {
        if self.interval == u64::MAX {
            return 0;
        }
        let ahead = self.next.load(Ordering::Acquire).saturating_sub(now);
        let taken = match ahead.checked_div(self.interval) {
            Some(whole) => whole + u64::from(ahead % self.interval != 0),
            None => 0,
        };
        self.burst
            .saturating_sub(u32::try_from(taken).unwrap_or(u32::MAX))
    }

    /// An attempt that has waited `waited` asks at `now`: it takes a turn if the schedule is
    /// at most `burst - 1` intervals ahead, else it waits for the turn, or is refused.
    fn admit_at(&self, now: u64, waited: Duration) -> Admit {
        if self.interval == u64::MAX {
            return Admit::Refuse;
        }
        let ahead_at_most = self.interval.saturating_mul(u64::from(self.burst - 1));
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            let from = next.max(now);
            let turn = from.saturating_sub(ahead_at_most);
            if turn > now {
                return self.wait(turn - now, waited);
            }
            match self.next.compare_exchange_weak(
                next,
                from.saturating_add(self.interval),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Admit::Go,
                Err(seen) => next = seen,
            }
        }
    }

    /// An attempt whose turn comes in `ns` nanoseconds: a wait in whole milliseconds (rounded
    /// up, as waits are counted), if it has that much of its wait left.
    fn wait(&self, ns: u64, waited: Duration) -> Admit {
        let ms = ns.div_ceil(1_000_000);
        let waited = whole_millis(waited);
        if waited.saturating_add(ms) <= self.max_wait_ms {
            Admit::Wait(Duration::from_millis(ms))
        } else {
            Admit::Refuse
        }
    }
}

impl Guard for Quota {
    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        self.admit_at(self.now(), attempt.waited())
    }

    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}

    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "quota"
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_burst_goes_at_once_then_one_turn_an_interval() {
        // 4 a second: a turn every 250 ms, 4 at once.
        let q = Quota::per_second(4).with_max_wait(Duration::from_secs(10));
        assert_eq!(q.available_at(0), 4);
        for left in (0..4).rev() {
            assert_eq!(q.admit_at(0, Duration::ZERO), Admit::Go);
            assert_eq!(q.available_at(0), left);
        }
        assert_eq!(
            q.admit_at(0, Duration::ZERO),
            Admit::Wait(Duration::from_millis(250))
        );
        assert_eq!(
            q.admit_at(100 * MS, Duration::ZERO),
            Admit::Wait(Duration::from_millis(150)),
            "what is left until the turn"
        );
        assert_eq!(q.available_at(249 * MS), 0);
        assert_eq!(q.available_at(250 * MS), 1);
        assert_eq!(q.admit_at(250 * MS, Duration::ZERO), Admit::Go);
        assert_eq!(
            q.admit_at(250 * MS, Duration::ZERO),
            Admit::Wait(Duration::from_millis(250))
        );
        // A quiet spell gives the whole burst back, and no more.
        assert_eq!(q.available_at(10_000 * MS), 4);
        for _ in 0..4 {
            assert_eq!(q.admit_at(10_000 * MS, Duration::ZERO), Admit::Go);
        }
        assert!(matches!(
            q.admit_at(10_000 * MS, Duration::ZERO),
            Admit::Wait(_)
        ));
    }

    #[test]
    fn over_any_stretch_it_admits_at_most_the_burst_and_the_rate() {
        // 10 a second with a burst of 3, asked every millisecond for 5 s.
        let q = Quota::per_second(10).with_burst(3);
        let admitted: Vec<u64> = (0..5_000u64)
            .filter(|ms| q.admit_at(ms * MS, Duration::ZERO) == Admit::Go)
            .collect();
        assert_eq!(admitted.len(), 3 + 49, "3 at once, then one every 100 ms");
        for (i, &start) in admitted.iter().enumerate() {
            for len in [1u64, 100, 250, 1_000, 3_000] {
                let within = admitted[i..].iter().take_while(|&&t| t < start + len).count();
                let most = 3 + (len * 10).div_ceil(1_000);
                assert!(within as u64 <= most, "{within} in {len} ms from {start} ms");
            }
        }
        let strict = Quota::per_second(10).with_burst(1);
        let admitted: Vec<u64> = (0..1_000u64)
            .filter(|ms| strict.admit_at(ms * MS, Duration::ZERO) == Admit::Go)
            .collect();
        assert_eq!(admitted, (0..10).map(|i| i * 100).collect::<Vec<_>>());
    }

    #[test]
    fn a_wait_is_answered_only_if_the_turn_comes_within_what_is_left_of_it() {
        let q = Quota::per_second(1).with_max_wait(Duration::from_millis(1_500));
        assert_eq!(q.admit_at(0, Duration::ZERO), Admit::Go);
        let at = |waited: u64| q.admit_at(0, Duration::from_millis(waited));
        assert_eq!(at(0), Admit::Wait(Duration::from_millis(1_000)));
        assert_eq!(at(500), Admit::Wait(Duration::from_millis(1_000)));
        assert_eq!(at(501), Admit::Refuse, "the turn comes too late");
        assert_eq!(
            Quota::per_second(1).admit_at(0, Duration::ZERO),
            Admit::Go,
            "a fresh quota"
        );
        let none = Quota::per_second(1);
        assert_eq!(none.admit_at(0, Duration::ZERO), Admit::Go);
        assert_eq!(
            none.admit_at(0, Duration::ZERO),
            Admit::Refuse,
            "no wait: refused at once"
        );
        // A part of a millisecond is waited as a whole one.
        let fast = Quota::new(3, Duration::from_millis(10))
            .with_burst(1)
            .with_max_wait(Duration::from_secs(1));
        assert_eq!(fast.admit_at(0, Duration::ZERO), Admit::Go);
        assert_eq!(
            fast.admit_at(0, Duration::ZERO),
            Admit::Wait(Duration::from_millis(4))
        );
    }

    #[test]
    fn bounds_are_clamped() {
        let none = Quota::per_second(0).with_max_wait(Duration::from_secs(60));
        assert_eq!(none.available_at(0), 0);
        assert_eq!(none.admit_at(0, Duration::ZERO), Admit::Refuse);
        assert_eq!(none.admit_at(u64::MAX, Duration::ZERO), Admit::Refuse);
        let all = Quota::new(5, Duration::ZERO);
        for _ in 0..100 {
            assert_eq!(all.admit_at(0, Duration::ZERO), Admit::Go);
        }
        let one = Quota::per_second(5).with_burst(0);
        assert_eq!(one.admit_at(0, Duration::ZERO), Admit::Go);
        assert_eq!(one.admit_at(0, Duration::ZERO), Admit::Refuse);
        let slow = Quota::new(1, Duration::MAX).with_max_wait(Duration::MAX);
        assert_eq!(slow.admit_at(0, Duration::ZERO), Admit::Go);
        assert!(matches!(slow.admit_at(0, Duration::ZERO), Admit::Wait(_)));
        // Its turn comes an interval on (centuries), where the schedule saturates.
        assert_eq!(slow.admit_at(u64::MAX - 1, Duration::ZERO), Admit::Go);
        assert_eq!(
            slow.admit_at(u64::MAX - 1, Duration::ZERO),
            Admit::Wait(Duration::from_millis(1))
        );
    }

    #[test]
    fn concurrent_admissions_take_each_turn_once() {
        static Q: Quota = Quota::per_second(1_000);
        let taken: u32 = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..10_000)
                            .filter(|_| Q.admit_at(0, Duration::ZERO) == Admit::Go)
                            .count() as u32
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).sum()
        });
        assert_eq!(taken, 1_000, "the burst, once, at one instant");
    }

    #[test]
    fn its_name_and_clock() {
        let q = Quota::per_second(1);
        assert_eq!(q.name(), "quota");
        assert!(!q.timed());
        assert_eq!(q.available(), 1);
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    /// Two attempts race for the one turn left at the same instant: one takes it, and the
    /// other waits for the next one (not the same), an interval on.
    #[test]
    fn loom_two_attempts_racing_for_the_last_turn_take_it_once() {
        let runs = model(|| {
            let q = Arc::new(
                Quota::per_second(10)
                    .with_burst(2)
                    .with_max_wait(Duration::from_secs(1)),
            );
            assert_eq!(q.admit_at(0, Duration::ZERO), Admit::Go);
            let (a, b) = (q.clone(), q.clone());
            let answers = concurrently(vec![
                Box::new(move || a.admit_at(0, Duration::ZERO)),
                Box::new(move || b.admit_at(0, Duration::ZERO)),
            ]);
            let goes = answers.iter().filter(|&&a| a == Admit::Go).count();
            assert_eq!(goes, 1, "{answers:?}");
            assert!(
                answers.contains(&Admit::Wait(Duration::from_millis(100))),
                "{answers:?}"
            );
            assert_eq!(q.available_at(0), 0);
            assert_eq!(q.available_at(200_000_000), 2, "both turns back by 200 ms");
        });
        report("last turn", runs);
    }
}
