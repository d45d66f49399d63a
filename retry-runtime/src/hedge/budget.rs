//! A hedge budget (`hedge_budget = "2%"`): the hedge delay a function's calls use rises above
//! `hedge_after`'s as far as it takes for about that share of the calls to send a hedge.
//!
//! Hedging at a percentile of the latency of the attempts that succeeded sends more hedges
//! than the percentile says: a call whose hedge won records the hedge's latency, not its first
//! attempt's, so the slow first attempts are the ones the estimate never sees. Whether a call
//! sent a hedge is seen for every call, slow or not: its first attempt outlived the delay. So
//! the budget does not estimate a latency; it steers the delay by that count, as a stochastic
//! approximation of the quantile the budget names (Robbins and Monro, 1951): each call takes
//! the delay down by a factor `1 - step x aim`, each hedge takes it up by `1 + step`. The
//! delay stands still where hedges are `aim` of the calls, whatever the latency's shape, and
//! follows the latency as it moves.
//!
//! * **Aim.** 95 % of the budget: the delay moves with each call, and aiming a little below the
//!   budget keeps the share sent within it.
//! * **Step.** `max(0.001, 0.1 / sqrt(1 + calls x aim))`: large while the budget has seen
//!   few calls (from `hedge_after`'s delay it reaches the budget's within about a hundred
//!   hedges' worth of calls), then small, so that the delay does not wander with each burst
//!   of hedges (the square root of the expected hedges, as the step of a stochastic
//!   approximation decays).
//! * **Bounds.** Never below `hedge_after`'s delay (a budget only delays hedges: the
//!   percentile or the fixed delay still holds when it hedges less than the budget) nor above
//!   `max_hedge_after`. Kept within them at each step, so that no count piles up against a
//!   bound while the other rules.
//! * **Start.** The first call with a delay to start from (a fixed `hedge_after`, or a
//!   percentile whose estimate answers) starts the budget's delay there.
//!
//! The delay is kept as the bits of an `f64` number of seconds in one `AtomicU64`, updated by
//! compare-and-swap; the calls counted in another. Relaxed: the delay is an estimate, and a
//! concurrent update is applied to the other's result, never lost.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The share of the budget the delay aims at.
const AIM: f64 = 0.95;

/// The step while the budget has seen no call, and the smallest it gets.
const STEP_START: f64 = 0.1;
const STEP_MIN: f64 = 0.001;

/// A hedged function's budget: its delay and the calls it has counted. Built by `const fn`,
/// it lives beside the function's latency estimate.
pub(crate) struct Spend {
    /// The delay, as the bits of an `f64` of seconds; 0 until the first call starts it.
    delay: AtomicU64,
    /// Calls counted.
    calls: AtomicU64,
}

impl Spend {
    pub(crate) const fn new() -> Spend {
        Spend {
            delay: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// The delay in effect for a budget of `share`, with `hedge_after`'s delay `base` and the
    /// bound `max`: the budget's, within `[base, max]`; `base` before the first call.
    pub(crate) fn delay(&self, base: Duration, max: Duration) -> Duration {
        match self.delay.load(Relaxed) {
            0 => base,
            bits => within(f64::from_bits(bits), base, max),
        }
    }

    /// The delay as steered, before any bound; `None` before the first call.
    pub(crate) fn raw(&self) -> Option<Duration> {
        match self.delay.load(Relaxed) {
            0 => None,
            bits => Duration::try_from_secs_f64(f64::from_bits(bits)).ok(),
        }
    }

    /// A call starts under a budget of `share`: the delay comes down by `1 - step x aim`
    /// (started at `base` by the first).
    pub(crate) fn call(&self, share: f64, base: Duration, max: Duration) {
        let aim = AIM * share;
        let calls = self.calls.fetch_add(1, Relaxed);
        let step = step(calls, aim);
        self.update(base, max, |d| d * (1.0 - step * aim));
    }

    /// A call sent a hedge (its first attempt outlived the delay): the delay goes up by
    /// `1 + step`.
    pub(crate) fn hedged(&self, share: f64, base: Duration, max: Duration) {
        let step = step(self.calls.load(Relaxed), AIM * share);
        self.update(base, max, |d| d * (1.0 + step));
    }

    fn update(&self, base: Duration, max: Duration, f: impl Fn(f64) -> f64) {
        let _ = self.delay.fetch_update(Relaxed, Relaxed, |bits| {
            let d = match bits {
                0 => base.as_secs_f64(),
                bits => f64::from_bits(bits),
            };
            let next = within(f(d), base, max).as_secs_f64();
            // 0 means "not started": a delay of zero is kept as the smallest above it.
            Some(next.max(f64::MIN_POSITIVE).to_bits())
        });
    }
}

/// The step after `calls` calls at an aim of `aim`.
fn step(calls: u64, aim: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // a count; far below 2^53 in any process's life
    let hedges = calls as f64 * aim;
    (STEP_START / (1.0 + hedges).sqrt()).max(STEP_MIN)
}

/// `secs` as a delay within `[base, max]` (`base` when `max` is below it; a delay that is not
/// finite is `max`).
fn within(secs: f64, base: Duration, max: Duration) -> Duration {
    let d = if secs.is_finite() && secs >= 0.0 {
        Duration::try_from_secs_f64(secs).unwrap_or(max)
    } else {
        max
    };
    d.min(max).max(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// Calls whose first attempts take a latency drawn from `draw`, each hedged when it
    /// outlives the budget's delay: the share of calls hedged over the last `counted`.
    fn run(
        spend: &Spend,
        share: f64,
        base: Duration,
        calls: u64,
        counted: u64,
        mut draw: impl FnMut() -> Duration,
    ) -> f64 {
        let mut hedged = 0;
        for i in 0..calls {
            spend.call(share, base, Duration::from_secs(1));
            if draw() > spend.delay(base, Duration::from_secs(1)) {
                spend.hedged(share, base, Duration::from_secs(1));
                if i >= calls - counted {
                    hedged += 1;
                }
            }
        }
        f64::from(hedged) / counted as f64
    }

    /// The Tail at Scale's shape: 99 % of calls log-normal around 8 ms, 1 % about 125 times
    /// slower. A percentile of this at the p95 hedges 5 %; a budget of 2 % sends about 1.9 %.
    fn tail(rng: &mut StdRng) -> Duration {
        let normal: f64 = {
            // Box-Muller from two uniforms.
            let (u, v): (f64, f64) = (rng.random(), rng.random());
            (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let quick = 0.008 * (0.25 * normal).exp();
        let slow = if rng.random::<f64>() < 0.01 {
            125.0
        } else {
            1.0
        };
        Duration::from_secs_f64(quick * slow)
    }

    #[test]
    fn a_budget_holds_the_share_hedged_just_below_it() {
        for share in [0.02, 0.05, 0.2] {
            let spend = Spend::new();
            let mut rng = StdRng::seed_from_u64(7);
            let hedged = run(&spend, share, MS(1), 200_000, 100_000, || tail(&mut rng));
            assert!(
                hedged <= share && hedged >= 0.9 * share,
                "a budget of {share}: {hedged} of the calls hedged"
            );
        }
    }

    #[test]
    fn the_delay_follows_a_slowdown_and_never_goes_below_hedge_after() {
        let spend = Spend::new();
        let mut rng = StdRng::seed_from_u64(11);
        run(&spend, 0.02, MS(1), 50_000, 1, || tail(&mut rng));
        let before = spend.delay(MS(1), Duration::from_secs(1));
        // Every latency doubles: the delay doubles with it, about.
        let hedged = run(&spend, 0.02, MS(1), 50_000, 25_000, || 2 * tail(&mut rng));
        let after = spend.delay(MS(1), Duration::from_secs(1));
        let ratio = after.as_secs_f64() / before.as_secs_f64();
        assert!((1.6..2.5).contains(&ratio), "{before:?} to {after:?}");
        assert!(hedged <= 0.02, "{hedged}");
        // A base above the budget's delay: the base rules, and the budget's delay rises no
        // further than its bound.
        assert_eq!(spend.delay(MS(500), Duration::from_secs(1)), MS(500));
        assert_eq!(spend.delay(MS(1), MS(2)), MS(2));
    }

    #[test]
    fn the_first_call_starts_at_hedge_after_and_odd_delays_stay_within_bounds() {
        let spend = Spend::new();
        assert_eq!(spend.delay(MS(16), Duration::from_secs(1)), MS(16));
        spend.call(0.02, MS(16), Duration::from_secs(1));
        assert_eq!(
            spend.delay(MS(16), Duration::from_secs(1)),
            MS(16),
            "floored at base"
        );
        spend.hedged(0.02, MS(16), Duration::from_secs(1));
        let up = spend.delay(MS(16), Duration::from_secs(1));
        assert!(up > MS(16) && up < MS(18), "{up:?}");
        // A zero base, a zero bound and a huge one do not panic or leave the bounds.
        let spend = Spend::new();
        for _ in 0..1000 {
            spend.call(1.0, Duration::ZERO, Duration::ZERO);
            spend.hedged(1.0, Duration::ZERO, Duration::MAX);
        }
        assert!(spend.delay(Duration::ZERO, Duration::MAX) < Duration::MAX);
        assert_eq!(spend.delay(Duration::ZERO, Duration::ZERO), Duration::ZERO);
    }
}
