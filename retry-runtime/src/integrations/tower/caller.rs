//! What a request says of its caller, as [`DeadlineLayer`](super::DeadlineLayer) and
//! [`ServerLayer`](super::ServerLayer) read it: the time the caller gives it (`grpc-timeout`,
//! `x-envoy-expected-rq-timeout-ms`) and which of the caller's attempts it is
//! (`grpc-previous-rpc-attempts`, `x-envoy-attempt-count`, `amz-sdk-request`).
//!
//! Every value is text from the network: a malformed, negative, huge, repeated or
//! self-contradictory value is ignored (as if the header were absent), with one warning per
//! header and problem for the process (a `retry::config` tracing event, or a line on standard
//! error, as for a malformed setting in the environment), which shows the first such value. An
//! ignored value never shortens a deadline or makes a request a retry.

use crate::config;
use crate::integrations::wire::{AMZ_SDK_REQUEST, GRPC_PREVIOUS_RPC_ATTEMPTS};
pub(crate) use crate::integrations::wire::{ENVOY_EXPECTED_RQ_TIMEOUT_MS, GRPC_TIMEOUT};
use http::{HeaderMap, HeaderValue};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Envoy's header with the attempt its router is making (1 for the first), which it sets on the
/// requests it forwards when a route asks for it (`include_request_attempt_count`).
pub(crate) const ENVOY_ATTEMPT_COUNT: &str = "x-envoy-attempt-count";

/// A header this module reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    GrpcTimeout,
    EnvoyTimeout,
    GrpcPrevious,
    EnvoyAttempts,
    AmzRequest,
}

impl Header {
    const COUNT: usize = 5;

    fn name(self) -> &'static str {
        match self {
            Header::GrpcTimeout => GRPC_TIMEOUT,
            Header::EnvoyTimeout => ENVOY_EXPECTED_RQ_TIMEOUT_MS,
            Header::GrpcPrevious => GRPC_PREVIOUS_RPC_ATTEMPTS,
            Header::EnvoyAttempts => ENVOY_ATTEMPT_COUNT,
            Header::AmzRequest => AMZ_SDK_REQUEST,
        }
    }
}

/// What is wrong with a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// Not visible ASCII.
    NotText,
    /// The header came more than once: which value holds is not known.
    Repeated,
    /// `grpc-timeout`: the last character is not a unit gRPC defines.
    Unit,
    /// `grpc-timeout`: no digits before the unit, or something else than digits.
    Digits,
    /// `grpc-timeout`: more than the 8 digits gRPC allows.
    TooLong,
    /// Not a whole number (a sign, a fraction, a unit, nothing).
    NotNumber,
    /// More than a 64-bit number of milliseconds, or a 32-bit number of attempts.
    TooLarge,
    /// An attempt counted as 0 (attempts count from 1).
    Zero,
    /// `amz-sdk-request`: no `attempt=` field.
    NoAttempt,
    /// `amz-sdk-request`: a field given twice.
    FieldTwice,
    /// `amz-sdk-request`: the attempt is above the `max=` beside it.
    AboveMax,
}

impl Problem {
    const COUNT: usize = 11;
}

/// A problem with a header's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub(crate) header: Header,
    pub(crate) problem: Problem,
}

impl Malformed {
    const fn new(header: Header, problem: Problem) -> Self {
        Malformed { header, problem }
    }

    /// The problem in the warning's words.
    fn what(self) -> &'static str {
        use Problem::*;
        let envoy_ms = self.header == Header::EnvoyTimeout;
        match self.problem {
            NotText if self.header == Header::GrpcTimeout => "not visible ASCII",
            NotText if envoy_ms => "not a whole number of milliseconds",
            NotText => "not visible ASCII",
            Repeated => "sent more than once, so which value holds is not known",
            Unit => "its unit is not one of H, M, S, m, u, n",
            Digits => "not digits followed by a unit",
            TooLong => "more than 8 digits",
            NotNumber | TooLarge if envoy_ms => "not a whole number of milliseconds",
            NotNumber if self.header == Header::AmzRequest => "its attempt is not a whole number",
            NotNumber => "not a whole number of attempts",
            TooLarge => "more attempts than a 32-bit number holds",
            Zero => "attempts count from 1",
            NoAttempt => "no attempt=N field",
            FieldTwice => "a field given twice",
            AboveMax => "its attempt is above its max",
        }
    }
}

/// The value of `header` in `headers`, if it came once; a header that came more than once is
/// given to `malformed` (with its first value) and ignored.
fn single<'h>(
    headers: &'h HeaderMap,
    header: Header,
    malformed: &mut dyn FnMut(Malformed, &HeaderValue),
) -> Option<&'h HeaderValue> {
    let mut values = headers.get_all(header.name()).iter();
    let first = values.next()?;
    if values.next().is_some() {
        malformed(Malformed::new(header, Problem::Repeated), first);
        return None;
    }
    Some(first)
}

/// `grpc-timeout`'s value (gRPC over HTTP/2: `TimeoutValue TimeoutUnit`, the value a positive
/// integer of at most 8 ASCII digits), leading and trailing whitespace aside (which gRPC lets
/// a receiver strip).
pub(crate) fn grpc_timeout(value: &HeaderValue) -> Result<Duration, Problem> {
    let text = value.to_str().map_err(|_| Problem::NotText)?.trim();
    let Some((&unit, digits)) = text.as_bytes().split_last() else {
        return Err(Problem::Digits);
    };
    let per: fn(u64) -> Duration = match unit {
        b'H' => |n| Duration::from_secs(n * 3600),
        b'M' => |n| Duration::from_secs(n * 60),
        b'S' => Duration::from_secs,
        b'm' => Duration::from_millis,
        b'u' => Duration::from_micros,
        b'n' => Duration::from_nanos,
        _ => return Err(Problem::Unit),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Problem::Digits);
    }
    if digits.len() > 8 {
        return Err(Problem::TooLong);
    }
    // At most 8 digits: 99 999 999 hours fit a `Duration` with room to spare.
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Ok(per(n))
}

/// A whole number in `text` (ASCII digits, nothing else), at most `max`.
fn number(text: &str, max: u64) -> Result<u64, Problem> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::NotNumber);
    }
    match text.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(Problem::TooLarge),
    }
}

/// `x-envoy-expected-rq-timeout-ms`'s value: `None` for 0, Envoy's "no timeout".
pub(crate) fn envoy_timeout(value: &HeaderValue) -> Result<Option<Duration>, Problem> {
    let text = value.to_str().map_err(|_| Problem::NotText)?.trim();
    let ms = number(text, u64::MAX)?;
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

/// The time the request's headers give its handler, if any: the shorter of `grpc-timeout`
/// and `x-envoy-expected-rq-timeout-ms`. A malformed or repeated value is given to `malformed`
/// and ignored.
pub(crate) fn time_left(
    headers: &HeaderMap,
    malformed: &mut dyn FnMut(Malformed, &HeaderValue),
) -> Option<Duration> {
    let mut left: Option<Duration> = None;
    let mut take = |d: Duration| left = Some(left.map_or(d, |l| l.min(d)));
    if let Some(value) = single(headers, Header::GrpcTimeout, malformed) {
        match grpc_timeout(value) {
            Ok(d) => take(d),
            Err(p) => malformed(Malformed::new(Header::GrpcTimeout, p), value),
        }
    }
    if let Some(value) = single(headers, Header::EnvoyTimeout, malformed) {
        match envoy_timeout(value) {
            Ok(Some(d)) => take(d),
            Ok(None) => {}
            Err(p) => malformed(Malformed::new(Header::EnvoyTimeout, p), value),
        }
    }
    left
}

/// The attempts a 32-bit count holds.
const MAX_ATTEMPTS: u64 = u32::MAX as u64;

/// `grpc-previous-rpc-attempts`' value (gRFC A6: the attempts before this one): this one's
/// number, one more.
fn grpc_previous(value: &HeaderValue) -> Result<u32, Problem> {
    let text = value.to_str().map_err(|_| Problem::NotText)?.trim();
    let n = number(text, MAX_ATTEMPTS - 1)?;
    Ok(u32::try_from(n + 1).expect("at most u32::MAX"))
}

/// `x-envoy-attempt-count`'s value: the attempt's number, from 1.
fn envoy_attempts(value: &HeaderValue) -> Result<u32, Problem> {
    let text = value.to_str().map_err(|_| Problem::NotText)?.trim();
    match number(text, MAX_ATTEMPTS)? {
        0 => Err(Problem::Zero),
        n => Ok(u32::try_from(n).expect("at most u32::MAX")),
    }
}

/// `amz-sdk-request`'s attempt (`ttl=20250101T120000Z; attempt=2; max=3`, fields in any
/// order, each at most once): `attempt`, from 1, at most `max` if `max` is given. Other
/// fields are left as they are.
fn amz_request(value: &HeaderValue) -> Result<u32, Problem> {
    let text = value.to_str().map_err(|_| Problem::NotText)?;
    let (mut attempt, mut max) = (None, None);
    for field in text.split(';') {
        let Some((key, value)) = field.split_once('=') else {
            continue;
        };
        let slot = match key.trim() {
            "attempt" => &mut attempt,
            "max" => &mut max,
            _ => continue,
        };
        if slot.is_some() {
            return Err(Problem::FieldTwice);
        }
        *slot = Some(value.trim());
    }
    let attempt = match number(attempt.ok_or(Problem::NoAttempt)?, MAX_ATTEMPTS)? {
        0 => return Err(Problem::Zero),
        n => u32::try_from(n).expect("at most u32::MAX"),
    };
    if let Some(max) = max {
        // A `max` that is no number says nothing against the attempt, but is wrong all the
        // same: the value is not what an AWS SDK writes.
        let max = number(max, MAX_ATTEMPTS)?;
        if u64::from(attempt) > max {
            return Err(Problem::AboveMax);
        }
    }
    Ok(attempt)
}

/// Which of its caller's attempts the request is (1 for the first), if a header says: the
/// highest that `grpc-previous-rpc-attempts`, `x-envoy-attempt-count` and `amz-sdk-request`
/// give (a proxy that retries, such as Envoy, counts its own attempts of the request the
/// client's attempt sent). A malformed or repeated value is given to `malformed` and ignored.
pub(crate) fn attempt(
    headers: &HeaderMap,
    malformed: &mut dyn FnMut(Malformed, &HeaderValue),
) -> Option<u32> {
    type Reader = fn(&HeaderValue) -> Result<u32, Problem>;
    let readers: [(Header, Reader); 3] = [
        (Header::GrpcPrevious, grpc_previous),
        (Header::EnvoyAttempts, envoy_attempts),
        (Header::AmzRequest, amz_request),
    ];
    let mut highest = None;
    for (header, read) in readers {
        let Some(value) = single(headers, header, malformed) else {
            continue;
        };
        match read(value) {
            Ok(n) => highest = highest.max(Some(n)),
            Err(p) => malformed(Malformed::new(header, p), value),
        }
    }
    highest
}

/// Which problems have been reported: one flag per header and problem, so that a client
/// sending many malformed values is one warning per problem, and nothing grows with them.
struct Reported([AtomicBool; Header::COUNT * Problem::COUNT]);

impl Reported {
    const fn new() -> Self {
        Reported([const { AtomicBool::new(false) }; Header::COUNT * Problem::COUNT])
    }

    /// The warning for `m` in `value`, the first time only.
    fn first(&self, m: Malformed, value: &HeaderValue) -> Option<String> {
        let flag = &self.0[m.header as usize * Problem::COUNT + m.problem as usize];
        if flag.swap(true, Ordering::Relaxed) {
            return None;
        }
        // The value as sent, cut short: a header can be long.
        let shown: String = String::from_utf8_lossy(value.as_bytes())
            .chars()
            .take(40)
            .collect();
        Some(format!(
            "ignoring the request header {}: {shown:?}: {} (later values with this problem \
             are ignored without a warning)",
            m.header.name(),
            m.what(),
        ))
    }
}

/// One warning per header and problem for the process, as for a malformed setting.
pub(crate) fn report(m: Malformed, value: &HeaderValue) {
    static REPORTED: Reported = Reported::new();
    if let Some(warning) = REPORTED.first(m, value) {
        config::warn_once(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn grpc(value: &str) -> Result<Duration, Problem> {
        grpc_timeout(&HeaderValue::from_str(value).unwrap())
    }

    fn envoy(value: &str) -> Result<Option<Duration>, Problem> {
        envoy_timeout(&HeaderValue::from_str(value).unwrap())
    }

    #[test]
    fn grpc_timeout_reads_every_unit() {
        assert_eq!(grpc("2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(grpc("3M"), Ok(Duration::from_secs(180)));
        assert_eq!(grpc("1S"), Ok(Duration::from_secs(1)));
        assert_eq!(grpc("250m"), Ok(MS(250)));
        assert_eq!(grpc("1500u"), Ok(Duration::from_micros(1500)));
        assert_eq!(grpc("299999999n"), Err(Problem::TooLong));
        assert_eq!(grpc("29999999n"), Ok(Duration::from_nanos(29_999_999)));
        // What tonic writes for 300 ms, and surrounding whitespace gRPC lets a server strip.
        assert_eq!(grpc("300000u"), Ok(MS(300)));
        assert_eq!(grpc(" 5S "), Ok(Duration::from_secs(5)));
    }

    #[test]
    fn grpc_timeout_bounds() {
        // At most 8 digits, leading zeros counted.
        assert_eq!(
            grpc("99999999H"),
            Ok(Duration::from_secs(99_999_999 * 3600))
        );
        assert_eq!(grpc("00000001S"), Ok(Duration::from_secs(1)));
        assert_eq!(grpc("000000001S"), Err(Problem::TooLong));
        assert_eq!(grpc("123456789m"), Err(Problem::TooLong));
        // 0 is a deadline already past.
        assert_eq!(grpc("0n"), Ok(Duration::ZERO));
    }

    #[test]
    fn malformed_grpc_timeouts() {
        for (value, problem) in [
            ("", Problem::Digits),
            ("S", Problem::Digits),
            ("1", Problem::Unit),
            ("10s", Problem::Unit),
            ("10ms", Problem::Unit),
            ("1h", Problem::Unit),
            ("-1S", Problem::Digits),
            ("+1S", Problem::Digits),
            ("1.5S", Problem::Digits),
            ("1 S", Problem::Digits),
            ("0x10S", Problem::Digits),
        ] {
            assert_eq!(grpc(value), Err(problem), "{value:?}");
        }
        let not_ascii = HeaderValue::from_bytes(b"1\xffS").unwrap();
        assert_eq!(grpc_timeout(&not_ascii), Err(Problem::NotText));
    }

    #[test]
    fn envoy_expected_timeout() {
        assert_eq!(envoy("300"), Ok(Some(MS(300))));
        assert_eq!(envoy("15000"), Ok(Some(Duration::from_secs(15))));
        assert_eq!(envoy(" 7 "), Ok(Some(MS(7))));
        // Envoy never sends 0 (its "no timeout").
        assert_eq!(envoy("0"), Ok(None));
        assert_eq!(envoy("18446744073709551615"), Ok(Some(MS(u64::MAX))));
        assert_eq!(envoy("18446744073709551616"), Err(Problem::TooLarge));
        for value in ["", "1.5", "-1", "300ms", "1e3", "+1"] {
            assert_eq!(envoy(value), Err(Problem::NotNumber), "{value:?}");
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn problem(header: Header, problem: Problem) -> Malformed {
        Malformed::new(header, problem)
    }

    #[test]
    fn the_earlier_of_both_headers_holds_and_a_malformed_one_is_ignored() {
        let mut seen = Vec::new();
        let mut sink = |m: Malformed, v: &HeaderValue| seen.push((m, v.clone()));
        let both = headers(&[(GRPC_TIMEOUT, "2S"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500")]);
        assert_eq!(time_left(&both, &mut sink), Some(MS(500)));
        let both = headers(&[
            (GRPC_TIMEOUT, "200m"),
            (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500"),
        ]);
        assert_eq!(time_left(&both, &mut sink), Some(MS(200)));
        assert_eq!(time_left(&HeaderMap::new(), &mut sink), None);
        let bad_grpc = headers(&[(GRPC_TIMEOUT, "2s"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "500")]);
        assert_eq!(time_left(&bad_grpc, &mut sink), Some(MS(500)));
        let bad_envoy = headers(&[(GRPC_TIMEOUT, "1S"), (ENVOY_EXPECTED_RQ_TIMEOUT_MS, "x")]);
        assert_eq!(time_left(&bad_envoy, &mut sink), Some(MS(1000)));
        // A header sent twice is ignored, whatever its values: which one holds is not known.
        let twice = headers(&[(GRPC_TIMEOUT, "1S"), (GRPC_TIMEOUT, "1S")]);
        assert_eq!(time_left(&twice, &mut sink), None);
        assert_eq!(
            seen,
            [
                (
                    problem(Header::GrpcTimeout, Problem::Unit),
                    HeaderValue::from_static("2s")
                ),
                (
                    problem(Header::EnvoyTimeout, Problem::NotNumber),
                    HeaderValue::from_static("x")
                ),
                (
                    problem(Header::GrpcTimeout, Problem::Repeated),
                    HeaderValue::from_static("1S")
                ),
            ]
        );
    }

    fn caller_attempt(pairs: &[(&'static str, &str)]) -> (Option<u32>, Vec<Malformed>) {
        let mut seen = Vec::new();
        let n = attempt(&headers(pairs), &mut |m, _| seen.push(m));
        (n, seen)
    }

    #[test]
    fn the_callers_attempt_from_each_header() {
        assert_eq!(caller_attempt(&[]), (None, vec![]));
        assert_eq!(
            caller_attempt(&[(GRPC_PREVIOUS_RPC_ATTEMPTS, "0")]),
            (Some(1), vec![])
        );
        assert_eq!(
            caller_attempt(&[(GRPC_PREVIOUS_RPC_ATTEMPTS, " 2 ")]),
            (Some(3), vec![])
        );
        assert_eq!(
            caller_attempt(&[(ENVOY_ATTEMPT_COUNT, "1")]),
            (Some(1), vec![])
        );
        assert_eq!(
            caller_attempt(&[(ENVOY_ATTEMPT_COUNT, "4")]),
            (Some(4), vec![])
        );
        for (value, n) in [
            ("ttl=20250101T120000Z; attempt=2; max=3", 2),
            ("attempt=1; max=3", 1),
            ("attempt=3;max=3", 3),
            ("max=5; attempt=4", 4),
            ("attempt=7", 7),
            ("attempt = 2 ; max = 2 ; other=x; flag", 2),
        ] {
            assert_eq!(
                caller_attempt(&[(AMZ_SDK_REQUEST, value)]),
                (Some(n), vec![]),
                "{value:?}"
            );
        }
        // Two layers of retries (a client's, a proxy's): the highest.
        assert_eq!(
            caller_attempt(&[
                (AMZ_SDK_REQUEST, "attempt=1; max=3"),
                (ENVOY_ATTEMPT_COUNT, "2")
            ]),
            (Some(2), vec![])
        );
        assert_eq!(
            caller_attempt(&[
                (GRPC_PREVIOUS_RPC_ATTEMPTS, "2"),
                (ENVOY_ATTEMPT_COUNT, "1")
            ]),
            (Some(3), vec![])
        );
    }

    #[test]
    fn malformed_attempts_are_ignored_and_named() {
        use Header::*;
        for (header, value, expected) in [
            (GrpcPrevious, "-1", Problem::NotNumber),
            (GrpcPrevious, "1.5", Problem::NotNumber),
            (GrpcPrevious, "", Problem::NotNumber),
            (GrpcPrevious, "4294967295", Problem::TooLarge),
            (GrpcPrevious, "99999999999999999999999", Problem::TooLarge),
            (EnvoyAttempts, "0", Problem::Zero),
            (EnvoyAttempts, "-3", Problem::NotNumber),
            (EnvoyAttempts, "4294967296", Problem::TooLarge),
            (EnvoyAttempts, "2 attempts", Problem::NotNumber),
            (
                AmzRequest,
                "ttl=20250101T120000Z; max=3",
                Problem::NoAttempt,
            ),
            (AmzRequest, "", Problem::NoAttempt),
            (AmzRequest, "attempt=two", Problem::NotNumber),
            (AmzRequest, "attempt=-1; max=3", Problem::NotNumber),
            (AmzRequest, "attempt=0; max=3", Problem::Zero),
            (AmzRequest, "attempt=4; max=3", Problem::AboveMax),
            (AmzRequest, "attempt=1; attempt=2", Problem::FieldTwice),
            (AmzRequest, "attempt=1; max=3; max=4", Problem::FieldTwice),
            (AmzRequest, "attempt=1; max=x", Problem::NotNumber),
            (AmzRequest, "attempt=99999999999", Problem::TooLarge),
        ] {
            let (n, seen) = caller_attempt(&[(header.name(), value)]);
            assert_eq!(n, None, "{header:?} {value:?}");
            assert_eq!(seen, [Malformed::new(header, expected)], "{value:?}");
        }
        // A malformed header leaves the others: the request is still known as a retry.
        let (n, seen) = caller_attempt(&[
            (GRPC_PREVIOUS_RPC_ATTEMPTS, "x"),
            (AMZ_SDK_REQUEST, "attempt=2; max=3"),
        ]);
        assert_eq!(n, Some(2));
        assert_eq!(seen, [Malformed::new(GrpcPrevious, Problem::NotNumber)]);
        // A repeated header is ignored, even with equal values.
        let (n, seen) = caller_attempt(&[(ENVOY_ATTEMPT_COUNT, "2"), (ENVOY_ATTEMPT_COUNT, "2")]);
        assert_eq!(n, None);
        assert_eq!(seen, [Malformed::new(EnvoyAttempts, Problem::Repeated)]);
        let not_ascii = HeaderValue::from_bytes(b"attempt=\xff").unwrap();
        assert_eq!(amz_request(&not_ascii), Err(Problem::NotText));
    }

    #[test]
    fn one_warning_per_header_and_problem() {
        let reported = Reported::new();
        let value = |s: &'static str| HeaderValue::from_static(s);
        let unit = Malformed::new(Header::GrpcTimeout, Problem::Unit);
        let first = reported.first(unit, &value("10s"));
        assert_eq!(
            first.as_deref(),
            Some(
                "ignoring the request header grpc-timeout: \"10s\": its unit is not one of H, M, \
                 S, m, u, n (later values with this problem are ignored without a warning)"
            )
        );
        assert_eq!(reported.first(unit, &value("3h")), None);
        let envoy = Malformed::new(Header::EnvoyTimeout, Problem::NotNumber);
        let other = reported.first(envoy, &value("1.5")).unwrap();
        assert!(
            other.starts_with(
                "ignoring the request header x-envoy-expected-rq-timeout-ms: \"1.5\": not a \
                 whole number of milliseconds"
            ),
            "{other}"
        );
        assert_eq!(reported.first(envoy, &value("")), None);
        let above = Malformed::new(Header::AmzRequest, Problem::AboveMax);
        let text = reported.first(above, &value("attempt=4; max=3")).unwrap();
        assert!(
            text.starts_with(
                "ignoring the request header amz-sdk-request: \"attempt=4; max=3\": its attempt \
                 is above its max"
            ),
            "{text}"
        );
        // The same problem in another header is another warning.
        let zero = Malformed::new(Header::EnvoyAttempts, Problem::Zero);
        assert!(reported.first(zero, &value("0")).is_some());
        assert!(
            reported
                .first(
                    Malformed::new(Header::AmzRequest, Problem::Zero),
                    &value("attempt=0")
                )
                .is_some()
        );
        // A long value is shown cut short.
        let long = HeaderValue::from_str(&"9".repeat(100)).unwrap();
        let digits = Malformed::new(Header::GrpcTimeout, Problem::Digits);
        let shown = reported.first(digits, &long).unwrap();
        assert!(
            shown.contains(&format!("\"{}\"", "9".repeat(40))),
            "{shown}"
        );
    }

    /// How many mutated values per header: `RETRY_FUZZ_CASES`, else 20,000.
    fn cases() -> u64 {
        std::env::var("RETRY_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000)
    }

    /// Mutated values of each header a server reads of its caller, and of `x-should-retry`,
    /// read as a request's (or a response's) only header: no panic; a value is read only when
    /// it is what the header's grammar allows, and anything else is ignored (never a deadline,
    /// never an attempt, never "do not retry"). `RETRY_FUZZ_CASES` cases per header (20,000 by
    /// default; RELIABILITY.md gives the long run).
    #[test]
    fn mutated_headers_are_read_only_when_well_formed() {
        use rand::SeedableRng;
        const ALPHABET: &[u8] = b"0123456789HMSmunattemptmaxl=;-+. \tfalsetruex";
        let seeds: [(&str, &[&str]); 6] = [
            (GRPC_TIMEOUT, &["250m", "1S", "99999999H", "0n", "300000u"]),
            (ENVOY_EXPECTED_RQ_TIMEOUT_MS, &["400", "15000", "1"]),
            (GRPC_PREVIOUS_RPC_ATTEMPTS, &["1", "0", "4294967294"]),
            (ENVOY_ATTEMPT_COUNT, &["2", "1", "4294967295"]),
            (
                AMZ_SDK_REQUEST,
                &["ttl=20250101T120000Z; attempt=2; max=3", "attempt=1; max=3"],
            ),
            (crate::integrations::wire::SHOULD_RETRY, &["false", "true"]),
        ];
        let cases = cases();
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x4341_4c4c);
        for (name, examples) in seeds {
            let (mut valid, mut read) = (0u64, 0u64);
            for case in 0..cases {
                let example = examples[(case % examples.len() as u64) as usize];
                let bytes = crate::classify::hint::mutate(&mut rng, example, ALPHABET);
                // Only what HTTP can carry reaches a server (hyper refuses the rest).
                let Ok(value) = HeaderValue::from_bytes(&bytes) else {
                    continue;
                };
                valid += 1;
                let mut headers = HeaderMap::new();
                headers.insert(name, value.clone());
                // What the parsers read: visible ASCII, whitespace around it aside.
                let text = value.to_str().map(str::trim).ok();
                let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
                let mut quiet = |_: Malformed, _: &HeaderValue| {};
                match name {
                    GRPC_TIMEOUT | ENVOY_EXPECTED_RQ_TIMEOUT_MS => {
                        let left = time_left(&headers, &mut quiet);
                        let grammar = text.is_some_and(|t| {
                            if name == GRPC_TIMEOUT {
                                t.len() >= 2
                                    && t.len() <= 9
                                    && digits(&t[..t.len() - 1])
                                    && b"HMSmun".contains(&t.as_bytes()[t.len() - 1])
                            } else {
                                digits(t) && t.parse::<u64>().is_ok_and(|ms| ms > 0)
                            }
                        });
                        assert_eq!(left.is_some(), grammar, "{name}: {value:?}");
                        read += u64::from(left.is_some());
                    }
                    crate::integrations::wire::SHOULD_RETRY => {
                        let stop = crate::integrations::wire::told_not_to_retry(&headers);
                        let is_false = text.is_some_and(|t| t.eq_ignore_ascii_case("false"));
                        assert_eq!(stop, is_false, "{value:?}");
                        read += u64::from(stop);
                    }
                    _ => {
                        let n = attempt(&headers, &mut quiet);
                        assert!(n.is_none_or(|n| n >= 1), "{name}: {value:?}");
                        if name != AMZ_SDK_REQUEST {
                            // The attempt's number, as the header's grammar gives it.
                            let said = text
                                .filter(|t| digits(t))
                                .and_then(|t| t.parse::<u64>().ok());
                            let expected = match said {
                                Some(p) if name == GRPC_PREVIOUS_RPC_ATTEMPTS => Some(p + 1),
                                Some(0) => None,
                                said => said,
                            }
                            .filter(|&n| n <= MAX_ATTEMPTS);
                            assert_eq!(n.map(u64::from), expected, "{name}: {value:?}");
                        }
                        read += u64::from(n.is_some());
                    }
                }
                // And through the reporter, as the layers call it: one warning per problem.
                let _ = time_left(&headers, &mut report);
                let _ = attempt(&headers, &mut report);
            }
            // Mutation keeps some values well formed: the cases reach past the parsers.
            assert!(read > 0 && read < valid, "{name}: {read} of {valid}");
            if cases >= 1_000_000 {
                println!(
                    "{name}: {cases} mutated values, {valid} valid header values, {read} read"
                );
            }
        }
    }
}
