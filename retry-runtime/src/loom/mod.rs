//! The synchronisation primitives the lock-free retry bucket and the rate limiter are built on,
//! named in one place, as tokio's `src/loom/` does: the standard library's in every build but
//! the model-checking one (`--cfg retry_loom`), where loom's take their place and the models in
//! [`models`] explore every interleaving of the code users run.
//!
//! ```text
//! RUSTFLAGS="--cfg retry_loom" cargo test -p retry-runtime --lib --release loom
//! ```

#[cfg(not(retry_loom))]
mod std;
#[cfg(not(retry_loom))]
pub(crate) use self::std::*;

#[cfg(retry_loom)]
mod mocked;
#[cfg(retry_loom)]
pub(crate) use self::mocked::*;

#[cfg(all(test, retry_loom))]
mod models;
