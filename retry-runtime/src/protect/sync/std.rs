//! The standard library's primitives.

pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
}

pub(crate) use std::sync::{Mutex, MutexGuard, PoisonError};
