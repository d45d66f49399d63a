//! A hedged function's settings (`hedge_after`, `max_in_flight`, `min_hedge_after`,
//! `max_hedge_after`): when the call starts another copy of an attempt that has not answered.
//!
//! A fixed delay is the attribute's duration. A percentile (`"p95"`) follows the function's
//! own latency: the quantile of its recent successful attempts ([`Latency`]), kept within
//! `[min_hedge_after, max_hedge_after]`. Until the estimate has enough samples the delay is
//! `max_hedge_after`: a function hedges late until it knows its tail ("The Tail at Scale",
//! Dean and Barroso, CACM 2013, defers the hedge to the 95th-percentile expected latency).

pub use crate::latency::Latency;
use std::time::Duration;

/// The default of `max_in_flight`: the attempt and one hedge.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 2;
/// The default of `min_hedge_after` (a percentile's lower bound).
pub const DEFAULT_MIN_HEDGE_AFTER: Duration = Duration::from_millis(1);
/// The default of `max_hedge_after` (a percentile's upper bound, and its delay until the
/// estimate has enough samples).
pub const DEFAULT_MAX_HEDGE_AFTER: Duration = Duration::from_secs(1);

/// When a hedge starts after the attempt before it.
#[derive(Clone, Copy, Debug)]
pub enum HedgeAfter {
    /// A fixed delay.
    Fixed(Duration),
    /// The function's own latency at this percentile (50, 90, 95 or 99), estimated by the
    /// `Latency` the function keeps.
    Percentile(u8, &'static Latency),
}

/// A hedged function's settings.
#[derive(Clone, Copy, Debug)]
pub struct Hedging {
    pub(crate) after: HedgeAfter,
    pub(crate) max_in_flight: u32,
    pub(crate) min: Duration,
    pub(crate) max: Duration,
}

impl Hedging {
    /// Hedges after `after`, with at most [`DEFAULT_MAX_IN_FLIGHT`] attempts at once.
    #[must_use]
    pub const fn new(after: HedgeAfter) -> Hedging {
        Hedging {
            after,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            min: DEFAULT_MIN_HEDGE_AFTER,
            max: DEFAULT_MAX_HEDGE_AFTER,
        }
    }

    /// The same settings with another delay.
    #[must_use]
    pub const fn after(mut self, after: HedgeAfter) -> Hedging {
        self.after = after;
        self
    }

    /// At most `n` attempts of one call at once (the first included).
    #[must_use]
    pub const fn max_in_flight(mut self, n: u32) -> Hedging {
        self.max_in_flight = n;
        self
    }

    /// A percentile's delay is never shorter than `d`.
    #[must_use]
    pub const fn min_hedge_after(mut self, d: Duration) -> Hedging {
        self.min = d;
        self
    }

    /// A percentile's delay is never longer than `d`, and is `d` until the estimate has
    /// enough samples.
    #[must_use]
    pub const fn max_hedge_after(mut self, d: Duration) -> Hedging {
        self.max = d;
        self
    }

    /// How long after an attempt starts the next hedge starts.
    #[inline]
    pub(crate) fn delay(&self) -> Duration {
        match self.after {
            HedgeAfter::Fixed(d) => d,
            HedgeAfter::Percentile(p, latency) => match latency.quantile_cached(p) {
                Some(d) => d.clamp(self.min, self.max.max(self.min)),
                None => self.max,
            },
        }
    }

    /// The estimate a successful attempt's latency goes into, for a percentile.
    #[inline]
    pub(crate) fn latency(&self) -> Option<&'static Latency> {
        match self.after {
            HedgeAfter::Fixed(_) => None,
            HedgeAfter::Percentile(_, latency) => Some(latency),
        }
    }
}
