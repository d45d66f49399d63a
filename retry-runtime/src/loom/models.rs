//! Loom models of the shared state, run in the model-checking build:
//!
//! ```text
//! RUSTFLAGS="--cfg retry_loom" cargo test -p retry-runtime --lib --release loom
//! ```
//!
//! Loom explores every interleaving of the threads of a model, with the memory orderings the
//! code asks for (acquire/release, and in part relaxed accesses). The bucket is one atomic
//! word updated by compare-and-swap loops; the limiter keeps its numbers under one mutex and
//! answers "disabled" from an atomic flag without taking it. Time is passed in, so every
//! interleaving of a model sees the same instants.

use crate::breaker::{Admit, BreakerState, Change, CircuitBreaker, Pass};
use crate::bucket::TokenBucket;
use crate::budget::{SLOTS, add, sum};
use crate::limiter::RateLimiter;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Runs `f` under loom, every interleaving; returns how many interleavings loom explored.
fn model<F: Fn() + Sync + Send + 'static>(f: F) -> usize {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    loom::model(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        f();
    });
    runs.load(Ordering::Relaxed)
}

fn report(name: &str, runs: usize) {
    eprintln!("{name}: {runs} interleavings explored");
    assert!(runs > 1, "loom explored more than one interleaving");
}

/// Runs each closure on its own loom thread and returns their results in order.
fn concurrently<T: Send + 'static>(fs: Vec<Box<dyn FnOnce() -> T + Send>>) -> Vec<T> {
    let handles: Vec<_> = fs.into_iter().map(loom::thread::spawn).collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

mod breaker {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// A breaker, its atomics of slot 0 and its state word made by the model's main thread.
    fn breaker(b: CircuitBreaker, now: Instant) -> Arc<CircuitBreaker> {
        let b = Arc::new(b);
        assert_eq!(b.state_at(now), BreakerState::Closed);
        let _ = b.record(now, Pass::Closed, false);
        b
    }

    /// An open breaker: one failure of one attempt (min_calls 1) at `now`.
    fn opened(b: CircuitBreaker, now: Instant) -> Arc<CircuitBreaker> {
        let b = breaker(b.with_failure_ratio(0.5).with_min_calls(1), now);
        let opened = b.record(now, Pass::Closed, true);
        assert_eq!(opened.map(|c| c.to), Some(BreakerState::Open));
        b
    }

    fn to(changes: &[Option<Change>], state: BreakerState) -> usize {
        changes.iter().flatten().filter(|c| c.to == state).count()
    }

    /// Two attempts fail at once on a closed breaker that each failure alone would not open
    /// (min_calls 3, one success counted): whichever order their counts land in, it opens,
    /// and exactly one of them reports the transition.
    #[test]
    fn loom_racing_failures_open_it_once() {
        let runs = model(|| {
            let now = Instant::now();
            let b = breaker(CircuitBreaker::new().with_min_calls(3), now);
            let fail = || -> Box<dyn FnOnce() -> Option<Change> + Send> {
                let b = b.clone();
                Box::new(move || b.record(now, Pass::Closed, true))
            };
            let changes = concurrently(vec![fail(), fail()]);
            assert_eq!(to(&changes, BreakerState::Open), 1, "{changes:?}");
            assert_eq!(b.state_at(now), BreakerState::Open);
        });
        report("racing failures", runs);
    }

    /// After the break, two attempts look at once with one probe allowed: exactly one goes
    /// through as the probe, and the transition to half-open is reported once.
    #[test]
    fn loom_a_half_open_breaker_lets_out_at_most_its_probes() {
        let runs = model(|| {
            let now = Instant::now();
            let b = opened(CircuitBreaker::new().with_break(S(5)).with_probes(1), now);
            let later = now + S(5);
            let admit = || -> Box<dyn FnOnce() -> (Admit, Option<Change>) + Send> {
                let b = b.clone();
                Box::new(move || b.admit(later))
            };
            let seen = concurrently(vec![admit(), admit()]);
            let probes = seen
                .iter()
                .filter(|(a, _)| *a == Admit::Go(Pass::Probe))
                .count();
            assert_eq!(probes, 1, "{seen:?}");
            let changes: Vec<_> = seen.iter().map(|(_, c)| *c).collect();
            assert_eq!(to(&changes, BreakerState::HalfOpen), 1, "{seen:?}");
            assert_eq!(b.state_at(later), BreakerState::HalfOpen);
        });
        report("half-open probes", runs);
    }

    /// Two probes out (probes 2); one succeeds as the other fails. In either order the
    /// breaker ends open (a failed probe wins over a success that is not yet enough), and it
    /// never closes.
    #[test]
    fn loom_a_failed_probe_wins_over_a_racing_success() {
        let runs = model(|| {
            let now = Instant::now();
            let b = opened(CircuitBreaker::new().with_break(S(5)).with_probes(2), now);
            let later = now + S(5);
            assert_eq!(b.admit(later).0, Admit::Go(Pass::Probe));
            assert_eq!(b.admit(later).0, Admit::Go(Pass::Probe));
            let probe = |failed: bool| -> Box<dyn FnOnce() -> Option<Change> + Send> {
                let b = b.clone();
                Box::new(move || b.record(later, Pass::Probe, failed))
            };
            let changes = concurrently(vec![probe(false), probe(true)]);
            assert_eq!(to(&changes, BreakerState::Open), 1, "{changes:?}");
            assert_eq!(to(&changes, BreakerState::Closed), 0, "{changes:?}");
            assert_eq!(b.state_at(later), BreakerState::Open);
        });
        report("probe outcomes", runs);
    }
}

mod budget {
    use super::*;
    use crate::loom::atomic::AtomicU64;

    /// A ratio budget's counters, slot 3's holding 5, made by the model's main thread.
    fn counters() -> Arc<[AtomicU64; SLOTS]> {
        let c: Arc<[AtomicU64; SLOTS]> = Arc::new([const { AtomicU64::new(0) }; SLOTS]);
        for _ in 0..5 {
            add(&c, 3);
        }
        c
    }

    /// One thread adds for slot 3 (it read the clock a moment ago) while another adds for
    /// slot 13, the same counter a full turn later: the counter ends counting slot 13, with
    /// both adds or the newer one, never turned back to slot 3 (which would drop slot 13's
    /// count). Shown failing with the add that restarts any counter whose tag differs.
    #[test]
    fn loom_a_late_add_never_turns_a_slot_back() {
        let runs = model(|| {
            let c = counters();
            let (late, now) = (c.clone(), c.clone());
            concurrently::<()>(vec![
                Box::new(move || add(&late, 3)),
                Box::new(move || add(&now, 13)),
            ]);
            let in_window = sum(&c, 13);
            assert!(
                in_window == 1 || in_window == 2,
                "slot 13 counts {in_window}"
            );
            assert_eq!(sum(&c, 3), 0, "slot 3's counter was restarted for slot 13");
        });
        report("late add", runs);
    }
}

mod bucket {
    use super::*;

    /// A fresh bucket, its atomics made by the model's main thread.
    fn bucket(b: TokenBucket) -> Arc<TokenBucket> {
        let b = Arc::new(b);
        let _ = b.available();
        b
    }

    #[test]
    fn loom_concurrent_takes_and_refunds_conserve_tokens() {
        let runs = model(|| {
            let b = bucket(TokenBucket::standard().with_capacity(12));
            let now = Instant::now();
            let take_and_refund = |cost: u32| -> Box<dyn FnOnce() + Send> {
                let b = b.clone();
                Box::new(move || {
                    if b.try_take(cost, now) {
                        assert!(b.available() <= 12 - cost);
                        b.deposit(cost);
                    }
                })
            };
            concurrently(vec![take_and_refund(5), take_and_refund(7)]);
            assert_eq!(b.available(), 12, "every refund came back, none twice");
        });
        report("takes and refunds", runs);
    }

    #[test]
    fn loom_two_takes_on_a_short_bucket_never_overdraw() {
        let runs = model(|| {
            let b = bucket(TokenBucket::standard().with_capacity(7));
            let now = Instant::now();
            let take = || -> Box<dyn FnOnce() -> bool + Send> {
                let b = b.clone();
                Box::new(move || b.try_take(5, now))
            };
            let took = concurrently(vec![take(), take()]);
            assert_eq!(
                took.iter().filter(|t| **t).count(),
                1,
                "7 tokens pay for one retry of 5"
            );
            assert_eq!(b.available(), 2);
        });
        report("short bucket", runs);
    }

    #[test]
    fn loom_rewards_racing_a_refund_clip_at_capacity() {
        let runs = model(|| {
            let b = bucket(TokenBucket::standard().with_capacity(10));
            assert!(b.try_take(5, Instant::now()));
            let (refund, reward) = (b.clone(), b.clone());
            concurrently::<()>(vec![
                Box::new(move || refund.deposit(5)),
                Box::new(move || reward.reward()),
            ]);
            // Level + held never exceeds capacity: the reward that lands first is clipped by
            // the refund, or lands on a full bucket.
            assert_eq!(b.available(), 10);
        });
        report("reward and refund", runs);
    }

    /// Two takes of 1 race at 5 ms after a drain, 5 tokens of refill due: in every
    /// interleaving both take (the refill is credited once, and its tokens land before any
    /// take can find the clock advanced), and what is left is 3. A refill that claimed its
    /// stretch of time by a compare-and-swap on the clock and deposited after it (the earlier
    /// design) let the other take find the clock advanced and the bucket still empty: this
    /// model failed on it.
    #[test]
    fn loom_a_take_racing_a_refill_sees_its_tokens() {
        let runs = model(|| {
            // 1000 tokens a second: 5 ms of refill is 5 tokens.
            let b = bucket(
                TokenBucket::standard()
                    .with_capacity(10)
                    .with_refill_rate(1000)
                    .wait_when_empty(),
            );
            let t0 = Instant::now();
            assert!(b.try_take(10, t0));
            let later = t0 + Duration::from_millis(5);
            let take = || -> Box<dyn FnOnce() -> bool + Send> {
                let b = b.clone();
                Box::new(move || b.try_take(1, later))
            };
            let took = concurrently(vec![take(), take()]);
            assert_eq!(
                took,
                [true, true],
                "a take was refused while the refill covered it"
            );
            // Credited once: 5 - 2 left, and 7 tokens (7 ms) short of the full 10.
            assert_eq!(b.time_until(10, later), Some(Duration::from_millis(7)));
        });
        report("refill", runs);
    }
}

mod limiter {
    use super::*;
    use crate::limiter::State;

    type Sent = Result<Option<Duration>, ()>;

    /// A fresh limiter whose flag and mutex the model's main thread has made.
    fn fresh() -> Arc<RateLimiter> {
        let l = Arc::new(RateLimiter::adaptive());
        let _ = (l.is_enabled(), l.snapshot());
        l
    }

    /// After a throttle at `t0` (fill rate 0.5 tokens/s, at most 1 token, the bucket empty),
    /// 2 s of refill make exactly one send token at `t0 + 2 s`.
    fn one_token(t0: Instant) -> Arc<RateLimiter> {
        let l = fresh();
        l.record(t0, true);
        l
    }

    #[test]
    fn loom_two_senders_never_take_the_same_token() {
        let runs = model(|| {
            let t0 = Instant::now();
            let l = one_token(t0);
            let t = t0 + Duration::from_secs(2);
            let send = || -> Box<dyn FnOnce() -> Sent + Send> {
                let l = l.clone();
                Box::new(move || l.try_send(1, t, None, false, || 0.0))
            };
            let outcomes = concurrently(vec![send(), send()]);
            let sent = outcomes.iter().filter(|o| **o == Ok(None)).count();
            assert_eq!(
                sent, 1,
                "exactly one caller gets the one token: {outcomes:?}"
            );
            // The other is told to wait the time one token takes at 0.5 per second.
            assert!(
                outcomes.contains(&Ok(Some(Duration::from_secs(2)))),
                "{outcomes:?}"
            );
            assert_eq!(l.snapshot().capacity, 0.0);
        });
        report("two senders, one token", runs);
    }

    #[test]
    fn loom_a_throttle_racing_a_send_leaves_the_limiter_enabled_at_the_throttled_rate() {
        let runs = model(|| {
            let t0 = Instant::now();
            let l = fresh();
            let (throttler, sender) = (l.clone(), l.clone());
            let mut out = concurrently::<Option<Sent>>(vec![
                Box::new(move || {
                    throttler.record(t0, true);
                    None
                }),
                Box::new(move || Some(sender.try_send(1, t0, None, false, || 0.0))),
            ]);
            let sent = out.pop().flatten().expect("the sender's outcome");
            // Before the throttle the limiter lets everything through; after it the bucket is
            // empty, so a send that saw it enabled is told to wait.
            assert!(
                sent == Ok(None) || sent == Ok(Some(Duration::from_secs(2))),
                "{sent:?}"
            );
            let s = l.snapshot();
            assert!(l.is_enabled() && s.enabled);
            assert_eq!((s.fill_rate, s.max_capacity), (0.5, 1.0));
            assert_eq!(s.capacity, 0.0, "no token was taken from the empty bucket");
        });
        report("throttle racing a send", runs);
    }

    /// What each of the three operations of the next model does, applied to `l`.
    fn op(l: &RateLimiter, which: usize, t: Instant) -> Option<Sent> {
        match which {
            0 => {
                l.record(t, false);
                None
            }
            1 => {
                l.record(t, true);
                None
            }
            _ => Some(l.try_send(1, t, None, false, || 0.0)),
        }
    }

    /// Every end state (and send outcome) the three operations can reach one after another.
    fn serial_outcomes(t0: Instant, t: Instant) -> Vec<(State, Sent)> {
        const ORDERS: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        ORDERS
            .iter()
            .map(|order| {
                let l = one_token(t0);
                let sent = order
                    .iter()
                    .filter_map(|&which| op(&l, which, t))
                    .next()
                    .expect("one send");
                (l.snapshot(), sent)
            })
            .collect()
    }

    /// A success, a throttle and a send at the same instant, on three threads: whatever the
    /// interleaving, the limiter ends exactly as one of the six serial orders leaves it (every
    /// number of its state), and the send gets what it got in that order. An update that read
    /// the state, let the lock go and wrote it back would lose the other update and fail here.
    #[test]
    fn loom_concurrent_updates_and_a_send_are_each_atomic() {
        let runs = model(|| {
            let t0 = Instant::now();
            let t = t0 + Duration::from_secs(2);
            let l = one_token(t0);
            let ops = (0..3)
                .map(|which| -> Box<dyn FnOnce() -> Option<Sent> + Send> {
                    let l = l.clone();
                    Box::new(move || op(&l, which, t))
                })
                .collect();
            let sent = concurrently(ops)
                .into_iter()
                .flatten()
                .next()
                .expect("the sender's outcome");
            let got = (l.snapshot(), sent);
            let serial = serial_outcomes(t0, t);
            assert!(
                serial.contains(&got),
                "{got:?} is no serial order's outcome: {serial:?}"
            );
        });
        report("concurrent updates and a send", runs);
    }
}
