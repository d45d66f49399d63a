//! Overrides for users' tests: instant retries, capped attempts and a seeded jitter source,
//! scoped to one task.
//!
//! ```
//! use retry_runtime::{retry, testing};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! static CALLS: AtomicU32 = AtomicU32::new(0);
//!
//! #[retry(max_attempts = 5, initial_backoff = "10s")]
//! async fn flaky() -> std::io::Result<u32> {
//!     let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
//!     if n < 3 { Err(std::io::ErrorKind::ConnectionReset.into()) } else { Ok(n) }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // No 10 s sleeps: the retries inside the scope are instant.
//! let got = testing::scope(testing::Overrides::new().instant(), flaky()).await;
//! assert_eq!(got.unwrap(), 3);
//! assert_eq!(CALLS.load(Ordering::SeqCst), 3);
//! # }
//! ```

use rand::SeedableRng;
use rand::rngs::StdRng;
use std::cell::RefCell;
use std::future::Future;

/// What to change about `#[retry]` functions called inside a [`scope`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    instant: bool,
    max_attempts: Option<u32>,
    seed: Option<u64>,
}

impl Overrides {
    /// No change yet.
    #[must_use]
    pub const fn new() -> Overrides {
        Overrides {
            instant: false,
            max_attempts: None,
            seed: None,
        }
    }

    /// Retries do not sleep (the delays are still computed and reported to `on_retry`), and
    /// the deadline check counts them as zero.
    #[must_use]
    pub const fn instant(mut self) -> Overrides {
        self.instant = true;
        self
    }

    /// At most `n` attempts per call, whatever the function says (`n` >= 1).
    #[must_use]
    pub const fn max_attempts(mut self, n: u32) -> Overrides {
        self.max_attempts = Some(if n == 0 { 1 } else { n });
        self
    }

    /// Jitter draws from a generator seeded with `seed`, so the schedule of the scope is the
    /// same on every run.
    #[must_use]
    pub const fn seed(mut self, seed: u64) -> Overrides {
        self.seed = Some(seed);
        self
    }
}

struct Active {
    overrides: Overrides,
    rng: RefCell<Option<StdRng>>,
}

tokio::task_local! {
    static ACTIVE: Active;
}

/// Runs `fut` with `overrides` applied to every `#[retry]` call it polls. Tasks it spawns are
/// not affected: wrap their futures in a scope of their own.
pub async fn scope<F: Future>(overrides: Overrides, fut: F) -> F::Output {
    ACTIVE.scope(active(overrides), fut).await
}

/// Runs the closure `f` with `overrides` applied to the `#[retry]` calls it polls (for a
/// closure that drives futures itself, such as `Runtime::block_on`).
pub fn sync_scope<R>(overrides: Overrides, f: impl FnOnce() -> R) -> R {
    ACTIVE.sync_scope(active(overrides), f)
}

fn active(overrides: Overrides) -> Active {
    Active {
        overrides,
        rng: RefCell::new(overrides.seed.map(StdRng::seed_from_u64)),
    }
}

/// The overrides in effect for the current task, if any.
pub(crate) fn current() -> Option<Overrides> {
    ACTIVE.try_with(|a| a.overrides).ok()
}

pub(crate) fn is_instant() -> bool {
    current().is_some_and(|o| o.instant)
}

/// Caps `max_attempts` by the override.
pub(crate) fn cap_attempts(max_attempts: u32) -> u32 {
    match current().and_then(|o| o.max_attempts) {
        Some(cap) => max_attempts.min(cap),
        None => max_attempts,
    }
}

/// Runs `f` with the scope's seeded generator, or returns `None` outside a seeded scope.
pub(crate) fn with_seeded_rng<T>(f: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    ACTIVE
        .try_with(|a| a.rng.borrow_mut().as_mut().map(f))
        .ok()
        .flatten()
}
