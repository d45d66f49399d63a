//! A loom model of the retry token bucket: `retry-runtime/src/bucket.rs` itself, compiled here
//! against loom's atomics (it names its atomics through `crate::sync::atomic`), so loom explores
//! every interleaving of concurrent takes, refunds, rewards and refills, with the memory
//! orderings the code asks for (loom models acquire/release and, partly, relaxed accesses).
//!
//! The bucket's atomics are built by `const fn`, which loom's are not, so the stand-ins below
//! keep a plain value until first used inside a model, and a loom atomic from then on. Outside
//! a model (the bucket's own unit tests, compiled here too) they are std atomics.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[path = "../retry-runtime/src/bucket.rs"]
mod bucket;

mod classify {
    pub use retry_runtime::ErrorClass;
}

mod sync {
    pub mod atomic {
        use std::cell::Cell;
        use std::sync::atomic::AtomicPtr;
        pub use std::sync::atomic::Ordering;

        thread_local! {
            static IN_MODEL: Cell<bool> = const { Cell::new(false) };
        }

        /// Marks the current thread as running inside a loom model.
        pub fn enter_model() {
            IN_MODEL.with(|m| m.set(true));
        }

        macro_rules! stand_in {
            ($name:ident, $int:ty) => {
                /// A std atomic until first used in a model, a loom atomic from then on. (The
                /// loom atomic is leaked: a stand-in needs no drop glue, as `const fn`s of the
                /// bucket overwrite atomics.)
                #[derive(Debug)]
                pub struct $name {
                    plain: std::sync::atomic::$name,
                    model: AtomicPtr<loom::sync::atomic::$name>,
                }

                impl $name {
                    pub const fn new(v: $int) -> Self {
                        $name {
                            plain: std::sync::atomic::$name::new(v),
                            model: AtomicPtr::new(std::ptr::null_mut()),
                        }
                    }

                    fn model(&self) -> Option<&loom::sync::atomic::$name> {
                        if !IN_MODEL.with(Cell::get) {
                            return None;
                        }
                        let mut p = self.model.load(Ordering::SeqCst);
                        if p.is_null() {
                            // Loom runs one thread at a time: no other thread can race this.
                            let a =
                                loom::sync::atomic::$name::new(self.plain.load(Ordering::SeqCst));
                            p = Box::leak(Box::new(a));
                            self.model.store(p, Ordering::SeqCst);
                        }
                        // SAFETY: set once to a leaked box, never freed.
                        Some(unsafe { &*p })
                    }

                    pub fn load(&self, order: Ordering) -> $int {
                        match self.model() {
                            Some(a) => a.load(order),
                            None => self.plain.load(order),
                        }
                    }

                    pub fn compare_exchange_weak(
                        &self,
                        current: $int,
                        new: $int,
                        success: Ordering,
                        failure: Ordering,
                    ) -> Result<$int, $int> {
                        match self.model() {
                            Some(a) => a.compare_exchange_weak(current, new, success, failure),
                            None => self
                                .plain
                                .compare_exchange_weak(current, new, success, failure),
                        }
                    }

                    pub fn fetch_update<F>(
                        &self,
                        set: Ordering,
                        fetch: Ordering,
                        f: F,
                    ) -> Result<$int, $int>
                    where
                        F: FnMut($int) -> Option<$int>,
                    {
                        match self.model() {
                            Some(a) => a.fetch_update(set, fetch, f),
                            None => self.plain.fetch_update(set, fetch, f),
                        }
                    }
                }
            };
        }

        stand_in!(AtomicU32, u32);
        stand_in!(AtomicU64, u64);
    }
}

use bucket::TokenBucket;

/// Runs `f` under loom, every interleaving, with the stand-ins in model mode; returns how many
/// interleavings loom explored.
fn model<F: Fn() + Sync + Send + 'static>(f: F) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    loom::model(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        sync::atomic::enter_model();
        f();
    });
    runs.load(Ordering::Relaxed)
}

fn spawn(f: impl FnOnce() + Send + 'static) -> loom::thread::JoinHandle<()> {
    loom::thread::spawn(move || {
        sync::atomic::enter_model();
        f();
    })
}

/// A fresh bucket, its atomics already moved into the model by the current (main) thread.
fn bucket(b: TokenBucket) -> Arc<TokenBucket> {
    let b = Arc::new(b);
    let _ = b.available();
    b
}

fn report(name: &str, runs: usize) {
    eprintln!("{name}: {runs} interleavings explored");
    assert!(runs > 1, "loom explored more than one interleaving");
}

#[test]
fn concurrent_takes_and_refunds_conserve_tokens() {
    let runs = model(|| {
        let b = bucket(TokenBucket::standard().with_capacity(12));
        let now = Instant::now();
        let handles: Vec<_> = [5, 7]
            .into_iter()
            .map(|cost| {
                let b = b.clone();
                spawn(move || {
                    if b.try_take(cost, now) {
                        assert!(b.available() <= 12 - cost);
                        b.deposit(cost);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(b.available(), 12, "every refund came back, none twice");
    });
    report("takes and refunds", runs);
}

#[test]
fn two_takes_on_a_short_bucket_never_overdraw() {
    let runs = model(|| {
        let b = bucket(TokenBucket::standard().with_capacity(7));
        let now = Instant::now();
        let took: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                let (tx, rx) = std::sync::mpsc::channel();
                let h = spawn(move || tx.send(b.try_take(5, now)).unwrap());
                (h, rx)
            })
            .collect();
        let mut wins = 0;
        for (h, rx) in took {
            h.join().unwrap();
            wins += u32::from(rx.recv().unwrap());
        }
        assert_eq!(wins, 1, "7 tokens pay for one retry of 5");
        assert_eq!(b.available(), 2);
    });
    report("short bucket", runs);
}

#[test]
fn rewards_racing_a_refund_clip_at_capacity() {
    let runs = model(|| {
        let b = bucket(TokenBucket::standard().with_capacity(10));
        let now = Instant::now();
        assert!(b.try_take(5, now));
        let refund = {
            let b = b.clone();
            spawn(move || b.deposit(5))
        };
        let reward = {
            let b = b.clone();
            spawn(move || b.reward())
        };
        refund.join().unwrap();
        reward.join().unwrap();
        // Level + held never exceeds capacity: the reward that lands first is clipped by the
        // refund, or lands on a full bucket.
        assert_eq!(b.available(), 10);
    });
    report("reward and refund", runs);
}

#[test]
fn a_stretch_of_refill_is_credited_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Interleavings in which a take found the bucket short while the refill it raced was
    // between its clock update and its deposit (see RELIABILITY.md).
    static REFUSED: AtomicUsize = AtomicUsize::new(0);
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
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                let (tx, rx) = std::sync::mpsc::channel();
                let h = spawn(move || tx.send(b.try_take(1, later)).unwrap());
                (h, rx)
            })
            .collect();
        let mut took = 0;
        for (h, rx) in takers {
            h.join().unwrap();
            took += u32::from(rx.recv().unwrap());
        }
        if took < 2 {
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
        assert!(
            took >= 1,
            "the taker that credited the refill takes from it"
        );
        // Both takers ran the refill for the same 5 ms; it was credited once: what is left
        // is 5 minus the takes, and the clock has banked nothing beyond `later`.
        let short = 10 - (5 - took);
        assert_eq!(
            b.time_until(10, later),
            Some(Duration::from_millis(u64::from(short))),
            "took {took}"
        );
    });
    eprintln!(
        "refill: {} of {runs} interleavings refused a take racing the refill",
        REFUSED.load(Ordering::Relaxed)
    );
    report("refill", runs);
}
