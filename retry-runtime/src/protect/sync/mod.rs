//! The synchronisation primitives the lock-free retry bucket and the rate limiter are built on,
//! named in one place, as tokio's `src/loom/` does: the standard library's in every build but
//! the model-checking one (`--cfg retry_loom`), where loom's take their place and the models in
//! `protect::models` explore every interleaving of the code users run.
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

/// What the loom models of the shared state share (the model-checking build's tests):
///
/// ```text
/// RUSTFLAGS="--cfg retry_loom" cargo test -p retry-runtime --lib --release loom
/// ```
///
/// Loom explores every interleaving of the threads of a model, with the memory orderings the
/// code asks for (acquire/release, and in part relaxed accesses). Time is passed in, so every
/// interleaving of a model sees the same instants. Each primitive's models are in its own
/// module's `loom` tests.
#[cfg(all(test, retry_loom))]
pub(crate) mod check {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Runs `f` under loom, every interleaving; returns how many interleavings loom explored.
    pub(crate) fn model<F: Fn() + Sync + Send + 'static>(f: F) -> usize {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        loom::model(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            f();
        });
        runs.load(Ordering::Relaxed)
    }

    pub(crate) fn report(name: &str, runs: usize) {
        eprintln!("{name}: {runs} interleavings explored");
        assert!(runs > 1, "loom explored more than one interleaving");
    }

    /// Runs each closure on its own loom thread and returns their results in order.
    pub(crate) fn concurrently<T: Send + 'static>(
        fs: Vec<Box<dyn FnOnce() -> T + Send>>,
    ) -> Vec<T> {
        let handles: Vec<_> = fs.into_iter().map(loom::thread::spawn).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }
}
