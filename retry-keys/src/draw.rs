//! What a `Jitter` does to a computed backoff: the draws of each kind, in whole nanoseconds.
//! Generic over the generator, so the engine's instances are compiled where it draws.

use crate::value::Jitter;
use rand::{Rng, RngExt};
use std::time::Duration;

impl Jitter {
    /// The delay this jitter draws from the computed backoff `d`. Decorrelated jitter draws
    /// from its own range ([`Jitter::decorrelated`]), so here it leaves `d` as it is, like
    /// [`Jitter::None`].
    pub fn apply<R: Rng + ?Sized>(self, d: Duration, rng: &mut R) -> Duration {
        let d_ns = nanos(d);
        let ns = match self {
            Jitter::None | Jitter::Decorrelated => d_ns,
            Jitter::Full => rng.random_range(0..=d_ns),
            Jitter::Equal => {
                let half = d_ns / 2;
                // d/2 + U[0, d - d/2] keeps the upper bound at d exactly for odd d.
                half + rng.random_range(0..=d_ns - half)
            }
            Jitter::Fraction(j) => {
                let u: f64 = rng.random();
                let cut = (d_ns as f64 * j.clamp(0.0, 1.0) * u).floor();
                d_ns - (cut as u64).min(d_ns)
            }
        };
        Duration::from_nanos(ns)
    }

    /// Decorrelated jitter's delay: `min(max_backoff, U[initial_backoff, 3 * previous])`.
    pub fn decorrelated<R: Rng + ?Sized>(
        (initial, max): (Duration, Duration),
        previous: Duration,
        rng: &mut R,
    ) -> Duration {
        let lo = nanos(initial);
        let hi = nanos(previous).saturating_mul(3).max(lo);
        let ns = rng.random_range(lo..=hi);
        Duration::from_nanos(ns.min(nanos(max)))
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (584 years).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(retry_keys::nanos(Duration::from_millis(3)), 3_000_000);
/// assert_eq!(retry_keys::nanos(Duration::MAX), u64::MAX);
/// ```
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
