//! The current attempt, written into a request: what the server sees of the retry loop.
//!
//! Inside a `#[retry]` body, [`WithAttempt::with_attempt`] on a request (or its builder)
//! writes what [`crate::attempt`] says, the way the big SDKs do on every attempt:
//!
//! | request | timeout | headers |
//! |---|---|---|
//! | `reqwest::RequestBuilder` (feature `reqwest`) | the request's timeout, and `x-envoy-expected-rq-timeout-ms`: the attempt's time left | `amz-sdk-invocation-id`, `amz-sdk-request`; `idempotency-key` when the call sends keys |
//! | `http::request::Builder` (feature `http`) | `x-envoy-expected-rq-timeout-ms` (hyper has no request timeout) | `amz-sdk-invocation-id`, `amz-sdk-request`; `idempotency-key` when the call sends keys |
//! | `tonic::Request` (feature `tonic`) | `grpc-timeout`: the attempt's time left | `grpc-previous-rpc-attempts` on a retry; `idempotency-key` when the call sends keys |
//!
//! The tower layers write the same into each attempt's request themselves (see
//! [`tower::Exchange::write_attempt`](crate::tower::Exchange::write_attempt)).
//!
//! The time left is `min(attempt timeout, deadline left)` as of the call to `with_attempt`,
//! never a stale figure: a retry late in the deadline sends what is really left (rounded down:
//! gRPC to its unit, `x-envoy-expected-rq-timeout-ms` to the millisecond, at least 1). A server
//! behind [`tower::ServerLayer`](crate::tower::ServerLayer) or
//! [`tower::DeadlineLayer`](crate::tower::DeadlineLayer) runs its handler under it, so a
//! deadline crosses every hop of a call graph with no header written by hand.
//! `x-envoy-expected-rq-timeout-ms` is Envoy's header for the time its router gives a request
//! (<https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/router_filter#x-envoy-expected-rq-timeout-ms>);
//! it is written only when something cuts the attempt off. `amz-sdk-invocation-id` is the
//! call's id (a UUID, the same on every attempt); `amz-sdk-request` is `ttl=20250101T120000Z;
//! attempt=2; max=3`, as the AWS SDKs write it (`ttl` only when something cuts the attempt
//! off). gRFC A6 defines `grpc-previous-rpc-attempts`: the attempts that went before this one,
//! sent on retries only. Outside a `#[retry]` body `with_attempt` changes nothing.
//!
//! The other way, a server's answer that carries [`SHOULD_RETRY`] (`x-should-retry: false`),
//! or a negative `grpc-retry-pushback-ms`, is not retried: see [`SHOULD_RETRY`].
//!
//! Call it where the request is built, before anything signs it (the AWS SDKs add the header
//! after signing, as it is not signed; a user's own signer that signs every header must see
//! it). Calling it twice replaces the headers, never duplicates them.
//!
//! For reqwest, the request's timeout replaces the client's (reqwest does not take the
//! smaller of the two), so a client built with a shorter timeout than the attempt has left gets
//! the attempt's; set the shorter one on the request after `with_attempt` if it must hold. The
//! `ttl` is the wall clock plus the time left on tokio's clock (on a paused test clock, real
//! time plus virtual time), to the second, without the clock-skew estimate the AWS SDKs add.
//!
//! ```
//! # #[cfg(feature = "reqwest")]
//! # mod example {
//! use retry_runtime::retry;
//! use retry_runtime::reqwest::{Error, error_for_status};
//! use retry_runtime::wire::WithAttempt;
//!
//! #[retry(max_attempts = 3, attempt_timeout = "2s", deadline = "5s")]
//! async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, Error> {
//!     let response = client.get(url).with_attempt().send().await?;
//!     // The crate's `error_for_status` keeps the server's `Retry-After`, which reqwest's drops.
//!     Ok(error_for_status(response)?.text().await?)
//! }
//! # }
//! ```
//!
//! # Idempotency keys
//!
//! A call of a function with `idempotency_key = true` (or of a policy with
//! [`Policy::idempotency_key`](crate::Policy::idempotency_key)) also gets
//! [`IDEMPOTENCY_KEY`] on every attempt, from reqwest's and `http`'s `with_attempt` and from
//! `insert_attempt_headers`: `Idempotency-Key: 6f1c2a4e-93b0-4d7e-a2c5-0b8e4f7d9a31`, the
//! call's invocation id, the same on every attempt and every hedge of the call and new for each
//! call ([`Attempt::idempotency_key`](crate::Attempt::idempotency_key)). It replaces a key the
//! request already carried. The IETF httpapi draft "The Idempotency-Key HTTP Header Field"
//! (draft-ietf-httpapi-idempotency-key-header) defines it: the server runs a request once per
//! key and answers a repeat with the first answer, which makes a `POST` safe to send again;
//! such a function is retried as an idempotent one. The value is the UUID as it is written,
//! as Stripe's API reference ("Idempotent requests") shows the header; the draft makes the
//! field a Structured Field String, whose strict form is the same UUID in double quotes.
//!
//! A function with `idempotency_key = true` is retried as an idempotent one only after an
//! attempt that wrote its key into a request (with `with_attempt`, `insert_attempt_headers` or
//! the tower layer): an attempt that wrote none (a body that forgot `with_attempt`) sent a
//! request the server cannot deduplicate, and is retried only as `idempotent` allows (`false`
//! unless the function says `idempotent = true`), after failures that prove the request was
//! not acted on. The process warns once per function that forgot it. A request that carries
//! the key by other means (a client of your own, a queue's deduplication id, read from
//! [`Attempt::idempotency_key`](crate::Attempt::idempotency_key)) leaves no mark the engine
//! can see: such a function says `idempotent = true` to be retried after any failure.
//!
//! The draft's answers to a keyed request are read as it means them, for the attempts that
//! carried a key: `409 Conflict` (a request with the same key is still being processed: no
//! correction is needed) is `Throttling`, so the call waits its backoff (or the server's
//! `Retry-After`) and asks again, and `422 Unprocessable Content` (the key was used with
//! another payload) is `Permanent`. The tower layer knows which of its requests carried one.
//! In a body, reqwest's response does not say what its request carried, so
//! `retry_runtime::reqwest::error_for_status` asks the attempt: when the attempt wrote its
//! key with `with_attempt` (or `insert_attempt_headers`) before the response is checked, a
//! 409 is the key's; otherwise (a function without keys, or an attempt that did not write its
//! key) a 409 keeps its usual class, `Permanent`. The attempt's mark is the evidence a
//! function's own declaration is not: a body that forgets `with_attempt` sends no key, and
//! its 409s are not the draft's. A body that sends other requests, without the key, after a
//! keyed one in the same attempt, checks their 409s itself.

#[cfg(feature = "http")]
use crate::attempt::{Attempt, InvocationId};
#[cfg(any(feature = "reqwest", feature = "tower"))]
use crate::classify::ErrorClass;
#[cfg(feature = "http")]
use crate::engine::frame::{self, attempt};
#[cfg(feature = "http")]
use std::time::Duration;

/// gRPC's header with the time the caller gives the call (gRPC over HTTP/2).
#[cfg(feature = "http")]
pub(crate) const GRPC_TIMEOUT: &str = "grpc-timeout";

/// Envoy's header with the time its router gives the request, in milliseconds: what a request
/// says of its attempt's time left over HTTP.
#[cfg(feature = "http")]
pub(crate) const ENVOY_EXPECTED_RQ_TIMEOUT_MS: &str = "x-envoy-expected-rq-timeout-ms";

/// The AWS SDKs' header with the call's invocation id, the same on every attempt.
pub const AMZ_SDK_INVOCATION_ID: &str = "amz-sdk-invocation-id";

/// The AWS SDKs' header with the attempt: `ttl=...; attempt=N; max=M`.
pub const AMZ_SDK_REQUEST: &str = "amz-sdk-request";

/// gRFC A6's header with the number of attempts before this one, sent on retries.
pub const GRPC_PREVIOUS_RPC_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// The IETF httpapi draft's header (draft-ietf-httpapi-idempotency-key-header) by which a
/// client makes a `POST` or `PATCH` safe to repeat: the server runs a request once per key.
/// Written with the call's invocation id on every attempt of a call that sends keys (see the
/// [module](self#idempotency-keys)); the tower layer treats a request that carries it as
/// idempotent.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The header by which a server tells its client whether to retry the request it answers:
/// `x-should-retry: false` (what [`ServerLayer`](crate::tower::ServerLayer) adds to an error
/// answer when the calls its handler made gave up retrying) makes the answer `Permanent`,
/// whatever its status says, for the `Classify` impls of `http::Response`, `reqwest::Response`
/// and [`reqwest::Error`](crate::reqwest::Error), and for the tower layer: the client does not
/// retry it, as it does not retry a negative `grpc-retry-pushback-ms` (gRFC A6). Stripe's API
/// (`Stripe-Should-Retry`) and the clients Stainless generates (OpenAI's, Anthropic's) read the
/// same signal.
///
/// Only `false` (in any case, spaces around it aside) is read; `true` leaves the status to
/// decide, and any other value, or the header sent more than once, is ignored with one warning
/// per problem for the process: a garbled header never stops a retry.
pub const SHOULD_RETRY: &str = "x-should-retry";

/// Whether `headers` tell the client not to retry (`x-should-retry: false`); a malformed or
/// repeated value is ignored, with one warning per problem for the process.
#[cfg(feature = "http")]
pub(crate) fn told_not_to_retry(headers: &http::HeaderMap) -> bool {
    let mut values = headers.get_all(SHOULD_RETRY).iter();
    let Some(value) = values.next() else {
        return false;
    };
    if values.next().is_some() {
        should_retry_ignored(ShouldRetry::Repeated, value);
        return false;
    }
    match should_retry(value.as_bytes()) {
        Some(should) => !should,
        None => {
            should_retry_ignored(ShouldRetry::NotABoolean, value);
            false
        }
    }
}

/// An `x-should-retry` value: `true` or `false`, in any case, with spaces or tabs around it.
#[cfg(feature = "http")]
pub(crate) fn should_retry(value: &[u8]) -> Option<bool> {
    let value = value.trim_ascii();
    if value.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else if value.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else {
        None
    }
}

/// What is wrong with an `x-should-retry` header.
#[cfg(feature = "http")]
#[derive(Clone, Copy)]
enum ShouldRetry {
    NotABoolean,
    Repeated,
}

/// One warning per problem with `x-should-retry` for the process.
#[cfg(feature = "http")]
#[cold]
fn should_retry_ignored(problem: ShouldRetry, value: &http::HeaderValue) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    if WARNED[problem as usize].swap(true, Ordering::Relaxed) {
        return;
    }
    let shown: String = String::from_utf8_lossy(value.as_bytes())
        .chars()
        .take(40)
        .collect();
    let what = match problem {
        ShouldRetry::NotABoolean => "neither true nor false",
        ShouldRetry::Repeated => "sent more than once, so which value holds is not known",
    };
    crate::config::warn_once(format!(
        "ignoring the response header {SHOULD_RETRY}: {shown:?}: {what} (later values with this \
         problem are ignored without a warning)"
    ));
}

/// The class of an answer to a request that carried an idempotency key, where the draft gives
/// it one: `409 Conflict` (a request with the same key is still being processed) is
/// `Throttling`, `422 Unprocessable Content` (the key was used with another payload)
/// `Permanent`; `None` for every other status, which keeps its own class.
#[cfg(any(feature = "reqwest", feature = "tower"))]
pub(crate) const fn keyed_class(status: u16) -> Option<ErrorClass> {
    match status {
        409 => Some(ErrorClass::Throttling),
        422 => Some(ErrorClass::Permanent),
        _ => None,
    }
}

/// A request that can carry the current attempt (see the [module](self)); each integration
/// implements it for its own requests.
pub trait WithAttempt: Sized {
    /// Writes the current attempt into the request: unchanged outside a `#[retry]` body.
    #[must_use]
    fn with_attempt(self) -> Self;
}

/// The headers of an attempt: the two AWS headers, the attempt's time left (Envoy's
/// `x-envoy-expected-rq-timeout-ms`) if something cuts it off, and the call's idempotency key
/// if it sends one (the attempt is then marked as one that wrote it).
#[cfg(feature = "http")]
pub(crate) fn attempt_headers(a: &Attempt) -> http::HeaderMap {
    let value = |s: String| http::HeaderValue::try_from(s).expect("visible ASCII and spaces");
    let mut headers = http::HeaderMap::with_capacity(4);
    if let Some(left) = a.time_left() {
        headers.insert(
            http::HeaderName::from_static(ENVOY_EXPECTED_RQ_TIMEOUT_MS),
            expected_timeout_ms(left),
        );
    }
    headers.insert(
        http::HeaderName::from_static(AMZ_SDK_INVOCATION_ID),
        value(a.invocation_id().to_string()),
    );
    headers.insert(
        http::HeaderName::from_static(AMZ_SDK_REQUEST),
        value(a.amz_sdk_request()),
    );
    if let Some(key) = a.idempotency_key() {
        headers.insert(
            http::HeaderName::from_static(IDEMPOTENCY_KEY),
            key_value(key),
        );
        frame::mark_key_sent();
    }
    headers
}

/// A time left as `x-envoy-expected-rq-timeout-ms` writes it: whole milliseconds, rounded down
/// (the server finishes before its caller stops waiting), but at least 1 (0 is Envoy's "no
/// timeout").
#[cfg(feature = "http")]
pub(crate) fn expected_timeout_ms(left: Duration) -> http::HeaderValue {
    let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1);
    http::HeaderValue::from(ms)
}

/// A time left as `grpc-timeout` writes it (gRPC over HTTP/2: at most 8 digits and a unit): in
/// the finest unit whose count fits, rounded down.
#[cfg(feature = "http")]
pub(crate) fn grpc_timeout_value(left: Duration) -> http::HeaderValue {
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = left.as_nanos();
    let (count, unit) = UNITS
        .iter()
        .map(|&(per, unit)| (nanos / per, unit))
        .find(|&(count, _)| count < 100_000_000)
        .unwrap_or((99_999_999, 'H'));
    http::HeaderValue::try_from(format!("{count}{unit}")).expect("digits and a letter")
}

/// An invocation id as a header value.
#[cfg(feature = "http")]
pub(crate) fn key_value(id: InvocationId) -> http::HeaderValue {
    http::HeaderValue::try_from(id.to_string()).expect("a UUID is visible ASCII")
}

/// Inserts `amz-sdk-invocation-id` and `amz-sdk-request` for the current attempt into
/// `headers` (for a request already built, such as hyper's), and `idempotency-key` for a call
/// that sends keys; nothing outside a `#[retry]` body.
#[cfg(feature = "http")]
pub fn insert_attempt_headers(headers: &mut http::HeaderMap) {
    if let Some(a) = attempt() {
        for (name, value) in attempt_headers(&a) {
            if let Some(name) = name {
                headers.insert(name, value);
            }
        }
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;

    #[test]
    fn should_retry_values() {
        assert_eq!(should_retry(b"false"), Some(false));
        assert_eq!(should_retry(b"False"), Some(false));
        assert_eq!(should_retry(b" false\t"), Some(false));
        assert_eq!(should_retry(b"true"), Some(true));
        assert_eq!(should_retry(b"TRUE"), Some(true));
        for bad in [
            &b""[..],
            b"0",
            b"1",
            b"no",
            b"fals",
            b"falsey",
            b"\"false\"",
            b"false;x",
        ] {
            assert_eq!(should_retry(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_time_left_as_envoys_header_writes_it() {
        let ms = |d: Duration| expected_timeout_ms(d).to_str().unwrap().to_owned();
        assert_eq!(ms(Duration::from_millis(400)), "400");
        assert_eq!(ms(Duration::from_micros(399_999)), "399");
        // Never 0, Envoy's "no timeout".
        assert_eq!(ms(Duration::from_micros(10)), "1");
        assert_eq!(ms(Duration::ZERO), "1");
        assert_eq!(ms(Duration::MAX), u64::MAX.to_string());
    }

    #[test]
    fn the_time_left_as_grpc_timeout_writes_it() {
        let grpc = |d: Duration| grpc_timeout_value(d).to_str().unwrap().to_owned();
        assert_eq!(grpc(Duration::ZERO), "0n");
        assert_eq!(grpc(Duration::from_nanos(99_999_999)), "99999999n");
        assert_eq!(grpc(Duration::from_nanos(100_000_001)), "100000u");
        assert_eq!(grpc(Duration::from_millis(250)), "250000u");
        assert_eq!(grpc(Duration::from_secs(100)), "100000m");
        assert_eq!(grpc(Duration::from_secs(100_000)), "100000S");
        assert_eq!(grpc(Duration::from_secs(100_000_000 * 60)), "1666666H");
        assert_eq!(grpc(Duration::MAX), "99999999H");
        // At most 8 digits, rounded down: never more than what is left.
        for n in [1, 7, 999, 123_456_789, 98_765_432_109, u64::MAX / 3] {
            let d = Duration::from_nanos(n);
            let text = grpc(d);
            assert!(text.len() <= 9, "{text}");
            let (digits, unit) = text.split_at(text.len() - 1);
            let per: u128 = match unit {
                "n" => 1,
                "u" => 1_000,
                "m" => 1_000_000,
                "S" => 1_000_000_000,
                "M" => 60_000_000_000,
                _ => 3_600_000_000_000,
            };
            let back = digits.parse::<u128>().unwrap() * per;
            assert!(
                back <= d.as_nanos() && d.as_nanos() - back < per,
                "{n} {text}"
            );
        }
    }
}
