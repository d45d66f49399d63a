//! A hedged function's settings (`hedge_after`, `max_in_flight`, `min_hedge_after`,
//! `max_hedge_after`): when the call starts another copy of an attempt that has not answered.
//!
//! A fixed delay is the attribute's duration. A percentile (`"p95"`) follows the function's
//! own latency: the quantile of its recent successful attempts ([`Latency`]), kept within
//! `[min_hedge_after, max_hedge_after]`. Until the estimate has enough samples the delay is
//! `max_hedge_after`: a function hedges late until it knows its tail ("The Tail at Scale",
//! Dean and Barroso, CACM 2013, defers the hedge to the 95th-percentile expected latency).
//!
//! The keys are resolved with the others (the environment and the config file may set them
//! for a function whose attribute writes `hedge_after`); `Hedge` is what a call reads.

pub(crate) mod latency;

use crate::spec::{HedgeSpec, Keys};
pub use latency::Latency;
use std::time::Duration;

/// What a hedged call reads: its resolved keys (borrowed, so that finding out whether a call
/// hedges costs a look at one field), and for a percentile the estimate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hedge<'a> {
    keys: &'a Keys,
    spec: HedgeSpec,
    latency: Option<&'a Latency>,
}

impl<'a> Hedge<'a> {
    /// The hedging of `keys`, if they hedge; a percentile estimates with `latency`.
    #[inline]
    pub(crate) fn of(keys: &'a Keys, latency: Option<&'a Latency>) -> Option<Hedge<'a>> {
        let spec = keys.hedge_after?;
        Some(Hedge {
            keys,
            spec,
            latency,
        })
    }

    /// At most this many attempts of a call at once.
    #[inline]
    pub(crate) fn max_in_flight(&self) -> u32 {
        self.keys.max_in_flight
    }

    /// How long after an attempt starts the next hedge starts.
    #[inline]
    pub(crate) fn delay(&self) -> Duration {
        let (min, max) = (self.keys.min_hedge_after, self.keys.max_hedge_after);
        match (self.spec, self.latency) {
            (HedgeSpec::Fixed(d), _) => d,
            (HedgeSpec::Percentile(p), Some(latency)) => match latency.quantile_cached(p) {
                Some(d) => d.clamp(min, max.max(min)),
                None => max,
            },
            (HedgeSpec::Percentile(_), None) => max,
        }
    }

    /// The estimate a successful attempt's latency goes into, for a percentile.
    #[inline]
    pub(crate) fn latency(&self) -> Option<&'a Latency> {
        match self.spec {
            HedgeSpec::Fixed(_) => None,
            HedgeSpec::Percentile(_) => self.latency,
        }
    }
}
