//! The runtime's one reading of time: tokio's clock (so paused test time works), measured from
//! a process-wide epoch so shared state can keep instants in atomics.

use std::sync::OnceLock;
use tokio::time::Instant;

fn epoch(now: Instant) -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(|| now)
}

/// Nanoseconds from the epoch to `now` (0 for instants before it).
pub(crate) fn nanos_since_epoch(now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(epoch(now)).as_nanos()).unwrap_or(u64::MAX)
}
