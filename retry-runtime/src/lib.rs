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
//! Inside the body, [`attempt()`] tells which attempt this is, the time it has left and the
//! call's invocation id; [`wire::WithAttempt`] writes them into a request. With
//! `idempotency_key = true`, every attempt also sends the invocation id as its
//! `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header), and an attempt that wrote it
//! is retried as an idempotent one: a `POST` the server deduplicates by key is safe to send
//! again (see [`wire`](wire#idempotency-keys)).
//!
//! The same loop serves a plain `fn` (`#[retry]` blocks its thread between attempts), a
//! closure built at run time ([`Policy::retry`], with the attribute's keys as `const fn`
//! builders), and, with the `tower` feature, a tower service (`tower::RetryLayer`): the same
//! semantics and the same shared buckets, limiters and partitions.
//!
//! # Nested calls
//!
//! A `#[retry]` function (or a [`Policy`] call) run inside another's attempt is a call of its
//! own, with its own invocation id, at [`Attempt::depth`] 2, and its deadline is clamped to the
//! outer attempt's cutoff: it never plans a retry the outer attempt will not wait for. Retrying
//! the same failure at both levels multiplies the requests: with 3 attempts at each level, one
//! failing dependency gets up to 9 requests per outer call, and 3 with the inner function at
//! `max_attempts = 1`. The first time a function retries a failure that a call nested in its
//! attempt already retried, a WARN event (target `retry`, once per function) says so. Retry at
//! one layer, usually the outermost that can still make the request idempotently. A client
//! that retries on its own below the attempt (an HTTP client's built-in retry) multiplies the
//! attempts the same way, without the warning.
//!
//! A deadline from outside the process is clamped to the same way: [`with_deadline`] runs a
//! future under the caller's deadline (a server's handler, under the time its request said it
//! had: `tower::DeadlineLayer` reads `grpc-timeout` and Envoy's
//! `x-envoy-expected-rq-timeout-ms`), and every call inside it, at any depth, takes the earlier
//! of its own deadline and that one, and writes what it has left into its own requests.
//!
//! # Call graphs
//!
//! Services call services, and retries at every hop multiply: three services that each retry
//! three times send 27 requests to a dead fourth for each user call. A server's handler behind
//! `tower::ServerLayer` (feature `tower`; axum's `Router::layer`, tonic's `Server::builder()
//! .layer`) runs under its caller's deadline, and when the calls it made gave up retrying (their
//! retries spent, refused by a protection, or told not to retry), its error answer says so:
//! `x-should-retry: false`, or a negative `grpc-retry-pushback-ms` for gRPC. The caller's
//! `#[retry]` functions, [`Policy`] calls and tower layers do not retry such an answer
//! ([`wire::SHOULD_RETRY`]): only the hop next to the failure retries, so the dead service gets
//! 3 requests per user call, and a transient failure there is still recovered, by that hop.
//! With each hop writing its attempt into its requests (`with_attempt`, the tower layers), a
//! deadline set at the user crosses every hop with no header written by hand.
//!
//! `tower::ServerLayer`'s documentation has an example, and the README a chain of axum
//! services.
//!
//! # Configuration
//!
//! Every setting the attribute leaves out (`mode`, `max_attempts`, `initial_backoff`,
//! `multiplier`, `max_backoff`, `jitter`, `attempt_timeout`, `attempt_timeout_multiplier`,
//! `max_attempt_timeout`, `deadline`, and the hedging keys of a hedged function) comes from,
//! first match wins, key by key: the environment (`RETRY_<PROFILE>_<KEY>` for a function with
//! `profile = "..."`, the name upper-cased with `-` written `_`; then `RETRY_<KEY>`:
//! `RETRY_MAX_ATTEMPTS`, `RETRY_DEADLINE`, ...), then the TOML file named by
//! `RETRY_CONFIG_FILE` (feature `config-file`, off by default: without it a file named there is
//! one warning), then the mode default:
//!
//! ```toml
//! [default]
//! max_attempts = 4
//! max_backoff = "5s"
//!
//! [profile.billing-eu]      # #[retry(profile = "billing-eu")]
//! mode = "adaptive"
//! max_attempts = 6
//! attempt_timeout = "2s"    # for functions whose attribute sets a timeout or deadline
//! ```
//!
//! What the code writes wins: a key the attribute (or a [`Policy`]) writes holds whatever the
//! environment and the file say, as in the AWS SDKs, where a value set in code wins over the
//! environment, which wins over the shared config file. A variable or a file key that the
//! code's value shadows with another is one warning per function and key, naming the key, the
//! value set and where, the code's value that is used, and why; leave a key out of the
//! attribute for the environment to set it.
//!
//! Both sources are read once per process, when a `#[retry]` function first runs. A value
//! that cannot be used (an unknown mode, `max_attempts = 0`, a duration without a unit, a file
//! that is not TOML) is one warning with the variable or the file's line, as a tracing event
//! of target `retry::config` or on standard error, and is ignored (a misspelled mode, jitter or
//! percentile says which one it most likely meant: `did you mean "full"?`); so is a value that
//! breaks the attribute's coherence rules for a function (`max_backoff` below its
//! `initial_backoff`). Nothing panics. [`config::explain`] shows each function's settings,
//! where each came from, and the value from outside each shadowed one had.
//!
//! # Retry budgets
//!
//! The [`TokenBucket`] (AWS standard mode) bounds a fleet's retries once each client has spent
//! its tokens. A [`RetryBudget`] bounds them from the first second, as a share of the requests
//! (Finagle, Envoy) or by gRPC's retry throttling: `budget = "20%"` or `budget = STATIC` on the
//! attribute, with `bucket = "none"` to rely on it alone.
//!
//! # Circuit breakers
//!
//! When a dependency fails most of what it is sent, a [`CircuitBreaker`] stops sending, first
//! attempts included: `breaker = "50%"` or `breaker = STATIC`. An open breaker refuses a call
//! at once, without running the body, with the function's own error made
//! `From<`[`CircuitOpen`]`>` (the same type as a guard's [`Refused`], by `"CircuitBreaker"`);
//! after its break it lets probes through, and closes when they succeed.
//!
//! ```
//! use retry_runtime::{CircuitBreaker, CircuitOpen, Classify, ErrorClass, retry};
//! use std::time::Duration;
//!
//! #[derive(Debug)]
//! enum StoreError {
//!     Unavailable,
//!     CircuitOpen(CircuitOpen),
//! }
//!
//! impl From<CircuitOpen> for StoreError {
//!     fn from(open: CircuitOpen) -> Self {
//!         StoreError::CircuitOpen(open)
//!     }
//! }
//!
//! impl Classify for StoreError {
//!     fn classify(&self) -> ErrorClass {
//!         match self {
//!             StoreError::Unavailable => ErrorClass::Transient,
//!             StoreError::CircuitOpen(open) => open.classify(), // Permanent
//!         }
//!     }
//! }
//!
//! static STORE: CircuitBreaker = CircuitBreaker::new()
//!     .with_failure_ratio(0.5)
//!     .with_min_calls(20)
//!     .with_window(Duration::from_secs(10))
//!     .with_break(Duration::from_secs(5))
//!     .with_probes(1);
//!
//! #[retry(breaker = STORE)]
//! async fn get_object(key: &str) -> Result<Vec<u8>, StoreError> {
//!     # let _ = key;
//!     Err(StoreError::Unavailable)
//! }
//! ```
//!
//! # Which protection
//!
//! The bucket, a budget, a breaker and the guards bound different things, and combine:
//!
//! - The [`TokenBucket`] (AWS standard mode, the default) costs nothing in normal operation
//!   or at recovery, and stops a retry storm once each client has spent its tokens.
//! - A [`RetryBudget`] bounds the retries from the first second and grows with the traffic. Its
//!   floor (retries per second) keeps a client's first failures retried while its window is
//!   still empty, at the price of bounding little for a fleet of small clients, whose floors
//!   add up; gRPC's retry throttling is the tighter kind.
//! - A [`CircuitBreaker`] stops sending at all while a dependency fails, first attempts
//!   included: it spares the dependency the most, and costs recovery time, since a client whose
//!   probe failed just before the dependency came back refuses calls for a whole break. It
//!   counts the dependency's errors (`Transient`, `Timeout`, `Throttling`), not the caller's
//!   mistakes (`Permanent`).
//! - A [`Guard`] bounds what the client itself has in flight ([`Bulkhead`],
//!   [`ConcurrencyBudget`]; [`AdaptiveConcurrency`] sizes itself from the attempts' latency),
//!   keeps its attempts to a dependency's rate limit ([`Quota`]) or throttles retries by what
//!   the backend accepts ([`AdaptiveThrottle`]); the size of the others is the client's, not a
//!   default.
//!
//! The repository's fleet simulation (`retry-sim`) measures each in an outage, under
//! throttling, through a metastable failure and in normal operation.
//!
//! # Hedging
//!
//! `hedge_after` sends another copy of an idempotent request when the first has not answered
//! within a delay, and takes whichever answers first ("The Tail at Scale", Dean and Barroso,
//! CACM 2013; gRPC's `hedgingPolicy`, gRFC A6):
//!
//! ```
//! use retry_runtime::retry;
//!
//! #[retry(hedge_after = "p95", max_in_flight = 2, deadline = "2s")]
//! async fn get_object(key: &str) -> std::io::Result<Vec<u8>> {
//!     // One attempt; a hedge runs this body again beside it.
//!     Ok(key.as_bytes().to_vec())
//! }
//! ```
//!
//! - **When.** After a fixed delay (`hedge_after = "20ms"`), or after a percentile of the
//!   function's own latency (`"p50"`, `"p90"`, `"p95"`, `"p99"`): a log-linear histogram of its
//!   recent successful attempts (12.5 % resolution, halved every 1,024 samples so that it
//!   follows a shift; lock-free, no allocation), kept within `[min_hedge_after,
//!   max_hedge_after]` (1 ms to 1 s by default), and `max_hedge_after` until 20 samples exist.
//! - **How often.** `hedge_budget = "2%"` bounds the hedges to about that share of the calls:
//!   the delay rises above `hedge_after`'s (never above `max_hedge_after`) as far as it takes,
//!   steered by whether each call's first attempt outlived it (a stochastic approximation of
//!   the quantile: each call takes the delay down a little, each hedge up, and it stands still
//!   where hedges are 95 % of the budget). A percentile alone hedges more than it names: a call
//!   whose hedge won records the hedge's latency, so the estimate misses the slow first
//!   attempts. In the fleet simulation a budget of 2 % keeps a 32x cut of the fan-out's p99.9
//!   for 1.9 % more requests, where the p95 pays 5 %.
//! - **How many.** Hedges and retries share `max_attempts`; at most `max_in_flight` (default
//!   2) run at once. A failure while another attempt runs lets the next hedge start at once
//!   (gRPC's rule); when the last attempt in flight fails, the call retries after its backoff as
//!   any other. The first success wins and every other attempt is dropped at that moment; a
//!   permanent failure ends the call and drops the others. The deadline bounds everything.
//! - **What it costs.** Each hedge is admitted as a retry is: it takes the retry's cost from the
//!   token bucket (and in adaptive mode a send token; the budget, the breaker and the guards
//!   are asked), given back if the hedge wins. A hedge that loses keeps its cost out, so an
//!   empty bucket stops hedging and a slow dependency cannot double the load. Running out never
//!   cancels a hedge already in flight. A server's retry hint stops further hedges for the
//!   call. A hedged `#[retry]` function keeps two attempts in place in its future (a third in
//!   flight is boxed); a [`Policy`] that hedges boxes its hedged loop.
//! - **What can be hedged.** Only idempotent `async fn`s whose attempts can run side by side:
//!   `idempotent = false` (unless `idempotency_key = true` makes every copy safe),
//!   `idempotent_if`, `retry_if_ok`, a plain `fn`, `&mut self` and `&mut` arguments are compile
//!   errors that say why; an argument the body consumes goes in `clone(...)`.
//! - **What you see.** `on_retry` is called as each hedge starts ([`RetryEvent::is_hedge`]),
//!   with a DEBUG event and the `retry.hedges` counter; [`testing::Record::hedges`] lists them.
//!   Inside the body, [`attempt()`] gives each copy its own number, and all share the call's
//!   invocation id.
//!
//! # AWS's 2026 standard mode
//!
//! The AWS SDKs updated their standard retry mode in November 2026 (opt-in there with
//! `AWS_NEW_RETRIES_2026=true`; smithy-rs calls it retry behavior 2.1). `behavior = "2026"`
//! ([`Policy::behavior`] with [`Behavior::Aws2026`], `RETRY_BEHAVIOR=2026`, `behavior = "2026"`
//! in the config file) gives a function their updated rules, in standard and adaptive mode
//! alike:
//!
//! | | `"classic"` (the default) | `"2026"` |
//! |---|---|---|
//! | a retry's cost in the bucket the runtime makes (the function's or its partition's) | 5, 10 after a timeout, 5 after throttling | 14 (a timeout too), 5 after throttling |
//! | the backoff's base | `initial_backoff` (1 s) | `initial_backoff` (50 ms), and 1 s after a throttling error |
//! | a server's hint (`Retry-After`, `x-amz-retry-after`) | obeyed up to `max_backoff`; above, the call ends | kept within [the computed backoff, the computed backoff + 5 s] |
//! | send tokens of a retry in adaptive mode | 5, 10 after throttling | 1 |
//!
//! The backoff is `min(base × 2^(n-1), 20 s)`, jittered after the cap; a `static`
//! [`TokenBucket`] keeps the costs it was built with; keys written in the attribute still win
//! (`initial_backoff`, `max_attempts`): the SDKs give DynamoDB a 25 ms base and 4 attempts,
//! `#[retry(behavior = "2026", initial_backoff = "25ms", max_attempts = 4)]`. For long-polling
//! operations (SQS `ReceiveMessage`, activity polls) add `long_polling = true`: when the bucket
//! refuses a retry, the call sleeps the backoff before it returns the error, as the SDKs do,
//! instead of letting the caller poll again at once. `aws_config = true` (feature `aws-config`)
//! also reads the SDKs' own settings (`AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`,
//! `AWS_NEW_RETRIES_2026`, the shared config file; see [`config`]).
//!
//! # Observability
//!
//! With the `tracing` feature the loop emits, under the target `retry`, a DEBUG event for each
//! retry (`function`, `partition` if it has one, `invocation_id`, `attempt`, `class`,
//! `delay_ms`, `tokens` left in the retry bucket, and `fill_rate` in adaptive mode) and a WARN
//! event when a call gives up before `max_attempts` (`reason`: retry token bucket empty,
//! deadline reached, not idempotent, server retry hint longer than max_backoff, retry budget
//! exhausted, circuit breaker open); a circuit breaker's transitions are a WARN event (opened)
//! or an INFO event (half-open, closed). A call is also a span, named after its function for OpenTelemetry
//! (`otel.name`), with a child span per attempt; a failed attempt's span and a failed call's
//! record `otel.status_code = "ERROR"` and an `error.type` (the HTTP status as text, a gRPC
//! code's name, else the class): see the README's "Operating it" for the pipeline through
//! tracing-opentelemetry. Levels for metrics are read from the shared state:
//!
//! ```
//! use retry_runtime::Partition;
//!
//! for p in Partition::all() {
//!     let (tokens, capacity) = (p.bucket().available(), p.bucket().capacity());
//!     let send_rate = p.rate_limiter().fill_rate(); // adaptive mode's allowed rate
//!     println!("{}: {tokens}/{capacity} retry tokens, {send_rate:.1} sends/s", p.name());
//!     if let Some(breaker) = p.circuit_breaker() {
//!         println!("{}: circuit {}", p.name(), breaker.state());
//!     }
//! }
//! ```
//!
//! A function without a partition has a bucket of its own; to read it, give the function a
//! `partition` or a `bucket = STATIC`.
//!
//! # Features
//!
//! - `tokio` (the only feature on by default): async calls sleep and time out on tokio's
//!   timers and read its clock, which tokio's paused clock drives in tests.
//! - `smol`: async calls on async-io's timers (smol's, which run under any executor) and
//!   `std`'s clock, without tokio: `default-features = false, features = ["smol"]`. With both
//!   features on, tokio's timers are used (a dependency that turns `smol` on changes nothing for
//!   a tokio program), so async calls must run inside a tokio runtime. With neither, a blocking
//!   `#[retry]` function works, and an async one or [`Policy::retry`] is a compile error that
//!   names the two features. [`Attempt::cutoff`] and [`Attempt::deadline`] are
//!   [`Instant`]s: `std::time::Instant` on every native runtime.
//! - No feature for the browser: on `wasm32-unknown-unknown` the target chooses the timers and
//!   clock, whatever `tokio` and `smol` say (neither crate is built there): the host's
//!   `setTimeout` (the global one: a page, a worker, Node) and `web-time`'s clock. [`Instant`]
//!   is `web_time::Instant` there, since `std`'s clock panics; the thread's generator is seeded
//!   from `Math.random()`, so nothing (no `getrandom` backend) is asked of the user. The
//!   futures hold JS timers and are not `Send` there: run them on the host's event loop
//!   (`wasm_bindgen_futures::spawn_local`). A blocking `#[retry]` function's waits spin on the
//!   clock (JS cannot sleep a thread): make the function `async`.
//! - `tracing`: the events and spans above.
//! - `config-file`: the TOML file named by `RETRY_CONFIG_FILE` (see Configuration above),
//!   parsed by the `toml` crate; without it a file named there is one warning.
//! - `aws-config`: the AWS SDKs' own settings for a function with `aws_config = true` (see
//!   [`config`]); without it, `aws_config = true` is a compile error that names the feature.
//! - `metrics`: counters and gauges per function through the `metrics` facade (`meters`).
//! - `serde`: `serde::Deserialize` for [`Policy`].
//! - `http`: `Classify` for `http::StatusCode` and `http::Response`,
//!   `hint::from_headers`, and [`wire::WithAttempt`] for `http::request::Builder`.
//! - `reqwest`: `Classify` for `reqwest::Error` and `reqwest::Response`, and the
//!   `retry_runtime::reqwest` module: an error type that keeps the server's hint and holds a
//!   [`TimedOut`]; [`wire::WithAttempt`] for `reqwest::RequestBuilder`.
//! - `hyper`: `Classify` for `hyper::Error` and `hyper_util::client::legacy::Error`.
//! - `tonic`: `Classify` and `From<TimedOut>` for `tonic::Status`; [`wire::WithAttempt`] for
//!   `tonic::Request`.
//! - `grpc-config` (with `tonic` and `tokio`): the `retry_runtime::grpc` module, gRPC service config
//!   retry policies (gRFC A6's `retryPolicy`, `hedgingPolicy` and `retryThrottling`) read and
//!   validated from their JSON, every problem reported at once, and calls run under them
//!   (`GrpcPolicy::retry`).
//! - `anyhow`: `Classify` for `anyhow::Error`, by its chain of causes.
//! - `tower` (with `tokio`): `tower::RetryLayer`, which retries a tower service's requests
//!   under a [`Policy`] (with `grpc-config`, `RetryLayer::grpc`: each gRPC call under its
//!   method's policy in a service config); for servers, `tower::ServerLayer`, which runs each
//!   request's handler under its caller's deadline and attempt and tells the caller not to
//!   retry a failure the calls inside already retried, and `tower::DeadlineLayer`, the
//!   deadline alone.
//!
//! Without a feature: `Classify` for `std::io::Error` and for `dyn Error` (by its chain of
//! sources), [`derive@Classify`] for error types of your own, the AWS error codes ([`aws`]) and
//! the hint parsers ([`hint`]).
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attempt;
mod classify;
pub mod config;
mod engine;
mod hedge;
mod integrations;
mod observe;
pub mod policy;
mod protect;
mod runtime;
mod spec;
pub mod testing;

#[doc(hidden)]
pub mod __private;

pub use attempt::{Attempt, InvocationId};
pub use classify::{Classify, ErrorClass, TimedOut, TimeoutKind};
pub use classify::{aws, hint};
pub use engine::deadline::{WithDeadline, with_deadline};
pub use engine::frame::attempt;
#[cfg(feature = "grpc-config")]
pub use integrations::grpc;
#[cfg(feature = "reqwest")]
pub use integrations::reqwest;
#[cfg(feature = "tower")]
pub use integrations::tower;
pub use integrations::wire;
pub use observe::event::RetryEvent;
#[cfg(feature = "metrics")]
pub use observe::meters;
pub use policy::{Policy, PolicyError, Retry};
pub use protect::breaker::{BreakerState, CircuitBreaker};
pub use protect::bucket::TokenBucket;
pub use protect::budget::RetryBudget;
pub use protect::guard::{
    Admit, AttemptKind, CircuitOpen, Guard, GuardContext, GuardOutcome, Refused,
};
pub use protect::guards::*;
pub use protect::limiter::RateLimiter;
pub use protect::line::WaitLine;
pub use protect::partition::Partition;
pub use retry_macros::retry;
pub use runtime::PublicInstant as Instant;
pub use spec::{Behavior, Jitter, Mode};
