//! Durations as a service config writes them: the proto3 JSON form of
//! `google.protobuf.Duration`, seconds with up to nine fractional digits and an `s` suffix
//! (`"0.1s"`, `"1.000340012s"`, `"3s"`, `"-2s"`).
//!
//! gRFC A6 adds that the number before the `s` is a JSON number, so a digit comes before the
//! point (`"0.5s"`, not `".5s"`) and a point is followed by digits; exponents, signs other than
//! a leading `-`, spaces and other units are not durations.

use std::time::Duration;

/// The largest number of seconds a `google.protobuf.Duration` holds (10,000 years).
pub(crate) const MAX_SECONDS: u64 = 315_576_000_000;

/// A duration as written: its size, and whether it was negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Signed {
    /// Written with a leading `-` and not zero.
    pub(crate) negative: bool,
    pub(crate) size: Duration,
}

/// Why a text is not a duration: each is the start of a problem's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// Not digits, an optional point and fraction, and `s`.
    Form,
    /// A fraction with no digit before the point (`".5s"`).
    NoWholeSeconds,
    /// More than nine fractional digits.
    TooPrecise,
    /// More than [`MAX_SECONDS`].
    TooLong,
}

impl Malformed {
    /// What is wrong, for `text`: the part of a problem's message before `found`.
    pub(crate) fn message(self, text: &str) -> String {
        match self {
            Malformed::Form => "must be a duration in seconds with an \"s\" suffix and up to \
                                9 fractional digits, such as \"0.1s\" or \"3s\""
                .to_owned(),
            Malformed::NoWholeSeconds => {
                let sign = if text.starts_with('-') { "-" } else { "" };
                let rest = text.trim_start_matches('-');
                format!("must have a digit before the decimal point, such as \"{sign}0{rest}\"")
            }
            Malformed::TooPrecise => {
                "must have at most 9 fractional digits (nanoseconds)".to_owned()
            }
            Malformed::TooLong => format!("must be at most {MAX_SECONDS}s"),
        }
    }
}

/// Parses a proto3 JSON duration.
pub(crate) fn parse(text: &str) -> Result<Signed, Malformed> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let number = rest.strip_suffix('s').ok_or(Malformed::Form)?;
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(fraction) = fraction {
        if !digits(fraction) {
            return Err(Malformed::Form);
        }
        if whole.is_empty() {
            return Err(Malformed::NoWholeSeconds);
        }
    }
    if !digits(whole) {
        return Err(Malformed::Form);
    }
    let fraction = fraction.unwrap_or("");
    if fraction.len() > 9 {
        return Err(Malformed::TooPrecise);
    }
    let seconds = whole.bytes().try_fold(0_u64, |n, b| {
        n.checked_mul(10)?
            .checked_add(u64::from(b - b'0'))
            .filter(|n| *n <= MAX_SECONDS)
    });
    let seconds = seconds.ok_or(Malformed::TooLong)?;
    let nanos = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0_u32, |n, b| n * 10 + u32::from(b - b'0'));
    let size = Duration::new(seconds, nanos);
    Ok(Signed {
        negative: negative && !size.is_zero(),
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        let d = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
        assert!(!d.negative, "{text:?}");
        d.size
    }

    #[test]
    fn seconds_with_up_to_nine_fractional_digits() {
        assert_eq!(ok("0.1s"), Duration::from_millis(100));
        assert_eq!(ok("3s"), Duration::from_secs(3));
        assert_eq!(ok("1.000340012s"), Duration::new(1, 340_012));
        assert_eq!(ok("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("0.0s"), Duration::ZERO);
        assert_eq!(ok("00.5s"), Duration::from_millis(500));
        assert_eq!(ok("2.5s"), Duration::from_millis(2500));
        assert_eq!(ok("315576000000s"), Duration::from_secs(MAX_SECONDS));
        assert_eq!(
            ok("315576000000.999999999s"),
            Duration::new(MAX_SECONDS, 999_999_999)
        );
    }

    #[test]
    fn negative_durations_are_read_as_such() {
        assert_eq!(
            parse("-1.5s"),
            Ok(Signed {
                negative: true,
                size: Duration::from_millis(1500)
            })
        );
        assert_eq!(
            parse("-0s"),
            Ok(Signed {
                negative: false,
                size: Duration::ZERO
            })
        );
    }

    #[test]
    fn other_forms_are_refused() {
        for bad in [
            "", "s", "1", "100ms", "1m", "1.5", "1S", " 1s", "1s ", "+1s", "1e3s", "1.s", "1..5s",
            "1.5.s", "0x1s", "--1s", "-s", "1,5s", "١s", "1.-5s", "1.+5s",
        ] {
            assert_eq!(parse(bad), Err(Malformed::Form), "{bad:?}");
        }
        assert_eq!(parse(".5s"), Err(Malformed::NoWholeSeconds));
        assert_eq!(parse("-.5s"), Err(Malformed::NoWholeSeconds));
        assert_eq!(parse("0.0000000001s"), Err(Malformed::TooPrecise));
        assert_eq!(parse("315576000001s"), Err(Malformed::TooLong));
        assert_eq!(parse("99999999999999999999999s"), Err(Malformed::TooLong));
    }

    #[test]
    fn messages() {
        assert_eq!(
            Malformed::Form.message("100ms"),
            "must be a duration in seconds with an \"s\" suffix and up to 9 fractional \
             digits, such as \"0.1s\" or \"3s\""
        );
        assert_eq!(
            Malformed::NoWholeSeconds.message(".5s"),
            "must have a digit before the decimal point, such as \"0.5s\""
        );
        assert_eq!(
            Malformed::NoWholeSeconds.message("-.5s"),
            "must have a digit before the decimal point, such as \"-0.5s\""
        );
    }
}
