//! The values of the settable keys, as plain data, and the defaults of a policy.

use std::fmt;
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
    /// Parses `"standard"` or `"adaptive"` (ASCII case-insensitive, surrounding spaces ignored).
    #[must_use]
    pub fn parse(text: &str) -> Option<Mode> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("standard") {
            Some(Mode::Standard)
        } else if text.eq_ignore_ascii_case("adaptive") {
            Some(Mode::Adaptive)
        } else {
            None
        }
    }

    /// The mode's name as the attribute, the environment and the config file write it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Standard => "standard",
            Mode::Adaptive => "adaptive",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which generation of the AWS SDKs' standard-mode defaults a policy follows.
///
/// `Classic` is standard mode as the AWS SDKs reference guide described it until 2026 (every
/// retry's backoff grows from `initial_backoff`, a timeout's retry costs twice another's). `Aws2026`
/// is the SDKs' updated standard mode (their "retry behavior 2.1", opt-in there with
/// `AWS_NEW_RETRIES_2026=true`): a retry after a throttling error costs 5 tokens and after any
/// other error 14; the backoff starts at 1 s after a throttling error and at `initial_backoff`
/// (50 ms unless written) after any other; a server's hint is kept within [the computed
/// backoff, the computed backoff + 5 s].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Behavior {
    /// `"classic"`: standard mode as it was (the default).
    Classic,
    /// `"2026"`: the AWS SDKs' updated standard mode.
    Aws2026,
}

impl Behavior {
    /// Parses `"classic"` (ASCII case-insensitive) or `"2026"`, surrounding spaces ignored.
    #[must_use]
    pub fn parse(text: &str) -> Option<Behavior> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("classic") {
            Some(Behavior::Classic)
        } else if text == "2026" {
            Some(Behavior::Aws2026)
        } else {
            None
        }
    }

    /// The behavior's name as the attribute, the environment and the config file write it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Behavior::Classic => "classic",
            Behavior::Aws2026 => "2026",
        }
    }

    /// `initial_backoff` unless set: 1 s, or 50 ms under the 2026 behavior.
    #[must_use]
    pub const fn default_initial_backoff(self) -> Duration {
        match self {
            Behavior::Classic => DEFAULT_INITIAL_BACKOFF,
            Behavior::Aws2026 => AWS_2026_INITIAL_BACKOFF,
        }
    }
}

impl fmt::Display for Behavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the computed backoff `d` is randomised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// `"full"`: `U[0, d]`.
    Full,
    /// `"equal"`: `d/2 + U[0, d/2]`.
    Equal,
    /// `"none"`: `d` exactly.
    None,
    /// `"decorrelated"`: `min(max_backoff, U[initial_backoff, 3 * previous])`, previous
    /// starting at `initial_backoff`; the multiplier is not used.
    Decorrelated,
    /// A fraction `j` in `[0, 1]` (checked by [`Key::check`](crate::Key::check)):
    /// `d * (1 - j * U[0, 1))`, the delay loses up to the fraction `j`.
    Fraction(f64),
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Jitter::Full => f.write_str("full"),
            Jitter::Equal => f.write_str("equal"),
            Jitter::None => f.write_str("none"),
            Jitter::Decorrelated => f.write_str("decorrelated"),
            Jitter::Fraction(x) => write!(f, "{x}"),
        }
    }
}

/// When a hedge starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HedgeSpec {
    /// A fixed delay, above zero (checked by [`Key::check`](crate::Key::check)).
    Fixed(Duration),
    /// A percentile of the function's own latency: 50, 90, 95 or 99 (checked by
    /// [`Key::check`](crate::Key::check)).
    Percentile(u8),
}

impl HedgeSpec {
    /// The percentiles `hedge_after` may name.
    pub const PERCENTILES: [u8; 4] = [50, 90, 95, 99];
}

impl fmt::Display for HedgeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HedgeSpec::Fixed(d) => write!(f, "{d:?}"),
            HedgeSpec::Percentile(p) => write!(f, "p{p}"),
        }
    }
}

/// A value of one settable key; which variant goes with which key is the key's
/// [`Form`](crate::Form).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// `mode`.
    Mode(Mode),
    /// `behavior`.
    Behavior(Behavior),
    /// `max_attempts`, `max_in_flight`.
    Count(u32),
    /// `initial_backoff`, `max_backoff`, `attempt_timeout`, `max_attempt_timeout`, `deadline`,
    /// `min_hedge_after`, `max_hedge_after`.
    Duration(Duration),
    /// `multiplier`, `attempt_timeout_multiplier`.
    Factor(f64),
    /// `jitter`.
    Jitter(Jitter),
    /// `hedge_after`.
    Hedge(HedgeSpec),
    /// `hedge_budget`: a share of the calls (0.02 for 2 %).
    Share(f64),
}

/// As the attribute would write the value, without quotes: `standard`, `3`, `1.5s`, `2`,
/// `full`, `p95`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Mode(m) => m.fmt(f),
            Value::Behavior(b) => b.fmt(f),
            Value::Count(n) => write!(f, "{n}"),
            Value::Duration(d) => write!(f, "{d:?}"),
            Value::Factor(x) => write!(f, "{x}"),
            Value::Jitter(j) => j.fmt(f),
            Value::Hedge(h) => h.fmt(f),
            Value::Share(x) => write!(f, "{}%", x * 100.0),
        }
    }
}

/// `mode` unless set.
pub const DEFAULT_MODE: Mode = Mode::Standard;
/// `behavior` unless set.
pub const DEFAULT_BEHAVIOR: Behavior = Behavior::Classic;
/// `max_attempts` unless set.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// `initial_backoff` unless set (and unless `max_backoff` is set alone below it).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// `initial_backoff` unless set under the 2026 behavior: the base of a retry's backoff after
/// an error that is not throttling.
pub const AWS_2026_INITIAL_BACKOFF: Duration = Duration::from_millis(50);
/// The base of a retry's backoff after a throttling error under the 2026 behavior (whatever
/// `initial_backoff` is).
pub const AWS_2026_THROTTLING_BACKOFF: Duration = Duration::from_secs(1);
/// How far above the computed backoff the 2026 behavior lets a server's hint go.
pub const AWS_2026_HINT_ABOVE_BACKOFF: Duration = Duration::from_secs(5);
/// `multiplier` unless set.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;
/// `max_backoff` unless set (and unless `initial_backoff` is set alone above it).
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(20);
/// `jitter` unless set.
pub const DEFAULT_JITTER: Jitter = Jitter::Full;
/// `attempt_timeout_multiplier` unless set.
pub const DEFAULT_ATTEMPT_TIMEOUT_MULTIPLIER: f64 = 1.0;
/// `max_in_flight` unless set: the attempt and one hedge.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 2;
/// `min_hedge_after` unless set.
pub const DEFAULT_MIN_HEDGE_AFTER: Duration = Duration::from_millis(1);
/// `max_hedge_after` unless set.
pub const DEFAULT_MAX_HEDGE_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_display_as_the_attribute_writes_them() {
        let shown = [
            Value::Mode(Mode::Adaptive),
            Value::Behavior(Behavior::Aws2026),
            Value::Count(3),
            Value::Duration(Duration::from_millis(1500)),
            Value::Duration(Duration::from_micros(500)),
            Value::Factor(2.0),
            Value::Factor(1.5),
            Value::Jitter(Jitter::Decorrelated),
            Value::Jitter(Jitter::Fraction(0.25)),
            Value::Hedge(HedgeSpec::Percentile(95)),
            Value::Hedge(HedgeSpec::Fixed(Duration::from_millis(50))),
        ]
        .map(|v| v.to_string());
        assert_eq!(
            shown,
            [
                "adaptive",
                "2026",
                "3",
                "1.5s",
                "500µs",
                "2",
                "1.5",
                "decorrelated",
                "0.25",
                "p95",
                "50ms"
            ]
        );
    }
}
