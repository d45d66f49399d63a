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

pub use crate::observe::EarlyEnd;

use crate::classify::ErrorClass;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
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

struct Active {
    overrides: Overrides,
    rng: RefCell<Option<StdRng>>,
    record: Option<RefCell<Record>>,
}

tokio::task_local! {
    static ACTIVE: Active;
}

/// Runs `fut` with `overrides` applied to every `#[retry]` call it polls. Tasks it spawns are
/// not affected: wrap their futures in a scope of their own.
pub async fn scope<F: Future>(overrides: Overrides, fut: F) -> F::Output {
    ACTIVE.scope(active(overrides, false), fut).await
}

/// Runs `fut` as [`scope`] does and returns, with its output, what the retry loop of every
/// `#[retry]` call it polled decided: each retry with its delay, each early end.
pub async fn record<F: Future>(overrides: Overrides, fut: F) -> (F::Output, Record) {
    let (out, active) = ACTIVE
        .scope(active(overrides, true), async {
            let out = fut.await;
            let record = ACTIVE.with(|a| a.record.as_ref().map(|r| r.take()));
            (out, record)
        })
        .await;
    (out, active.unwrap_or_default())
}

/// Runs the closure `f` with `overrides` applied to the `#[retry]` calls it polls (for a
/// closure that drives futures itself, such as `Runtime::block_on`).
pub fn sync_scope<R>(overrides: Overrides, f: impl FnOnce() -> R) -> R {
    ACTIVE.sync_scope(active(overrides, false), f)
}

fn active(overrides: Overrides, record: bool) -> Active {
    EVER_ENTERED.store(true, Ordering::Release);
    Active {
        overrides,
        rng: RefCell::new(overrides.seed.map(StdRng::seed_from_u64)),
        record: record.then(RefCell::default),
    }
}

/// What the current task's test scope asks, read once per retry.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TestScope {
    overrides: Overrides,
    recording: bool,
}

impl TestScope {
    /// `max_attempts` capped by the scope.
    pub(crate) fn cap(self, max_attempts: u32) -> u32 {
        self.overrides
            .max_attempts
            .map_or(max_attempts, |cap| max_attempts.min(cap))
    }

    /// Whether retries skip their sleeps.
    pub(crate) fn instant(self) -> bool {
        self.overrides.instant
    }

    /// Whether jitter draws from the scope's seeded generator.
    pub(crate) fn seeded(self) -> bool {
        self.overrides.seed.is_some()
    }

    /// Whether the scope records what the loop decides.
    pub(crate) fn recording(self) -> bool {
        self.recording
    }
}

/// Whether any test scope was ever entered in this process: until one is, nothing is looked
/// up per retry.
static EVER_ENTERED: AtomicBool = AtomicBool::new(false);

/// The current task's test scope (the defaults outside one).
#[inline]
pub(crate) fn test_scope() -> TestScope {
    if !EVER_ENTERED.load(Ordering::Acquire) {
        return TestScope::default();
    }
    ACTIVE
        .try_with(|a| TestScope {
            overrides: a.overrides,
            recording: a.record.is_some(),
        })
        .unwrap_or_default()
}

/// Runs `f` with the scope's seeded generator, or returns `None` outside a seeded scope.
pub(crate) fn with_seeded_rng<T>(f: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    if !EVER_ENTERED.load(Ordering::Acquire) {
        return None;
    }
    ACTIVE
        .try_with(|a| a.rng.borrow_mut().as_mut().map(f))
        .ok()
        .flatten()
}

/// What the retry loop decided inside a [`record`] scope, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    retries: Vec<Retried>,
    early_ends: Vec<EndedEarly>,
}

/// One retry: attempt `attempt` of `function` failed with `class` and the call waited `delay`
/// (or would have, in an instant scope) before the next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retried {
    /// The `#[retry]` function.
    pub function: &'static str,
    /// Its named partition, if any.
    pub partition: Option<&'static str>,
    /// The attempt (1-based) that failed.
    pub attempt: u32,
    /// The failure's class (`Transient` for a `retry_if_ok` repeat).
    pub class: ErrorClass,
    /// The delay chosen: the server's hint, or the jittered backoff.
    pub delay: Duration,
}

/// A call of `function` that gave up after attempt `attempt`, before `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndedEarly {
    /// The `#[retry]` function.
    pub function: &'static str,
    /// Its named partition, if any.
    pub partition: Option<&'static str>,
    /// The last attempt that ran (0 when the first could not start before the deadline).
    pub attempt: u32,
    /// The class of the last failure (`None` after a success that `retry_if_ok` would repeat,
    /// or when no attempt ran).
    pub class: Option<ErrorClass>,
    /// Why it gave up.
    pub reason: EarlyEnd,
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

    /// How many attempts of `function` ran in a scope that called it once: its retries plus
    /// one.
    #[must_use]
    pub fn attempts(&self, function: &str) -> u32 {
        let retries = self
            .retries
            .iter()
            .filter(|r| r.function == function)
            .count();
        u32::try_from(retries).map_or(u32::MAX, |n| n.saturating_add(1))
    }
}

/// Adds a retry to the record of the current scope, if it records.
pub(crate) fn note_retry(
    function: &'static str,
    partition: Option<&'static str>,
    attempt: u32,
    class: ErrorClass,
    delay: Duration,
) {
    let _ = ACTIVE.try_with(|a| {
        if let Some(record) = &a.record {
            record.borrow_mut().retries.push(Retried {
                function,
                partition,
                attempt,
                class,
                delay,
            });
        }
    });
}

/// Adds an early end to the record of the current scope, if it records.
pub(crate) fn note_early_end(
    function: &'static str,
    partition: Option<&'static str>,
    attempt: u32,
    class: Option<ErrorClass>,
    reason: EarlyEnd,
) {
    let _ = ACTIVE.try_with(|a| {
        if let Some(record) = &a.record {
            record.borrow_mut().early_ends.push(EndedEarly {
                function,
                partition,
                attempt,
                class,
                reason,
            });
        }
    });
}
