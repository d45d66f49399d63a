//! gRPC service config retry policies (feature `grpc-config`): the `retryPolicy`,
//! `hedgingPolicy` and `retryThrottling` of a service config's JSON, as gRFC A6 "gRPC Retry
//! Design" defines them (<https://github.com/grpc/proposal/blob/master/A6-client-retries.md>)
//! and the service config proto documents them
//! (`grpc.service_config.ServiceConfig`, in
//! <https://github.com/grpc/grpc-proto/blob/master/grpc/service_config/service_config.proto>).
//!
//! ```
//! use retry_runtime::grpc::{PolicyKind, ServiceConfig};
//! use std::time::Duration;
//!
//! let config = ServiceConfig::from_json(
//!     r#"{
//!       "methodConfig": [
//!         {
//!           "name": [{ "service": "pkg.Service" }],
//!           "timeout": "2s",
//!           "retryPolicy": {
//!             "maxAttempts": 4,
//!             "initialBackoff": "0.1s",
//!             "maxBackoff": "1s",
//!             "backoffMultiplier": 2,
//!             "retryableStatusCodes": ["UNAVAILABLE", "resource_exhausted"]
//!           }
//!         },
//!         {
//!           "name": [{ "service": "pkg.Service", "method": "Search" }],
//!           "hedgingPolicy": {
//!             "maxAttempts": 3,
//!             "hedgingDelay": "0.05s",
//!             "nonFatalStatusCodes": [14, "INTERNAL"]
//!           }
//!         }
//!       ],
//!       "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
//!     }"#,
//! )?;
//!
//! // The service's entry: every method of pkg.Service but Search.
//! let policy = config.policy("pkg.Service", "Method");
//! assert_eq!(policy.kind(), PolicyKind::Retry);
//! assert_eq!(policy.max_attempts(), 4);
//! assert_eq!(policy.timeout(), Some(Duration::from_secs(2)));
//!
//! // The method's own entry wins over its service's.
//! let search = config.policy("pkg.Service", "Search");
//! assert_eq!(search.kind(), PolicyKind::Hedging);
//! assert_eq!(search.timeout(), None);
//!
//! // No entry names it: one attempt.
//! assert_eq!(config.policy("other.Service", "Get").max_attempts(), 1);
//!
//! // Every problem at once, each at its JSON path.
//! let error = ServiceConfig::from_json(
//!     r#"{ "methodConfig": [{
//!         "name": [{ "method": "Get" }],
//!         "retryPolicy": {
//!           "maxAttempts": 1, "initialBackoff": "100ms", "maxBackoff": "1s",
//!           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILBLE"]
//!         }
//!     }] }"#,
//! )
//! .unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "invalid gRPC service config (4 problems):
//!   methodConfig[0].name[0]: must name a service when it names a method, found method \"Get\" without a service
//!   methodConfig[0].retryPolicy.maxAttempts: must be greater than 1, found 1
//!   methodConfig[0].retryPolicy.initialBackoff: must be a duration in seconds with an \"s\" suffix and up to 9 fractional digits, such as \"0.1s\" or \"3s\", found \"100ms\"
//!   methodConfig[0].retryPolicy.retryableStatusCodes[0]: did you mean \"UNAVAILABLE\"? must be a status code name such as \"UNAVAILABLE\" or a number from 0 to 16, found \"UNAVAILBLE\"",
//! );
//! # Ok::<(), retry_runtime::grpc::ServiceConfigError>(())
//! ```
//!
//! # What is read
//!
//! - `methodConfig[]`: each entry's `name` list, its `timeout`, and at most one of its
//!   `retryPolicy` and `hedgingPolicy`.
//! - `retryPolicy`: `maxAttempts` (required, an integer above 1; a value above 5 is read as 5,
//!   A6's client-side cap), `initialBackoff` and `maxBackoff` (required, above zero),
//!   `backoffMultiplier` (required, a number above zero) and `retryableStatusCodes` (required,
//!   not empty).
//! - `hedgingPolicy`: `maxAttempts` (as above), `hedgingDelay` (zero if left out) and
//!   `nonFatalStatusCodes` (none if left out).
//! - `retryThrottling`: `maxTokens` (required, an integer from 1 to 1000) and `tokenRatio`
//!   (required, above zero, kept to three decimals as A6 says: `0.5466` is `0.546`, so it must
//!   be at least `0.001`).
//!
//! Durations (`initialBackoff`, `maxBackoff`, `hedgingDelay`, `timeout`) are strings in
//! proto3's JSON form of `google.protobuf.Duration`: seconds with up to nine fractional digits
//! and an `s` suffix (`"0.1s"`, `"1.000340012s"`, `"3s"`), with a digit before the point as A6
//! asks. Status codes are names in any case (`"UNAVAILABLE"`, `"unavailable"`) or numbers from
//! 0 to 16 (`14`). A `null` field is read as absent, as proto3's JSON mapping reads it, and
//! fields this module does not read (`loadBalancingConfig`, `waitForReady`, ...) are ignored,
//! as gRPC ignores fields it does not know.
//!
//! Everything wrong is reported at once in one [`ServiceConfigError`]: its
//! [`problems`](ServiceConfigError::problems) each say where (the JSON path), what is wrong,
//! and what was found. A config with a problem builds nothing.
//!
//! # Google's published service configs
//!
//! [`ServiceConfig::from_google_json`] reads the `*_grpc_service_config.json` files Google
//! publishes in googleapis as Google's generated client libraries read them, where
//! [`ServiceConfig::from_json`] holds to A6: a `retryPolicy` without `maxAttempts` has no limit
//! on attempts but its method's `timeout`, `maxAttempts` is not capped at 5, an empty
//! `retryableStatusCodes` retries nothing, and the last entry naming a method wins. Its
//! documentation lists its rules and the generators' code they follow.
//!
//! # Which policy a method gets
//!
//! A name is `{"service": "pkg.Service", "method": "Get"}` (that method),
//! `{"service": "pkg.Service"}` (every method of the service) or `{}` (every method of every
//! service: the default entry). A name with a method but no service is an error, and each name
//! may appear once in the whole config; `""`, `null` and an absent field are the same. For a
//! call, [`ServiceConfig::policy`] takes the most specific entry that names it: the method's,
//! else its service's, else the default; without any, one attempt.
//!
//! # What a policy holds
//!
//! A [`GrpcPolicy`] is what the config asks of one method's calls: its kind
//! ([`PolicyKind`]), its attempts, its timeout, the backoff of a retry policy (before the
//! `n`-th retry, `min(initialBackoff * backoffMultiplier^(n-1), maxBackoff)`, of which A6 waits a random
//! part: `random(0, ceiling)`, full jitter), the status codes that let a call go on, the delay
//! between hedges, and the config's retry throttle. Retry throttling is one token count per
//! [`ServiceConfig`] value, shared by every method it configures (A6 keeps one per server
//! name): it starts at `maxTokens`, a failure takes a token and a success gives back
//! `tokenRatio`, and retries and hedges stop while it holds `maxTokens / 2` or less. A server's
//! `grpc-retry-pushback-ms` read under a policy follows A6: a delay to wait exactly, or, when
//! negative or unparseable, no further retry or hedge.

pub(crate) mod call;
pub(crate) mod codes;
mod config;
mod duration;
mod error;
mod google;
pub(crate) mod policy;
pub(crate) mod pushback;
pub(crate) mod throttle;

pub use config::ServiceConfig;
pub use error::{Problem, ServiceConfigError};
pub use policy::{GrpcPolicy, PolicyKind};
