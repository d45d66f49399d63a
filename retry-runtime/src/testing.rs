//! Overrides for users' tests: instant retries, capped attempts and a seeded jitter source,
//! scoped to one task; and a record of what the retry loop decided inside the scope.
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
//!
//! [`record`] also returns every retry the loop decided on, with the delay it chose (slept or
//! not), and every early end; with a seed the schedule is the same on every run:
//!
//! ```
//! use retry_runtime::{retry, testing, ErrorClass};
//! use std::time::Duration;
//!
//! #[retry(max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
//! async fn always_busy() -> Result<(), ErrorClass> {
//!     Err(ErrorClass::Throttling)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let overrides = testing::Overrides::new().instant().seed(7);
//! let (result, record) = testing::record(overrides, always_busy()).await;
//! assert_eq!(result, Err(ErrorClass::Throttling));
//! assert_eq!(record.attempts("always_busy"), 4);
//! assert_eq!(
//!     record.delays(),
//!     [100, 200, 400].map(Duration::from_millis),
//! );
//! assert!(record.early_ends().is_empty());
//! # }
//! ```

pub use crate::observe::report::{EarlyEnd, EndedEarly, Hedged, Retried};

use crate::engine::chacha::ChaCha12;
use crate::engine::scope::{self, Scope};
use rand::Rng;
use rand::SeedableRng;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

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

/// A test scope, as the engine's [`Scope`] seam sees it.
struct TestScope {
    overrides: Overrides,
    rng: Option<Mutex<ChaCha12>>,
    record: Option<Mutex<Record>>,
}

impl TestScope {
    fn new(overrides: Overrides, record: bool) -> Arc<TestScope> {
        Arc::new(TestScope {
            overrides,
            rng: overrides
                .seed
                .map(|s| Mutex::new(ChaCha12::seed_from_u64(s))),
            record: record.then(Mutex::default),
        })
    }

    fn note(&self, f: impl FnOnce(&mut Record)) {
        if let Some(r) = &self.record {
            f(&mut r.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

impl Scope for TestScope {
    fn max_attempts(&self, configured: u32) -> u32 {
        self.overrides
            .max_attempts
            .map_or(configured, |cap| configured.min(cap))
    }

    fn skips_waits(&self) -> bool {
        self.overrides.instant
    }

    fn with_rng(&self, draw: &mut dyn FnMut(&mut dyn Rng)) -> bool {
        let Some(rng) = &self.rng else {
            return false;
        };
        draw(&mut *rng.lock().unwrap_or_else(PoisonError::into_inner));
        true
    }

    fn retried(&self, retry: &Retried) {
        self.note(|r| r.retries.push(*retry));
    }

    fn ended_early(&self, end: &EndedEarly) {
        self.note(|r| r.early_ends.push(*end));
    }

    fn hedged(&self, hedge: &Hedged) {
        self.note(|r| r.hedges.push(*hedge));
    }
}

/// Runs `fut` with `overrides` applied to every `#[retry]` call it polls. Tasks it spawns are
/// not affected: wrap their futures in a scope of their own.
pub async fn scope<F: Future>(overrides: Overrides, fut: F) -> F::Output {
    scope::enter(TestScope::new(overrides, false), fut).await
}

/// Runs `fut` as [`scope`] does and returns, with its output, what the retry loop of every
/// `#[retry]` call it polled decided: each retry with its delay, each early end.
pub async fn record<F: Future>(overrides: Overrides, fut: F) -> (F::Output, Record) {
    let scope = TestScope::new(overrides, true);
    let out = scope::enter(scope.clone(), fut).await;
    let record = scope
        .record
        .as_ref()
        .map(|r| std::mem::take(&mut *r.lock().unwrap_or_else(PoisonError::into_inner)));
    (out, record.unwrap_or_default())
}

/// Runs the closure `f` with `overrides` applied to the `#[retry]` calls it polls (for a
/// closure that drives futures itself, such as `Runtime::block_on`).
pub fn sync_scope<R>(overrides: Overrides, f: impl FnOnce() -> R) -> R {
    scope::enter_sync(TestScope::new(overrides, false), f)
}

/// Runs the closure `f` as [`sync_scope`] does (for a blocking `#[retry]` function, or a
/// closure that drives futures itself) and returns, with its output, what the retry loop of
/// every `#[retry]` call it made decided.
pub fn record_sync<R>(overrides: Overrides, f: impl FnOnce() -> R) -> (R, Record) {
    let scope = TestScope::new(overrides, true);
    let out = scope::enter_sync(scope.clone(), f);
    let record = scope
        .record
        .as_ref()
        .map(|r| std::mem::take(&mut *r.lock().unwrap_or_else(PoisonError::into_inner)));
    (out, record.unwrap_or_default())
}

/// What the retry loop decided inside a [`record`] scope, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    retries: Vec<Retried>,
    early_ends: Vec<EndedEarly>,
    hedges: Vec<Hedged>,
}

impl Record {
    /// Every retry, in order.
    #[must_use]
    pub fn retries(&self) -> &[Retried] {
        &self.retries
    }

    /// The delay of every retry, in order.
    #[must_use]
    pub fn delays(&self) -> Vec<Duration> {
        self.retries.iter().map(|r| r.delay).collect()
    }

    /// Every call that gave up before `max_attempts`, in order.
    #[must_use]
    pub fn early_ends(&self) -> &[EndedEarly] {
        &self.early_ends
    }

    /// Every hedge (an attempt started while another of the same call was in flight), in
    /// order.
    #[must_use]
    pub fn hedges(&self) -> &[Hedged] {
        &self.hedges
    }

    /// How many attempts of `function` started in a scope that called it once: its retries
    /// and hedges plus one.
    #[must_use]
    pub fn attempts(&self, function: &str) -> u32 {
        let retries = self
            .retries
            .iter()
            .filter(|r| r.function == function)
            .count();
        let hedges = self
            .hedges
            .iter()
            .filter(|h| h.function == function)
            .count();
        u32::try_from(retries + hedges).map_or(u32::MAX, |n| n.saturating_add(1))
    }
}
