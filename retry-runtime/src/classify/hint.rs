//! Server hints: how long a server asked the client to wait before the next attempt.
//!
//! | header | value | meaning |
//! |---|---|---|
//! | `Retry-After` (RFC 9110) | delta-seconds (`120`) or an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`) | wait that long, or until then (a date in the past: retry now) |
//! | `x-amz-retry-after` (AWS) | milliseconds (`1500`) | wait that long |
//! | `grpc-retry-pushback-ms` (gRPC, gRFC A6) | milliseconds; negative = do not retry | wait that long, or stop |
//! | `RateLimit` (draft-ietf-httpapi-ratelimit-headers) | a list of limits, each `"name";r=REMAINING;t=RESET` (an RFC 9651 structured field) | a limit with no quota left (`r=0`) resets in `t` seconds: wait for the longest of them |
//!
//! A malformed value is ignored, as if the header were absent: the computed backoff applies.
//! The parsers accept surrounding spaces and tabs (HTTP's optional whitespace) and nothing else
//! around the value.
//!
//! A hint replaces the computed backoff, without jitter. A hint longer than the function's
//! `max_backoff` ends the retries with the last error (the server asks for more patience than
//! the function allows), and a negative `grpc-retry-pushback-ms` makes
//! [`Classify for tonic::Status`](crate::Classify) return `Permanent`, so the call stops at once.
//!
//! ```
//! use retry_runtime::hint::{self, Pushback};
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//!
//! assert_eq!(hint::retry_after("120"), Some(Duration::from_secs(120)));
//! assert_eq!(hint::retry_after("soon"), None);
//!
//! let now = UNIX_EPOCH + Duration::from_secs(784_111_767); // Sun, 06 Nov 1994 08:49:27 GMT
//! assert_eq!(
//!     hint::retry_after_at("Sun, 06 Nov 1994 08:49:37 GMT", now),
//!     Some(Duration::from_secs(10)),
//! );
//!
//! assert_eq!(hint::amz_retry_after("1500"), Some(Duration::from_millis(1500)));
//! assert_eq!(hint::grpc_pushback("250"), Some(Pushback::After(Duration::from_millis(250))));
//! assert_eq!(hint::grpc_pushback("-1"), Some(Pushback::Stop));
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a `grpc-retry-pushback-ms` value asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pushback {
    /// Retry after this delay.
    After(Duration),
    /// Do not retry (a negative value).
    Stop,
}

/// The name of the standard HTTP header.
pub const RETRY_AFTER: &str = "retry-after";
/// The name of the AWS header (milliseconds).
pub const AMZ_RETRY_AFTER: &str = "x-amz-retry-after";
/// The name of the gRPC trailer (milliseconds; negative: do not retry).
pub const GRPC_RETRY_PUSHBACK_MS: &str = "grpc-retry-pushback-ms";
/// The name of the IETF's rate-limit field (draft-ietf-httpapi-ratelimit-headers).
pub const RATELIMIT: &str = "ratelimit";

/// Parses a `Retry-After` value, delta-seconds or an HTTP-date, against the system clock.
///
/// A date in the past gives a zero delay. `None` for a malformed value.
#[must_use]
pub fn retry_after(value: &str) -> Option<Duration> {
    retry_after_at(value, crate::runtime::system_now())
}

/// Parses a `Retry-After` value as [`retry_after`] does, with `now` as the current time.
///
/// Delta-seconds too large for a `u64` saturate: such a hint is longer than any `max_backoff`,
/// so it ends the retries, as the server meant.
#[must_use]
pub fn retry_after_at(value: &str, now: SystemTime) -> Option<Duration> {
    let value = trim_ows(value);
    if let Some(secs) = digits(value) {
        return Some(Duration::from_secs(secs));
    }
    let date = http_date(value, now)?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an `x-amz-retry-after` value: a non-negative number of milliseconds.
#[must_use]
pub fn amz_retry_after(value: &str) -> Option<Duration> {
    digits(trim_ows(value)).map(Duration::from_millis)
}

/// Parses a `grpc-retry-pushback-ms` value: milliseconds, or a negative number meaning "do not
/// retry".
///
/// gRFC A6 also reads an unparseable value as "do not retry"; here a malformed value is ignored
/// like every other malformed hint (`None`), so a garbled trailer cannot stop a retry that the
/// status code allows.
#[must_use]
pub fn grpc_pushback(value: &str) -> Option<Pushback> {
    let value = trim_ows(value);
    match value.strip_prefix('-') {
        Some(rest) => digits(rest).map(|_| Pushback::Stop),
        None => digits(value).map(|ms| Pushback::After(Duration::from_millis(ms))),
    }
}

/// Parses a `RateLimit` field (draft-ietf-httpapi-ratelimit-headers): a list of quota limits,
/// each a name with the parameters `r` (the quota units remaining) and `t` (seconds until the
/// quota resets), as an RFC 9651 structured field (`"default";r=0;t=3, "burst";r=7;t=1`).
///
/// The hint is the longest `t` among the limits with no quota left (`r=0`): the time until
/// every exhausted quota has reset. `None` when no limit is exhausted, or when the value is
/// malformed (not a structured list, or a limit without non-negative integers `r` and `t`), as
/// a client ignores a malformed field.
///
/// ```
/// use retry_runtime::hint;
/// use std::time::Duration;
///
/// assert_eq!(hint::ratelimit(r#""default";r=0;t=3"#), Some(Duration::from_secs(3)));
/// assert_eq!(hint::ratelimit(r#""day";r=0;t=30, "second";r=0;t=1"#), Some(Duration::from_secs(30)));
/// assert_eq!(hint::ratelimit(r#""default";r=12;t=3"#), None, "quota left");
/// assert_eq!(hint::ratelimit("default;r=0"), None, "malformed: no reset");
/// ```
#[cfg(feature = "http")]
#[must_use]
pub fn ratelimit(value: &str) -> Option<Duration> {
    let list: sfv::List = sfv::Parser::new(value).parse().ok()?;
    let mut longest: Option<u64> = None;
    for entry in &list {
        let sfv::ListEntry::Item(limit) = entry else {
            return None;
        };
        let param = |name: &str| {
            let value = limit.params.iter().find(|(k, _)| k.as_str() == name)?.1;
            u64::try_from(i64::from(value.as_integer()?)).ok()
        };
        let (remaining, reset) = (param("r")?, param("t")?);
        if remaining == 0 {
            longest = longest.max(Some(reset));
        }
    }
    longest.map(Duration::from_secs)
}

/// The hint of an HTTP response's headers: `x-amz-retry-after` if present and well formed
/// (it has millisecond precision), else `Retry-After`, else the time until the exhausted quotas
/// of a `RateLimit` field reset ([`ratelimit`]; the field's lines taken as one list).
#[cfg(feature = "http")]
#[must_use]
pub fn from_headers(headers: &::http::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    text(AMZ_RETRY_AFTER)
        .and_then(amz_retry_after)
        .or_else(|| text(RETRY_AFTER).and_then(retry_after))
        .or_else(|| ratelimit_lines(headers))
}

/// [`ratelimit`] of every `RateLimit` line of `headers`, as one list.
#[cfg(feature = "http")]
fn ratelimit_lines(headers: &::http::HeaderMap) -> Option<Duration> {
    let mut lines = headers.get_all(RATELIMIT).iter();
    let first = lines.next()?.to_str().ok()?;
    let Some(second) = lines.next() else {
        return ratelimit(first);
    };
    let mut joined = format!("{first}, {}", second.to_str().ok()?);
    for line in lines {
        joined.push_str(", ");
        joined.push_str(line.to_str().ok()?);
    }
    ratelimit(&joined)
}

/// Spaces and horizontal tabs around a field value (RFC 9110 "OWS").
fn trim_ows(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

/// `1*DIGIT`, saturating at `u64::MAX`.
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

/// An HTTP-date in any of the three forms RFC 9110 section 5.6.7 makes recipients accept:
/// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, and
/// asctime `Sun Nov  6 08:49:37 1994`.
fn http_date(s: &str, now: SystemTime) -> Option<SystemTime> {
    let (day, month, year, time) = if let Some((name, rest)) = s.split_once(", ") {
        if let Some(rest) = rest.strip_suffix(" GMT") {
            if SHORT_DAYS.contains(&name) {
                // IMF-fixdate: "06 Nov 1994 08:49:37"
                let mut parts = rest.split(' ');
                let (day, month, year, time) =
                    (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
                if parts.next().is_some() || day.len() != 2 || year.len() != 4 {
                    return None;
                }
                (number(day)?, month_number(month)?, number(year)?, time)
            } else if LONG_DAYS.contains(&name) {
                // RFC 850: "06-Nov-94 08:49:37"
                let (date, time) = rest.split_once(' ')?;
                let mut parts = date.split('-');
                let (day, month, yy) = (parts.next()?, parts.next()?, parts.next()?);
                if parts.next().is_some() || day.len() != 2 || yy.len() != 2 {
                    return None;
                }
                let year = two_digit_year(number(yy)?, now);
                (number(day)?, month_number(month)?, year, time)
            } else {
                return None;
            }
        } else {
            return None;
        }
    } else {
        // asctime: "Sun Nov  6 08:49:37 1994" (the day is padded with a space)
        let name = s.get(..4)?.strip_suffix(' ')?;
        if !SHORT_DAYS.contains(&name) {
            return None;
        }
        let month = s.get(4..8)?.strip_suffix(' ')?;
        let day = s.get(8..10)?;
        let day = day.strip_prefix(' ').unwrap_or(day);
        let rest = s.get(10..)?.strip_prefix(' ')?;
        let (time, year) = rest.split_once(' ')?;
        if year.len() != 4 {
            return None;
        }
        (number(day)?, month_number(month)?, number(year)?, time)
    };
    let mut hms = time.split(':');
    let (h, m, sec) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some() || h.len() != 2 || m.len() != 2 || sec.len() != 2 {
        return None;
    }
    let (h, m, sec) = (number(h)?, number(m)?, number(sec)?);
    // 60 is a leap second.
    if h > 23 || m > 59 || sec > 60 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(h * 3600 + m * 60 + sec);
    match u64::try_from(secs) {
        Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs)),
        Err(_) => Some(UNIX_EPOCH), // before 1970: in the past all the same
    }
}

const SHORT_DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn month_number(s: &str) -> Option<u32> {
    let i = MONTHS.iter().position(|m| *m == s)?;
    u32::try_from(i + 1).ok()
}

/// RFC 9110: a two-digit year that would be more than 50 years in the future is the most
/// recent past year with the same last two digits.
fn two_digit_year(yy: u32, now: SystemTime) -> u32 {
    let now_year = year_of(now);
    let century = now_year / 100 * 100;
    let year = century + yy;
    if year > now_year + 50 {
        year - 100
    } else {
        year
    }
}

fn year_of(t: SystemTime) -> u32 {
    let days = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    // 400 years are 146_097 days; walk down from an estimate that is never too small.
    let mut year = 1971 + u32::try_from(days * 400 / 146_097).unwrap_or(0);
    while days_from_civil(year, 1, 1) > i64::try_from(days).unwrap_or(i64::MAX) {
        year -= 1;
    }
    year
}

fn is_leap(year: u32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (negative before it).
fn days_from_civil(year: u32, month: u32, day: u32) -> i64 {
    let (year, month, day) = (i64::from(year), i64::from(month), i64::from(day));
    // Count from 0000-03-01 so that the leap day ends the counting year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// `value` with 1 to 8 random edits (a byte replaced (from `alphabet`, or now and then any
/// byte), one of `alphabet` inserted, a byte removed, a piece repeated): the fuzz tests'
/// mutation of text from the network.
#[cfg(all(test, feature = "http"))]
pub(crate) fn mutate(rng: &mut rand::rngs::StdRng, value: &str, alphabet: &[u8]) -> Vec<u8> {
    use rand::{Rng, RngExt};
    let mut value = value.as_bytes().to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let at = rng.random_range(0..=value.len());
        match rng.random_range(0..4) {
            0 if at < value.len() => {
                value[at] = if rng.random_bool(0.9) {
                    alphabet[rng.random_range(0..alphabet.len())]
                } else {
                    rng.next_u32() as u8
                };
            }
            1 => value.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
            2 if at < value.len() => {
                value.remove(at);
            }
            _ => {
                let end = rng.random_range(at..=value.len());
                let piece = value[at..end].to_vec();
                value.splice(at..at, piece);
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Sun, 06 Nov 1994 08:49:37 GMT, the example of RFC 9110.
    const RFC_EXAMPLE: u64 = 784_111_777;

    #[test]
    fn delta_seconds() {
        assert_eq!(retry_after("0"), Some(Duration::ZERO));
        assert_eq!(retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" \t7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            retry_after("99999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
        for bad in ["", " ", "-1", "+1", "1.5", "1s", "12 3", "0x10", "１"] {
            assert_eq!(retry_after(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_three_date_forms() {
        let now = at(RFC_EXAMPLE - 10);
        let ten = Some(Duration::from_secs(10));
        assert_eq!(retry_after_at("Sun, 06 Nov 1994 08:49:37 GMT", now), ten);
        assert_eq!(retry_after_at("Sunday, 06-Nov-94 08:49:37 GMT", now), ten);
        assert_eq!(retry_after_at("Sun Nov  6 08:49:37 1994", now), ten);
        assert_eq!(retry_after_at("Wed Nov 16 08:49:37 1994", now), {
            Some(Duration::from_secs(10 + 10 * 86_400))
        });
    }

    #[test]
    fn sub_second_now() {
        let now = at(RFC_EXAMPLE - 10) + Duration::from_millis(250);
        assert_eq!(
            retry_after_at("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_millis(9_750))
        );
    }

    #[test]
    fn a_past_date_means_now() {
        let now = at(RFC_EXAMPLE + 3600);
        assert_eq!(
            retry_after_at("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after_at("Thu, 01 Jan 1970 00:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after_at("Mon, 01 Jan 1900 00:00:00 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn calendar() {
        let epoch = at(0);
        // 2000 was a leap year, 2100 will not be.
        let feb29 = retry_after_at("Tue, 29 Feb 2000 00:00:00 GMT", epoch).unwrap();
        assert_eq!(feb29.as_secs(), 951_782_400);
        assert_eq!(retry_after_at("Mon, 29 Feb 2100 00:00:00 GMT", epoch), None);
        assert_eq!(
            retry_after_at("Fri, 31 Dec 9999 23:59:59 GMT", epoch)
                .unwrap()
                .as_secs(),
            253_402_300_799
        );
        assert_eq!(
            retry_after_at("Sat, 31 Dec 2016 23:59:60 GMT", epoch)
                .unwrap()
                .as_secs(),
            1_483_228_800
        );
    }

    #[test]
    fn two_digit_years_follow_rfc_9110() {
        // Seen in 2026: "76" is 2076 (50 years ahead), "77" is 1977.
        let in_2026 = at(1_767_225_600); // 2026-01-01
        assert_eq!(year_of(in_2026), 2026);
        assert_eq!(year_of(at(364 * 86_400)), 1970);
        assert_eq!(year_of(at(365 * 86_400)), 1971);
        assert_eq!(year_of(at(0)), 1970);
        let y2076 = retry_after_at("Wednesday, 01-Jan-76 00:00:00 GMT", in_2026).unwrap();
        assert_eq!(y2076.as_secs(), 3_345_062_400 - 1_767_225_600);
        assert_eq!(
            retry_after_at("Saturday, 01-Jan-77 00:00:00 GMT", in_2026),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn malformed_dates_are_ignored() {
        let now = at(0);
        for bad in [
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 94",
            "Funday, 06-Nov-94 08:49:37 GMT",
            "Sun,06 Nov 1994 08:49:37 GMT",
            "2024-01-01T00:00:00Z",
            "Sun",
            "é, 06 Nov 1994 08:49:37 GMT",
            "Sun Nové 6 08:49:37 1994",
        ] {
            assert_eq!(retry_after_at(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn amz_milliseconds() {
        assert_eq!(amz_retry_after("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(amz_retry_after("0"), Some(Duration::ZERO));
        for bad in ["", "-5", "1.5", "1500ms", "Sun, 06 Nov 1994 08:49:37 GMT"] {
            assert_eq!(amz_retry_after(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn grpc_pushback_values() {
        assert_eq!(
            grpc_pushback("250"),
            Some(Pushback::After(Duration::from_millis(250)))
        );
        assert_eq!(grpc_pushback("0"), Some(Pushback::After(Duration::ZERO)));
        assert_eq!(grpc_pushback("-1"), Some(Pushback::Stop));
        assert_eq!(grpc_pushback("-99999999999999999999"), Some(Pushback::Stop));
        for bad in ["", "-", "--1", "+5", "2.5", "abc", "- 1"] {
            assert_eq!(grpc_pushback(bad), None, "{bad:?}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn ratelimit_fields() {
        let s = Duration::from_secs;
        // The draft's examples, and lists of several limits.
        assert_eq!(ratelimit(r#""default";r=0;t=3"#), Some(s(3)));
        assert_eq!(ratelimit(r#""default";r=50;t=30"#), None);
        assert_eq!(ratelimit(r#""default";r=0;t=0"#), Some(s(0)));
        assert_eq!(
            ratelimit(r#""hour";r=0;t=1800, "second";r=0;t=1, "day";r=9;t=86400"#),
            Some(s(1800))
        );
        // A partition key and unknown parameters are read past; tokens name limits too.
        assert_eq!(
            ratelimit(r#""user";r=0;t=7;pk=:cHJvamVjdDEyMw==:;x=1"#),
            Some(s(7))
        );
        assert_eq!(ratelimit("default;r=0;t=4"), Some(s(4)));
        assert_eq!(
            ratelimit(r#" "default";r=0;t=3 "#),
            Some(s(3)),
            "OWS around"
        );
        // Malformed: the field is ignored.
        for bad in [
            "",
            r#""default";r=0"#,
            r#""default";t=3"#,
            r#""default";r=-1;t=3"#,
            r#""default";r=0;t=-3"#,
            r#""default";r=0;t=2.5"#,
            r#""default";r=0;t="3""#,
            r#""default";r=0;t=3,"#,
            r#"("a" "b");r=0;t=3"#,
            r#""default";R=0;T=3"#,
            "default; r=0; t=3 garbage",
            r#""a";r=0;t=3, "b";r=0"#,
        ] {
            assert_eq!(ratelimit(bad), None, "{bad:?}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn from_headers_reads_ratelimit_after_the_retry_after_headers() {
        use ::http::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        h.append(RATELIMIT, HeaderValue::from_static(r#""minute";r=0;t=20"#));
        assert_eq!(from_headers(&h), Some(Duration::from_secs(20)));
        // Lines of one field are one list.
        h.append(RATELIMIT, HeaderValue::from_static(r#""hour";r=0;t=600"#));
        assert_eq!(from_headers(&h), Some(Duration::from_secs(600)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("5"));
        assert_eq!(from_headers(&h), Some(Duration::from_secs(5)));
        h.insert(AMZ_RETRY_AFTER, HeaderValue::from_static("250"));
        assert_eq!(from_headers(&h), Some(Duration::from_millis(250)));
    }

    /// Mutated `RateLimit` values never make the parser panic: each case takes a well-formed
    /// value and applies 1 to 8 random edits (a byte replaced, inserted or removed, a piece
    /// duplicated), from a seeded generator. 20,000 cases by default; `RETRY_FUZZ_CASES` sets
    /// the count (RELIABILITY.md gives the long run).
    #[cfg(feature = "http")]
    #[test]
    fn ratelimit_never_panics_on_mutated_values() {
        use rand::{RngExt, SeedableRng};
        const SEEDS: [&str; 5] = [
            r#""default";r=0;t=3"#,
            r#""hour";r=0;t=1800, "second";r=5;t=1"#,
            r#""user";r=0;t=7;pk=:cHJvamVjdDEyMw==:"#,
            r#"a;r=0;t=1, ("x" "y");q=?1, b;r=1;t=2;d=@1659578233"#,
            r#""n";r=9223372036854775807;t=999999999999999"#,
        ];
        const ALPHABET: &[u8] = br#"";=,:()?@%*-._ 0123456789rtpkabcxyz=\	"#;
        let cases: u64 = std::env::var("RETRY_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5241_5445);
        let (mut parsed, mut hinted) = (0u64, 0u64);
        for _ in 0..cases {
            let seed = SEEDS[rng.random_range(0..SEEDS.len())];
            let value = mutate(&mut rng, seed, ALPHABET);
            let text = String::from_utf8_lossy(&value);
            if sfv::Parser::new(text.as_ref()).parse::<sfv::List>().is_ok() {
                parsed += 1;
            }
            if ratelimit(&text).is_some() {
                hinted += 1;
            }
        }
        // Mutation keeps some values well formed: the cases reach past the parser.
        assert!(hinted > 0 && parsed > hinted, "{parsed} {hinted}");
        if cases >= 1_000_000 {
            println!("{cases} mutated values: {parsed} parsed as lists, {hinted} gave a hint");
        }
    }
}
