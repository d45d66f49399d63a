//! The `#[retry]` attribute and `#[derive(Classify)]`. Use them through `retry_runtime`, which
//! re-exports them and provides the engine the attribute's expansion calls and the trait the
//! derive implements.
//!
//! The keys, the parsers of their values and the rules between them are `retry_keys`'s, which the
//! runtime holds the environment and the config file to as well. The macro parses the arguments
//! (`args`, each value read and checked by its type in `values`), checks them against each other
//! and against the function (`valid`), finds the body, also inside what `#[async_trait]`,
//! `#[tracing::instrument]` or `#[tokio::test]` wrote around it (`shape`), and rewrites only that
//! body (`expand`): the signature, attributes and visibility stay as written. Every error is
//! collected (`errors`); on any error it emits the original function together with the errors,
//! so the rest of the crate keeps compiling and IDEs keep working.
//!
//! The derive (`classify`) reads the `#[classify(...)]` attributes of an enum's variants or of a
//! struct and writes the `Classify` impl they describe, with every error collected the same way.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod args;
mod attribute;
mod classify;
mod errors;
mod expand;
mod shape;
mod text;
mod valid;
mod values;
mod walk;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;

/// Retries an `async fn` (or a plain `fn`, blocking its thread between attempts) that returns
/// `Result<T, E>`.
///
/// ```
/// use retry_runtime::retry;
///
/// #[retry(max_attempts = 4, initial_backoff = "50ms", jitter = "equal", deadline = "2s")]
/// async fn fetch(id: u32) -> std::io::Result<Vec<u8>> {
///     // One attempt; `?` and `return` end the attempt, and the loop decides what follows.
///     Ok(vec![id as u8])
/// }
/// ```
///
/// | key | value | default |
/// |---|---|---|
/// | `mode` | `"standard"` or `"adaptive"` | `"standard"` |
/// | `behavior` | `"classic"` or `"2026"`: the AWS SDKs' standard-mode defaults before or after their 2026 update (14 tokens a retry, 5 after throttling; a 50 ms base, 1 s after throttling; a hint kept within the backoff + 5 s) | `"classic"` |
/// | `max_attempts` | integer >= 1, the first attempt included | 3 |
/// | `initial_backoff` | duration | `"1s"` |
/// | `multiplier` | number >= 1.0 | 2.0 |
/// | `max_backoff` | duration >= initial_backoff | `"20s"` |
/// | `jitter` | `"full"`, `"equal"`, `"none"`, `"decorrelated"`, or a number in [0, 1] | `"full"` |
/// | `attempt_timeout` | duration | none |
/// | `attempt_timeout_multiplier` | number >= 1.0 | 1.0 |
/// | `max_attempt_timeout` | duration | = attempt_timeout |
/// | `deadline` | duration: all attempts and sleeps | none |
/// | `retry_on` | path to `fn(&E) -> bool` or `fn(&E) -> ErrorClass` | `Classify` impl of E |
/// | `retry_after` | path to `fn(&E) -> Option<Duration>` | `Classify::retry_after` |
/// | `retry_if_ok` | path to `fn(&T) -> bool`: repeat while true (polling) | none |
/// | `idempotent` | `true` / `false` | `true` |
/// | `idempotent_if` | a `bool` expression over the arguments, evaluated once per call | none |
/// | `idempotency_key` | `true` / `false`: every attempt (and hedge) sends the call's invocation id as its `Idempotency-Key`, and an attempt that wrote it is retried as an idempotent one whatever `idempotent` says (see below) | `false` |
/// | `long_polling` | `true` / `false`: when the bucket refuses a retry, sleep its backoff before returning the error | `false` |
/// | `partition` | string: functions naming the same partition share one bucket and limiter | one per function |
/// | `bucket` | path to a `static TokenBucket`, or `"none"` for no bucket | from `partition` |
/// | `rate_limiter` | path to a `static RateLimiter` (adaptive only) | from `partition` |
/// | `budget` | `"20%"` (that share of the requests of the last 10 s, plus 10 retries per second; shared by a partition's functions) or a path to a `static RetryBudget`; the bucket still applies | none |
/// | `breaker` | `"50%"` (opens when that share of the attempts of the last 10 s failed, at least 20 of them; refuses calls for 5 s, then one probe; shared by a partition's functions) or a path to a `static CircuitBreaker`; the error type needs `From<CircuitOpen>` | none |
/// | `guard` | a path to a `static` that implements `Guard`, or a list of them `[G1, G2]`, asked in that order before each attempt after the built-in protections; the error type needs `From<Refused>` | none |
/// | `hedge_after` | duration, or `"p50"`/`"p90"`/`"p95"`/`"p99"` of the function's own latency: start another attempt beside one that has not answered by then (idempotent `async fn` only; each hedge costs the retry cost, refunded if it wins) | none |
/// | `max_in_flight` | integer >= 2: attempts of one call at once, hedges included | 2 |
/// | `min_hedge_after` | duration: a percentile's delay is never shorter | `"1ms"` |
/// | `max_hedge_after` | duration: a percentile's delay is never longer, and is this until 20 successful attempts are seen | `"1s"` |
/// | `hedge_budget` | `"2%"`: about that share of the calls send a hedge; the delay rises above `hedge_after`'s as far as that takes, learned from the calls that hedged | none |
/// | `on_retry` | path to `fn(&RetryEvent<'_, E>)`, called before each sleep and as each hedge starts | none |
/// | `profile` | string: the environment and config file may set what the attribute leaves out under it | none |
/// | `aws_config` | `true` / `false`: also read `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`, `AWS_NEW_RETRIES_2026` and the AWS shared config file, below the `RETRY_*` settings (feature `aws-config`) | `false` |
/// | `clone` | owned arguments cloned for each attempt: `clone(body, headers)` | none |
/// | `crate` | path to the runtime crate if renamed | `::retry_runtime` |
///
/// Durations are strings with a unit: `"500us"`, `"150ms"`, `"2s"`, `"1.5s"`, `"1m"`. Where only
/// one of `initial_backoff` and `max_backoff` is written, the other's default yields to it:
/// `initial_backoff = "30s"` alone also caps the backoff at 30 s. Every wrong key, value or
/// combination is a compile error on the offending token, with did-you-mean for misspelled keys
/// and values (`jitter = "ful"`, `mode = "standrd"`, `hedge_after = "p955"`), and the function
/// is still emitted so that the rest of the crate type-checks.
///
/// # Idempotency keys
///
/// `idempotency_key = true` makes a function that is not idempotent (a `POST` that creates an
/// order) safe to retry and to hedge the way the IETF httpapi draft "The Idempotency-Key HTTP
/// Header Field" (draft-ietf-httpapi-idempotency-key-header) does it: every attempt of a call
/// carries the header `Idempotency-Key` with the call's invocation id (the same UUID on every
/// attempt and every hedge, new for each call), and the server runs a request once per key,
/// answering a repeat with the first answer. An attempt that wrote its key is then retried
/// (and hedged) as an idempotent one, whatever `idempotent` says (`idempotent_if` beside it is
/// a compile error: it would decide nothing). The header is written where the request is built,
/// by `retry_runtime::wire::WithAttempt::with_attempt` (reqwest's, `http`'s and tonic's
/// requests), `retry_runtime::wire::insert_attempt_headers`, or the `tower` layer of a policy
/// with `Policy::idempotency_key(true)`. An attempt that wrote none (a body that forgot
/// `with_attempt`) is retried only as `idempotent` allows, `false` unless written: never a
/// second `POST` without its key; the process warns once per function that forgot it. The
/// draft's two answers
/// to a keyed request are read as it means them: `409 Conflict` (a request with the same key
/// is still being processed) is `Throttling`, so the call waits and asks again, and `422
/// Unprocessable Content` (the key was used with another payload) is `Permanent`.
///
/// ```
/// use retry_runtime::{attempt, retry};
///
/// #[retry(max_attempts = 4, idempotent = false, idempotency_key = true)]
/// async fn create_order(item: &str) -> std::io::Result<String> {
///     let a = attempt().expect("inside the body");
///     // What `client.post(url).with_attempt()` sends as `Idempotency-Key`.
///     let key = a.idempotency_key().expect("the call sends keys");
///     assert_eq!(key, a.invocation_id());
///     Ok(format!("{item}: {key}"))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let order = create_order("book").await?;
/// assert_eq!(order.len(), "book: ".len() + 36);
/// # std::io::Result::Ok(())
/// # }).unwrap();
/// ```
///
/// # Supported function shapes
///
/// The body runs once per attempt in a fresh `async` block that borrows the arguments, so it
/// works on:
///
/// - free functions and methods taking `&self`, `&mut self`, `self` (borrowed by each attempt)
///   or `self: Arc<Self>`;
/// - generic functions with bounds and `where` clauses (all instantiations share one retry
///   site), explicit and elided lifetimes, `impl Trait` arguments, `Result<impl Trait, E>`;
/// - `async fn` in trait impls and trait default methods, natively or with `#[async_trait]`
///   (the macro finds the body inside what async-trait wrote);
/// - with `#[tracing::instrument]` and `#[tokio::test]` / `#[tokio::main]`, written above or
///   below `#[retry]`: above it, the span or the runtime wraps the whole call and its retries;
/// - return types written through aliases (`io::Result<T>`, `anyhow::Result<T>`): `T` and `E`
///   are found by the type system;
/// - `Self`, `return` and `?` in the body (they end the attempt, and coerce to the declared
///   return type as without the macro); visibility, doc comments and other attributes are kept;
/// - a plain `fn`: the same loop, whose attempts are calls of a closure holding the body and
///   whose waits block the thread (`std::thread::sleep`). Such a function shares buckets,
///   limiters and partitions with async ones; `deadline` is checked between its attempts, and
///   `attempt_timeout` is a compile error, since nothing can cut a blocking call off. Call it
///   from threads that may block (`tokio::task::spawn_blocking` inside a runtime).
///
/// An owned argument the body consumes goes in `clone(...)`: each attempt gets its own copy
/// (mutable if the argument is declared `mut`). Recursion needs `Box::pin`, as without the
/// macro. The names the expansion introduces cannot clash with the body's.
#[proc_macro_attribute]
pub fn retry(attr: TokenStream, item: TokenStream) -> TokenStream {
    attribute::expand(attr.into(), item.into()).into()
}

/// Implements `retry_runtime::Classify` for an enum whose variants each carry their class, or
/// for a struct of one class.
///
/// ```
/// use retry_runtime::{Classify, ErrorClass};
///
/// #[derive(Debug, Classify)]
/// #[classify(default = permanent)]
/// enum FetchError {
///     #[classify(transient)]
///     Unavailable,
///     #[classify(throttling)]
///     Busy { queue: usize },
///     #[classify(delegate)]
///     Io(std::io::Error),
///     NotFound(String),
/// }
///
/// assert_eq!(FetchError::Busy { queue: 9 }.classify(), ErrorClass::Throttling);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(FetchError::Io(refused).classify(), ErrorClass::NotSent);
/// assert_eq!(FetchError::NotFound("a".into()).classify(), ErrorClass::Permanent);
/// ```
///
/// | attribute | on | means |
/// |---|---|---|
/// | `#[classify(transient)]`, `throttling`, `timeout`, `not_sent`, `permanent` | a variant, or a struct | that `ErrorClass`, and no server hint |
/// | `#[classify(delegate)]` | a variant or a struct with exactly one field (named or not) | the field's own `classify()` and `retry_after()`: a wrapped error keeps its class and its server hint |
/// | `#[classify(delegate, from(A, B))]` | the same | also `impl From<A>` and `impl From<B>` for the type, each through the field type's own `From` (see below) |
/// | `#[classify(delegate, allow(hint_lost))]` | the same | no warning for a field written as reqwest's own `reqwest::Error` (see below) |
/// | `#[classify(default = permanent)]` (any class) | the enum | the class of the variants that carry none |
/// | `#[classify(crate = path)]` | the enum or the struct | the path of the runtime crate if renamed (default `::retry_runtime`) |
///
/// A variant without a class is a compile error unless the enum has a default; so are an
/// unknown class (with the closest one suggested), `delegate` on a variant without exactly one
/// field or as the default, two classes for one variant, `from(...)` or `allow(...)` without
/// `delegate`, and a union. Every mistake is reported at once, each on its token.
///
/// Variants may have fields of any shape. The impl has the type's generics, and a
/// `Field: Classify` bound for each delegated field whose type names a type parameter. It works
/// beside `#[derive(thiserror::Error)]`: `#[from]` and `#[source]` fields can be delegated to.
///
/// # Conversions through the delegated field
///
/// `from(A, B)` beside `delegate` writes, for each type listed, an impl that converts through
/// the field's type:
///
/// ```text
/// impl From<A> for Type {
///     fn from(value: A) -> Self {
///         Self::Variant(<Field as From<A>>::from(value))
///     }
/// }
/// ```
///
/// with the type's generics, and a `Field: From<A>` bound when either names a type parameter:
/// `?` on an `A` becomes that variant, converted by the field's type. An error enum that wraps
/// an error type which converts from several others (the loop's `TimedOut` among them) lists
/// them instead of writing one `From` impl for each by hand: `std::io::Error` converts from
/// `TimedOut` (an error of kind `TimedOut`), and `retry_runtime::reqwest::Error` from
/// `reqwest::Error` and `TimedOut`, as its module's "In an error type of your own" shows.
///
/// ```
/// use retry_runtime::{Classify, ErrorClass, retry};
///
/// #[derive(Debug, Classify)]
/// #[classify(default = permanent)]
/// enum LoadError {
///     // `?` on an `io::Error`, and the loop's `TimedOut` as an `io::Error`.
///     #[classify(delegate, from(std::io::Error, retry_runtime::TimedOut))]
///     Io(std::io::Error),
///     Parse(std::num::ParseIntError),
/// }
///
/// #[retry(max_attempts = 3, initial_backoff = "1ms", attempt_timeout = "10ms")]
/// async fn load() -> Result<u64, LoadError> {
///     std::future::pending::<()>().await; // never answers: each attempt times out
///     Ok(0)
/// }
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(LoadError::from(refused).classify(), ErrorClass::NotSent);
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let Err(LoadError::Io(e)) = load().await else { panic!("every attempt times out") };
/// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
/// # });
/// ```
///
/// A type may convert into one variant only. A type listed twice (in one `from(...)` or in two
/// variants'), a type a `#[from]` field (thiserror's) already converts from, and the type itself
/// (`Self`, or its name: `core` converts every type from itself) are compile errors on the type
/// listed. Types are compared as written, so the derive cannot see a conflict behind an alias
/// or another path to the same type, nor with an impl written elsewhere: rustc reports those
/// (E0119, conflicting implementations), and a field type without the `From` the impl calls
/// (E0277), on the type listed too.
///
/// # reqwest's own error
///
/// A `delegate` over a field whose type is written as reqwest's own error (a path ending in
/// `reqwest::Error` that does not go through the runtime, such as `reqwest::Error` or
/// `::reqwest::Error`) draws a warning on the field's type: that error keeps only the status
/// of a response checked with reqwest's `error_for_status()`, so the server's `Retry-After` is
/// lost and the loop falls back to its backoff. Hold `retry_runtime::reqwest::Error` instead,
/// check responses with `retry_runtime::reqwest::error_for_status`, and list `reqwest::Error` in
/// `from(...)` so that `?` still converts reqwest's error. `allow(hint_lost)` beside `delegate`
/// silences the warning for a variant that means it.
///
/// The derive reads tokens, not types: it warns about `reqwest::Error` and `::reqwest::Error`,
/// not about a path through the runtime (`retry_runtime::reqwest::Error`, or through the path
/// `crate = ...` names), and it cannot see through an import (`use reqwest::Error;` then
/// `Error`), an alias or a renamed dependency, which it does not warn about. After
/// `use retry_runtime::reqwest;`, `reqwest::Error` is the runtime's error, which it warns about
/// all the same: write the full path, or `allow(hint_lost)`. Stable Rust has no API for a
/// macro's warnings, so the warning is rustc's `deprecated` lint on an item the derive writes,
/// and reads ``use of deprecated constant `_::hint_lost`: ...``; a module's
/// `#[allow(deprecated)]` silences it too.
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(item: TokenStream) -> TokenStream {
    classify::derive(item.into()).into()
}
