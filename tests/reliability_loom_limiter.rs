//! A loom model of the adaptive rate limiter: `retry-runtime/src/limiter.rs` itself, compiled
//! here against loom's mutex and atomics (it names them through `crate::sync`), with a clock the
//! model controls, so loom explores every interleaving of concurrent send-token takes and
//! response updates.
//!
//! The limiter keeps its numbers under one mutex and answers "disabled" from an atomic flag
//! without taking the mutex (the fast path before the first throttle). What the model checks:
//! two callers never take the same send token; a throttle racing a send leaves the limiter
//! enabled at the throttled rate whichever way the race goes; concurrent updates leave the
//! rates consistent; nothing deadlocks.
//!
//! The mutex and the flag are built by `const fn`, which loom's are not, so the stand-ins below
//! are std primitives until first used inside a model, and loom's from then on.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

#[path = "../retry-runtime/src/limiter.rs"]
mod limiter;

mod testing {
    /// No test scope in the model: jitter draws come from the thread's generator.
    pub fn with_seeded_rng<T>(_: impl FnOnce(&mut rand::rngs::StdRng) -> T) -> Option<T> {
        None
    }
}

mod sync {
    use std::cell::Cell;
    use std::sync::OnceLock;
    pub use std::sync::PoisonError;
    use std::sync::atomic::AtomicPtr;

    thread_local! {
        static IN_MODEL: Cell<bool> = const { Cell::new(false) };
    }

    /// Marks the current thread as running inside a loom model.
    pub fn enter_model() {
        IN_MODEL.with(|m| m.set(true));
    }

    fn in_model() -> bool {
        IN_MODEL.with(Cell::get)
    }

    thread_local! {
        /// The model's clock: a fixed instant plus what the test advanced it by. Loom runs a
        /// model's threads on the test's own OS thread, so each test has its own clock; only
        /// the model's main thread moves it, before the concurrent part, so every interleaving
        /// reads the same times.
        static OFFSET_NS: Cell<u64> = const { Cell::new(0) };
    }

    pub fn now() -> tokio::time::Instant {
        // Outside a model (the limiter's own unit tests, compiled here too): tokio's clock.
        if !in_model() {
            return tokio::time::Instant::now();
        }
        static BASE: OnceLock<tokio::time::Instant> = OnceLock::new();
        let base = *BASE.get_or_init(tokio::time::Instant::now);
        base + Duration::from_nanos(OFFSET_NS.with(Cell::get))
    }

    pub fn advance(d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap();
        OFFSET_NS.with(|o| o.set(o.get() + ns));
    }

    pub fn reset_clock() {
        OFFSET_NS.with(|o| o.set(0));
    }

    use std::time::Duration;

    pub mod atomic {
        use super::in_model;
        use std::sync::atomic::AtomicPtr;
        pub use std::sync::atomic::Ordering;

        /// A std `AtomicBool` until first used in a model, a loom one from then on (leaked: a
        /// stand-in needs no drop glue, as the limiter's `const fn`s move it).
        #[derive(Debug)]
        pub struct AtomicBool {
            plain: std::sync::atomic::AtomicBool,
            model: AtomicPtr<loom::sync::atomic::AtomicBool>,
        }

        impl AtomicBool {
            pub const fn new(v: bool) -> Self {
                AtomicBool {
                    plain: std::sync::atomic::AtomicBool::new(v),
                    model: AtomicPtr::new(std::ptr::null_mut()),
                }
            }

            fn model(&self) -> Option<&loom::sync::atomic::AtomicBool> {
                if !in_model() {
                    return None;
                }
                let mut p = self.model.load(Ordering::SeqCst);
                if p.is_null() {
                    // Loom runs one thread at a time: no other thread can race this.
                    let a = loom::sync::atomic::AtomicBool::new(self.plain.load(Ordering::SeqCst));
                    p = Box::leak(Box::new(a));
                    self.model.store(p, Ordering::SeqCst);
                }
                // SAFETY: set once to a leaked box, never freed.
                Some(unsafe { &*p })
            }

            pub fn load(&self, order: Ordering) -> bool {
                match self.model() {
                    Some(a) => a.load(order),
                    None => self.plain.load(order),
                }
            }

            pub fn store(&self, v: bool, order: Ordering) {
                match self.model() {
                    Some(a) => a.store(v, order),
                    None => self.plain.store(v, order),
                }
            }
        }
    }

    /// A std `Mutex` until first locked in a model, a loom one (starting from the same value)
    /// from then on.
    pub struct Mutex<T> {
        plain: std::sync::Mutex<T>,
        model: AtomicPtr<loom::sync::Mutex<T>>,
    }

    impl<T: std::fmt::Debug> std::fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Mutex { .. }")
        }
    }

    pub enum MutexGuard<'a, T> {
        Plain(std::sync::MutexGuard<'a, T>),
        Model(loom::sync::MutexGuard<'a, T>),
    }

    impl<T> std::ops::Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            match self {
                MutexGuard::Plain(g) => g,
                MutexGuard::Model(g) => g,
            }
        }
    }

    impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            match self {
                MutexGuard::Plain(g) => g,
                MutexGuard::Model(g) => g,
            }
        }
    }

    impl<T: Copy> Mutex<T> {
        pub const fn new(v: T) -> Self {
            Mutex {
                plain: std::sync::Mutex::new(v),
                model: AtomicPtr::new(std::ptr::null_mut()),
            }
        }

        fn model(&self) -> Option<&loom::sync::Mutex<T>> {
            if !in_model() {
                return None;
            }
            let mut p = self.model.load(std::sync::atomic::Ordering::SeqCst);
            if p.is_null() {
                let v = *self.plain.lock().unwrap_or_else(PoisonError::into_inner);
                p = Box::leak(Box::new(loom::sync::Mutex::new(v)));
                self.model.store(p, std::sync::atomic::Ordering::SeqCst);
            }
            // SAFETY: set once to a leaked box, never freed.
            Some(unsafe { &*p })
        }

        pub fn lock(&self) -> Result<MutexGuard<'_, T>, PoisonError<MutexGuard<'_, T>>> {
            match self.model() {
                Some(m) => Ok(MutexGuard::Model(
                    m.lock().expect("loom mutexes do not poison"),
                )),
                None => match self.plain.lock() {
                    Ok(g) => Ok(MutexGuard::Plain(g)),
                    Err(e) => Err(PoisonError::new(MutexGuard::Plain(e.into_inner()))),
                },
            }
        }
    }
}

use limiter::RateLimiter;

/// Runs `f` under loom, every interleaving, with the stand-ins in model mode and the clock at
/// its start; returns how many interleavings loom explored.
fn model<F: Fn() + Sync + Send + 'static>(f: F) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    loom::model(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        sync::enter_model();
        sync::reset_clock();
        f();
    });
    runs.load(Ordering::Relaxed)
}

fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> loom::thread::JoinHandle<T> {
    loom::thread::spawn(move || {
        sync::enter_model();
        f()
    })
}

fn report(name: &str, runs: usize) {
    eprintln!("{name}: {runs} interleavings explored");
    assert!(runs > 1, "loom explored more than one interleaving");
}

/// A fresh limiter whose flag and mutex the model's main thread has already moved into the
/// model (loom objects made in a spawned thread would not be visible to the others).
fn fresh() -> Arc<RateLimiter> {
    let l = Arc::new(RateLimiter::adaptive());
    let _ = (l.is_enabled(), l.fill_rate());
    l
}

/// After a throttle at the model's start (fill rate 0.5 tokens/s, at most 1 token, the bucket
/// empty) and 2 s of refill, the bucket holds exactly one send token.
fn one_token() -> Arc<RateLimiter> {
    let l = fresh();
    l.record(true);
    sync::advance(Duration::from_secs(2));
    l
}

#[test]
fn two_senders_never_take_the_same_token() {
    let runs = model(|| {
        let l = one_token();
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                spawn(move || l.try_send(1, None, false))
            })
            .collect();
        let outcomes: Vec<_> = senders.into_iter().map(|h| h.join().unwrap()).collect();
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
        assert_eq!(l.capacity(), 0.0);
    });
    report("two senders, one token", runs);
}

#[test]
fn a_throttle_racing_a_send_leaves_the_limiter_enabled_at_the_throttled_rate() {
    let runs = model(|| {
        let l = fresh();
        let throttle = {
            let l = l.clone();
            spawn(move || l.record(true))
        };
        let send = {
            let l = l.clone();
            spawn(move || l.try_send(1, None, false))
        };
        throttle.join().unwrap();
        let sent = send.join().unwrap();
        // Before the throttle the limiter lets everything through; after it the bucket is
        // empty, so a send that saw it enabled is told to wait.
        assert!(
            sent == Ok(None) || sent == Ok(Some(Duration::from_secs(2))),
            "{sent:?}"
        );
        assert!(l.is_enabled());
        assert_eq!(l.fill_rate(), 0.5);
        assert_eq!(l.max_capacity(), 1.0);
        assert_eq!(
            l.capacity(),
            0.0,
            "no token was taken from the empty bucket"
        );
    });
    report("throttle racing a send", runs);
}

#[test]
fn concurrent_updates_leave_consistent_rates() {
    let runs = model(|| {
        let l = one_token();
        let updates: Vec<_> = [false, true]
            .into_iter()
            .map(|throttled| {
                let l = l.clone();
                spawn(move || l.record(throttled))
            })
            .collect();
        let send = {
            let l = l.clone();
            spawn(move || l.try_send(1, None, false))
        };
        for h in updates {
            h.join().unwrap();
        }
        let sent = send.join().unwrap();
        assert!(matches!(sent, Ok(None) | Ok(Some(_))), "{sent:?}");
        assert!(l.is_enabled());
        assert!(l.fill_rate() >= 0.5, "fill rate {}", l.fill_rate());
        assert!(l.max_capacity() >= 1.0, "max capacity {}", l.max_capacity());
        let capacity = l.capacity();
        assert!(
            (0.0..=l.max_capacity()).contains(&capacity),
            "capacity {capacity} outside [0, {}]",
            l.max_capacity()
        );
    });
    report("concurrent updates and a send", runs);
}
