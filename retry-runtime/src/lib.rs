//! Retries for async functions with the semantics of the AWS and Google Cloud SDKs, written as
//! one attribute.
//!
//! ```
//! use retry_runtime::{retry, Classify, ErrorClass, TimedOut};
//!
//! #[derive(Debug)]
//! enum StoreError {
//!     Unavailable,
//!     NotFound,
//!     TimedOut(TimedOut),
//! }
//!
//! impl Classify for StoreError {
//!     fn classify(&self) -> ErrorClass {
//!         match self {
//!             StoreError::Unavailable => ErrorClass::Transient,
//!             StoreError::TimedOut(_) => ErrorClass::Timeout,
//!             StoreError::NotFound => ErrorClass::Permanent,
//!         }
//!     }
//! }
//!
//! impl From<TimedOut> for StoreError {
//!     fn from(t: TimedOut) -> Self {
//!         StoreError::TimedOut(t)
//!     }
//! }
//!
//! struct Store;
//!
//! impl Store {
//!     #[retry(max_attempts = 3, initial_backoff = "10ms", attempt_timeout = "1s", deadline = "5s")]
//!     async fn get(&self, key: &str) -> Result<String, StoreError> {
//!         // One attempt: the body runs again for each retry.
//!         if key.is_empty() { Err(StoreError::NotFound) } else { Ok(key.to_uppercase()) }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! assert_eq!(Store.get("a").await.unwrap(), "A");
//! assert!(matches!(Store.get("").await, Err(StoreError::NotFound)));
//! # }
//! ```
//!
//! # One call
//!
//! For attempt `n = 1, 2, ...`: in adaptive mode take a send token from the rate limiter; run
//! the body under `min(attempt_timeout * attempt_timeout_multiplier^(n-1),
//! max_attempt_timeout, deadline remaining)`; on `Ok` refund the retry's cost (or add 1 to the
//! bucket after a first-attempt success) and return; on `Err` classify it ([`Classify`] or
//! `retry_on`), return it if it is `Permanent`, if the function is not idempotent and the
//! request may have reached the server, or if it was the last attempt; take the retry's cost
//! from the [`TokenBucket`] (none left: return); compute the delay (the server's hint, or
//! `min(initial_backoff * multiplier^(n-1), max_backoff)` with jitter); return if sleeping
//! would reach the deadline; call `on_retry`, sleep, go again.
//!
//! # Features
//!
//! - `tracing` (default): a DEBUG event per retry and a WARN when retries end early.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

mod backoff;
mod bucket;
mod call;
mod classify;
mod clock;
mod config;
mod event;
mod limiter;
mod observe;
mod partition;
mod policy;
pub mod testing;

#[doc(hidden)]
pub mod __private;

pub use bucket::TokenBucket;
#[cfg(feature = "reqwest")]
pub use classify::reqwest;
pub use classify::{Classify, ErrorClass, TimedOut, TimeoutKind};
pub use classify::{aws, hint};
pub use event::RetryEvent;
pub use limiter::RateLimiter;
pub use partition::Partition;
pub use policy::{Jitter, Mode};
pub use retry_macros::retry;
