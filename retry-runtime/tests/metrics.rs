//! The `metrics` feature, with `metrics-util`'s debugging recorder installed for the whole
//! test binary: each counter and gauge after calls that retry, give up early, trip a circuit
//! breaker; and no allocation per call once a function has its handles.
//!
//! ```text
//! cargo test -p retry-runtime --features metrics --test metrics
//! ```

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use retry_runtime::{
    CircuitBreaker, CircuitOpen, Classify, ErrorClass, TokenBucket, meters, retry,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Counts the allocations of the thread that asks.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a thread-local cell.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the pointer and layout `alloc` was called with.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Debug, Clone, PartialEq)]
enum Error {
    Fault(ErrorClass),
    Open,
    Refused,
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        match self {
            Error::Fault(c) => *c,
            Error::Open | Error::Refused => ErrorClass::Permanent,
        }
    }
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

impl From<retry_runtime::Refused> for Error {
    fn from(_: retry_runtime::Refused) -> Self {
        Error::Refused
    }
}

fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().unwrap();
        snapshotter
    })
}

/// Every metric so far, as `(name, labels) -> value`: a snapshot of the debugging recorder
/// hands over the counts since the last one, so they are added up here, and a gauge's value
/// once, then zero, so a gauge keeps its last value other than zero.
type Labels = Vec<(String, String)>;

static SEEN: Mutex<Vec<(String, Labels, f64)>> = Mutex::new(Vec::new());

/// The value of metric `name` with `labels` (the others' values are not looked at).
fn value(name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut seen = SEEN.lock().unwrap();
    for (key, _, _, v) in snapshotter().snapshot().into_vec() {
        let key = key.key();
        let key_labels: Labels = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        let slot = match seen
            .iter_mut()
            .position(|(n, l, _)| n == key.name() && *l == key_labels)
        {
            Some(i) => i,
            None => {
                seen.push((key.name().to_owned(), key_labels, 0.0));
                seen.len() - 1
            }
        };
        match v {
            DebugValue::Counter(n) => seen[slot].2 += n as f64,
            DebugValue::Gauge(g) if g.into_inner() != 0.0 => seen[slot].2 = g.into_inner(),
            DebugValue::Gauge(_) => {}
            DebugValue::Histogram(_) => {}
        }
    }
    seen.iter()
        .find(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, _, v)| *v)
}

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

#[retry(
    max_attempts = 3,
    initial_backoff = "1ms",
    partition = "metrics-orders"
)]
async fn orders(fail: u32, n: &mut u32) -> Result<(), Error> {
    *n += 1;
    if *n <= fail {
        Err(Error::Fault(ErrorClass::Timeout))
    } else {
        Ok(())
    }
}

static SMALL: TokenBucket = TokenBucket::standard().with_capacity(12);

#[retry(max_attempts = 5, initial_backoff = "1ms", bucket = SMALL)]
async fn drains() -> Result<(), Error> {
    Err(Error::Fault(ErrorClass::Transient))
}

static BREAKER: CircuitBreaker = CircuitBreaker::new().with_min_calls(2);

#[retry(max_attempts = 1, breaker = BREAKER)]
async fn guarded() -> Result<(), Error> {
    Err(Error::Fault(ErrorClass::Throttling))
}

#[test]
fn every_counter_and_gauge() {
    snapshotter();
    paused().block_on(async {
        // Two timeouts, then a success: 3 attempts, 2 retries, 1 call recovered.
        let mut n = 0;
        orders(2, &mut n).await.unwrap();
        let labels = [("function", "orders"), ("partition", "metrics-orders")];
        assert_eq!(value(meters::ATTEMPTS, &labels), Some(3.0));
        let timeouts = [labels[0], labels[1], ("class", "timeout")];
        assert_eq!(value(meters::RETRIES, &timeouts), Some(2.0));
        assert_eq!(value(meters::RECOVERED, &labels), Some(1.0));
        // Two retries of a timeout cost 10 each.
        assert_eq!(value(meters::BUCKET_TOKENS, &labels), Some(480.0));

        // 12 tokens: two retries of 5, then the bucket is short.
        assert!(drains().await.is_err());
        let labels = [("function", "drains"), ("partition", "")];
        assert_eq!(value(meters::ATTEMPTS, &labels), Some(3.0));
        let empty = [labels[0], ("reason", "bucket_empty")];
        assert_eq!(value(meters::ENDED_EARLY, &empty), Some(1.0));
        assert_eq!(value(meters::BUCKET_TOKENS, &labels), Some(2.0));

        // Two throttles open the breaker; the third call is refused.
        for _ in 0..3 {
            let _ = guarded().await;
        }
        let labels = [("function", "guarded")];
        assert_eq!(value(meters::ATTEMPTS, &labels), Some(2.0));
        let opened = [labels[0], ("from", "closed"), ("to", "open")];
        assert_eq!(value(meters::BREAKER_TRANSITIONS, &opened), Some(1.0));
        let refused = [labels[0], ("reason", "circuit_open")];
        assert_eq!(value(meters::ENDED_EARLY, &refused), Some(1.0));
        tokio::time::advance(Duration::from_secs(5)).await;
        let _ = guarded().await;
        let probed = [labels[0], ("from", "open"), ("to", "half-open")];
        assert_eq!(value(meters::BREAKER_TRANSITIONS, &probed), Some(1.0));
        let reopened = [labels[0], ("from", "half-open"), ("to", "open")];
        assert_eq!(value(meters::BREAKER_TRANSITIONS, &reopened), Some(1.0));
    });
}

static ONE: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(1);

#[retry(max_attempts = 1, guard = ONE)]
async fn crowded() -> Result<(), Error> {
    Ok(())
}

/// Holds the bulkhead's one place while it calls `crowded`, which is refused.
#[retry(max_attempts = 1, guard = ONE)]
async fn holds_the_place() -> Result<(), Error> {
    assert_eq!(crowded().await, Err(Error::Refused));
    Ok(())
}

#[test]
fn a_guards_refusal_is_an_early_end_labelled_with_its_name() {
    snapshotter();
    paused().block_on(async {
        holds_the_place().await.unwrap();
        let refused = [
            ("function", "crowded"),
            ("reason", "refused"),
            ("guard", "bulkhead"),
        ];
        assert_eq!(value(meters::ENDED_EARLY, &refused), Some(1.0));
        let attempts = value(meters::ATTEMPTS, &[("function", "crowded")]);
        assert_eq!(attempts.unwrap_or(0.0), 0.0, "its body never ran");
    });
}

/// A poll: `Ok(false)` until the third attempt, no attempt fails.
#[retry(max_attempts = 5, initial_backoff = "1ms", retry_if_ok = not_ready)]
async fn poll(n: &mut u32) -> Result<bool, Error> {
    *n += 1;
    Ok(*n >= 3)
}

fn not_ready(ready: &bool) -> bool {
    !*ready
}

/// A poll whose first attempt fails, then polls twice.
#[retry(max_attempts = 5, initial_backoff = "1ms", retry_if_ok = not_ready)]
async fn poll_after_a_failure(n: &mut u32) -> Result<bool, Error> {
    *n += 1;
    match *n {
        1 => Err(Error::Fault(ErrorClass::Transient)),
        n => Ok(n >= 3),
    }
}

#[test]
fn a_call_is_recovered_once_and_only_after_a_failure() {
    snapshotter();
    paused().block_on(async {
        // Polled three times without a failure: no recovery, however many repeats.
        let mut n = 0;
        assert_eq!(poll(&mut n).await, Ok(true));
        assert_eq!(n, 3);
        let labels = [("function", "poll")];
        assert_eq!(value(meters::ATTEMPTS, &labels), Some(3.0));
        let recovered = value(meters::RECOVERED, &labels).unwrap_or(0.0);
        assert_eq!(recovered, 0.0, "no attempt failed");

        // A failure, then two polls: the call recovered, once.
        let mut n = 0;
        assert_eq!(poll_after_a_failure(&mut n).await, Ok(true));
        let labels = [("function", "poll_after_a_failure")];
        assert_eq!(value(meters::ATTEMPTS, &labels), Some(3.0));
        assert_eq!(value(meters::RECOVERED, &labels), Some(1.0));
    });
}

#[retry]
async fn quick(x: u64) -> Result<u64, Error> {
    Ok(std::hint::black_box(x) + 1)
}

#[test]
fn a_call_allocates_nothing_with_a_recorder_installed() {
    snapshotter();
    paused().block_on(async {
        // The first call resolves the function and takes its handles.
        quick(1).await.unwrap();
        ALLOCATIONS.with(|a| a.set(0));
        COUNTING.with(|c| c.set(true));
        for i in 0..10_000 {
            std::hint::black_box(quick(i).await.unwrap());
        }
        COUNTING.with(|c| c.set(false));
        assert_eq!(ALLOCATIONS.with(Cell::get), 0);
        assert_eq!(
            value(meters::ATTEMPTS, &[("function", "quick")]),
            Some(10_001.0)
        );
    });
}
