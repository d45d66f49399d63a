//! What a call is configured with: the keys of one function or policy ([`Keys`], built by
//! `const fn` so the expansion of `#[retry]` can keep them in a `static`), the backoff they
//! describe ([`backoff`]), and the [`Settings`] in effect once a function's site has resolved
//! its keys against the environment and the config file.
//!
//! The keys' table, the parsers of their values, their defaults and the rules they hold to are
//! `retry_keys`', shared with the attribute macro, so that both accept the same values and say
//! the same things about them.

pub(crate) mod backoff;

use backoff::grow;
use retry_keys::{
    AWS_2026_THROTTLING_BACKOFF, DEFAULT_ATTEMPT_TIMEOUT_MULTIPLIER, DEFAULT_BEHAVIOR,
    DEFAULT_JITTER, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_HEDGE_AFTER, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MIN_HEDGE_AFTER, DEFAULT_MODE, DEFAULT_MULTIPLIER, Values,
};
pub use retry_keys::{Behavior, HedgeSpec, Jitter, Mode};
pub(crate) use retry_keys::{Key, Value};
use std::time::Duration;

/// How many settable keys there are.
pub(crate) const KEYS: usize = Key::COUNT;

/// The keys of one `#[retry]` function or `Policy`, as written: each is either written (by the
/// attribute or a builder) or left to the environment, the config file and the default, in
/// that order. `Settings::of` gives the values in effect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keys {
    values: Values,
}

/// The keys every builder writes the same way, with their value types and documentation: the
/// one list `Keys`' builders and `Policy`'s are made from (`$builders!` is invoked with it).
macro_rules! core_keys {
    ($builders:ident) => {
        $builders! {
            /// `"standard"` (the token bucket) or `"adaptive"` (plus the rate limiter).
            mode: Mode;
            /// Which generation of the AWS SDKs' standard-mode defaults applies: `Classic`
            /// unless set, or `Aws2026` (see [`Behavior`]).
            behavior: Behavior;
            /// Attempts, the first included (3 unless set).
            max_attempts: u32;
            /// The first backoff (1 s unless set, 50 ms under the 2026 behavior, which starts a
            /// retry after a throttling error at 1 s instead; set alone above 20 s, it raises
            /// `max_backoff`).
            initial_backoff: Duration;
            /// The backoff's growth per attempt (2.0 unless set).
            multiplier: f64;
            /// The cap of the backoff and the longest server hint obeyed (20 s unless set; set
            /// alone below 1 s, it lowers `initial_backoff`).
            max_backoff: Duration;
            /// How the backoff is randomised (full jitter unless set).
            jitter: Jitter;
            /// The first attempt's timeout.
            attempt_timeout: Duration;
            /// The attempt timeout's growth per attempt (1.0 unless set).
            attempt_timeout_multiplier: f64;
            /// The cap of the attempt timeout (the attempt timeout itself unless set).
            max_attempt_timeout: Duration;
            /// The time for all attempts and sleeps.
            deadline: Duration;
        }
    };
}
pub(crate) use core_keys;

/// `Keys`' builders of `$key: $ty` pairs.
macro_rules! builders {
    ($($(#[$doc:meta])* $key:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub const fn $key(mut self, value: $ty) -> Keys {
                self.values.$key = Some(value);
                self
            }
        )*
    };
}

impl Keys {
    /// Nothing written: the AWS SDKs' standard-mode defaults (3 attempts, 1 s initial backoff
    /// doubling up to 20 s, full jitter, no timeouts) unless the environment or the config
    /// file say otherwise.
    #[must_use]
    pub const fn new() -> Keys {
        Keys {
            values: Values::new(),
        }
    }

    core_keys!(builders);

    builders! {
        /// Hedges the function's calls: another attempt starts beside one that has not answered
        /// after `when`.
        hedge_after: HedgeSpec;
        /// At most `n` attempts of a hedged call at once (2 unless set).
        max_in_flight: u32;
        /// A percentile's hedge delay is never shorter than this (1 ms unless set).
        min_hedge_after: Duration;
        /// A percentile's hedge delay is never longer than this, and is this until the estimate
        /// has enough samples (1 s unless set).
        max_hedge_after: Duration;
        /// At most about this share of the calls send a hedge (0.02 for 2 %): the hedge delay
        /// rises above `hedge_after`'s as far as that takes (none unless set).
        hedge_budget: f64;
    }

    /// Whether `key` is written.
    pub(crate) fn wrote(&self, key: Key) -> bool {
        self.values.wrote(key)
    }

    /// The value written for `key`, if any.
    pub(crate) fn value(&self, key: Key) -> Option<Value> {
        self.values.get(key)
    }

    /// Writes `value` for `key` (a value of another form is ignored).
    pub(crate) fn with(mut self, key: Key, value: Value) -> Keys {
        self.values.set(key, value);
        self
    }

    /// Whether the keys hedge (`hedge_after` is written).
    pub(crate) const fn hedges(&self) -> bool {
        self.values.hedge_after.is_some()
    }

    /// Every way the written values do not hold together, as the attribute's compile-time
    /// checks report them (empty: coherent).
    pub(crate) fn problems(&self) -> Vec<String> {
        self.values
            .problems()
            .iter()
            .map(retry_keys::Problem::sentence)
            .collect()
    }

    /// The rules the written values break: the keys involved in each, and why, as a warning
    /// about a value from outside says it. A hedge delay's bounds beside a fixed `hedge_after`
    /// are no incoherence here: a profile's bounds apply to its functions hedged by a
    /// percentile, and change nothing for one with a fixed delay.
    pub(crate) fn incoherences(&self) -> Vec<(Vec<Key>, String)> {
        self.values
            .problems()
            .iter()
            .filter(|p| !matches!(p, retry_keys::Problem::BoundWithFixedDelay(_)))
            .map(|p| (p.keys().collect(), p.reason()))
            .collect()
    }

    /// The backoff bounds in effect, `(initial_backoff, max_backoff)`: where only one is
    /// written, the other's default yields to it, so `initial_backoff` alone at 30 s also caps
    /// at 30 s.
    #[must_use]
    pub const fn backoff_bounds(&self) -> (Duration, Duration) {
        self.values.backoff_bounds()
    }

    /// The mode written in the attribute, if any.
    #[must_use]
    pub const fn written_mode(&self) -> Option<Mode> {
        self.values.mode
    }

    /// The attempt count written in the attribute, if any.
    #[must_use]
    pub const fn written_max_attempts(&self) -> Option<u32> {
        self.values.max_attempts
    }
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new()
    }
}

/// A function's settings in effect: its keys after the environment and the config file, with
/// every value decided (the mode and the attempts are no longer "not written"). What the engine
/// reads on every call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) behavior: Behavior,
    pub(crate) max_attempts: u32,
    pub(crate) initial_backoff: Duration,
    /// The base of the backoff after a throttling error: `initial_backoff`, or 1 s under the
    /// 2026 behavior.
    pub(crate) throttling_backoff: Duration,
    /// The backoff after the first attempt, before jitter (`initial_backoff`, or
    /// `throttling_backoff` after a throttling error, at most `max_backoff`): what nearly every
    /// retry sleeps, taken as it is.
    pub(crate) first_backoff: [Duration; 2],
    pub(crate) multiplier: f64,
    pub(crate) max_backoff: Duration,
    pub(crate) jitter: Jitter,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) attempt_timeout_multiplier: f64,
    pub(crate) max_attempt_timeout: Option<Duration>,
    pub(crate) deadline: Option<Duration>,
    /// `hedge_after`, and the keys that shape it.
    pub(crate) hedge: Option<Hedging>,
}

/// A hedged function's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hedging {
    pub(crate) after: HedgeSpec,
    pub(crate) max_in_flight: u32,
    pub(crate) min_after: Duration,
    pub(crate) max_after: Duration,
    /// `hedge_budget`: the share of the calls that may hedge.
    pub(crate) budget: Option<f64>,
}

/// The shorter of `d` and `cap`.
const fn at_most(d: Duration, cap: Duration) -> Duration {
    if d.as_nanos() > cap.as_nanos() {
        cap
    } else {
        d
    }
}

/// `value`, or `default` where it is not written.
const fn or<T: Copy>(value: Option<T>, default: T) -> T {
    match value {
        Some(v) => v,
        None => default,
    }
}

impl Settings {
    /// The settings `keys` describe, with the defaults of what they leave out (a backoff bound
    /// written alone moves the other's default).
    pub(crate) const fn of(keys: &Keys) -> Settings {
        let v = &keys.values;
        let (initial_backoff, max_backoff) = v.backoff_bounds();
        let behavior = or(v.behavior, DEFAULT_BEHAVIOR);
        let throttling_backoff = match behavior {
            Behavior::Aws2026 => AWS_2026_THROTTLING_BACKOFF,
            Behavior::Classic => initial_backoff,
        };
        Settings {
            mode: or(v.mode, DEFAULT_MODE),
            behavior,
            max_attempts: or(v.max_attempts, DEFAULT_MAX_ATTEMPTS),
            initial_backoff,
            throttling_backoff,
            first_backoff: [
                at_most(initial_backoff, max_backoff),
                at_most(throttling_backoff, max_backoff),
            ],
            multiplier: or(v.multiplier, DEFAULT_MULTIPLIER),
            max_backoff,
            jitter: or(v.jitter, DEFAULT_JITTER),
            attempt_timeout: v.attempt_timeout,
            attempt_timeout_multiplier: or(
                v.attempt_timeout_multiplier,
                DEFAULT_ATTEMPT_TIMEOUT_MULTIPLIER,
            ),
            max_attempt_timeout: v.max_attempt_timeout,
            deadline: v.deadline,
            hedge: match v.hedge_after {
                Some(after) => Some(Hedging {
                    after,
                    max_in_flight: or(v.max_in_flight, DEFAULT_MAX_IN_FLIGHT),
                    min_after: or(v.min_hedge_after, DEFAULT_MIN_HEDGE_AFTER),
                    max_after: or(v.max_hedge_after, DEFAULT_MAX_HEDGE_AFTER),
                    budget: v.hedge_budget,
                }),
                None => None,
            },
        }
    }

    /// The value in effect for `key` (`None` for a timeout or a hedge delay that is not set),
    /// as `config::explain` shows it.
    pub(crate) fn value(&self, key: Key) -> Option<Value> {
        let hedge = self.hedge;
        Some(match key {
            Key::Mode => Value::Mode(self.mode),
            Key::Behavior => Value::Behavior(self.behavior),
            Key::MaxAttempts => Value::Count(self.max_attempts),
            Key::InitialBackoff => Value::Duration(self.initial_backoff),
            Key::Multiplier => Value::Factor(self.multiplier),
            Key::MaxBackoff => Value::Duration(self.max_backoff),
            Key::Jitter => Value::Jitter(self.jitter),
            Key::AttemptTimeout => Value::Duration(self.attempt_timeout?),
            Key::AttemptTimeoutMultiplier => Value::Factor(self.attempt_timeout_multiplier),
            Key::MaxAttemptTimeout => Value::Duration(self.max_attempt_timeout?),
            Key::Deadline => Value::Duration(self.deadline?),
            Key::HedgeAfter => Value::Hedge(hedge?.after),
            Key::MaxInFlight => {
                Value::Count(hedge.map_or(DEFAULT_MAX_IN_FLIGHT, |h| h.max_in_flight))
            }
            Key::MinHedgeAfter => {
                Value::Duration(hedge.map_or(DEFAULT_MIN_HEDGE_AFTER, |h| h.min_after))
            }
            Key::MaxHedgeAfter => {
                Value::Duration(hedge.map_or(DEFAULT_MAX_HEDGE_AFTER, |h| h.max_after))
            }
            Key::HedgeBudget => Value::Share(hedge?.budget?),
        })
    }

    /// Whether something cuts attempts off: an attempt timeout or a deadline.
    pub(crate) const fn timers(&self) -> bool {
        self.attempt_timeout.is_some() || self.deadline.is_some()
    }

    /// The timeout of attempt `n` (1-based) before the deadline clamps it:
    /// `min(attempt_timeout * attempt_timeout_multiplier^(n-1), max_attempt_timeout)`.
    #[must_use]
    pub fn attempt_timeout_for(&self, n: u32) -> Option<Duration> {
        let base = self.attempt_timeout?;
        let cap = self.max_attempt_timeout.unwrap_or(base);
        Some(grow(base, self.attempt_timeout_multiplier, n, cap))
    }

    /// The backoff after attempt `n` (1-based) before jitter:
    /// `min(initial_backoff * multiplier^(n-1), max_backoff)`.
    #[cfg(test)]
    pub(crate) fn backoff_for(&self, n: u32) -> Duration {
        grow(self.initial_backoff, self.multiplier, n, self.max_backoff)
    }

    /// The backoff after attempt `n` failed with a throttling error (`throttled`), before
    /// jitter: under the 2026 behavior it grows from 1 s instead of `initial_backoff`.
    pub(crate) fn backoff_after(&self, n: u32, throttled: bool) -> Duration {
        if n <= 1 {
            return self.first_backoff[usize::from(throttled)];
        }
        let base = if throttled {
            self.throttling_backoff
        } else {
            self.initial_backoff
        };
        grow(base, self.multiplier, n, self.max_backoff)
    }

    /// Whether the AWS SDKs' 2026 standard mode applies.
    pub(crate) fn aws2026(&self) -> bool {
        matches!(self.behavior, Behavior::Aws2026)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn backoff_doubles_to_the_cap() {
        let p = Keys::new()
            .initial_backoff(MS(100))
            .multiplier(2.0)
            .max_backoff(MS(500));
        let got: Vec<_> = (1..=6).map(|n| Settings::of(&p).backoff_for(n)).collect();
        assert_eq!(got, [MS(100), MS(200), MS(400), MS(500), MS(500), MS(500)]);
    }

    #[test]
    fn fractional_multiplier_rounds_to_the_nanosecond() {
        let p = Keys::new()
            .initial_backoff(MS(100))
            .multiplier(1.3)
            .max_backoff(Duration::from_secs(60));
        assert_eq!(Settings::of(&p).backoff_for(2), MS(130));
        assert_eq!(Settings::of(&p).backoff_for(3), MS(169));
        assert_eq!(
            Settings::of(&p).backoff_for(4),
            Duration::from_nanos(219_700_000)
        );
    }

    #[test]
    fn huge_attempt_numbers_saturate_at_the_cap() {
        let p = Keys::new();
        assert_eq!(
            Settings::of(&p).backoff_for(u32::MAX),
            Duration::from_secs(20)
        );
        let p = p.multiplier(1.5);
        assert_eq!(
            Settings::of(&p).backoff_for(u32::MAX),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn attempt_timeout_grows_to_its_own_cap() {
        let p = Keys::new()
            .attempt_timeout(MS(1500))
            .attempt_timeout_multiplier(2.0)
            .max_attempt_timeout(MS(3000));
        assert_eq!(Settings::of(&p).attempt_timeout_for(1), Some(MS(1500)));
        assert_eq!(Settings::of(&p).attempt_timeout_for(2), Some(MS(3000)));
        assert_eq!(Settings::of(&p).attempt_timeout_for(3), Some(MS(3000)));
        // Without max_attempt_timeout the cap is the attempt timeout itself.
        let q = Keys::new()
            .attempt_timeout(MS(500))
            .attempt_timeout_multiplier(2.0);
        assert_eq!(Settings::of(&q).attempt_timeout_for(3), Some(MS(500)));
        assert_eq!(Settings::of(&Keys::new()).attempt_timeout_for(1), None);
    }

    #[test]
    fn a_backoff_bound_set_alone_moves_the_other_default() {
        let s = Duration::from_secs;
        assert_eq!(Keys::new().backoff_bounds(), (s(1), s(20)));
        assert_eq!(
            Keys::new().initial_backoff(s(30)).backoff_bounds(),
            (s(30), s(30))
        );
        assert_eq!(
            Keys::new().initial_backoff(s(5)).backoff_bounds(),
            (s(5), s(20))
        );
        assert_eq!(
            Keys::new().max_backoff(MS(300)).backoff_bounds(),
            (MS(300), MS(300))
        );
        assert_eq!(
            Keys::new().max_backoff(s(60)).backoff_bounds(),
            (s(1), s(60))
        );
        let both = Keys::new().initial_backoff(MS(10)).max_backoff(MS(50));
        assert_eq!(both.backoff_bounds(), (MS(10), MS(50)));
        let other_order = Keys::new().max_backoff(MS(50)).initial_backoff(MS(10));
        assert_eq!(other_order.backoff_bounds(), (MS(10), MS(50)));
        let raised_then_set = Keys::new().initial_backoff(s(30)).max_backoff(s(40));
        assert_eq!(raised_then_set.backoff_bounds(), (s(30), s(40)));
    }

    #[test]
    fn modes_parse_loosely() {
        assert_eq!(Mode::parse(" Adaptive "), Some(Mode::Adaptive));
        assert_eq!(Mode::parse("STANDARD"), Some(Mode::Standard));
        assert_eq!(Mode::parse("legacy"), None);
    }
}
