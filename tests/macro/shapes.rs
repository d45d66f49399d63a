//! `#[retry]` on every shape of async function it supports, run on tokio's paused clock.
//!
//! Each function fails with a transient error until a given attempt, so a test sees from the
//! result and the attempt count that the body really ran once per attempt, and from the paused
//! clock that the backoff between attempts was the configured one.

use retry_runtime::{Classify, ErrorClass, TimedOut, retry};
use std::fmt::Display;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Busy,
    Fatal,
    TimedOut,
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Error::Busy => ErrorClass::Transient,
            Error::Fatal => ErrorClass::Permanent,
            Error::TimedOut => ErrorClass::Timeout,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

/// Counts attempts; `fail_until(n)` fails attempts 1..n with `Busy`.
#[derive(Default)]
struct Attempts(AtomicU32);

impl Attempts {
    const fn new() -> Attempts {
        Attempts(AtomicU32::new(0))
    }

    /// The number of this attempt (1-based).
    fn next(&self) -> u32 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn fail_until(&self, succeed_at: u32) -> Result<u32, Error> {
        let n = self.next();
        if n < succeed_at {
            Err(Error::Busy)
        } else {
            Ok(n)
        }
    }

    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Milliseconds of paused time `f` took.
async fn timed<T>(f: impl Future<Output = T>) -> (T, u64) {
    let t0 = Instant::now();
    let out = f.await;
    (out, u64::try_from(t0.elapsed().as_millis()).unwrap())
}

// ---------------------------------------------------------------------------------------------
// Free functions.

#[retry(max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
async fn free(attempts: &Attempts, succeed_at: u32) -> Result<u32, Error> {
    attempts.fail_until(succeed_at)
}

#[tokio::test(start_paused = true)]
async fn free_function_runs_the_body_once_per_attempt() {
    let attempts = Attempts::new();
    let (out, ms) = timed(free(&attempts, 3)).await;
    assert_eq!(out, Ok(3));
    assert_eq!(attempts.count(), 3);
    assert_eq!(ms, 100 + 200);
}

#[tokio::test(start_paused = true)]
async fn free_function_returns_the_last_error_when_attempts_run_out() {
    let attempts = Attempts::new();
    let (out, ms) = timed(free(&attempts, 10)).await;
    assert_eq!(out, Err(Error::Busy));
    assert_eq!(attempts.count(), 4);
    assert_eq!(ms, 100 + 200 + 400);
}

// ---------------------------------------------------------------------------------------------
// Methods: `&self`, `&mut self`, `self`, `self: Arc<Self>`.

struct Client {
    attempts: Attempts,
    succeed_at: u32,
    /// Mutated by `&mut self` attempts.
    log: Vec<u32>,
}

impl Client {
    fn new(succeed_at: u32) -> Client {
        Client {
            attempts: Attempts::new(),
            succeed_at,
            log: Vec::new(),
        }
    }

    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn by_ref(&self) -> Result<u32, Error> {
        self.attempts.fail_until(self.succeed_at)
    }

    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn by_mut(&mut self, tag: u32) -> Result<usize, Error> {
        // Each attempt borrows `self` mutably, and sees what earlier attempts did.
        self.log.push(tag);
        self.attempts.fail_until(self.succeed_at)?;
        Ok(self.log.len())
    }

    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn by_arc(self: Arc<Self>) -> Result<u32, Error> {
        let me = Arc::clone(&self);
        me.attempts.fail_until(self.succeed_at)
    }
}

#[derive(Clone, Copy)]
struct Token(u32);

impl Token {
    /// `self` by value: each attempt uses it without consuming it (here it is `Copy`).
    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn by_value(self, attempts: &Attempts) -> Result<u32, Error> {
        let n = attempts.fail_until(self.0)?;
        Ok(n * 10)
    }
}

struct Owned {
    attempts: Attempts,
    name: String,
}

impl Owned {
    /// `self` by value, not `Copy`: each attempt borrows it.
    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn into_name_len(self) -> Result<usize, Error> {
        self.attempts.fail_until(2)?;
        Ok(self.name.len())
    }
}

#[tokio::test(start_paused = true)]
async fn method_on_shared_self() {
    let c = Client::new(3);
    assert_eq!(c.by_ref().await, Ok(3));
    assert_eq!(c.attempts.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn method_on_mut_self_sees_each_attempt() {
    let mut c = Client::new(3);
    assert_eq!(c.by_mut(7).await, Ok(3));
    assert_eq!(c.log, vec![7, 7, 7]);
}

#[tokio::test(start_paused = true)]
async fn method_on_self_by_value() {
    let attempts = Attempts::new();
    assert_eq!(Token(2).by_value(&attempts).await, Ok(20));
    let owned = Owned {
        attempts: Attempts::new(),
        name: "abc".to_owned(),
    };
    assert_eq!(owned.into_name_len().await, Ok(3));
}

#[tokio::test(start_paused = true)]
async fn method_on_arc_self_spawned_is_send() {
    let c = Arc::new(Client::new(3));
    // `tokio::spawn` requires the future to be `Send + 'static`.
    let task = tokio::spawn(Arc::clone(&c).by_arc());
    assert_eq!(task.await.unwrap(), Ok(3));
    assert_eq!(c.attempts.count(), 3);
}

// ---------------------------------------------------------------------------------------------
// Generics, lifetimes, `impl Trait`.

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn generic<T, K: Clone + PartialEq>(
    items: &[T],
    key: &K,
    attempts: &Attempts,
) -> Result<usize, Error>
where
    T: AsRef<K> + Send + Sync,
{
    attempts.fail_until(2)?;
    Ok(items.iter().filter(|t| t.as_ref() == key).count())
}

struct Word(u8);

impl AsRef<u8> for Word {
    fn as_ref(&self) -> &u8 {
        &self.0
    }
}

#[tokio::test(start_paused = true)]
async fn generic_function_with_bounds_and_where_clause() {
    let attempts = Attempts::new();
    let words = [Word(1), Word(2), Word(1)];
    assert_eq!(generic(&words, &1u8, &attempts).await, Ok(2));
    assert_eq!(attempts.count(), 2);
}

/// One `#[retry]` site is shared by every instantiation of a generic function.
#[retry(initial_backoff = "10ms", jitter = "none", max_attempts = 2)]
async fn generic_sized<T: Default + Send>(attempts: &Attempts) -> Result<usize, Error> {
    attempts.fail_until(2)?;
    Ok(std::mem::size_of_val(&T::default()))
}

#[tokio::test(start_paused = true)]
async fn generic_function_instantiated_twice() {
    let a = Attempts::new();
    assert_eq!(generic_sized::<u64>(&a).await, Ok(8));
    let b = Attempts::new();
    assert_eq!(generic_sized::<u16>(&b).await, Ok(2));
}

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn explicit_lifetimes<'a, 'b: 'a>(
    text: &'a str,
    sep: &'b str,
    attempts: &Attempts,
) -> Result<&'a str, Error> {
    attempts.fail_until(2)?;
    text.split(sep).next().ok_or(Error::Fatal)
}

static ELIDED: Attempts = Attempts::new();

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn elided_lifetimes(text: &str) -> Result<&str, Error> {
    ELIDED.fail_until(2)?;
    Ok(text.trim())
}

#[tokio::test(start_paused = true)]
async fn explicit_and_elided_lifetimes() {
    let a = Attempts::new();
    assert_eq!(explicit_lifetimes("a,b", ",", &a).await, Ok("a"));
    assert_eq!(elided_lifetimes("  x ").await, Ok("x"));
    assert_eq!((a.count(), ELIDED.count()), (2, 2));
}

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn impl_trait_argument(
    name: impl AsRef<str> + Send,
    attempts: &Attempts,
) -> Result<usize, Error> {
    attempts.fail_until(2)?;
    Ok(name.as_ref().len())
}

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn impl_trait_return(attempts: &Attempts) -> Result<impl Display + use<>, Error> {
    let n = attempts.fail_until(2)?;
    Ok(format!("attempt {n}"))
}

#[tokio::test(start_paused = true)]
async fn impl_trait_in_argument_and_return() {
    let a = Attempts::new();
    assert_eq!(impl_trait_argument(String::from("four"), &a).await, Ok(4));
    let b = Attempts::new();
    let shown = impl_trait_return(&b).await.unwrap().to_string();
    assert_eq!(shown, "attempt 2");
}

// ---------------------------------------------------------------------------------------------
// Async fn in traits: native, and `#[async_trait]`.

trait Store {
    fn attempts(&self) -> &Attempts;

    async fn get(&self, key: &str) -> Result<String, Error>;

    /// A default method: every implementor shares its retry site.
    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn get_twice(&self, key: &str) -> Result<String, Error> {
        self.attempts().fail_until(2)?;
        Ok(format!("{key}{key}"))
    }
}

struct Memory(Attempts);

impl Store for Memory {
    fn attempts(&self) -> &Attempts {
        &self.0
    }

    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn get(&self, key: &str) -> Result<String, Error> {
        self.0.fail_until(3)?;
        Ok(key.to_uppercase())
    }
}

#[tokio::test(start_paused = true)]
async fn native_async_fn_in_trait_impl_and_default_method() {
    let m = Memory(Attempts::new());
    assert_eq!(m.get("k").await.as_deref(), Ok("K"));
    assert_eq!(m.0.count(), 3);
    let m = Memory(Attempts::new());
    assert_eq!(m.get_twice("k").await.as_deref(), Ok("kk"));
    assert_eq!(m.0.count(), 2);
}

#[async_trait::async_trait]
trait Remote {
    fn attempts(&self) -> &Attempts;

    async fn fetch(&self, id: u32, body: String) -> Result<String, Error>;

    #[retry(initial_backoff = "10ms", jitter = "none")]
    async fn ping(&self) -> Result<u32, Error> {
        self.attempts().fail_until(2)
    }
}

struct Http {
    attempts: Attempts,
    safe: bool,
}

#[async_trait::async_trait]
impl Remote for Http {
    fn attempts(&self) -> &Attempts {
        &self.attempts
    }

    #[retry(initial_backoff = "10ms", jitter = "none", clone(body), idempotent_if = self.safe)]
    async fn fetch(&self, id: u32, body: String) -> Result<String, Error> {
        self.attempts.fail_until(3)?;
        // Consumes the attempt's own copy of `body`.
        let mut body = body;
        body.push_str(&id.to_string());
        Ok(body)
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_impl_method_and_default_method() {
    let h = Http {
        attempts: Attempts::new(),
        safe: true,
    };
    let (out, ms) = timed(h.fetch(7, "id=".to_owned())).await;
    assert_eq!(out.as_deref(), Ok("id=7"));
    assert_eq!(ms, 10 + 20);
    assert_eq!(h.attempts.count(), 3);

    // `idempotent_if = self.safe` sees `self` although `#[async_trait]` renamed it.
    let unsafe_call = Http {
        attempts: Attempts::new(),
        safe: false,
    };
    assert_eq!(unsafe_call.fetch(7, String::new()).await, Err(Error::Busy));
    assert_eq!(unsafe_call.attempts.count(), 1);

    let h = Http {
        attempts: Attempts::new(),
        safe: true,
    };
    assert_eq!(h.ping().await, Ok(2));
}

#[tokio::test(start_paused = true)]
async fn async_trait_future_is_send_through_dyn() {
    let h: Arc<dyn Remote + Send + Sync> = Arc::new(Http {
        attempts: Attempts::new(),
        safe: true,
    });
    let task = tokio::spawn(async move { h.fetch(1, "x".to_owned()).await });
    assert_eq!(task.await.unwrap().as_deref(), Ok("x1"));
}

// ---------------------------------------------------------------------------------------------
// Stacking with `#[tracing::instrument]`, in both orders.

struct Traced {
    attempts: Attempts,
    seen: Vec<String>,
}

impl Traced {
    #[retry(initial_backoff = "10ms", jitter = "none", clone(name))]
    #[tracing::instrument(skip(self))]
    async fn retry_above(&mut self, name: String) -> Result<usize, Error> {
        self.seen.push(name);
        self.attempts.fail_until(2)?;
        Ok(self.seen.len())
    }

    #[tracing::instrument(skip(self), err(Debug))]
    #[retry(initial_backoff = "10ms", jitter = "none", clone(name))]
    async fn retry_below(&mut self, name: String) -> Result<usize, Error> {
        self.seen.push(name);
        self.attempts.fail_until(3)?;
        Ok(self.seen.len())
    }
}

#[tokio::test(start_paused = true)]
async fn tracing_instrument_above_and_below() {
    let mut t = Traced {
        attempts: Attempts::new(),
        seen: Vec::new(),
    };
    assert_eq!(t.retry_above("a".to_owned()).await, Ok(2));
    t.attempts = Attempts::new();
    let (out, ms) = timed(t.retry_below("b".to_owned())).await;
    assert_eq!(out, Ok(5));
    assert_eq!(ms, 10 + 20);
    assert_eq!(t.seen, ["a", "a", "b", "b", "b"]);
}

// ---------------------------------------------------------------------------------------------
// Stacking with `#[tokio::test]`, in both orders: the test itself is retried.

static FLAKY_ABOVE: Attempts = Attempts::new();
static FLAKY_BELOW: Attempts = Attempts::new();

#[retry(max_attempts = 3, initial_backoff = "1s", jitter = "none")]
#[tokio::test(start_paused = true)]
async fn tokio_test_below_retry_passes_on_its_third_attempt() -> Result<(), Error> {
    let n = FLAKY_ABOVE.fail_until(3)?;
    assert_eq!(n, 3);
    Ok(())
}

#[tokio::test(start_paused = true)]
#[retry(max_attempts = 3, initial_backoff = "1s", jitter = "none")]
async fn tokio_test_above_retry_passes_on_its_third_attempt() -> Result<(), Error> {
    let n = FLAKY_BELOW.fail_until(3)?;
    assert_eq!(n, 3);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Attributes, visibility, `Self`, `return`.

mod api {
    use super::{Attempts, Error};
    use retry_runtime::retry;

    pub struct Service {
        pub attempts: Attempts,
    }

    impl Service {
        fn busy() -> Error {
            Error::Busy
        }

        /// Documented, `pub(crate)`, `#[must_use]`, `#[inline]`: all kept.
        #[must_use = "the result says whether the call went through"]
        #[retry(initial_backoff = "10ms", jitter = "none")]
        #[inline]
        pub(crate) async fn call(&self, fail: u32) -> Result<Self, Error> {
            if self.attempts.next() <= fail {
                // `return` ends this attempt, not the call.
                return Err(Self::busy());
            }
            Ok(Self {
                attempts: Attempts::new(),
            })
        }
    }
}

#[tokio::test(start_paused = true)]
async fn visibility_attributes_self_and_return_in_the_body() {
    let s = api::Service {
        attempts: Attempts::new(),
    };
    assert!(s.call(2).await.is_ok());
    assert_eq!(s.attempts.count(), 3);
}

// ---------------------------------------------------------------------------------------------
// Hygiene: the names the expansion uses cannot clash with the user's.

#[allow(non_upper_case_globals, clippy::used_underscore_binding)]
#[retry(initial_backoff = "10ms", jitter = "none", idempotent_if = *__retry_idempotent)]
async fn user_names(
    __retry_call: &Attempts,
    __retry_out: u32,
    __retry_e: &str,
    __retry_idempotent: &bool,
    __retry_ret: char,
) -> Result<String, Error> {
    static __RETRY_SITE: &str = "user static";
    let __retry_call = __retry_call.fail_until(2)?;
    Ok(format!(
        "{__retry_call} {__retry_out} {__retry_e} {__RETRY_SITE} {__retry_ret}"
    ))
}

#[tokio::test(start_paused = true)]
async fn hygiene_user_names_do_not_clash() {
    let a = Attempts::new();
    assert_eq!(
        user_names(&a, 5, "e", &true, 'r').await.as_deref(),
        Ok("2 5 e user static r")
    );
}

// ---------------------------------------------------------------------------------------------
// Recursion (boxed, as without the macro) and return types written through aliases.

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn countdown(n: u32, attempts: &Attempts) -> Result<u32, Error> {
    if n == 0 {
        return attempts.fail_until(2);
    }
    Box::pin(countdown(n - 1, attempts)).await.map(|v| v + 1)
}

#[tokio::test(start_paused = true)]
async fn boxed_recursion() {
    let a = Attempts::new();
    assert_eq!(countdown(3, &a).await, Ok(5));
}

#[retry(initial_backoff = "10ms", jitter = "none", attempt_timeout = "1s")]
async fn io_alias(attempts: &Attempts) -> std::io::Result<u32> {
    if attempts.next() < 2 {
        return Err(std::io::ErrorKind::ConnectionReset.into());
    }
    Ok(7)
}

type Res<T> = Result<T, Error>;

#[retry(initial_backoff = "10ms", jitter = "none")]
async fn local_alias(attempts: &Attempts) -> Res<u32> {
    attempts.fail_until(3)
}

fn anyhow_is_busy(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Error>() == Some(&Error::Busy)
}

#[retry(initial_backoff = "10ms", jitter = "none", retry_on = anyhow_is_busy)]
async fn anyhow_alias(attempts: &Attempts) -> anyhow::Result<u32> {
    let n = attempts.next();
    if n < 3 {
        return Err(Error::Busy.into());
    }
    anyhow::ensure!(n == 3, "unexpected attempt {n}");
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn return_types_through_aliases() {
    let a = Attempts::new();
    assert_eq!(io_alias(&a).await.unwrap(), 7);
    let b = Attempts::new();
    assert_eq!(local_alias(&b).await, Ok(3));
    let c = Attempts::new();
    assert_eq!(anyhow_alias(&c).await.unwrap(), 3);
    assert_eq!((a.count(), b.count(), c.count()), (2, 3, 3));
}

// ---------------------------------------------------------------------------------------------
// `clone(...)`, `mut` arguments, timeouts on these shapes.

#[retry(initial_backoff = "10ms", jitter = "none", clone(buf))]
async fn consumes(mut buf: Vec<u8>, attempts: &Attempts) -> Result<Vec<u8>, Error> {
    // Each attempt has its own copy, mutable as the argument was declared.
    buf.push(1);
    attempts.fail_until(3)?;
    Ok(buf)
}

#[tokio::test(start_paused = true)]
async fn cloned_owned_argument_is_fresh_for_each_attempt() {
    let a = Attempts::new();
    assert_eq!(consumes(vec![0], &a).await, Ok(vec![0, 1]));
}

#[retry(
    max_attempts = 3,
    initial_backoff = "10ms",
    jitter = "none",
    attempt_timeout = "50ms"
)]
async fn slow_then_fast(attempts: &Attempts) -> Result<u32, Error> {
    let n = attempts.next();
    if n < 3 {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn attempt_timeout_on_a_spawned_call() {
    static A: Attempts = Attempts::new();
    let (out, ms) = timed(async { tokio::spawn(slow_then_fast(&A)).await.unwrap() }).await;
    assert_eq!(out, Ok(3));
    assert_eq!(ms, 50 + 10 + 50 + 20);
}
