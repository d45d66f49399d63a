//! The engine's seam to the world around a call: how many attempts it may make, whether it
//! really waits, where its randomness comes from, and who hears what it decided.
//!
//! Outside any scope the answers are the real ones (the function's own `max_attempts`, real
//! sleeps, the thread's generator, nobody listening beyond tracing). A scope installs another
//! [`Ambient`] for one task, the way governor takes a `Clock` and backon a `Sleeper`: the
//! [`testing`](crate::testing) module is one user of this seam, and the engine knows nothing of
//! it. Time itself is not here: the engine reads tokio's clock (which tests pause) once per
//! step and passes the instant to the shared state, which never reads a clock of its own.

use crate::observe::{EndedEarly, Retried};
use rand::Rng;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a scope may change about the retry loops it polls. Every method has the real world's
/// answer as its default.
pub(crate) trait Ambient: Send + Sync {
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
}

/// The world as it is.
struct Real;

impl Ambient for Real {}

tokio::task_local! {
    static SCOPE: Arc<dyn Ambient>;
}

/// Whether any scope was ever entered in this process: until one is, nothing is looked up.
static EVER_SCOPED: AtomicBool = AtomicBool::new(false);

/// Runs `f` with the current task's ambient (the real one outside any scope).
#[inline]
pub(crate) fn with<T>(f: impl FnOnce(&dyn Ambient) -> T) -> T {
    if !EVER_SCOPED.load(Ordering::Acquire) {
        return f(&Real);
    }
    let mut f = Some(f);
    match SCOPE.try_with(|a| (f.take().expect("called once"))(&**a)) {
        Ok(out) => out,
        Err(_) => (f.take().expect("not called"))(&Real),
    }
}

/// Draws with the ambient's generator, or the thread's.
pub(crate) fn draw<T>(ambient: &dyn Ambient, mut f: impl FnMut(&mut dyn Rng) -> T) -> T {
    let mut out = None;
    if !ambient.with_rng(&mut |rng| out = Some(f(rng))) {
        out = Some(f(&mut rand::rng()));
    }
    out.expect("drawn above")
}

/// Runs `fut` with `ambient` for every retry loop it polls.
pub(crate) async fn scope<F: Future>(ambient: Arc<dyn Ambient>, fut: F) -> F::Output {
    EVER_SCOPED.store(true, Ordering::Release);
    SCOPE.scope(ambient, fut).await
}

/// Runs `f` with `ambient` for every retry loop it polls (for a closure that drives futures
/// itself, such as `Runtime::block_on`).
pub(crate) fn sync_scope<T>(ambient: Arc<dyn Ambient>, f: impl FnOnce() -> T) -> T {
    EVER_SCOPED.store(true, Ordering::Release);
    SCOPE.sync_scope(ambient, f)
}
