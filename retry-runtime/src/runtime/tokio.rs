//! tokio's clock and timers, as they are: re-exports, so that the engine compiles to what it
//! did before it had a seam.

pub use ::tokio::time::error::Elapsed;
pub use ::tokio::time::{Instant, Sleep, Timeout, sleep, sleep_until, timeout_at};

/// `instant` on `std`'s clock: what `tokio::time::Instant::into_std` gives (under a paused
/// clock, the paused instant's place on `std`'s).
#[must_use]
pub fn to_public(instant: Instant) -> std::time::Instant {
    instant.into_std()
}
