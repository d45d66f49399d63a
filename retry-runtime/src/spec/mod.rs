//! What a call is configured with: the keys of one function or policy ([`Keys`], built by
//! `const fn` so the expansion of `#[retry]` can keep them in a `static`), their defaults and
//! coherence rules, the backoff they describe ([`backoff`]), and the [`Settings`] in effect once
//! a function's site has resolved its keys against the environment and the config file.

pub(crate) mod backoff;

pub use backoff::Jitter;
use backoff::grow;
use std::time::Duration;

/// The retry mode: AWS "standard" (token bucket) or "adaptive" (token bucket plus a client-side
/// rate limiter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Exponential backoff with jitter, bounded by the partition's retry token bucket.
    Standard,
    /// Standard, plus a CUBIC rate limiter that may delay any attempt, first ones included.
    Adaptive,
}

impl Mode {
    /// The mode's name as the attribute, the environment and the config file write it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Standard => "standard",
            Mode::Adaptive => "adaptive",
        }
    }

    /// Parses `"standard"` or `"adaptive"` (ASCII case-insensitive, surrounding spaces ignored).
    #[must_use]
    pub fn parse(s: &str) -> Option<Mode> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("standard") {
            Some(Mode::Standard)
        } else if s.eq_ignore_ascii_case("adaptive") {
            Some(Mode::Adaptive)
        } else {
            None
        }
    }
}

/// When a hedge starts: a fixed delay, or a percentile (50, 90, 95 or 99) of the function's
/// own latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HedgeSpec {
    /// A fixed delay.
    Fixed(Duration),
    /// A percentile of the latency of the function's recent successful attempts.
    Percentile(u8),
}

/// The default of `max_in_flight`: the attempt and one hedge.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: u32 = 2;
/// The default of `min_hedge_after`.
pub(crate) const DEFAULT_MIN_HEDGE_AFTER: Duration = Duration::from_millis(1);
/// The default of `max_hedge_after`.
pub(crate) const DEFAULT_MAX_HEDGE_AFTER: Duration = Duration::from_secs(1);

/// The settings of one `#[retry]` function. Every field has the mode default until a builder
/// method sets it; `mode` and `max_attempts` remember whether the attribute wrote them, because
/// the environment and the config file may set them only when it did not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keys {
    pub(crate) mode: Option<Mode>,
    pub(crate) max_attempts: Option<u32>,
    /// The backoff bounds in effect (a default yields to the other bound written alone).
    initial_backoff: Duration,
    pub(crate) multiplier: f64,
    max_backoff: Duration,
    /// Which keys the builder set (bit `Key as u16`): the environment and the config file may
    /// set the others.
    written: u16,
    pub(crate) jitter: Jitter,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) attempt_timeout_multiplier: f64,
    pub(crate) max_attempt_timeout: Option<Duration>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) hedge_after: Option<HedgeSpec>,
    pub(crate) max_in_flight: u32,
    pub(crate) min_hedge_after: Duration,
    pub(crate) max_hedge_after: Duration,
}

/// The keys of a policy, as the attribute, the environment and the config file name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Mode,
    MaxAttempts,
    InitialBackoff,
    Multiplier,
    MaxBackoff,
    Jitter,
    AttemptTimeout,
    AttemptTimeoutMultiplier,
    MaxAttemptTimeout,
    Deadline,
    HedgeAfter,
    MaxInFlight,
    MinHedgeAfter,
    MaxHedgeAfter,
}

/// How many keys there are.
pub(crate) const KEYS: usize = 14;

impl Key {
    /// Every key, in the order the README's table lists them.
    pub(crate) const ALL: [Key; KEYS] = [
        Key::Mode,
        Key::MaxAttempts,
        Key::InitialBackoff,
        Key::Multiplier,
        Key::MaxBackoff,
        Key::Jitter,
        Key::AttemptTimeout,
        Key::AttemptTimeoutMultiplier,
        Key::MaxAttemptTimeout,
        Key::Deadline,
        Key::HedgeAfter,
        Key::MaxInFlight,
        Key::MinHedgeAfter,
        Key::MaxHedgeAfter,
    ];

    /// The key as the attribute and the config file write it.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Key::Mode => "mode",
            Key::MaxAttempts => "max_attempts",
            Key::InitialBackoff => "initial_backoff",
            Key::Multiplier => "multiplier",
            Key::MaxBackoff => "max_backoff",
            Key::Jitter => "jitter",
            Key::AttemptTimeout => "attempt_timeout",
            Key::AttemptTimeoutMultiplier => "attempt_timeout_multiplier",
            Key::MaxAttemptTimeout => "max_attempt_timeout",
            Key::Deadline => "deadline",
            Key::HedgeAfter => "hedge_after",
            Key::MaxInFlight => "max_in_flight",
            Key::MinHedgeAfter => "min_hedge_after",
            Key::MaxHedgeAfter => "max_hedge_after",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// The defaults of `mode = "standard"` (and of adaptive mode, which differs only in its limiter).
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 3;
const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(20);

impl Keys {
    /// The AWS SDKs' standard-mode defaults: 3 attempts, 1 s initial backoff doubling up to
    /// 20 s, full jitter, no timeouts.
    #[must_use]
    pub const fn new() -> Keys {
        Keys {
            mode: None,
            max_attempts: None,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            multiplier: 2.0,
            max_backoff: DEFAULT_MAX_BACKOFF,
            written: 0,
            jitter: Jitter::Full,
            attempt_timeout: None,
            attempt_timeout_multiplier: 1.0,
            max_attempt_timeout: None,
            deadline: None,
            hedge_after: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            min_hedge_after: DEFAULT_MIN_HEDGE_AFTER,
            max_hedge_after: DEFAULT_MAX_HEDGE_AFTER,
        }
    }

    /// Sets the mode explicitly (the environment can no longer change it).
    #[must_use]
    pub const fn mode(mut self, mode: Mode) -> Keys {
        self.mode = Some(mode);
        self.written |= Key::Mode.bit();
        self
    }

    /// Sets the number of attempts, the first included (the environment can no longer change it).
    #[must_use]
    pub const fn max_attempts(mut self, n: u32) -> Keys {
        self.max_attempts = Some(n);
        self.written |= Key::MaxAttempts.bit();
        self
    }

    /// Sets the first backoff. Set alone above the default `max_backoff` (20 s), it raises
    /// `max_backoff` to itself.
    #[must_use]
    pub const fn initial_backoff(mut self, d: Duration) -> Keys {
        self.initial_backoff = d;
        self.written |= Key::InitialBackoff.bit();
        if !self.wrote(Key::MaxBackoff) {
            self.max_backoff = if d.as_nanos() > DEFAULT_MAX_BACKOFF.as_nanos() {
                d
            } else {
                DEFAULT_MAX_BACKOFF
            };
        }
        self
    }

    /// Sets the growth factor of the backoff.
    #[must_use]
    pub const fn multiplier(mut self, m: f64) -> Keys {
        self.multiplier = m;
        self.written |= Key::Multiplier.bit();
        self
    }

    /// Sets the cap of the backoff (before jitter), and the longest server hint obeyed. Set
    /// alone below the default `initial_backoff` (1 s), it lowers `initial_backoff` to itself.
    #[must_use]
    pub const fn max_backoff(mut self, d: Duration) -> Keys {
        self.max_backoff = d;
        self.written |= Key::MaxBackoff.bit();
        if !self.wrote(Key::InitialBackoff) {
            self.initial_backoff = if d.as_nanos() < DEFAULT_INITIAL_BACKOFF.as_nanos() {
                d
            } else {
                DEFAULT_INITIAL_BACKOFF
            };
        }
        self
    }

    /// Sets the jitter.
    #[must_use]
    pub const fn jitter(mut self, j: Jitter) -> Keys {
        self.jitter = j;
        self.written |= Key::Jitter.bit();
        self
    }

    /// Sets the timeout of the first attempt.
    #[must_use]
    pub const fn attempt_timeout(mut self, d: Duration) -> Keys {
        self.attempt_timeout = Some(d);
        self.written |= Key::AttemptTimeout.bit();
        self
    }

    /// Sets the growth factor of the attempt timeout.
    #[must_use]
    pub const fn attempt_timeout_multiplier(mut self, m: f64) -> Keys {
        self.attempt_timeout_multiplier = m;
        self.written |= Key::AttemptTimeoutMultiplier.bit();
        self
    }

    /// Sets the cap of the attempt timeout (default: the attempt timeout itself).
    #[must_use]
    pub const fn max_attempt_timeout(mut self, d: Duration) -> Keys {
        self.max_attempt_timeout = Some(d);
        self.written |= Key::MaxAttemptTimeout.bit();
        self
    }

    /// Sets the total time for all attempts and sleeps.
    #[must_use]
    pub const fn deadline(mut self, d: Duration) -> Keys {
        self.deadline = Some(d);
        self.written |= Key::Deadline.bit();
        self
    }

    /// Hedges the function's calls: another attempt starts beside one that has not answered
    /// after `when`.
    #[must_use]
    pub const fn hedge_after(mut self, when: HedgeSpec) -> Keys {
        self.hedge_after = Some(when);
        self.written |= Key::HedgeAfter.bit();
        self
    }

    /// At most `n` attempts of a hedged call at once (2 unless set).
    #[must_use]
    pub const fn max_in_flight(mut self, n: u32) -> Keys {
        self.max_in_flight = n;
        self.written |= Key::MaxInFlight.bit();
        self
    }

    /// A percentile's hedge delay is never shorter than `d` (1 ms unless set).
    #[must_use]
    pub const fn min_hedge_after(mut self, d: Duration) -> Keys {
        self.min_hedge_after = d;
        self.written |= Key::MinHedgeAfter.bit();
        self
    }

    /// A percentile's hedge delay is never longer than `d`, and is `d` until the estimate has
    /// enough samples (1 s unless set).
    #[must_use]
    pub const fn max_hedge_after(mut self, d: Duration) -> Keys {
        self.max_hedge_after = d;
        self.written |= Key::MaxHedgeAfter.bit();
        self
    }

    /// Whether the builder set `key`.
    pub(crate) const fn wrote(&self, key: Key) -> bool {
        self.written & key.bit() != 0
    }

    /// The value of `key` in this policy (its default where the builder did not set it; `None`
    /// for a mode, attempt count or timeout that is not set).
    pub(crate) fn value(&self, key: Key) -> Option<Value> {
        Some(match key {
            Key::Mode => Value::Mode(self.mode?),
            Key::MaxAttempts => Value::Attempts(self.max_attempts?),
            Key::InitialBackoff => Value::Duration(self.initial_backoff),
            Key::Multiplier => Value::Factor(self.multiplier),
            Key::MaxBackoff => Value::Duration(self.max_backoff),
            Key::Jitter => Value::Jitter(self.jitter),
            Key::AttemptTimeout => Value::Duration(self.attempt_timeout?),
            Key::AttemptTimeoutMultiplier => Value::Factor(self.attempt_timeout_multiplier),
            Key::MaxAttemptTimeout => Value::Duration(self.max_attempt_timeout?),
            Key::Deadline => Value::Duration(self.deadline?),
            Key::HedgeAfter => Value::Hedge(self.hedge_after?),
            Key::MaxInFlight => Value::Attempts(self.max_in_flight),
            Key::MinHedgeAfter => Value::Duration(self.min_hedge_after),
            Key::MaxHedgeAfter => Value::Duration(self.max_hedge_after),
        })
    }

    /// Sets `key` to `value` as its builder would (a value of another kind is ignored).
    pub(crate) fn with(self, key: Key, value: Value) -> Keys {
        match (key, value) {
            (Key::Mode, Value::Mode(m)) => self.mode(m),
            (Key::MaxAttempts, Value::Attempts(n)) => self.max_attempts(n),
            (Key::InitialBackoff, Value::Duration(d)) => self.initial_backoff(d),
            (Key::Multiplier, Value::Factor(f)) => self.multiplier(f),
            (Key::MaxBackoff, Value::Duration(d)) => self.max_backoff(d),
            (Key::Jitter, Value::Jitter(j)) => self.jitter(j),
            (Key::AttemptTimeout, Value::Duration(d)) => self.attempt_timeout(d),
            (Key::AttemptTimeoutMultiplier, Value::Factor(f)) => self.attempt_timeout_multiplier(f),
            (Key::MaxAttemptTimeout, Value::Duration(d)) => self.max_attempt_timeout(d),
            (Key::Deadline, Value::Duration(d)) => self.deadline(d),
            (Key::HedgeAfter, Value::Hedge(h)) => self.hedge_after(h),
            (Key::MaxInFlight, Value::Attempts(n)) => self.max_in_flight(n),
            (Key::MinHedgeAfter, Value::Duration(d)) => self.min_hedge_after(d),
            (Key::MaxHedgeAfter, Value::Duration(d)) => self.max_hedge_after(d),
            _ => self,
        }
    }

    /// Every way the values do not hold together, as the attribute's compile-time checks
    /// would report them (empty: coherent).
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.max_attempts == Some(0) {
            out.push("max_attempts must be at least 1".to_owned());
        }
        for (key, m) in [
            (Key::Multiplier, self.multiplier),
            (
                Key::AttemptTimeoutMultiplier,
                self.attempt_timeout_multiplier,
            ),
        ] {
            if !(m.is_finite() && m >= 1.0) {
                out.push(format!("{} ({m}) must be a number >= 1", key.name()));
            }
        }
        if let Jitter::Fraction(j) = self.jitter {
            if !(0.0..=1.0).contains(&j) {
                out.push(format!("the jitter fraction ({j}) must be in [0, 1]"));
            }
        }
        let (initial, max) = self.backoff_bounds();
        if max < initial {
            out.push(format!(
                "max_backoff ({max:?}) is below initial_backoff ({initial:?})"
            ));
        }
        for (key, d) in [
            (Key::AttemptTimeout, self.attempt_timeout),
            (Key::MaxAttemptTimeout, self.max_attempt_timeout),
            (Key::Deadline, self.deadline),
        ] {
            if d == Some(Duration::ZERO) {
                out.push(format!("{} must be above zero", key.name()));
            }
        }
        if self.attempt_timeout.is_none() {
            for key in [Key::AttemptTimeoutMultiplier, Key::MaxAttemptTimeout] {
                if self.wrote(key) {
                    out.push(format!("{} needs attempt_timeout", key.name()));
                }
            }
        }
        if let (Some(t), Some(max)) = (self.attempt_timeout, self.max_attempt_timeout) {
            if max < t {
                out.push(format!(
                    "max_attempt_timeout ({max:?}) is below attempt_timeout ({t:?})"
                ));
            }
        }
        if let (Some(t), Some(d)) = (self.attempt_timeout, self.deadline) {
            if t > d {
                out.push(format!(
                    "attempt_timeout ({t:?}) is longer than deadline ({d:?})"
                ));
            }
        }
        out.extend(self.hedge_problems());
        out
    }

    /// How the hedging keys do not hold together.
    pub(crate) fn hedge_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.hedge_after {
            None => {
                for key in [Key::MaxInFlight, Key::MinHedgeAfter, Key::MaxHedgeAfter] {
                    if self.wrote(key) {
                        out.push(format!("{} needs hedge_after", key.name()));
                    }
                }
            }
            Some(HedgeSpec::Fixed(d)) if d.is_zero() => {
                out.push("hedge_after must be above zero".to_owned());
            }
            Some(HedgeSpec::Percentile(p)) if !matches!(p, 50 | 90 | 95 | 99) => {
                out.push(format!(
                    "hedge_after's percentile (p{p}) is one of p50, p90, p95, p99"
                ));
            }
            Some(_) => {}
        }
        if self.hedge_after.is_some() && self.max_in_flight < 2 {
            out.push(format!(
                "max_in_flight ({}) must be at least 2 to hedge",
                self.max_in_flight
            ));
        }
        if self.max_hedge_after < self.min_hedge_after {
            out.push(format!(
                "max_hedge_after ({:?}) is below min_hedge_after ({:?})",
                self.max_hedge_after, self.min_hedge_after
            ));
        }
        out
    }

    /// The mode written in the attribute, if any.
    #[must_use]
    pub const fn written_mode(&self) -> Option<Mode> {
        self.mode
    }

    /// The attempt count written in the attribute, if any.
    #[must_use]
    pub const fn written_max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The backoff bounds in effect, `(initial_backoff, max_backoff)`: where only one is set,
    /// the other's default yields to it, so `initial_backoff` alone at 30 s also caps at 30 s.
    #[must_use]
    #[inline]
    pub const fn backoff_bounds(&self) -> (Duration, Duration) {
        (self.initial_backoff, self.max_backoff)
    }
}

/// A function's settings in effect: its keys after the environment and the config file, with
/// every value decided (the mode and the attempts are no longer "not written"). What the engine
/// reads on every call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) max_attempts: u32,
    pub(crate) initial_backoff: Duration,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hedging {
    pub(crate) after: HedgeSpec,
    pub(crate) max_in_flight: u32,
    pub(crate) min_after: Duration,
    pub(crate) max_after: Duration,
}

impl Settings {
    /// The settings `keys` describe, with the defaults of what they leave out.
    pub(crate) const fn of(keys: &Keys) -> Settings {
        let (initial_backoff, max_backoff) = keys.backoff_bounds();
        Settings {
            mode: match keys.mode {
                Some(mode) => mode,
                None => Mode::Standard,
            },
            max_attempts: match keys.max_attempts {
                Some(n) => n,
                None => DEFAULT_MAX_ATTEMPTS,
            },
            initial_backoff,
            multiplier: keys.multiplier,
            max_backoff,
            jitter: keys.jitter,
            attempt_timeout: keys.attempt_timeout,
            attempt_timeout_multiplier: keys.attempt_timeout_multiplier,
            max_attempt_timeout: keys.max_attempt_timeout,
            deadline: keys.deadline,
            hedge: match keys.hedge_after {
                Some(after) => Some(Hedging {
                    after,
                    max_in_flight: keys.max_in_flight,
                    min_after: keys.min_hedge_after,
                    max_after: keys.max_hedge_after,
                }),
                None => None,
            },
        }
    }

    /// Whether something cuts attempts off: an attempt timeout or a deadline.
    pub(crate) const fn timers(&self) -> bool {
        self.attempt_timeout.is_some() || self.deadline.is_some()
    }

    /// The timeout of attempt `n` (1-based) before the deadline clamps it:
    /// `min(attempt_timeout * attempt_timeout_multiplier^(n-1), max_attempt_timeout)`.
    #[must_use]
    #[inline]
    pub fn attempt_timeout_for(&self, n: u32) -> Option<Duration> {
        let base = self.attempt_timeout?;
        let cap = self.max_attempt_timeout.unwrap_or(base);
        Some(grow(base, self.attempt_timeout_multiplier, n, cap))
    }

    /// The backoff after attempt `n` (1-based) before jitter:
    /// `min(initial_backoff * multiplier^(n-1), max_backoff)`.
    #[must_use]
    #[inline]
    pub fn backoff_for(&self, n: u32) -> Duration {
        grow(self.initial_backoff, self.multiplier, n, self.max_backoff)
    }
}

/// A value of one key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    Mode(Mode),
    Attempts(u32),
    Duration(Duration),
    Factor(f64),
    Jitter(Jitter),
    Hedge(HedgeSpec),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Mode(m) => f.write_str(m.as_str()),
            Value::Attempts(n) => write!(f, "{n}"),
            Value::Duration(d) => write!(f, "{d:?}"),
            Value::Factor(x) => write!(f, "{x}"),
            Value::Jitter(j) => match j {
                Jitter::Full => f.write_str("full"),
                Jitter::Equal => f.write_str("equal"),
                Jitter::None => f.write_str("none"),
                Jitter::Decorrelated => f.write_str("decorrelated"),
                Jitter::Fraction(x) => write!(f, "{x}"),
            },
            Value::Hedge(HedgeSpec::Fixed(d)) => write!(f, "{d:?}"),
            Value::Hedge(HedgeSpec::Percentile(p)) => write!(f, "p{p}"),
        }
    }
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new()
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
