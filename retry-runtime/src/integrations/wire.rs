//! The current attempt, written into a request: what the server sees of the retry loop.
//!
//! Inside a `#[retry]` body, [`WithAttempt::with_attempt`] on a request (or its builder)
//! writes what [`crate::attempt`] says, the way the big SDKs do on every attempt:
//!
//! | request | timeout | headers |
//! |---|---|---|
//! | `reqwest::RequestBuilder` (feature `reqwest`) | the request's timeout: the attempt's time left | `amz-sdk-invocation-id`, `amz-sdk-request` |
//! | `http::request::Builder` (feature `http`) | (none: hyper has no request timeout) | `amz-sdk-invocation-id`, `amz-sdk-request` |
//! | `tonic::Request` (feature `tonic`) | `grpc-timeout`: the attempt's time left | `grpc-previous-rpc-attempts` on a retry |
//!
//! The time left is `min(attempt timeout, deadline left)` as of the call to `with_attempt`,
//! never a stale figure: a retry late in the deadline sends what is really left (gRPC rounds
//! it down to its unit). `amz-sdk-invocation-id` is the call's id (a UUID, the same on every
//! attempt); `amz-sdk-request` is `ttl=20250101T120000Z; attempt=2; max=3`, as the AWS SDKs
//! write it (`ttl` only when something cuts the attempt off). gRFC A6 defines
//! `grpc-previous-rpc-attempts`: the attempts that went before this one, sent on retries only.
//! Outside a `#[retry]` body `with_attempt` changes nothing.
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

#[cfg(feature = "http")]
use crate::attempt::Attempt;
#[cfg(feature = "http")]
use crate::engine::frame::attempt;

/// The AWS SDKs' header with the call's invocation id, the same on every attempt.
pub const AMZ_SDK_INVOCATION_ID: &str = "amz-sdk-invocation-id";

/// The AWS SDKs' header with the attempt: `ttl=...; attempt=N; max=M`.
pub const AMZ_SDK_REQUEST: &str = "amz-sdk-request";

/// gRFC A6's header with the number of attempts before this one, sent on retries.
pub const GRPC_PREVIOUS_RPC_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// A request that can carry the current attempt (see the [module](self)); each integration
/// implements it for its own requests.
pub trait WithAttempt: Sized {
    /// Writes the current attempt into the request: unchanged outside a `#[retry]` body.
    #[must_use]
    fn with_attempt(self) -> Self;
}

/// The two AWS headers of an attempt, as name and value.
#[cfg(feature = "http")]
pub(crate) fn amz_headers(a: &Attempt) -> [(http::HeaderName, http::HeaderValue); 2] {
    let value = |s: String| http::HeaderValue::try_from(s).expect("visible ASCII and spaces");
    [
        (
            http::HeaderName::from_static(AMZ_SDK_INVOCATION_ID),
            value(a.invocation_id().to_string()),
        ),
        (
            http::HeaderName::from_static(AMZ_SDK_REQUEST),
            value(a.amz_sdk_request()),
        ),
    ]
}

/// Inserts `amz-sdk-invocation-id` and `amz-sdk-request` for the current attempt into
/// `headers` (for a request already built, such as hyper's); nothing outside a `#[retry]`
/// body.
#[cfg(feature = "http")]
pub fn insert_attempt_headers(headers: &mut http::HeaderMap) {
    if let Some(a) = attempt() {
        for (name, value) in amz_headers(&a) {
            headers.insert(name, value);
        }
    }
}
