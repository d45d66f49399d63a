//! The atomics the lock-free retry bucket is built on, named in one place so that the
//! workspace's model-checking test (`tests/reliability_loom.rs`) can compile `bucket.rs`
//! against loom's instead.

pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}
