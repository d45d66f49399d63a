//! What the lock-free retry bucket and the rate limiter are built on (atomics, the limiter's
//! mutex, the limiter's clock), named in one place so that the workspace's model-checking tests
//! (`tests/reliability_loom.rs`, `tests/reliability_loom_limiter.rs`) can compile `bucket.rs` and
//! `limiter.rs` against loom's primitives and a clock the model controls instead.

pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
}

pub(crate) use std::sync::{Mutex, MutexGuard, PoisonError};

/// The rate limiter's clock: tokio's, so paused test time works.
#[inline]
pub(crate) fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}
