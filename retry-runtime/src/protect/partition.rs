//! Named partitions: the retry token bucket, rate limiter, budget and breaker that every
//! function and policy naming the same partition shares.

use crate::protect::breaker::CircuitBreaker;
use crate::protect::bucket::TokenBucket;
use crate::protect::budget::RetryBudget;
use crate::protect::limiter::RateLimiter;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The shared state of a named partition: every function written with the same
/// `partition = "..."` uses the same bucket and (in adaptive mode) the same rate limiter.
///
/// ```
/// use retry_runtime::Partition;
///
/// let billing = Partition::named("billing");
/// assert_eq!(billing.name(), "billing");
/// assert_eq!(billing.bucket().available(), 500);
/// assert!(std::ptr::eq(billing, Partition::named("billing")));
/// ```
#[derive(Debug)]
pub struct Partition {
    name: &'static str,
    pub(crate) bucket: TokenBucket,
    pub(crate) limiter: RateLimiter,
    /// The budget its functions share when they write `budget = "N%"`: the first to resolve
    /// sets the share.
    pub(crate) budget: OnceLock<RetryBudget>,
    /// The breaker its functions share when they write `breaker = "N%"`: the first to
    /// resolve sets the ratio.
    pub(crate) breaker: OnceLock<CircuitBreaker>,
}

static PARTITIONS: Mutex<Vec<&'static Partition>> = Mutex::new(Vec::new());

impl Partition {
    /// The partition called `name`, created (with a standard bucket and an adaptive limiter)
    /// the first time any function or caller names it. It lives for the rest of the process.
    #[must_use]
    pub fn named(name: &str) -> &'static Partition {
        // The list is only pushed to under the lock and never left half-written, so a panic
        // elsewhere while it was held cannot make it inconsistent.
        let mut all = PARTITIONS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = all.iter().find(|p| p.name == name) {
            return p;
        }
        let p: &'static Partition = Box::leak(Box::new(Partition {
            name: Box::leak(name.into()),
            bucket: TokenBucket::standard(),
            limiter: RateLimiter::adaptive(),
            budget: OnceLock::new(),
            breaker: OnceLock::new(),
        }));
        all.push(p);
        p
    }

    /// Every named partition created so far, for metrics.
    #[must_use]
    pub fn all() -> Vec<&'static Partition> {
        PARTITIONS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The retry budget the partition's functions share (`budget = "N%"`), once one of them
    /// has run: made with the share of the first to run (a function that writes another warns
    /// once, and uses this one).
    #[must_use]
    pub fn retry_budget(&self) -> Option<&RetryBudget> {
        self.budget.get()
    }

    /// The circuit breaker the partition's functions share (`breaker = "N%"`), once one of
    /// them has run: made with the failure ratio of the first to run (a function that writes
    /// another warns once, and uses this one).
    #[must_use]
    pub fn circuit_breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.get()
    }

    /// The partition's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The partition's retry token bucket.
    #[must_use]
    pub fn bucket(&self) -> &TokenBucket {
        &self.bucket
    }

    /// The partition's client rate limiter (used by functions in adaptive mode).
    #[must_use]
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.limiter
    }
}
