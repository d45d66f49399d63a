//! A setting's value written as text (an environment variable, a TOML string) or as a TOML
//! number, read as the attribute reads it.

use crate::spec::{HedgeSpec, Jitter, Key, Mode, Value};
use std::time::Duration;

/// `raw` as the value of `key`, or what the value should look like.
pub(crate) fn parse(key: Key, raw: &str) -> Result<Value, String> {
    let s = raw.trim();
    let value = match key {
        Key::Mode => Mode::parse(s).map(Value::Mode),
        Key::MaxAttempts => attempts(s).map(Value::Attempts),
        Key::Multiplier | Key::AttemptTimeoutMultiplier => {
            s.parse::<f64>().ok().and_then(factor).map(Value::Factor)
        }
        Key::Jitter => jitter(s).map(Value::Jitter),
        Key::InitialBackoff
        | Key::MaxBackoff
        | Key::AttemptTimeout
        | Key::MaxAttemptTimeout
        | Key::Deadline
        | Key::MinHedgeAfter
        | Key::MaxHedgeAfter => duration(s)
            .filter(|d| !d.is_zero() || !above_zero(key))
            .map(Value::Duration),
        Key::HedgeAfter => hedge(s).map(Value::Hedge),
        Key::MaxInFlight => attempts(s).filter(|n| *n >= 2).map(Value::Attempts),
    };
    value.ok_or_else(|| expected(key))
}

/// `"p95"` (p50, p90, p95, p99) or a duration above zero.
fn hedge(s: &str) -> Option<HedgeSpec> {
    if let Some(p) = s.strip_prefix(['p', 'P']) {
        return match p.parse::<u8>().ok()? {
            p @ (50 | 90 | 95 | 99) => Some(HedgeSpec::Percentile(p)),
            _ => None,
        };
    }
    duration(s).filter(|d| !d.is_zero()).map(HedgeSpec::Fixed)
}

/// A TOML number as the value of `key` (`integer`: it was written without a fraction).
#[cfg_attr(not(feature = "config-file"), allow(dead_code))]
pub(crate) fn number(key: Key, x: f64, integer: bool) -> Result<Value, String> {
    let value = match key {
        Key::MaxAttempts if integer && x >= 1.0 && x <= f64::from(u32::MAX) => {
            Some(Value::Attempts(x as u32))
        }
        Key::MaxInFlight if integer && x >= 2.0 && x <= f64::from(u32::MAX) => {
            Some(Value::Attempts(x as u32))
        }
        Key::Multiplier | Key::AttemptTimeoutMultiplier => factor(x).map(Value::Factor),
        Key::Jitter => fraction(x).map(|f| Value::Jitter(Jitter::Fraction(f))),
        Key::InitialBackoff
        | Key::MaxBackoff
        | Key::AttemptTimeout
        | Key::MaxAttemptTimeout
        | Key::Deadline
        | Key::HedgeAfter
        | Key::MinHedgeAfter
        | Key::MaxHedgeAfter => {
            return Err(format!(
                "{} needs a unit: write it as a string, such as \"{x}s\"",
                key.name()
            ));
        }
        _ => None,
    };
    value.ok_or_else(|| expected(key))
}

/// What a value of `key` looks like.
pub(crate) fn expected(key: Key) -> String {
    let name = key.name();
    match key {
        Key::Mode => format!("{name} is \"standard\" or \"adaptive\""),
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
            "{name} is a duration above zero with a unit, such as \"10s\" (units: ns, us, ms, \
             s, m, h)"
        ),
        Key::HedgeAfter => format!(
            "{name} is a duration above zero with a unit, such as \"50ms\", or a percentile of \
             the function's latency: \"p50\", \"p90\", \"p95\" or \"p99\""
        ),
        Key::MaxInFlight => format!("{name} is a whole number from 2 to {}", u32::MAX),
        Key::MinHedgeAfter | Key::MaxHedgeAfter => format!(
            "{name} is a duration above zero with a unit, such as \"500ms\" (units: ns, us, \
             ms, s, m, h)"
        ),
    }
}

fn above_zero(key: Key) -> bool {
    matches!(
        key,
        Key::AttemptTimeout
            | Key::MaxAttemptTimeout
            | Key::Deadline
            | Key::MinHedgeAfter
            | Key::MaxHedgeAfter
    )
}

/// A decimal number of attempts, >= 1.
fn attempts(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().filter(|n| *n >= 1)
}

fn factor(x: f64) -> Option<f64> {
    (x.is_finite() && x >= 1.0).then_some(x)
}

fn fraction(x: f64) -> Option<f64> {
    (0.0..=1.0).contains(&x).then_some(x)
}

fn jitter(s: &str) -> Option<Jitter> {
    match s.to_ascii_lowercase().as_str() {
        "full" => Some(Jitter::Full),
        "equal" => Some(Jitter::Equal),
        "none" => Some(Jitter::None),
        "decorrelated" => Some(Jitter::Decorrelated),
        other => other
            .parse::<f64>()
            .ok()
            .and_then(fraction)
            .map(Jitter::Fraction),
    }
}

/// `"150ms"`, `"1.5s"`, `"2m"`: a non-negative decimal number and a unit, to the nanosecond.
pub(super) fn duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    let nanos_per_unit: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    if !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut nanos = whole.checked_mul(nanos_per_unit)?;
    // The fraction, exactly, as long as it does not go below a nanosecond.
    let mut scale = nanos_per_unit;
    for digit in frac.bytes() {
        let d = u128::from(digit - b'0');
        if scale % 10 != 0 {
            if d != 0 {
                return None;
            }
            continue;
        }
        scale /= 10;
        nanos = nanos.checked_add(d * scale)?;
    }
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_attribute_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(duration("150ms"), Some(ms(150)));
        assert_eq!(duration("1.5s"), Some(ms(1500)));
        assert_eq!(duration("2m"), Some(ms(120_000)));
        assert_eq!(duration("500us"), Some(Duration::from_micros(500)));
        assert_eq!(duration("0.000000001s"), Some(Duration::from_nanos(1)));
        assert_eq!(duration("1h"), Some(ms(3_600_000)));
        for bad in [
            "10",
            "s",
            "1.5.2s",
            "-1s",
            "1 parsec",
            "1.0000000001s",
            "",
            "1e3ms",
        ] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn values_are_checked_as_in_the_attribute() {
        assert_eq!(parse(Key::Deadline, "0s"), Err(expected(Key::Deadline)));
        assert_eq!(
            parse(Key::InitialBackoff, "0s"),
            Ok(Value::Duration(Duration::ZERO))
        );
        assert_eq!(
            parse(Key::Multiplier, "0.5"),
            Err(expected(Key::Multiplier))
        );
        assert_eq!(
            parse(Key::Jitter, "Equal"),
            Ok(Value::Jitter(Jitter::Equal))
        );
        assert_eq!(number(Key::MaxAttempts, 4.0, true), Ok(Value::Attempts(4)));
        assert_eq!(
            parse(Key::HedgeAfter, "P95"),
            Ok(Value::Hedge(HedgeSpec::Percentile(95)))
        );
        assert_eq!(
            parse(Key::HedgeAfter, "20ms"),
            Ok(Value::Hedge(HedgeSpec::Fixed(Duration::from_millis(20))))
        );
        for bad in ["p42", "0ms", "fast"] {
            assert_eq!(parse(Key::HedgeAfter, bad), Err(expected(Key::HedgeAfter)));
        }
        assert_eq!(
            parse(Key::MaxInFlight, "1"),
            Err(expected(Key::MaxInFlight))
        );
        assert_eq!(number(Key::MaxInFlight, 3.0, true), Ok(Value::Attempts(3)));
        assert!(number(Key::MaxAttempts, 4.5, false).is_err());
        assert!(
            number(Key::Deadline, 5.0, true)
                .unwrap_err()
                .contains("\"5s\"")
        );
    }
}
