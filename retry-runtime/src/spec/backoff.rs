//! The delay before retry `n + 1`: exponential growth in whole nanoseconds, which the engine
//! then jitters with `retry_keys`' draws (`Jitter::apply`, `Jitter::decorrelated`). The same
//! growth gives the attempt timeouts (`attempt_timeout_multiplier`).

use retry_keys::nanos;
use std::time::Duration;

/// `min(base * factor^(n-1), cap)` in whole nanoseconds. Powers of an integral factor are
/// computed exactly in integers; other factors in `f64`, rounded to the nearest nanosecond, so
/// `200ms * 2` is exactly 400 ms (tokio rounds timers up to the millisecond, so a stray
/// nanosecond would show up as 401 ms).
pub(crate) fn grow(base: Duration, factor: f64, n: u32, cap: Duration) -> Duration {
    // The first attempt, or no growth: nothing to compute.
    if n <= 1 || factor <= 1.0 {
        return base.min(cap);
    }
    grow_slow(base, factor, n, cap)
}

fn grow_slow(base: Duration, factor: f64, n: u32, cap: Duration) -> Duration {
    let cap_ns = nanos(cap);
    let base_ns = nanos(base);
    let steps = n.saturating_sub(1);
    if base_ns >= cap_ns {
        return cap;
    }
    if base_ns == 0 || steps == 0 || factor <= 1.0 {
        return Duration::from_nanos(base_ns);
    }
    let ns = if factor.fract() == 0.0 && factor < 4_294_967_296.0 {
        // Exact integer growth, stopping as soon as the cap is reached.
        let f = factor as u64;
        let mut v = base_ns;
        for _ in 0..steps {
            v = v.saturating_mul(f);
            if v >= cap_ns {
                break;
            }
        }
        v
    } else {
        let exp = i32::try_from(steps).unwrap_or(i32::MAX);
        let v = (base_ns as f64) * factor.powi(exp);
        if v.is_finite() && v < cap_ns as f64 {
            v.round() as u64
        } else {
            cap_ns
        }
    };
    Duration::from_nanos(ns.min(cap_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Keys, Settings};
    use rand::Rng;
    use retry_keys::Jitter;

    /// The jittered delay after attempt `n`, as the engine draws it.
    fn delay<R: Rng + ?Sized>(keys: &Keys, n: u32, previous: Duration, rng: &mut R) -> Duration {
        let policy = Settings::of(keys);
        match policy.jitter {
            Jitter::Decorrelated => {
                Jitter::decorrelated((policy.initial_backoff, policy.max_backoff), previous, rng)
            }
            jitter => jitter.apply(policy.backoff_for(n), rng),
        }
    }
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn policy(jitter: Jitter) -> Keys {
        Keys::new()
            .initial_backoff(MS(100))
            .multiplier(2.0)
            .max_backoff(MS(1000))
            .jitter(jitter)
    }

    /// Draws many delays for attempts 1..=6 and checks each against its bounds.
    fn check_bounds(jitter: Jitter, bounds: impl Fn(Duration) -> (Duration, Duration)) {
        let p = policy(jitter);
        let mut rng = StdRng::seed_from_u64(7);
        let (mut seen_lo, mut seen_hi, mut spread) = (false, false, false);
        for n in 1..=6 {
            let d = Settings::of(&p).backoff_for(n);
            let (lo, hi) = bounds(d);
            spread |= lo < hi;
            for _ in 0..2_000 {
                let got = delay(&p, n, MS(100), &mut rng);
                assert!(
                    lo <= got && got <= hi,
                    "{jitter:?} n={n}: {got:?} outside [{lo:?}, {hi:?}]"
                );
                seen_lo |= got < lo + (hi - lo) / 10;
                seen_hi |= got > hi - (hi - lo) / 10;
            }
        }
        if spread {
            assert!(
                seen_lo && seen_hi,
                "{jitter:?} does not spread over its range"
            );
        }
    }

    #[test]
    fn full_jitter_is_uniform_on_zero_to_d() {
        check_bounds(Jitter::Full, |d| (Duration::ZERO, d));
    }

    #[test]
    fn equal_jitter_keeps_half() {
        check_bounds(Jitter::Equal, |d| (d / 2, d));
    }

    #[test]
    fn no_jitter_is_exact() {
        check_bounds(Jitter::None, |d| (d, d));
    }

    #[test]
    fn fractional_jitter_cuts_at_most_the_fraction() {
        check_bounds(Jitter::Fraction(0.25), |d| (d.mul_f64(0.75), d));
        check_bounds(Jitter::Fraction(1.0), |d| (Duration::ZERO, d));
        check_bounds(Jitter::Fraction(0.0), |d| (d, d));
    }

    #[test]
    fn decorrelated_stays_between_initial_and_three_times_previous() {
        let p = policy(Jitter::Decorrelated);
        let mut rng = StdRng::seed_from_u64(11);
        let (initial, max) = p.backoff_bounds();
        let mut prev = initial;
        for _ in 0..10_000 {
            let got = delay(&p, 1, prev, &mut rng);
            let hi = (prev * 3).min(max);
            assert!(
                initial <= got && got <= hi,
                "{got:?} outside [100ms, {hi:?}]"
            );
            prev = got;
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let p = policy(Jitter::Full);
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (1..=5)
                .map(|n| delay(&p, n, MS(100), &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
