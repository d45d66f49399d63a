//! The values as text: the attribute's string literals, environment variables, the config file's
//! strings (and its numbers, for [`Key::from_number`]).

use crate::table::{Key, suggest};
use crate::value::{Behavior, HedgeSpec, Jitter, Mode, Value};
use std::fmt;
use std::time::Duration;

/// Why a duration could not be read; `Display` gives the reason as the attribute's error
/// messages write it ("the unit is missing").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurationError {
    /// A number without a unit: `"100"`.
    MissingUnit,
    /// A unit other than `ns`, `us` (`µs`), `ms`, `s`, `m` (`min`) and `h`.
    UnknownUnit,
    /// A unit without a number: `"ms"`.
    MissingNumber,
    /// Not a decimal number: `"1.2.3s"`.
    NotANumber,
    /// Above `u64::MAX` nanoseconds (about 584 years).
    TooLong,
    /// A fraction of a nanosecond: `"1.5ns"`.
    FinerThanNanosecond,
    /// A sign: `"-1s"` (a duration is at least zero; `+` is not written either).
    Signed,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DurationError::MissingUnit => "the unit is missing",
            DurationError::UnknownUnit => "unknown unit",
            DurationError::MissingNumber => "the number is missing",
            DurationError::NotANumber => "not a number",
            DurationError::TooLong => "too long (at most 584 years)",
            DurationError::FinerThanNanosecond => "finer than a nanosecond",
            DurationError::Signed => "a duration has no sign",
        })
    }
}

impl std::error::Error for DurationError {}

/// Reads a duration: a non-negative decimal number and a unit, `"500us"`, `"150ms"`, `"2s"`,
/// `"1.5s"`, `".5s"`, `"1m"`, `"10_000ms"`, exactly to the nanosecond with integer arithmetic.
///
/// Units: `ns`, `us` (or `µs`), `ms`, `s`, `m` (or `min`), `h`. Blanks around the text and
/// between the number and the unit are ignored, and so are `_` in the number. At most
/// `u64::MAX` nanoseconds, so that a duration always fits `Duration::from_nanos`.
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(retry_keys::parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert_eq!(
///     retry_keys::parse_duration("1.5ns").unwrap_err().to_string(),
///     "finer than a nanosecond"
/// );
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.starts_with(['-', '+']) {
        return Err(DurationError::Signed);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let unit_ns: u64 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err(DurationError::MissingUnit),
        _ => return Err(DurationError::UnknownUnit),
    };
    let (whole, frac) = number.split_once('.').unwrap_or((&number, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err(DurationError::MissingNumber);
    }
    if frac.contains('.') {
        return Err(DurationError::NotANumber);
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| DurationError::NotANumber)?
    };
    let mut ns = whole.checked_mul(unit_ns).ok_or(DurationError::TooLong)?;
    // The fraction, exactly, as long as it does not go below a nanosecond.
    let mut scale = unit_ns;
    for digit in frac.chars() {
        let d = u64::from(digit.to_digit(10).ok_or(DurationError::NotANumber)?);
        if scale % 10 != 0 {
            if d != 0 {
                return Err(DurationError::FinerThanNanosecond);
            }
            continue;
        }
        scale /= 10;
        ns = ns.checked_add(d * scale).ok_or(DurationError::TooLong)?;
    }
    Ok(Duration::from_nanos(ns))
}

/// `did you mean "full"? ` (a blank after it) when a misspelt value most likely meant `full`,
/// else nothing: how every message about a value that is not one begins, in the attribute's
/// errors and in the runtime's warnings and errors alike.
///
/// ```
/// assert_eq!(retry_keys::did_you_mean(Some("full")), "did you mean \"full\"? ");
/// assert_eq!(retry_keys::did_you_mean(None), "");
/// ```
#[must_use]
pub fn did_you_mean(meant: Option<&str>) -> String {
    meant.map_or_else(String::new, |m| format!("did you mean \"{m}\"? "))
}

/// A word that names none of a key's values (`"ful"` for `jitter`), and the name it most likely
/// meant if it is close enough to be a typo ([`suggest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnknownName {
    /// The name a misspelt word most likely meant (`"full"` for `"ful"`).
    pub meant: Option<&'static str>,
}

impl UnknownName {
    /// `text`, which is none of `names`, and the one of them it most likely meant.
    fn of(text: &str, names: &[&'static str]) -> UnknownName {
        UnknownName {
            meant: suggest(text.trim(), names),
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.meant {
            Some(m) => write!(f, "unknown name: did you mean \"{m}\"?"),
            None => f.write_str("unknown name"),
        }
    }
}

impl std::error::Error for UnknownName {}

/// The names of the modes.
const MODES: [&str; 2] = [Mode::Standard.as_str(), Mode::Adaptive.as_str()];

/// The names of the behaviors.
const BEHAVIORS: [&str; 2] = [Behavior::Classic.as_str(), Behavior::Aws2026.as_str()];

/// The names of the jitters.
const JITTERS: [&str; 4] = ["full", "equal", "none", "decorrelated"];

/// Reads `"standard"` or `"adaptive"`, in any ASCII case, blanks around ignored; another word
/// is an error with the mode it most likely meant (`"standrd"`: `"standard"`).
///
/// ```
/// use retry_keys::{Mode, parse_mode};
///
/// assert_eq!(parse_mode(" Adaptive "), Ok(Mode::Adaptive));
/// assert_eq!(parse_mode("standrd").unwrap_err().meant, Some("standard"));
/// ```
pub fn parse_mode(text: &str) -> Result<Mode, UnknownName> {
    Mode::parse(text).ok_or_else(|| UnknownName::of(text, &MODES))
}

/// Reads `"classic"` (any ASCII case) or `"2026"`, blanks around ignored; another word is an
/// error with the behavior it most likely meant (`"classik"`: `"classic"`, `"2025"`: `"2026"`).
///
/// ```
/// use retry_keys::{Behavior, parse_behavior};
///
/// assert_eq!(parse_behavior(" 2026 "), Ok(Behavior::Aws2026));
/// assert_eq!(parse_behavior("clasic").unwrap_err().meant, Some("classic"));
/// ```
pub fn parse_behavior(text: &str) -> Result<Behavior, UnknownName> {
    Behavior::parse(text).ok_or_else(|| UnknownName::of(text, &BEHAVIORS))
}

/// Reads `"full"`, `"equal"`, `"none"` or `"decorrelated"` (any ASCII case, blanks around
/// ignored), or a number as a fraction; another word is an error with the jitter it most
/// likely meant (`"ful"`: `"full"`). The fraction is not checked here: one outside [0, 1] is a
/// problem of [`Key::check`].
pub fn parse_jitter(text: &str) -> Result<Jitter, UnknownName> {
    match text.trim().to_ascii_lowercase().as_str() {
        "full" => Ok(Jitter::Full),
        "equal" => Ok(Jitter::Equal),
        "none" => Ok(Jitter::None),
        "decorrelated" => Ok(Jitter::Decorrelated),
        other => other
            .parse::<f64>()
            .map(Jitter::Fraction)
            .map_err(|_| UnknownName::of(text, &JITTERS)),
    }
}

/// Why a `hedge_after` could not be read; `Display` gives the reason as the attribute's error
/// messages write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HedgeError {
    /// `p` (or `P`) and something other than 50, 90, 95 or 99, or a percentile written another
    /// way (`"95th"`, `"95%"`); `meant`: the percentile it most likely meant.
    Percentile {
        /// The percentile a misspelt one most likely meant (`"p95"` for `"p955"` or `"95th"`).
        meant: Option<&'static str>,
    },
    /// Not a percentile, and not a duration either.
    Duration(DurationError),
}

impl HedgeError {
    /// The percentile a misspelt one most likely meant, if any.
    #[must_use]
    pub const fn meant(&self) -> Option<&'static str> {
        match self {
            HedgeError::Percentile { meant } => *meant,
            HedgeError::Duration(_) => None,
        }
    }
}

impl fmt::Display for HedgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HedgeError::Percentile { meant } => write!(
                f,
                "{}the percentiles are \"p50\", \"p90\", \"p95\" or \"p99\" (\"The Tail at \
                 Scale\" hedges at the 95th)",
                did_you_mean(*meant)
            ),
            HedgeError::Duration(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HedgeError {}

/// Reads a `hedge_after`: `"p50"`, `"p90"`, `"p95"` or `"p99"` (or with `P`), or a duration
/// ([`parse_duration`]). A zero duration is read: it is a problem of [`Key::check`]. A
/// percentile that is not one of those, misspelt or written another way, is an error with the
/// one it most likely meant: `"p955"`, `"95th"`, `"95%"` and `"95p"` meant `"p95"`.
///
/// ```
/// use retry_keys::{HedgeError, parse_hedge};
///
/// assert_eq!(parse_hedge("95th"), Err(HedgeError::Percentile { meant: Some("p95") }));
/// assert_eq!(parse_hedge("p42"), Err(HedgeError::Percentile { meant: None }));
/// ```
pub fn parse_hedge(text: &str) -> Result<HedgeSpec, HedgeError> {
    let text = text.trim();
    let percentile = || HedgeError::Percentile {
        meant: meant_percentile(text),
    };
    if let Some(n) = text.strip_prefix(['p', 'P']) {
        return match n.parse::<u8>() {
            Ok(p) if HedgeSpec::PERCENTILES.contains(&p) => Ok(HedgeSpec::Percentile(p)),
            _ => Err(percentile()),
        };
    }
    parse_duration(text).map(HedgeSpec::Fixed).map_err(|e| {
        // A percentile written another way is no duration with a strange unit.
        match meant_percentile(text) {
            Some(meant) => HedgeError::Percentile { meant: Some(meant) },
            None => HedgeError::Duration(e),
        }
    })
}

/// The percentiles as `hedge_after` writes them, in the order of [`HedgeSpec::PERCENTILES`].
const PERCENTILE_NAMES: [&str; 4] = ["p50", "p90", "p95", "p99"];

/// The percentile `text` (which is not one) most likely meant: the same number written another
/// way (`"95th"`, `"95%"`, `"95p"`, `"p95.0"`, `"p 95"`, `"pct95"`, `"0.95p"`), or else, for a
/// text that starts with `p` and is not another percentile (`"p75"`), the closest by edit
/// distance (`"p955"`, `"p95x"`).
fn meant_percentile(text: &str) -> Option<&'static str> {
    let lower = text.trim().to_ascii_lowercase();
    let mut rest = lower.as_str();
    let mut marked = false;
    for prefix in ["percentile", "pct", "p"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            (rest, marked) = (r, true);
            break;
        }
    }
    for suffix in ["th percentile", "percentile", "th", "pct", "%", "p"] {
        if let Some(r) = rest.strip_suffix(suffix) {
            (rest, marked) = (r, true);
            break;
        }
    }
    let number = rest
        .trim_matches(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .parse::<f64>();
    if let (true, Ok(x)) = (marked, number) {
        // A fraction (0.95) is the same percentile.
        let x = if x > 0.0 && x < 1.0 { x * 100.0 } else { x };
        let same = HedgeSpec::PERCENTILES
            .iter()
            .position(|&p| (f64::from(p) - x).abs() < 1e-9);
        if let Some(i) = same {
            return Some(PERCENTILE_NAMES[i]);
        }
        if x > 0.0 && x < 100.0 {
            // A percentile, only not one of those: no typo.
            return None;
        }
    }
    if lower.starts_with('p') {
        return suggest(&lower, &PERCENTILE_NAMES);
    }
    None
}

/// Reads a count written in decimal digits only (blanks around ignored), up to `u32::MAX`. Zero
/// is read: it is a problem of [`Key::check`].
#[must_use]
pub fn parse_count(text: &str) -> Option<u32> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Reads a growth factor: any number `f64` reads (blanks around ignored). One below 1 or not
/// finite is a problem of [`Key::check`].
#[must_use]
pub fn parse_factor(text: &str) -> Option<f64> {
    text.trim().parse().ok()
}

/// `"N%"` as a number of percent.
fn percent(text: &str) -> Option<f64> {
    text.trim()
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
}

/// Reads a retry budget's share of the requests, `"20%"`: above 0 % and at most 100 000 %.
/// Returns the ratio (0.2 for `"20%"`).
#[must_use]
pub fn parse_budget_share(text: &str) -> Option<f64> {
    percent(text)
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 100_000.0)
        .map(|v| v / 100.0)
}

/// Reads a hedge budget, the share of a function's calls that may send a hedge, `"2%"`: above
/// 0 % and at most 100 %. Returns the ratio (0.02 for `"2%"`).
///
/// ```
/// use retry_keys::parse_hedge_budget;
///
/// assert_eq!(parse_hedge_budget("2%"), Some(0.02));
/// assert_eq!(parse_hedge_budget("0%"), None);
/// assert_eq!(parse_hedge_budget("2"), None, "a share is written with its %");
/// ```
#[must_use]
pub fn parse_hedge_budget(text: &str) -> Option<f64> {
    percent(text)
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 100.0)
        .map(|v| v / 100.0)
}

/// Reads the share of failed attempts that opens a circuit breaker, `"50%"`: above 0 % and at
/// most 100 %. Returns the ratio (0.5 for `"50%"`).
#[must_use]
pub fn parse_failure_ratio(text: &str) -> Option<f64> {
    percent(text)
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 100.0)
        .map(|v| v / 100.0)
}

/// Whether `text` can name a partition or a profile: it is not blank.
#[must_use]
pub fn is_name(text: &str) -> bool {
    !text.trim().is_empty()
}

/// Whether `text` can name a profile: a name ([`is_name`]) of ASCII letters, digits, `_` and `-`,
/// since it becomes part of environment variables' names (`RETRY_<PROFILE>_MAX_ATTEMPTS`).
#[must_use]
pub fn is_profile_name(text: &str) -> bool {
    is_name(text)
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Why a setting's value from the environment or the config file cannot be used; `Display`
/// says what the value should look like, after the value a misspelt one most likely meant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueError {
    /// Not a value of the key: [`Key::expected`].
    Expected(Key),
    /// Not a value of the key, but close to one: a misspelt name (`"ful"` for `jitter`) or
    /// percentile (`"p955"` for `hedge_after`), and the value it most likely meant.
    DidYouMean(Key, &'static str),
    /// A number for a key whose value needs a unit.
    NeedsUnit(Key, f64),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::Expected(key) => f.write_str(&key.expected()),
            ValueError::DidYouMean(key, meant) => {
                write!(f, "{}{}", did_you_mean(Some(meant)), key.expected())
            }
            ValueError::NeedsUnit(key, x) => write!(
                f,
                "{} needs a unit: write it as a string, such as \"{x}s\"",
                key.name()
            ),
        }
    }
}

impl std::error::Error for ValueError {}

impl Key {
    /// Reads `text` (an environment variable, a string of the config file, a string of a
    /// `Policy` read with serde) as the value of this key, checked on its own ([`Key::check`]).
    /// A timeout, a deadline and the hedge delay bounds must also be above zero here, and
    /// `max_in_flight` at least 2. A misspelt mode, jitter or percentile is an error with the
    /// value it most likely meant ([`ValueError::DidYouMean`]).
    ///
    /// ```
    /// use retry_keys::{Key, Mode, Value};
    ///
    /// assert_eq!(Key::Mode.parse(" Adaptive "), Ok(Value::Mode(Mode::Adaptive)));
    /// assert_eq!(
    ///     Key::Deadline.parse("0s").unwrap_err().to_string(),
    ///     "deadline is a duration above zero with a unit, such as \"10s\" (units: ns, us, ms, s, m, h)"
    /// );
    /// assert_eq!(
    ///     Key::Mode.parse("standrd").unwrap_err().to_string(),
    ///     "did you mean \"standard\"? mode is \"standard\" or \"adaptive\""
    /// );
    /// ```
    pub fn parse(self, text: &str) -> Result<Value, ValueError> {
        // Not a value of the key: the one it most likely meant, if any.
        let value: Result<Value, Option<&'static str>> = match self {
            Key::Mode => parse_mode(text).map(Value::Mode).map_err(|e| e.meant),
            Key::Behavior => parse_behavior(text)
                .map(Value::Behavior)
                .map_err(|e| e.meant),
            Key::MaxAttempts => parse_count(text).map(Value::Count).ok_or(None),
            Key::MaxInFlight => parse_count(text)
                .filter(|n| *n >= 2)
                .map(Value::Count)
                .ok_or(None),
            Key::Multiplier | Key::AttemptTimeoutMultiplier => {
                parse_factor(text).map(Value::Factor).ok_or(None)
            }
            Key::Jitter => parse_jitter(text).map(Value::Jitter).map_err(|e| e.meant),
            Key::InitialBackoff
            | Key::MaxBackoff
            | Key::AttemptTimeout
            | Key::MaxAttemptTimeout
            | Key::Deadline
            | Key::MinHedgeAfter
            | Key::MaxHedgeAfter => parse_duration(text)
                .ok()
                .filter(|d| !d.is_zero() || !self.above_zero())
                .map(Value::Duration)
                .ok_or(None),
            Key::HedgeAfter => parse_hedge(text).map(Value::Hedge).map_err(|e| e.meant()),
            Key::HedgeBudget => parse_hedge_budget(text).map(Value::Share).ok_or(None),
        };
        match value {
            Ok(v) if self.check(&v).is_none() => Ok(v),
            Ok(_) | Err(None) => Err(ValueError::Expected(self)),
            Err(Some(meant)) => Err(ValueError::DidYouMean(self, meant)),
        }
    }

    /// Reads a number of the config file (`integer`: written without a fraction) as the value
    /// of this key, checked as [`Key::parse`] checks it. A duration needs a unit, so it is
    /// written as a string.
    pub fn from_number(self, x: f64, integer: bool) -> Result<Value, ValueError> {
        let count = |least: f64| {
            (integer && x >= least && x <= f64::from(u32::MAX)).then_some(Value::Count(x as u32))
        };
        let value = match self {
            Key::MaxAttempts => count(1.0),
            Key::MaxInFlight => count(2.0),
            Key::Multiplier | Key::AttemptTimeoutMultiplier => Some(Value::Factor(x)),
            Key::Jitter => Some(Value::Jitter(Jitter::Fraction(x))),
            Key::InitialBackoff
            | Key::MaxBackoff
            | Key::AttemptTimeout
            | Key::MaxAttemptTimeout
            | Key::Deadline
            | Key::HedgeAfter
            | Key::MinHedgeAfter
            | Key::MaxHedgeAfter => return Err(ValueError::NeedsUnit(self, x)),
            // A share is written with its `%`, as a string: 2 is not 2 %.
            Key::Mode | Key::HedgeBudget => None,
            // `behavior = 2026`, written as a number.
            Key::Behavior => (integer && x == 2026.0).then_some(Value::Behavior(Behavior::Aws2026)),
        };
        value
            .filter(|v| self.check(v).is_none())
            .ok_or(ValueError::Expected(self))
    }

    /// What a value of this key looks like, as a sentence for a warning about a value that is
    /// not one (`max_attempts is a whole number from 1 to 4294967295`).
    #[must_use]
    pub fn expected(self) -> String {
        let name = self.name();
        match self {
            Key::Mode => format!("{name} is \"standard\" or \"adaptive\""),
            Key::Behavior => format!("{name} is \"classic\" or \"2026\""),
            Key::MaxAttempts => format!("{name} is a whole number from 1 to {}", u32::MAX),
            Key::Multiplier | Key::AttemptTimeoutMultiplier => {
                format!("{name} is a number >= 1, such as 2")
            }
            Key::Jitter => format!(
                "{name} is \"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]"
            ),
            Key::InitialBackoff | Key::MaxBackoff => format!(
                "{name} is a duration with a unit, such as \"100ms\" (units: ns, us, ms, s, m, h)"
            ),
            Key::AttemptTimeout | Key::MaxAttemptTimeout | Key::Deadline => format!(
                "{name} is a duration above zero with a unit, such as \"10s\" (units: ns, us, \
                 ms, s, m, h)"
            ),
            Key::HedgeAfter => format!(
                "{name} is a duration above zero with a unit, such as \"50ms\", or a percentile \
                 of the function's latency: \"p50\", \"p90\", \"p95\" or \"p99\""
            ),
            Key::MaxInFlight => format!("{name} is a whole number from 2 to {}", u32::MAX),
            Key::MinHedgeAfter | Key::MaxHedgeAfter => format!(
                "{name} is a duration above zero with a unit, such as \"500ms\" (units: ns, us, \
                 ms, s, m, h)"
            ),
            Key::HedgeBudget => {
                format!(
                    "{name} is a share of the calls above 0 % and at most 100 %, such as \"2%\""
                )
            }
        }
    }

    /// A duration key whose value read from text must be above zero.
    const fn above_zero(self) -> bool {
        matches!(
            self,
            Key::AttemptTimeout
                | Key::MaxAttemptTimeout
                | Key::Deadline
                | Key::MinHedgeAfter
                | Key::MaxHedgeAfter
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn durations_parse_exactly() {
        let ok = |text: &str| parse_duration(text).map(|d| d.as_nanos());
        assert_eq!(ok("500us"), Ok(500_000));
        assert_eq!(ok("500µs"), Ok(500_000));
        assert_eq!(ok("150ms"), Ok(150_000_000));
        assert_eq!(ok("2s"), Ok(2_000_000_000));
        assert_eq!(ok("1.5s"), Ok(1_500_000_000));
        assert_eq!(ok("0.1s"), Ok(100_000_000));
        assert_eq!(ok("1m"), Ok(60_000_000_000));
        assert_eq!(ok("2min"), Ok(120_000_000_000));
        assert_eq!(ok("1h"), Ok(3_600_000_000_000));
        assert_eq!(ok("1.25ms"), Ok(1_250_000));
        assert_eq!(ok(".5s"), Ok(500_000_000));
        assert_eq!(ok("5.s"), Ok(5_000_000_000));
        assert_eq!(ok("10_000ms"), Ok(10_000_000_000));
        assert_eq!(ok(" 5 s "), Ok(5_000_000_000));
        assert_eq!(ok("0s"), Ok(0));
        assert_eq!(ok("0.000000001s"), Ok(1));
        assert_eq!(ok("1.000ns"), Ok(1));
        assert_eq!(ok("18446744073709551615ns"), Ok(u128::from(u64::MAX)));
    }

    #[test]
    fn durations_say_what_is_wrong() {
        use DurationError as E;
        for (text, why) in [
            ("5", E::MissingUnit),
            ("", E::MissingUnit),
            ("5 parsecs", E::UnknownUnit),
            ("1 parsec", E::UnknownUnit),
            ("-1s", E::Signed),
            (" -0.5ms", E::Signed),
            ("+1s", E::Signed),
            ("1e3ms", E::UnknownUnit),
            ("5S", E::UnknownUnit),
            ("ms", E::MissingNumber),
            (".s", E::MissingNumber),
            ("_s", E::MissingNumber),
            ("1.2.3s", E::NotANumber),
            ("1.5.2s", E::NotANumber),
            ("99999999999999999999s", E::NotANumber),
            ("99999999999h", E::TooLong),
            ("18446744073709551616ns", E::NotANumber),
            ("18446744073709551.616s", E::TooLong),
            ("1.5ns", E::FinerThanNanosecond),
            ("1.0000000001s", E::FinerThanNanosecond),
        ] {
            assert_eq!(parse_duration(text), Err(why), "{text:?}");
        }
        assert_eq!(E::MissingUnit.to_string(), "the unit is missing");
        assert_eq!(E::UnknownUnit.to_string(), "unknown unit");
        assert_eq!(E::MissingNumber.to_string(), "the number is missing");
        assert_eq!(E::NotANumber.to_string(), "not a number");
        assert_eq!(E::TooLong.to_string(), "too long (at most 584 years)");
        assert_eq!(
            E::FinerThanNanosecond.to_string(),
            "finer than a nanosecond"
        );
        assert_eq!(E::Signed.to_string(), "a duration has no sign");
    }

    #[test]
    fn modes_parse_loosely() {
        let unknown = |meant| Err(UnknownName { meant });
        assert_eq!(parse_mode("standard"), Ok(Mode::Standard));
        assert_eq!(parse_mode(" Adaptive "), Ok(Mode::Adaptive));
        assert_eq!(parse_mode("STANDARD"), Ok(Mode::Standard));
        assert_eq!(parse_mode("legacy"), unknown(None));
        assert_eq!(parse_mode(""), unknown(None));
    }

    #[test]
    fn a_misspelt_mode_or_jitter_says_what_it_meant() {
        fn meant<T>(r: Result<T, UnknownName>) -> Option<&'static str> {
            r.err().and_then(|e| e.meant)
        }
        assert_eq!(meant(parse_mode("standrd")), Some("standard"));
        assert_eq!(meant(parse_mode(" Adaptiv ")), Some("adaptive"));
        assert_eq!(meant(parse_mode("stan")), Some("standard"));
        assert_eq!(meant(parse_mode("turbo")), None);
        assert_eq!(meant(parse_jitter("ful")), Some("full"));
        assert_eq!(meant(parse_jitter("FULLL")), Some("full"));
        assert_eq!(meant(parse_jitter("decorelated")), Some("decorrelated"));
        assert_eq!(meant(parse_jitter("non")), Some("none"));
        assert_eq!(meant(parse_jitter("random")), None);
        assert_eq!(meant(parse_jitter("0.5.5")), None);
        assert_eq!(
            UnknownName {
                meant: Some("full")
            }
            .to_string(),
            "unknown name: did you mean \"full\"?"
        );
        assert_eq!(UnknownName { meant: None }.to_string(), "unknown name");
    }

    #[test]
    fn jitters_parse_by_name_or_as_a_fraction() {
        assert_eq!(parse_jitter("full"), Ok(Jitter::Full));
        assert_eq!(parse_jitter("Equal"), Ok(Jitter::Equal));
        assert_eq!(parse_jitter(" none "), Ok(Jitter::None));
        assert_eq!(parse_jitter("decorrelated"), Ok(Jitter::Decorrelated));
        assert_eq!(parse_jitter("0.25"), Ok(Jitter::Fraction(0.25)));
        // Out of range: read here, refused by `Key::check`.
        assert_eq!(parse_jitter("1.5"), Ok(Jitter::Fraction(1.5)));
        assert_eq!(parse_jitter("sometimes"), Err(UnknownName { meant: None }));
        assert_eq!(parse_jitter(""), Err(UnknownName { meant: None }));
    }

    #[test]
    fn hedges_parse_as_a_percentile_or_a_duration() {
        let percentile = |meant| Err(HedgeError::Percentile { meant });
        assert_eq!(parse_hedge("p95"), Ok(HedgeSpec::Percentile(95)));
        assert_eq!(parse_hedge(" P99 "), Ok(HedgeSpec::Percentile(99)));
        assert_eq!(parse_hedge("20ms"), Ok(HedgeSpec::Fixed(MS(20))));
        assert_eq!(parse_hedge("0ms"), Ok(HedgeSpec::Fixed(Duration::ZERO)));
        assert_eq!(parse_hedge("p42"), percentile(None));
        assert_eq!(parse_hedge("p"), percentile(None));
        assert_eq!(parse_hedge("p1000"), percentile(None));
        assert_eq!(
            parse_hedge("fast"),
            Err(HedgeError::Duration(DurationError::UnknownUnit))
        );
        assert_eq!(
            parse_hedge("95"),
            Err(HedgeError::Duration(DurationError::MissingUnit))
        );
        assert_eq!(
            HedgeError::Percentile { meant: None }.to_string(),
            "the percentiles are \"p50\", \"p90\", \"p95\" or \"p99\" (\"The Tail at Scale\" \
             hedges at the 95th)"
        );
        assert_eq!(
            HedgeError::Duration(DurationError::MissingUnit).to_string(),
            "the unit is missing"
        );
    }

    #[test]
    fn a_percentile_misspelt_or_written_another_way_says_what_it_meant() {
        for (text, meant) in [
            ("p955", "p95"),
            ("p95x", "p95"),
            ("P95.0", "p95"),
            ("p 99", "p99"),
            ("p-90", "p90"),
            ("p95th", "p95"),
            ("95th", "p95"),
            ("99TH", "p99"),
            ("95th percentile", "p95"),
            ("percentile 50", "p50"),
            ("95%", "p95"),
            ("95 %", "p95"),
            ("95p", "p95"),
            ("pct90", "p90"),
            ("0.99p", "p99"),
        ] {
            let err = parse_hedge(text).unwrap_err();
            assert_eq!(err.meant(), Some(meant), "{text:?}");
            assert_eq!(
                err,
                HedgeError::Percentile { meant: Some(meant) },
                "{text:?}"
            );
        }
        // Durations with an unknown unit, and percentiles too far from one, suggest nothing.
        for text in [
            "5 parsecs",
            "95ps",
            "1.5p",
            "p42",
            "p75",
            "p9.5",
            "70th",
            "p1000",
        ] {
            assert_eq!(parse_hedge(text).unwrap_err().meant(), None, "{text:?}");
        }
        assert_eq!(
            parse_hedge("p955").unwrap_err().to_string(),
            "did you mean \"p95\"? the percentiles are \"p50\", \"p90\", \"p95\" or \"p99\" \
             (\"The Tail at Scale\" hedges at the 95th)"
        );
        assert_eq!(
            PERCENTILE_NAMES.map(|n| n[1..].parse::<u8>().unwrap()),
            HedgeSpec::PERCENTILES
        );
    }

    #[test]
    fn counts_are_digits() {
        assert_eq!(parse_count("7"), Some(7));
        assert_eq!(parse_count(" 7 "), Some(7));
        assert_eq!(parse_count("0"), Some(0));
        assert_eq!(parse_count("4294967295"), Some(u32::MAX));
        for bad in ["", "+3", "-1", "3.0", "three", "4294967296", "1_000"] {
            assert_eq!(parse_count(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn factors_are_numbers() {
        assert_eq!(parse_factor("1.5"), Some(1.5));
        assert_eq!(parse_factor(" 2 "), Some(2.0));
        assert_eq!(parse_factor("0.5"), Some(0.5));
        assert_eq!(parse_factor("x"), None);
    }

    #[test]
    fn shares_and_ratios() {
        assert_eq!(parse_budget_share("20%"), Some(0.2));
        assert_eq!(parse_budget_share(" 150 % "), Some(1.5));
        assert_eq!(parse_budget_share("100000%"), Some(1000.0));
        for bad in ["0%", "-5%", "20", "100001%", "inf%", "NaN%", "x%"] {
            assert_eq!(parse_budget_share(bad), None, "{bad:?}");
        }
        assert_eq!(parse_failure_ratio("50%"), Some(0.5));
        assert_eq!(parse_failure_ratio("100%"), Some(1.0));
        for bad in ["0%", "100.5%", "50", "%"] {
            assert_eq!(parse_failure_ratio(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn names_and_profiles() {
        assert!(is_name("billing"));
        assert!(!is_name("  "));
        assert!(is_profile_name("billing-eu_2"));
        assert!(!is_profile_name("billing eu"));
        assert!(!is_profile_name("café"));
        assert!(!is_profile_name(""));
    }

    #[test]
    fn values_from_text_are_checked() {
        let expected = |key| Err(ValueError::Expected(key));
        assert_eq!(Key::Deadline.parse("0s"), expected(Key::Deadline));
        assert_eq!(
            Key::InitialBackoff.parse("0s"),
            Ok(Value::Duration(Duration::ZERO))
        );
        assert_eq!(Key::MinHedgeAfter.parse("0s"), expected(Key::MinHedgeAfter));
        assert_eq!(Key::Multiplier.parse("0.5"), expected(Key::Multiplier));
        assert_eq!(Key::Multiplier.parse("inf"), expected(Key::Multiplier));
        assert_eq!(Key::Multiplier.parse("1.5"), Ok(Value::Factor(1.5)));
        assert_eq!(Key::Jitter.parse("Equal"), Ok(Value::Jitter(Jitter::Equal)));
        assert_eq!(Key::Jitter.parse("1.5"), expected(Key::Jitter));
        assert_eq!(Key::MaxAttempts.parse("0"), expected(Key::MaxAttempts));
        assert_eq!(Key::MaxAttempts.parse("7"), Ok(Value::Count(7)));
        assert_eq!(Key::MaxInFlight.parse("1"), expected(Key::MaxInFlight));
        assert_eq!(Key::MaxInFlight.parse("2"), Ok(Value::Count(2)));
        assert_eq!(
            Key::HedgeAfter.parse("P95"),
            Ok(Value::Hedge(HedgeSpec::Percentile(95)))
        );
        assert_eq!(
            Key::HedgeAfter.parse("20ms"),
            Ok(Value::Hedge(HedgeSpec::Fixed(MS(20))))
        );
        for bad in ["p42", "0ms", "fast"] {
            assert_eq!(
                Key::HedgeAfter.parse(bad),
                expected(Key::HedgeAfter),
                "{bad}"
            );
        }
        assert_eq!(Key::Mode.parse("legacy"), expected(Key::Mode));
        let meant = |key, m| Err(ValueError::DidYouMean(key, m));
        assert_eq!(Key::Mode.parse("standrd"), meant(Key::Mode, "standard"));
        assert_eq!(
            Key::Behavior.parse(" 2026 "),
            Ok(Value::Behavior(Behavior::Aws2026))
        );
        assert_eq!(
            Key::Behavior.parse("Classic"),
            Ok(Value::Behavior(Behavior::Classic))
        );
        assert_eq!(Key::Behavior.parse("2025"), meant(Key::Behavior, "2026"));
        assert_eq!(
            Key::Behavior.parse("clasic"),
            meant(Key::Behavior, "classic")
        );
        assert_eq!(Key::Behavior.parse("new"), expected(Key::Behavior));
        assert_eq!(
            Key::Behavior.from_number(2026.0, true),
            Ok(Value::Behavior(Behavior::Aws2026))
        );
        assert_eq!(
            Key::Behavior.from_number(2025.0, true),
            Err(ValueError::Expected(Key::Behavior))
        );
        assert_eq!(
            Key::Behavior.expected(),
            "behavior is \"classic\" or \"2026\""
        );
        assert_eq!(Key::Jitter.parse(" ful "), meant(Key::Jitter, "full"));
        assert_eq!(Key::HedgeAfter.parse("p955"), meant(Key::HedgeAfter, "p95"));
        assert_eq!(Key::HedgeAfter.parse("95th"), meant(Key::HedgeAfter, "p95"));
        // A value that reads but breaks its own rule suggests nothing.
        assert_eq!(Key::Jitter.parse("1.5"), expected(Key::Jitter));
        assert_eq!(
            Key::Deadline.parse("10_000ms"),
            Ok(Value::Duration(MS(10_000)))
        );
    }

    #[test]
    fn values_from_numbers_are_checked() {
        assert_eq!(Key::MaxAttempts.from_number(4.0, true), Ok(Value::Count(4)));
        assert!(Key::MaxAttempts.from_number(4.5, false).is_err());
        assert!(Key::MaxAttempts.from_number(4.0, false).is_err());
        assert!(Key::MaxAttempts.from_number(0.0, true).is_err());
        assert!(Key::MaxAttempts.from_number(4_294_967_296.0, true).is_err());
        assert_eq!(Key::MaxInFlight.from_number(3.0, true), Ok(Value::Count(3)));
        assert!(Key::MaxInFlight.from_number(1.0, true).is_err());
        assert_eq!(
            Key::Multiplier.from_number(2.0, true),
            Ok(Value::Factor(2.0))
        );
        assert!(Key::Multiplier.from_number(0.5, false).is_err());
        assert_eq!(
            Key::Jitter.from_number(1.0, true),
            Ok(Value::Jitter(Jitter::Fraction(1.0)))
        );
        assert!(Key::Jitter.from_number(1.5, false).is_err());
        assert_eq!(
            Key::Mode.from_number(1.0, true),
            Err(ValueError::Expected(Key::Mode))
        );
        let needs_unit = Key::Deadline.from_number(5.0, true).unwrap_err();
        assert_eq!(needs_unit, ValueError::NeedsUnit(Key::Deadline, 5.0));
        assert_eq!(
            needs_unit.to_string(),
            "deadline needs a unit: write it as a string, such as \"5s\""
        );
        assert!(Key::HedgeAfter.from_number(0.5, false).is_err());
    }

    #[test]
    fn what_values_look_like() {
        assert_eq!(
            ValueError::Expected(Key::MaxAttempts).to_string(),
            "max_attempts is a whole number from 1 to 4294967295"
        );
        assert_eq!(
            Key::Jitter.expected(),
            "jitter is \"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]"
        );
        assert_eq!(
            Key::Deadline.expected(),
            "deadline is a duration above zero with a unit, such as \"10s\" (units: ns, us, ms, \
             s, m, h)"
        );
        assert_eq!(Key::Mode.expected(), "mode is \"standard\" or \"adaptive\"");
        assert_eq!(
            ValueError::DidYouMean(Key::Jitter, "full").to_string(),
            "did you mean \"full\"? jitter is \"full\", \"equal\", \"none\", \"decorrelated\" \
             or a number in [0, 1]"
        );
        for key in Key::ALL {
            assert!(key.expected().starts_with(key.name()), "{key:?}");
        }
    }
}
