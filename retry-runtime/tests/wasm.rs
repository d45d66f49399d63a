//! The engine in the browser backend (`wasm32-unknown-unknown`): every call below runs as a
//! `wasm_bindgen_test` in Node, its waits on the host's `setTimeout` and its clock
//! `web_time`'s (`performance.now()`). Exact where a `testing` scope makes the schedule exact
//! (instant, seeded); within generous bounds where the real clock runs.
//!
//! ```text
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!     cargo test -p retry-runtime --target wasm32-unknown-unknown --no-default-features --test wasm
//! ```
//!
//! The tests named `example_*` come first: a `#[retry]` function around a call into JavaScript
//! (a promise that rejects twice, then resolves), and the browser example's `fetch_text`
//! (`examples/wasm.rs`, the host's own `fetch`) against a real HTTP server on 127.0.0.1 that
//! Node runs for the test.
//!
//! (Empty on other targets. `.ci/run` runs it, with wasm-bindgen-test's runner installed.)

#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use core::future::Future;
use core::task::Poll;
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{
    BreakerState, CircuitBreaker, CircuitOpen, Classify, ErrorClass, Instant, Jitter, Policy,
    TimedOut, TimeoutKind, TokenBucket, attempt, retry,
};
use std::cell::RefCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Real-clock bounds are this loose: the machine may be busy with other builds.
const SLACK: Duration = Duration::from_secs(2);

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, millis: i32) -> JsValue;
}

/// A JS promise that resolves after `ms`: a wait the engine knows nothing of.
async fn js_sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    });
    JsFuture::from(promise).await.expect("resolves");
}

#[derive(Debug)]
enum Error {
    Busy,
    Throttled,
    Js(JsValue),
    TimedOut(TimedOut),
    Open(CircuitOpen),
    Refused(retry_runtime::Refused),
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Error::Busy => ErrorClass::Transient,
            // A JS rejection: transient if it says the host is busy.
            Error::Js(e) => match e.dyn_ref::<js_sys::Error>() {
                Some(e) if String::from(e.message()).starts_with("busy") => ErrorClass::Transient,
                _ => ErrorClass::Permanent,
            },
            Error::Throttled => ErrorClass::Throttling,
            Error::TimedOut(_) => ErrorClass::Timeout,
            Error::Open(open) => open.classify(),
            Error::Refused(refused) => refused.classify(),
        }
    }
}

impl From<TimedOut> for Error {
    fn from(t: TimedOut) -> Self {
        Error::TimedOut(t)
    }
}

/// The breaker's refusal (`CircuitOpen` is `Refused`, by `"CircuitBreaker"`) or a guard's.
impl From<CircuitOpen> for Error {
    fn from(refused: CircuitOpen) -> Self {
        if refused.by() == "CircuitBreaker" {
            Error::Open(refused)
        } else {
            Error::Refused(refused)
        }
    }
}

// The example: a call into the host, retried. `flaky` is a JS function made here (in a page it
// would be `fetch`): it returns a promise that rejects on its first two calls and then resolves
// with the number of its call, each after 5 ms.

thread_local! {
    static FLAKY: js_sys::Function = js_sys::Function::new_no_args(
        "this.calls = (this.calls || 0) + 1;
         const n = this.calls;
         return new Promise((resolve, reject) =>
             setTimeout(() => (n < 3 ? reject(new Error('busy ' + n)) : resolve(n)), 5));",
    );
}

/// Calls `flaky` and awaits its promise; a rejection is a transient `Error::Js`.
#[retry(
    max_attempts = 4,
    initial_backoff = "10ms",
    jitter = "none",
    attempt_timeout = "1s"
)]
async fn call_the_host(this: &js_sys::Object) -> Result<f64, Error> {
    let promise = FLAKY.with(|f| f.call0(this)).map_err(Error::Js)?;
    let value = JsFuture::from(js_sys::Promise::from(promise))
        .await
        .map_err(Error::Js)?;
    Ok(value.as_f64().expect("a number"))
}

#[wasm_bindgen_test]
async fn example_a_flaky_js_call_is_retried() {
    let this = js_sys::Object::new();
    let start = Instant::now();
    let (out, record) = testing::record(Overrides::new(), call_the_host(&this)).await;
    let took = start.elapsed();
    // Rejected twice, resolved on the third call, after 10 and 20 ms of real backoff.
    assert_eq!(out.unwrap(), 3.0);
    assert_eq!(record.attempts("call_the_host"), 3);
    assert_eq!(record.delays(), [10, 20].map(MS));
    assert!(took >= MS(30 + 15), "{took:?}");
    assert!(took < MS(45) + SLACK, "{took:?}");
}

// The browser example (`examples/wasm.rs`): its `fetch_text`, the host's own `fetch`, against a
// real HTTP server on 127.0.0.1 that Node runs for the test.
#[path = "../examples/wasm.rs"]
mod example;

#[wasm_bindgen]
extern "C" {
    /// A Node `http.Server`.
    type Server;
    #[wasm_bindgen(method)]
    fn address(this: &Server) -> JsValue;
    #[wasm_bindgen(method)]
    fn close(this: &Server);
    #[wasm_bindgen(method, js_name = closeAllConnections)]
    fn close_all_connections(this: &Server);
}

/// Starts an HTTP server on 127.0.0.1 (an ephemeral port) that answers `503` with
/// `Retry-After: 1` to its first two requests and `ok <n>` to the others, and counts them in
/// its `hits`; resolves with the server.
async fn start_flaky_server() -> Server {
    let start = js_sys::Function::new_no_args(
        "const http = process.getBuiltinModule('node:http');
         return new Promise((resolve, reject) => {
             const server = http.createServer((req, res) => {
                 server.hits = (server.hits || 0) + 1;
                 if (server.hits < 3) {
                     res.writeHead(503, { 'retry-after': '1' });
                     res.end('busy');
                 } else {
                     res.end('ok ' + server.hits);
                 }
             });
             server.on('error', reject);
             server.listen(0, '127.0.0.1', () => resolve(server));
         });",
    );
    let promise = start.call0(&JsValue::NULL).expect("node:http");
    JsFuture::from(js_sys::Promise::from(promise))
        .await
        .expect("listening")
        .unchecked_into()
}

fn field(target: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(target, &JsValue::from_str(key)).expect("a field")
}

#[wasm_bindgen_test]
async fn example_fetch_from_a_real_server_is_retried() {
    let server = start_flaky_server().await;
    let port = field(&server.address(), "port").as_f64().expect("a port");
    let url = format!("http://127.0.0.1:{port}/status");

    let start = Instant::now();
    let (out, record) = testing::record(Overrides::new(), example::fetch_text(&url)).await;
    let took = start.elapsed();
    server.close_all_connections();
    server.close();

    // Two 503s, each asking for one second, then the answer: the waits are the server's.
    assert_eq!(out.unwrap(), "ok 3");
    assert_eq!(field(&server, "hits").as_f64(), Some(3.0));
    assert_eq!(record.attempts("fetch_text"), 3);
    assert_eq!(record.delays(), [1000, 1000].map(MS));
    assert!(took >= MS(2000), "{took:?}");
    assert!(took < MS(2000) + SLACK, "{took:?}");
}

#[wasm_bindgen_test]
async fn example_fetch_refused_connection_is_a_network_error() {
    // Nothing listens on port 9 of 127.0.0.1 (discard): each attempt's fetch rejects, a
    // transient error, until the attempts run out; `instant` skips the waits.
    let (out, record) = testing::record(
        Overrides::new().instant(),
        example::fetch_text("http://127.0.0.1:9/status"),
    )
    .await;
    assert!(
        matches!(out, Err(example::FetchError::Network(_))),
        "{out:?}"
    );
    assert_eq!(record.attempts("fetch_text"), 4);
}

/// Fails with `Busy` until the `ok_at`-th call of `runs`, which returns its number.
fn play(runs: &AtomicU32, ok_at: u32) -> Result<u32, Error> {
    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
    if n >= ok_at { Ok(n) } else { Err(Error::Busy) }
}

/// An attempt that never ends on its own.
async fn hang() {
    core::future::pending::<()>().await;
}

#[retry(max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
async fn always_busy() -> Result<(), Error> {
    Err(Error::Busy)
}

#[retry(max_attempts = 4, initial_backoff = "100ms", max_backoff = "1s")]
async fn jittered() -> Result<(), Error> {
    Err(Error::Busy)
}

#[wasm_bindgen_test]
async fn the_backoff_schedule_is_exact_in_an_instant_seeded_scope() {
    let start = Instant::now();
    let overrides = Overrides::new().instant().seed(7);
    let (out, record) = testing::record(overrides, always_busy()).await;
    assert!(matches!(out, Err(Error::Busy)), "{out:?}");
    assert_eq!(record.attempts("always_busy"), 4);
    assert_eq!(record.delays(), [100, 200, 400].map(MS));
    // Full jitter, seeded: the same draws on every run, each within its cap.
    let (_, a) = testing::record(overrides, jittered()).await;
    let (_, b) = testing::record(overrides, jittered()).await;
    assert_eq!(a.delays(), b.delays());
    assert_eq!(a.delays().len(), 3);
    for (delay, cap) in a.delays().iter().zip([100, 200, 400].map(MS)) {
        assert!(*delay <= cap, "{delay:?} above {cap:?}");
    }
    // Nothing was slept.
    assert!(start.elapsed() < SLACK);
    // A capped scope.
    let (_, capped) =
        testing::record(Overrides::new().instant().max_attempts(2), always_busy()).await;
    assert_eq!(capped.attempts("always_busy"), 2);
}

#[wasm_bindgen_test]
async fn unseeded_jitter_differs_from_call_to_call() {
    // The thread's generator is seeded from `Math.random()`: two calls draw differently.
    let (_, a) = testing::record(Overrides::new().instant(), jittered()).await;
    let (_, b) = testing::record(Overrides::new().instant(), jittered()).await;
    assert_eq!(a.delays().len(), 3);
    assert_ne!(a.delays(), b.delays());
}

#[retry(max_attempts = 3, initial_backoff = "10ms", jitter = "none")]
async fn twice_busy(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3)
}

#[wasm_bindgen_test]
async fn retries_sleep_on_js_timers() {
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(twice_busy(&runs).await.unwrap(), 3);
    let took = start.elapsed();
    // 10 ms then 20 ms of backoff, really slept.
    assert!(took >= MS(30), "{took:?}");
    assert!(took < MS(30) + SLACK, "{took:?}");
}

#[retry(
    max_attempts = 2,
    attempt_timeout = "50ms",
    initial_backoff = "10ms",
    jitter = "none"
)]
async fn hangs(runs: &AtomicU32) -> Result<u32, Error> {
    runs.fetch_add(1, Ordering::SeqCst);
    hang().await;
    Ok(0)
}

#[wasm_bindgen_test]
async fn an_attempt_timeout_cuts_a_hanging_attempt_off() {
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    let out = hangs(&runs).await;
    let took = start.elapsed();
    let Err(Error::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(
        (t.kind(), t.attempt(), t.limit()),
        (TimeoutKind::Attempt, 2, MS(50))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(took >= MS(110), "{took:?}");
    assert!(took < MS(110) + SLACK, "{took:?}");
}

#[retry(
    max_attempts = 10,
    deadline = "150ms",
    initial_backoff = "40ms",
    jitter = "none"
)]
async fn busy_until_the_deadline(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, u32::MAX)
}

#[retry(max_attempts = 3, deadline = "100ms")]
async fn hangs_past_the_deadline() -> Result<u32, Error> {
    hang().await;
    Ok(0)
}

#[wasm_bindgen_test]
async fn a_deadline_ends_the_call() {
    // Sleeps of 40 and 80 ms; the next (160 ms) would reach the deadline: the call ends.
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    let (out, record) = testing::record(Overrides::new(), busy_until_the_deadline(&runs)).await;
    let took = start.elapsed();
    assert!(matches!(out, Err(Error::Busy)), "{out:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(record.delays(), [40, 80].map(MS));
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!((end.attempt, end.reason), (3, EarlyEnd::Deadline));
    assert!(took >= MS(120) && took < MS(150) + SLACK, "{took:?}");

    // An attempt in flight at the deadline is cut off there.
    let start = Instant::now();
    let out = hangs_past_the_deadline().await;
    let took = start.elapsed();
    let Err(Error::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!((t.kind(), t.attempt()), (TimeoutKind::Deadline, 1));
    assert!(took >= MS(100) && took < MS(100) + SLACK, "{took:?}");
}

static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(100);

#[retry(bucket = BUCKET, max_attempts = 3, initial_backoff = "1ms", jitter = "none")]
async fn metered(runs: &AtomicU32, ok_at: u32) -> Result<u32, Error> {
    play(runs, ok_at)
}

#[wasm_bindgen_test]
async fn the_bucket_keeps_exact_levels() {
    let instant = Overrides::new().instant();
    // Two retries of a transient error: 2 x 5.
    let runs = AtomicU32::new(0);
    let out = testing::scope(instant, metered(&runs, u32::MAX)).await;
    assert!(out.is_err());
    assert_eq!(BUCKET.available(), 90);
    // A retry that succeeds gets its cost back.
    let runs = AtomicU32::new(0);
    let out = testing::scope(instant, metered(&runs, 2)).await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(BUCKET.available(), 90);
    // A first-attempt success adds one.
    let runs = AtomicU32::new(0);
    assert_eq!(metered(&runs, 1).await.unwrap(), 1);
    assert_eq!(BUCKET.available(), 91);
}

#[retry(max_attempts = 3, hedge_after = "30ms")]
async fn hedged(runs: &AtomicU32) -> Result<u32, Error> {
    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
    if n == 1 {
        hang().await;
    }
    Ok(n)
}

#[wasm_bindgen_test]
async fn a_slow_attempt_is_hedged() {
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    let (out, record) = testing::record(Overrides::new(), hedged(&runs)).await;
    let took = start.elapsed();
    // The first attempt hangs; the hedge started after 30 ms wins.
    assert_eq!(out.unwrap(), 2);
    let [hedge] = record.hedges() else {
        panic!("{:?}", record.hedges())
    };
    assert_eq!((hedge.attempt, hedge.in_flight, hedge.class), (2, 2, None));
    assert!(took >= MS(30) && took < MS(30) + SLACK, "{took:?}");
}

static BREAKER: CircuitBreaker = CircuitBreaker::new().with_min_calls(2);

#[retry(max_attempts = 1, breaker = BREAKER)]
async fn guarded(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, u32::MAX)
}

#[wasm_bindgen_test]
async fn a_breaker_opens_and_refuses_calls_without_running_them() {
    let runs = AtomicU32::new(0);
    assert!(matches!(guarded(&runs).await, Err(Error::Busy)));
    assert!(matches!(guarded(&runs).await, Err(Error::Busy)));
    assert_eq!(BREAKER.state(), BreakerState::Open);
    let out = guarded(&runs).await;
    assert!(
        matches!(&out, Err(Error::Open(open)) if open.by() == "CircuitBreaker"),
        "{out:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[retry(
    max_attempts = 3,
    mode = "adaptive",
    budget = "50%",
    initial_backoff = "1ms"
)]
async fn adaptive(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3).map_err(|_| Error::Throttled)
}

#[wasm_bindgen_test]
async fn the_adaptive_limiter_and_a_budget_take_part() {
    // Throttled twice: the limiter turns on and sends the retries (instantly, in the scope);
    // the budget's floor lets both through.
    let runs = AtomicU32::new(0);
    let (out, record) = testing::record(Overrides::new().instant(), adaptive(&runs)).await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(record.attempts("adaptive"), 3);
    assert!(record.early_ends().is_empty());
}

#[wasm_bindgen_test]
async fn a_policy_retries_a_closure() {
    let policy = Policy::new()
        .max_attempts(4)
        .initial_backoff(MS(10))
        .jitter(Jitter::None);
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    let (out, record) =
        testing::record(Overrides::new(), policy.retry(|| async { play(&runs, 3) })).await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(record.delays(), [10, 20].map(MS));
    assert!(start.elapsed() >= MS(30));

    // With a timeout: a hanging attempt is cut off.
    let timed = Policy::new()
        .max_attempts(2)
        .attempt_timeout(MS(40))
        .initial_backoff(MS(1));
    let out: Result<u32, Error> = timed
        .retry(|| async {
            hang().await;
            Ok(0)
        })
        .await;
    assert!(matches!(out, Err(Error::TimedOut(_))), "{out:?}");
}

#[retry(
    max_attempts = 2,
    attempt_timeout = "1s",
    deadline = "5s",
    initial_backoff = "1ms",
    jitter = "none"
)]
async fn looks_at_its_attempt(seen: &Mutex<Vec<retry_runtime::Attempt>>) -> Result<u32, Error> {
    let a = attempt().expect("inside a #[retry] body");
    seen.lock().unwrap().push(a);
    js_sleep(1).await;
    if a.is_retry() {
        Ok(a.number())
    } else {
        Err(Error::Busy)
    }
}

#[wasm_bindgen_test]
async fn the_body_reads_its_attempt_on_web_times_clock() {
    let seen = Mutex::new(Vec::new());
    let start = Instant::now();
    assert_eq!(looks_at_its_attempt(&seen).await.unwrap(), 2);
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.iter().map(|a| a.number()).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(seen[0].invocation_id(), seen[1].invocation_id());
    for a in &seen {
        // `retry_runtime::Instant` is `web_time::Instant` here.
        let cutoff: web_time::Instant = a.cutoff().expect("an attempt timeout");
        assert!(cutoff >= start + MS(1000) && cutoff < start + MS(1000) + SLACK);
        let deadline = a.deadline().expect("a deadline");
        assert!(deadline >= start + MS(5000) && deadline < start + MS(5000) + SLACK);
        let left = a.time_left().expect("cut off");
        assert!(left <= MS(1000) && left > MS(0), "{left:?}");
        // The header's `ttl` reads the wall clock (`Date.now()`).
        assert!(a.amz_sdk_request().starts_with("ttl="), "{a:?}");
    }
    assert!(attempt().is_none(), "outside the body");
}

#[retry(max_attempts = 3, initial_backoff = "10ms", jitter = "none")]
fn blocking(runs: &AtomicU32) -> Result<u32, Error> {
    play(runs, 3)
}

#[wasm_bindgen_test]
fn a_blocking_function_runs_in_a_sync_scope_and_waits_by_spinning() {
    let runs = AtomicU32::new(0);
    let (out, record) = testing::record_sync(Overrides::new().instant(), || blocking(&runs));
    assert_eq!(out.unwrap(), 3);
    assert_eq!(record.delays(), [10, 20].map(MS));
    // Outside a scope the waits are real: the thread spins on the clock (no sleep here).
    let runs = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(blocking(&runs).unwrap(), 3);
    assert!(start.elapsed() >= MS(30));
}

#[wasm_bindgen_test]
async fn a_scope_follows_its_future_and_not_other_tasks() {
    // Two tasks on the host's event loop: only the scoped one's retries are instant.
    let other = std::rc::Rc::new(RefCell::new(None));
    let theirs = other.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let start = Instant::now();
        let _ = always_busy().await;
        *theirs.borrow_mut() = Some(start.elapsed());
    });
    let (_, record) = testing::record(Overrides::new().instant(), always_busy()).await;
    assert_eq!(record.delays(), [100, 200, 400].map(MS));
    assert!(
        other.borrow().is_none(),
        "the unscoped call is still sleeping"
    );
    // The unscoped call slept its 700 ms.
    while other.borrow().is_none() {
        js_sleep(50).await;
    }
    let took = other.borrow().expect("ended");
    assert!(took >= MS(700), "{took:?}");
}

/// Which of two futures ended first (the other is dropped, its timers cleared).
async fn first<A: Future, B: Future>(a: A, b: B) -> Result<A::Output, B::Output> {
    let (mut a, mut b) = (core::pin::pin!(a), core::pin::pin!(b));
    core::future::poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        b.as_mut().poll(cx).map(Err)
    })
    .await
}

#[wasm_bindgen_test]
async fn a_sleep_longer_than_a_js_timer_holds_is_not_cut_short() {
    // 30 days is past setTimeout's 2^31 - 1 ms (a longer delay fires at once): the timer is
    // armed for what it can hold, so the backoff is still sleeping 50 ms later.
    let month = Duration::from_secs(30 * 24 * 3600);
    let policy = Policy::new()
        .max_attempts(2)
        .initial_backoff(month)
        .max_backoff(month)
        .jitter(Jitter::None);
    let runs = AtomicU32::new(0);
    let call = policy.retry(|| async { play(&runs, u32::MAX) });
    let out = first(call, js_sleep(50)).await;
    assert!(out.is_err(), "the call ended: {out:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// One attempt at a time, of whichever function names it.
static ONE: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(1);

#[retry(max_attempts = 1, guard = ONE)]
async fn inner() -> Result<u32, Error> {
    Ok(1)
}

/// Its attempt holds the bulkhead's one place while it calls `inner`, which is refused.
#[retry(max_attempts = 2, initial_backoff = "10ms", guard = ONE)]
async fn outer() -> Result<u32, Error> {
    match inner().await {
        Err(Error::Refused(refused)) => Ok(u32::from(refused.by() == "bulkhead")),
        other => other.map(|_| 0),
    }
}

#[wasm_bindgen_test]
async fn a_bulkhead_refuses_an_attempt_beyond_its_place_and_frees_it_after() {
    assert_eq!(
        outer().await.unwrap(),
        1,
        "inner was refused by the bulkhead"
    );
    assert_eq!(ONE.in_flight(), 0, "the place was given back");
    assert_eq!(inner().await.unwrap(), 1);
}
