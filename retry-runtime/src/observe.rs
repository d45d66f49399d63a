//! What the retry loop reports: tracing events (with the `tracing` feature), and the same
//! decisions, as values, to the call's ambient (which a `testing::record` scope keeps).
//!
//! Events have the target `retry`:
//!
//! | level | when | fields |
//! |---|---|---|
//! | DEBUG | an attempt failed and the call sleeps before the next | `function`, `partition`, `attempt`, `class`, `delay_ms`, `tokens` (the retry bucket's level after this retry's cost), and in adaptive mode `fill_rate` (send tokens per second) |
//! | WARN | the call gives up before `max_attempts` | the same but `delay_ms`, and `reason`: `retry token bucket empty`, `deadline reached`, `not idempotent`, `server retry hint longer than max_backoff` |

use crate::ambient::Env;
use crate::classify::ErrorClass;
use crate::partition::Site;
#[cfg(feature = "tracing")]
use crate::policy::Mode;
use crate::report::{EndedEarly, Retried};
use std::time::Duration;

/// A retry is about to sleep: attempt `attempt` failed with `class` (`Transient` for a polling
/// repeat) and the call waits `delay`.
pub(crate) fn retrying(site: &Site, env: &Env, attempt: u32, class: ErrorClass, delay: Duration) {
    if env.is_scoped() {
        env.retried(&Retried {
            function: site.name,
            partition: site.partition_name(),
            attempt,
            class,
            delay,
        });
    }
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::DEBUG) {
        let function = site.name;
        let (partition, tokens, fill_rate) = levels(site);
        let class = class.as_str();
        let delay_ms = delay.as_secs_f64() * 1000.0;
        tracing::debug!(
            target: "retry",
            function, partition, attempt, class, delay_ms, tokens, fill_rate,
            "attempt failed, retrying",
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (site, attempt, class, delay);
}

/// Retries ended early; the caller gets the last result.
pub(crate) fn ended_early(site: &Site, env: &Env, end: EndedEarly) {
    env.ended_early(&end);
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::WARN) {
        let EndedEarly {
            function, attempt, ..
        } = end;
        let (partition, tokens, fill_rate) = levels(site);
        let class = end.class.map_or("none", ErrorClass::as_str);
        let reason = end.reason.as_str();
        tracing::warn!(
            target: "retry",
            function, partition, attempt, class, reason, tokens, fill_rate,
            "giving up before max_attempts",
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = site;
}

/// The partition (empty for none), the bucket's level, and in adaptive mode the limiter's fill
/// rate (a field left out of the event otherwise).
#[cfg(feature = "tracing")]
fn levels(site: &Site) -> (&'static str, u32, Option<f64>) {
    let fill_rate = (site.settings().mode == Mode::Adaptive).then(|| site.limiter().fill_rate());
    (
        site.partition_name().unwrap_or(""),
        site.token_bucket().available(),
        fill_rate,
    )
}
