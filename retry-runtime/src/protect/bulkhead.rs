//! A bulkhead: at most so many attempts in flight at once, every kind counted, so that one
//! dependency's slowness holds a bounded share of the client (the pattern of Nygard's
//! "Release It!", as resilience4j's semaphore bulkhead and Polly's bulkhead build it).

use crate::protect::guard::{Admit, Guard, GuardContext, GuardOutcome};
use crate::protect::whole_millis;
use crate::protect::line::WaitLine;
use crate::protect::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

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
/// // Full: wait in line, up to 50 ms...
/// assert_eq!(NARROW.admit(&first), Admit::Wait(Duration::from_millis(50)));
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
///   [`with_max_wait`](Self::with_max_wait), answered [`Admit::Wait`] for what is left of
///   its wait and put in the bulkhead's line ([`Guard::line`]): a place that frees goes to
///   the attempt first in line at once, first come first served, and an attempt still in line
///   when its wait (or the call's deadline) ends is refused. The wait is counted by
///   [`GuardContext::waited`], which includes waits at the call's other guards for the same
///   attempt. While attempts wait, a freed place is handed over, not given back: one that
///   arrives later cannot take it first.
/// - [`settle`](Guard::settle) frees the place, whatever the outcome.
///
/// The count is one atomic word, taken and given back by compare-and-swap: it never passes
/// `max_concurrent`, two attempts racing for the last place take it once, and a settle never
/// takes it below 0. A bulkhead with a wait gives a place back under its line's lock, so that
/// an attempt joining the line either sees the place or is handed it.
#[derive(Debug)]
pub struct Bulkhead {
    max_concurrent: u32,
    /// 0: no wait.
    max_wait_ms: u64,
    in_flight: AtomicU32,
    line: WaitLine,
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
            line: WaitLine::new(),
        }
    }

    /// How long an attempt that finds it full waits for a place before it is refused (none
    /// unless set: refused at once). Kept to the millisecond, as waits are counted; below
    /// 1 ms is no wait. The call's deadline bounds the wait too.
    #[must_use]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Bulkhead {
        self.max_wait_ms = whole_millis(max_wait);
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
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if self.take() {
            return Admit::Go;
        }
        let waited = whole_millis(attempt.waited());
        match self.max_wait_ms.saturating_sub(waited) {
            0 => Admit::Refuse,
            left => Admit::Wait(Duration::from_millis(left)),
        }
    }

    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {
        if self.max_wait_ms == 0 {
            self.give_back();
        } else {
            self.line.free(|| self.give_back());
        }
    }

    fn line(&self) -> Option<&WaitLine> {
        (self.max_wait_ms > 0).then_some(&self.line)
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
    fn a_full_bulkhead_asks_to_wait_for_what_is_left_of_max_wait_and_hands_places_over() {
        let b = Bulkhead::new(1).with_max_wait(MS(25));
        assert_eq!(b.admit(&cx(AttemptKind::First)), Admit::Go);
        let waiting = |waited| b.admit(&cx(AttemptKind::Retry).with_waited(MS(waited)));
        assert_eq!(waiting(0), Admit::Wait(MS(25)));
        assert_eq!(waiting(20), Admit::Wait(MS(5)), "what is left of the wait");
        assert_eq!(waiting(25), Admit::Refuse);
        assert_eq!(waiting(90), Admit::Refuse);
        b.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        assert_eq!(
            waiting(20),
            Admit::Go,
            "with nobody in line, a freed place goes to the next asker"
        );
        assert_eq!(b.in_flight(), 1);
        assert!(Bulkhead::new(1).line().is_none(), "no wait, no line");
        assert!(b.line().is_some());
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

    /// Waiters in line, played on tokio's paused clock: one attempt holds the only place
    /// for 23 ms, two others join the line at 0 and 5 ms; the first in line is handed the
    /// place at 23 ms, the second when the first settles at 30 ms. A waiter whose wait ends
    /// first leaves the line.
    #[tokio::test(start_paused = true)]
    async fn waiters_get_the_places_that_free_in_the_order_they_came() {
        use std::future::{Future, poll_fn};
        use std::task::Poll;
        static B: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_millis(40));
        let start = tokio::time::Instant::now();
        assert_eq!(B.admit(&cx(AttemptKind::First)), Admit::Go);
        tokio::spawn(async {
            tokio::time::sleep(MS(23)).await;
            B.settle(&cx(AttemptKind::First), GuardOutcome::Success);
        });
        let wait = |after: u64, holds: u64| async move {
            tokio::time::sleep(MS(after)).await;
            let line = B.line().unwrap();
            let mut id = None;
            let sleep = tokio::time::sleep(MS(40));
            tokio::pin!(sleep);
            let granted = poll_fn(|task| {
                let id = *id.get_or_insert_with(|| {
                    let waits = || B.admit(&cx(AttemptKind::Retry)) != Admit::Go;
                    line.join(waits, task.waker()).expect("the place is held")
                });
                if line.granted(id, task.waker()) {
                    return Poll::Ready(true);
                }
                sleep.as_mut().poll(task).map(|()| line.leave(id))
            })
            .await;
            let at = start.elapsed().as_millis();
            tokio::time::sleep(MS(holds)).await;
            B.settle(&cx(AttemptKind::Retry), GuardOutcome::Success);
            (granted, at)
        };
        let (first, second) = tokio::join!(wait(0, 7), wait(5, 0));
        assert_eq!(first, (true, 23));
        assert_eq!(second, (true, 30));
        assert_eq!(B.in_flight(), 0);
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

#[cfg(all(test, retry_loom))]
mod line_loom {
    //! Loom models (see `protect::sync::check`) of the line a bulkhead with a wait keeps: its
    //! holder settling while another attempt joins the line, and that waiter woken or
    //! cancelled.
    use super::*;
    use crate::protect::guard::AttemptKind;
    use crate::protect::sync::check::{model, report};
    use ::loom::sync::atomic::AtomicU32 as Wakes;
    use ::loom::sync::atomic::Ordering as Order;
    use std::sync::Arc;
    use std::task::{Wake, Waker};
    use std::time::Duration;

    /// A waker that counts its wakes in a loom atomic.
    struct Count(Wakes);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Order::SeqCst);
        }
    }

    fn cx() -> GuardContext<'static> {
        GuardContext::new(AttemptKind::First, 1)
    }

    /// The holder of the only place settles while a waiter joins the line: the waiter gets the
    /// place, by `admit` under the line's lock or handed over and woken, never missed, and
    /// nobody else can take it.
    #[test]
    fn loom_a_waiter_is_woken_by_a_release() {
        let runs = model(|| {
            let b = Arc::new(Bulkhead::new(1).with_max_wait(Duration::from_secs(1)));
            let wakes = Arc::new(Count(Wakes::new(0)));
            assert_eq!(b.admit(&cx()), Admit::Go);
            assert_eq!(b.in_flight(), 1);
            let holder = {
                let b = b.clone();
                ::loom::thread::spawn(move || b.settle(&cx(), GuardOutcome::Success))
            };
            let waker = Waker::from(wakes.clone());
            let line = b.line().expect("a bulkhead with a wait keeps a line");
            let mut answer = Admit::Refuse;
            let joined = line.join(
                || {
                    answer = b.admit(&cx());
                    answer != Admit::Go
                },
                &waker,
            );
            holder.join().unwrap();
            match joined {
                None => {
                    assert_eq!(answer, Admit::Go);
                    assert_eq!(wakes.0.load(Order::SeqCst), 0);
                }
                Some(id) => {
                    assert_eq!(answer, Admit::Wait(Duration::from_secs(1)));
                    assert_eq!(wakes.0.load(Order::SeqCst), 1, "woken by the release");
                    assert!(line.granted(id, &waker), "handed the place");
                }
            }
            assert_eq!(b.in_flight(), 1, "the waiter holds the one place");
            assert_eq!(
                b.admit(&cx().with_waited(Duration::from_secs(1))),
                Admit::Refuse
            );
            b.settle(&cx(), GuardOutcome::Success);
            assert_eq!(b.in_flight(), 0);
        });
        report("line: a waiter woken by a release", runs);
    }

    /// A waiter's call is dropped while the holder settles: whether the place was handed to it
    /// before it left or not, the place ends back in the bulkhead, once.
    #[test]
    fn loom_a_cancelled_waiter_leaves_no_place_behind() {
        let runs = model(|| {
            let b = Arc::new(Bulkhead::new(1).with_max_wait(Duration::from_secs(1)));
            let waker = Waker::from(Arc::new(Count(Wakes::new(0))));
            assert_eq!(b.admit(&cx()), Admit::Go);
            let line = b.line().expect("a line");
            let id = line
                .join(|| b.admit(&cx()) != Admit::Go, &waker)
                .expect("the place is held: the attempt waits");
            let holder = {
                let b = b.clone();
                ::loom::thread::spawn(move || b.settle(&cx(), GuardOutcome::Success))
            };
            // The waiter's call is dropped: it leaves the line, and a place handed to it is
            // settled as cancelled, as the engine does.
            if line.leave(id) {
                b.settle(&cx(), GuardOutcome::Cancelled);
            }
            holder.join().unwrap();
            assert_eq!(b.in_flight(), 0, "no place lost, none given back twice");
            assert_eq!(line.waiting(), 0);
        });
        report("line: a cancelled waiter", runs);
    }
}
