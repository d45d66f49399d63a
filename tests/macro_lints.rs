//! The code `#[retry]` and `#[derive(Classify)]` generate is lint-clean in a user's crate that denies warnings and
//! clippy's `all`, `pedantic` and `nursery` groups, plus the allow-by-default rustc lints
//! strict crates turn on. `cargo test` checks the rustc lints; the clippy lints are checked by
//! `cargo clippy --workspace --all-targets -- -D warnings`, which covers this file.
//!
//! Every shape the macros generate differently appears here at least once.
#![deny(
    warnings,
    clippy::all,
    clippy::pedantic,
    clippy::nursery,
    rust_2018_idioms,
    unused_qualifications,
    unused_results,
    unused_lifetimes,
    single_use_lifetimes,
    trivial_casts,
    trivial_numeric_casts,
    unreachable_pub,
    let_underscore_drop,
    elided_lifetimes_in_paths,
    unsafe_code
)]

use retry_runtime::{Classify, ErrorClass, RetryEvent, TimedOut, TokenBucket, retry};
use std::cell::Cell;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Busy,
    TimedOut,
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Self::Busy => ErrorClass::Transient,
            Self::TimedOut => ErrorClass::Timeout,
        }
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Self::TimedOut
    }
}

thread_local! {
    /// Attempts in this test's thread: even ones fail, odd ones succeed.
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

fn attempt() -> Result<u32, Error> {
    let n = CALLS.replace(CALLS.get() + 1);
    if n % 2 == 0 { Err(Error::Busy) } else { Ok(n) }
}

/// The next call fails once, then succeeds.
fn reset() {
    CALLS.set(0);
}

fn check() -> Result<(), Error> {
    attempt().map(drop)
}

const fn is_busy(e: &Error) -> bool {
    matches!(e, Error::Busy)
}

const fn no_hint(_: &Error) -> Option<Duration> {
    None
}

// The signature `retry_if_ok` takes: a reference, even to a small `Copy` value.
#[allow(clippy::trivially_copy_pass_by_ref)]
const fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn log(event: &RetryEvent<'_, Error>) {
    assert!(event.attempt() >= 1);
}

static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(50);

#[retry(initial_backoff = "1ms")]
async fn free(n: u32) -> Result<u32, Error> {
    attempt().map(|v| v + n)
}

#[retry(
    max_attempts = 4,
    initial_backoff = "1ms",
    max_backoff = "5ms",
    jitter = "none",
    attempt_timeout = "1s",
    deadline = "10s",
    retry_on = is_busy,
    retry_after = no_hint,
    retry_if_ok = is_zero,
    on_retry = log,
    bucket = BUCKET
)]
async fn every_path_key(text: &str) -> Result<u32, Error> {
    let n = attempt()?;
    Ok(n + u32::try_from(text.len()).unwrap_or(0))
}

// The hook's and the predicate's types are spelled at the function's (complex) types.
#[allow(clippy::ptr_arg)] // the signature `retry_if_ok` takes: `&T` for `Result<T, E>`
fn no_pairs(pairs: &Vec<(u32, Option<(u32, String)>)>) -> bool {
    pairs.is_empty()
}

#[retry(initial_backoff = "1ms", on_retry = log, retry_if_ok = no_pairs)]
async fn complex_types(n: u32) -> Result<Vec<(u32, Option<(u32, String)>)>, Error> {
    Ok(vec![(attempt()?, Some((n, String::new())))])
}

#[retry(initial_backoff = "1ms", partition = "lints", clone(name, tags))]
async fn cloned(name: String, mut tags: Vec<String>) -> Result<usize, Error> {
    tags.push(name);
    check()?;
    Ok(tags.len())
}

#[retry(initial_backoff = "1ms", idempotent_if = safe)]
async fn conditional(safe: bool) -> Result<u32, Error> {
    attempt()
}

#[retry(initial_backoff = "1ms", idempotent = false)]
async fn generic<'a, T>(items: &'a [T]) -> Result<Option<&'a T>, Error>
where
    T: Display + Sync,
{
    check()?;
    Ok(items.first())
}

#[retry(initial_backoff = "1ms")]
async fn opaque() -> Result<impl Display, Error> {
    attempt()
}

#[retry(initial_backoff = "1ms", attempt_timeout = "1s")]
async fn io_alias(path: &str) -> std::io::Result<usize> {
    if path.is_empty() {
        return Err(std::io::ErrorKind::NotFound.into());
    }
    Ok(path.len())
}

struct Service {
    hits: u32,
    safe: bool,
}

impl Service {
    #[retry(initial_backoff = "1ms")]
    async fn by_ref(&self) -> Result<u32, Error> {
        attempt().map(|n| n + self.hits)
    }

    #[retry(initial_backoff = "1ms")]
    async fn by_mut(&mut self) -> Result<u32, Error> {
        self.hits += 1;
        attempt()
    }

    #[retry(initial_backoff = "1ms", idempotent_if = self.safe)]
    async fn by_arc(self: Arc<Self>) -> Result<u32, Error> {
        attempt().map(|n| n + self.hits)
    }
}

#[async_trait::async_trait]
trait Remote {
    async fn call(&self, body: String) -> Result<usize, Error>;
}

#[async_trait::async_trait]
impl Remote for Service {
    #[retry(initial_backoff = "1ms", clone(body), idempotent_if = self.safe)]
    async fn call(&self, body: String) -> Result<usize, Error> {
        check()?;
        Ok(body.len())
    }
}

trait Native {
    #[retry(initial_backoff = "1ms")]
    async fn default_method(&self) -> Result<u32, Error> {
        attempt()
    }
}

impl Native for Service {}

#[tracing::instrument(skip(body))]
#[retry(initial_backoff = "1ms", clone(body))]
async fn instrumented_below(body: String) -> Result<usize, Error> {
    check()?;
    Ok(body.len())
}

#[retry(initial_backoff = "1ms")]
#[tracing::instrument]
async fn instrumented_above(n: u32) -> Result<u32, Error> {
    attempt().map(|v| v + n)
}

// Bodies on one line, which rustc lints for braces it thinks unnecessary when they are the
// user's own and the only thing in a block: each shape of attempt (async, hedged, blocking).
#[rustfmt::skip]
#[retry(initial_backoff = "1ms")]
async fn one_line() -> Result<u32, Error> { attempt() }

#[rustfmt::skip]
#[retry(initial_backoff = "1ms", hedge_after = "1s")]
async fn one_line_hedged() -> Result<u32, Error> { attempt() }

#[rustfmt::skip]
#[retry(initial_backoff = "1ms")]
fn one_line_blocking() -> Result<u32, Error> { attempt() }

#[tokio::test(start_paused = true)]
async fn generated_code_is_lint_clean_and_runs() {
    reset();
    assert_eq!(free(1).await, Ok(2));
    reset();
    assert_eq!(every_path_key("ab").await, Ok(3));
    reset();
    assert_eq!(cloned("n".to_owned(), Vec::new()).await, Ok(1));
    reset();
    assert_eq!(conditional(true).await, Ok(1));
    reset();
    assert_eq!(conditional(false).await, Err(Error::Busy));
    reset();
    assert_eq!(generic(&[1, 2]).await, Err(Error::Busy));
    reset();
    assert_eq!(opaque().await.map(|v| v.to_string()), Ok("1".to_owned()));
    assert_eq!(io_alias("abc").await.ok(), Some(3));
    let mut s = Service {
        hits: 0,
        safe: true,
    };
    reset();
    assert_eq!(s.by_mut().await, Ok(1));
    assert_eq!(s.hits, 2);
    reset();
    assert_eq!(s.by_ref().await, Ok(3));
    reset();
    assert_eq!(s.call("xy".to_owned()).await, Ok(2));
    reset();
    assert_eq!(s.default_method().await, Ok(1));
    reset();
    assert_eq!(Arc::new(s).by_arc().await, Ok(3));
    reset();
    assert_eq!(instrumented_below("x".to_owned()).await, Ok(1));
    reset();
    assert_eq!(instrumented_above(1).await, Ok(2));
    reset();
    assert_eq!(complex_types(2).await.map(|v| v.len()), Ok(1));
    reset();
    assert_eq!(one_line().await, Ok(1));
    reset();
    assert_eq!(one_line_hedged().await, Ok(1));
    reset();
    assert_eq!(one_line_blocking(), Ok(1));
}

#[retry(max_attempts = 2, initial_backoff = "1ms")]
#[tokio::test(start_paused = true)]
async fn tokio_test_under_retry() -> Result<(), Error> {
    check()
}

#[tokio::test(start_paused = true)]
#[retry(max_attempts = 2, initial_backoff = "1ms")]
async fn tokio_test_over_retry() -> Result<(), Error> {
    check()
}

/// `#[derive(Classify)]`: each kind of rule, fields of each shape, lifetime and type parameters,
/// and the `From` impls of `from(...)` (one from the field's own type, into a named field).
#[derive(Debug, Classify)]
#[classify(default = permanent)]
enum Derived<'a, E> {
    #[classify(transient)]
    Busy,
    #[classify(throttling)]
    Slow(u32),
    #[classify(timeout)]
    Late {
        after: Duration,
    },
    #[classify(delegate)]
    Inner(E),
    #[classify(delegate, from(&'a Error))]
    Borrowed {
        error: &'a Error,
    },
    #[classify(delegate, from(std::io::ErrorKind))]
    Io(std::io::Error),
    Other,
}

#[derive(Debug, Classify)]
#[classify(delegate, from(TimedOut))]
struct Wrapped(Error);

/// `from(E)` into a field of a type that names the parameter: the impl is bounded.
#[derive(Debug, Classify)]
enum Boxed<E> {
    #[classify(delegate, from(E))]
    Inner(Box<E>),
}

#[derive(Debug, Classify)]
#[classify(not_sent)]
struct Refused;

#[test]
fn derived_classify_is_lint_clean() {
    let late: Derived<'_, ErrorClass> = Derived::Late {
        after: Duration::from_millis(1),
    };
    if let Derived::Late { after } = &late {
        assert_eq!(after.as_millis(), 1);
    }
    assert_eq!(late.classify(), ErrorClass::Timeout);
    let slow = Derived::<'_, ErrorClass>::Slow(2);
    if let Derived::Slow(n) = &slow {
        assert_eq!(*n, 2);
    }
    assert_eq!(slow.classify(), ErrorClass::Throttling);
    assert_eq!(
        Derived::<'_, ErrorClass>::Busy.classify(),
        ErrorClass::Transient
    );
    assert_eq!(
        Derived::<'_, ErrorClass>::Inner(ErrorClass::NotSent).classify(),
        ErrorClass::NotSent
    );
    let error = Error::TimedOut;
    let borrowed: Derived<'_, ErrorClass> = Derived::Borrowed { error: &error };
    assert_eq!(borrowed.classify(), ErrorClass::Timeout);
    assert_eq!(borrowed.retry_after(), None);
    let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(
        Derived::<'_, ErrorClass>::Io(io).classify(),
        ErrorClass::NotSent
    );
    assert_eq!(
        Derived::<'_, ErrorClass>::Other.classify(),
        ErrorClass::Permanent
    );
    assert_eq!(Wrapped(Error::Busy).classify(), ErrorClass::Transient);
    assert_eq!(Refused.classify(), ErrorClass::NotSent);
}

#[test]
fn derived_conversions_are_lint_clean() {
    let boxed = Boxed::from(ErrorClass::Throttling);
    let Boxed::Inner(class) = &boxed;
    assert_eq!(**class, ErrorClass::Throttling);
    assert_eq!(boxed.classify(), ErrorClass::Throttling);
    let error = Error::Busy;
    let borrowed = Derived::<'_, ErrorClass>::from(&error);
    assert!(matches!(borrowed, Derived::Borrowed { error: Error::Busy }));
    let io = Derived::<'_, ErrorClass>::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(io.classify(), ErrorClass::NotSent);
}
