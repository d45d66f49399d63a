//! One call under a [`GrpcPolicy`]: the engine's loop (the one `#[retry]` runs), with gRFC
//! A6's settings, classes and pushback.

use super::codes::Codes;
use super::policy::{GrpcPolicy, Rule};
use super::pushback::{Pushback, pushback};
use crate::classify::{ErrorClass, TimedOut};

use crate::engine::{Call, Classifier, NoConversion, Timed};
use crate::observe::event::RetryEvent;
use ::tonic::Status;
use core::future::Future;
use std::time::Duration;

/// A status's class under a policy: a code the policy retries (or, hedging, one that is not
/// fatal) is `Transient`, any other `Permanent`; a pushback that says not to retry (negative or
/// not a number) makes it `Permanent` too. A pushback's delay is the hint.
pub(crate) struct ByCodes(pub(crate) Codes);

impl Classifier<Status> for ByCodes {
    fn class(&self, status: &Status) -> ErrorClass {
        if self.0.contains(status.code()) && pushback(status.metadata()) != Pushback::Stop {
            ErrorClass::Transient
        } else {
            ErrorClass::Permanent
        }
    }

    fn hint(&self, status: &Status) -> Option<Duration> {
        match pushback(status.metadata()) {
            Pushback::After(delay) => Some(delay),
            Pushback::None | Pushback::Stop => None,
        }
    }
}

impl GrpcPolicy {
    /// Runs `attempt` under the policy, as gRFC A6 defines it, and returns the last attempt's
    /// result.
    ///
    /// - A retry policy retries a status in its `retryableStatusCodes` after
    ///   `random(0, min(initialBackoff * backoffMultiplier^(n-1), maxBackoff))`, up to
    ///   `maxAttempts`. A `grpc-retry-pushback-ms` in the status's metadata is the delay
    ///   instead, whatever its length, and the backoff after it starts again from
    ///   `initialBackoff`; a negative or unparseable one ends the call.
    /// - A hedging policy sends another attempt every `hedgingDelay` while none has answered, up
    ///   to `maxAttempts` at once, and the next at once after a status in
    ///   `nonFatalStatusCodes`; the first success (or fatal status) is the call's.
    /// - The method's `timeout` bounds the whole call (`DEADLINE_EXCEEDED` when it runs out),
    ///   and no retry or hedge starts while the config's `retryThrottling` holds half its
    ///   tokens or fewer.
    ///
    /// ```
    /// use retry_runtime::grpc::ServiceConfig;
    /// use tonic::{Code, Status};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let config = ServiceConfig::from_json(
    ///     r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}], "retryPolicy": {
    ///       "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
    /// )
    /// .unwrap();
    /// let policy = config.policy("shop.Orders", "Get");
    /// let mut calls = 0;
    /// let out = policy
    ///     .retry(|| {
    ///         calls += 1;
    ///         let n = calls;
    ///         async move {
    ///             if n < 3 { Err(Status::unavailable("busy")) } else { Ok(n) }
    ///         }
    ///     })
    ///     .await;
    /// assert_eq!(out.unwrap(), 3);
    /// # }
    /// ```
    pub async fn retry<T, F, Fut>(&self, attempt: F) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.run(false, Status::from, attempt).await
    }

    /// The engine's loop under the policy for attempts that fail with an `E` read by the
    /// method's codes ([`ByCodes`]): [`retry`](Self::retry)'s, over `Status`, and that of a
    /// request through the tower layer (`RetryLayer::grpc`), over the statuses of its
    /// responses. `timed_out` makes the error of an attempt the method's timeout cut off;
    /// `once` allows one attempt whatever the policy says (a request that cannot be sent
    /// again), its outcome booked as any other.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        once: bool,
        timed_out: fn(TimedOut) -> E,
        mut attempt: F,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        ByCodes: Classifier<E>,
    {
        let site = self.site();
        let classify = ByCodes(self.continue_codes());
        let mut call = Call::of_all(
            site,
            true,
            once,
            Timed(timed_out),
            classify,
            |_: &T| false,
            |_: &RetryEvent<'_, E>| {},
            NoConversion,
        );
        if let Rule::Hedging(_) = self.method().rule {
            return Box::pin(call.run_hedged(attempt)).await;
        }
        let call = &mut call;
        crate::__retry_loop!(call, attempt())
    }
}
