//! The engine's seam to the world around a call: how many attempts it may make, whether it
//! really waits, where its randomness comes from, and who hears what it decided.
//!
//! Outside any scope the answers are the real ones (the function's own `max_attempts`, real
//! sleeps, the thread's generator, nobody listening beyond tracing). A scope installs another
//! [`Scope`] for one task, the way governor takes a `Clock` and backon a `Sleeper`: the
//! public `testing` module is one user of this seam, and the engine knows nothing of it. Time itself is not here: the engine reads the runtime's clock
//! (`runtime::Instant`: tokio's, which tests pause, or `std`'s) once per step and passes the
//! instant to the shared state, which never reads a clock of its own.

use crate::observe::Listener;
use crate::observe::report::{EndedEarly, Hedged, Retried};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, RngExt, SeedableRng, TryRng};
use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a scope may change about the retry loops it polls. Every method has the real world's
/// answer as its default.
pub(crate) trait Scope: Send + Sync {
    /// The attempts a call may make, given the function's own `max_attempts`.
    fn max_attempts(&self, configured: u32) -> u32 {
        configured
    }

    /// Whether waits are skipped: a retry's delay is computed and reported but not slept (and
    /// counts as zero against the deadline), and send tokens are taken without waiting.
    fn skips_waits(&self) -> bool {
        false
    }

    /// Runs `draw` with the scope's own generator and returns `true`, or returns `false` to
    /// let the engine draw from the thread's generator.
    fn with_rng(&self, draw: &mut dyn FnMut(&mut dyn Rng)) -> bool {
        let _ = draw;
        false
    }

    /// A retry was decided.
    fn retried(&self, retry: &Retried) {
        let _ = retry;
    }

    /// A call gave up before `max_attempts`.
    fn ended_early(&self, end: &EndedEarly) {
        let _ = end;
    }

    /// A hedged call started another attempt.
    fn hedged(&self, hedge: &Hedged) {
        let _ = hedge;
    }
}

/// The current task's ambient as the engine reads it: the scope's, or the real world's
/// answers (without a call through the trait) outside any scope.
pub(crate) struct Around(Option<Arc<dyn Scope>>);

impl Around {
    /// Whether a scope is in effect.
    pub(crate) fn is_scoped(&self) -> bool {
        self.0.is_some()
    }

    /// See [`Scope::max_attempts`].
    #[inline]
    pub(crate) fn max_attempts(&self, configured: u32) -> u32 {
        match &self.0 {
            Some(a) => a.max_attempts(configured),
            None => configured,
        }
    }

    /// See [`Scope::skips_waits`].
    pub(crate) fn skips_waits(&self) -> bool {
        self.0.as_ref().is_some_and(|a| a.skips_waits())
    }

    /// Draws with the scope's generator, or the thread's.
    pub(crate) fn draw<T>(&self, f: impl FnOnce(&mut dyn Rng) -> T) -> T {
        let Some(a) = &self.0 else {
            return f(&mut thread_rng());
        };
        let mut f = Some(f);
        let mut out = None;
        if !a.with_rng(&mut |rng| out = f.take().map(|f| f(rng))) {
            out = f.take().map(|f| f(&mut thread_rng()));
        }
        out.expect("drawn above")
    }

    /// A draw from `U[0, 1)`, with the scope's generator or the thread's.
    pub(crate) fn uniform(&self) -> f64 {
        self.draw(|rng| rng.random::<f64>())
    }
}

impl Listener for Around {
    fn is_scoped(&self) -> bool {
        Around::is_scoped(self)
    }

    fn retried(&self, retry: &Retried) {
        if let Some(a) = &self.0 {
            a.retried(retry);
        }
    }

    fn ended_early(&self, end: &EndedEarly) {
        if let Some(a) = &self.0 {
            a.ended_early(end);
        }
    }

    fn hedged(&self, hedge: &Hedged) {
        if let Some(a) = &self.0 {
            a.hedged(hedge);
        }
    }
}

/// The thread's generator: what a call draws from outside a seeded scope (jitter, the adaptive
/// limiter's spread, invocation ids). One xoshiro256++ (rand's, with no feature to turn on) per
/// thread, seeded when the thread first draws, from the standard library's `RandomState`: the
/// random keys `HashMap` is seeded with, so that no crate of system randomness is compiled for
/// it. On `wasm32-unknown-unknown`, whose `std` has no entropy for `RandomState`, from the JS
/// host's `Math.random()` instead (`runtime/wasm.rs`): nothing for a user to configure, no
/// `getrandom` backend to choose. Nothing here needs a cryptographic secret: jitter spreads
/// retries, an invocation id tells one call's attempts from another's. Nor a stream fixed in
/// advance, as a seeded scope's is (`chacha.rs`): the seed is new on every run, so a small
/// generator of good statistical quality serves, a few instructions a word where a ChaCha12
/// block costs several hundred for its sixteen.
pub(crate) fn thread_rng() -> ThreadRng {
    ThreadRng(())
}

/// A handle on the thread's generator (see [`thread_rng`]).
pub(crate) struct ThreadRng(());

thread_local! {
    static THREAD_RNG: RefCell<Xoshiro256PlusPlus> =
        RefCell::new(Xoshiro256PlusPlus::from_seed(seed()));
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
use crate::runtime::seed;

/// 256 bits for a thread's generator: four SipHash outputs under the thread's random keys.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn seed() -> [u8; 32] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut seed = [0; 32];
    for (i, chunk) in seed.chunks_exact_mut(8).enumerate() {
        // Each `RandomState::new()` has keys of its own.
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_usize(i);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    seed
}

impl TryRng for ThreadRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(THREAD_RNG.with(|rng| rng.borrow_mut().next_u32()))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(THREAD_RNG.with(|rng| rng.borrow_mut().next_u64()))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        THREAD_RNG.with(|rng| rng.borrow_mut().fill_bytes(dst));
        Ok(())
    }
}

// The scope follows the task: tokio's task-local under tokio, the seam's own otherwise (the
// same steps: set while the future is polled, taken back after).
#[cfg(all(
    feature = "tokio",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
tokio::task_local! {
    static CURRENT: Arc<dyn Scope>;
}
#[cfg(any(
    not(feature = "tokio"),
    all(target_arch = "wasm32", target_os = "unknown")
))]
crate::runtime::local::task_local! {
    static CURRENT: Arc<dyn Scope>;
}

/// Whether any scope was ever entered in this process: until one is, nothing is looked up.
static EVER_SCOPED: AtomicBool = AtomicBool::new(false);

/// The current task's ambient.
pub(crate) fn around() -> Around {
    if !EVER_SCOPED.load(Ordering::Acquire) {
        return Around(None);
    }
    Around(CURRENT.try_with(Arc::clone).ok())
}

/// Runs `fut` with `ambient` for every retry loop it polls.
pub(crate) async fn enter<F: Future>(ambient: Arc<dyn Scope>, fut: F) -> F::Output {
    EVER_SCOPED.store(true, Ordering::Release);
    CURRENT.scope(ambient, fut).await
}

/// Runs `f` with `ambient` for every retry loop it polls (for a closure that drives futures
/// itself, such as `Runtime::block_on`).
pub(crate) fn enter_sync<T>(ambient: Arc<dyn Scope>, f: impl FnOnce() -> T) -> T {
    EVER_SCOPED.store(true, Ordering::Release);
    CURRENT.sync_scope(ambient, f)
}

#[cfg(test)]
mod tests {
    use super::thread_rng;
    use rand::RngExt;

    #[test]
    fn each_thread_draws_a_sequence_of_its_own() {
        let draws = || {
            (0..4)
                .map(|_| thread_rng().random::<u64>())
                .collect::<Vec<_>>()
        };
        let here = draws();
        let there = std::thread::spawn(draws).join().unwrap();
        assert_ne!(here, there);
        assert_ne!(here[0], here[1]);
        // The same thread goes on with its sequence: no draw repeats.
        assert!(draws().iter().all(|d| !here.contains(d)));
    }
}
