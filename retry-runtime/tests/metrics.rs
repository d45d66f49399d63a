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
    fn from(refused: CircuitOpen) -> Self {
        if refused.by() == "CircuitBreaker" {
            Error::Open
        } else {
            Error::Refused
        }
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

/// Every histogram's samples so far, as `(name, labels) -> samples`.
static SAMPLES: Mutex<Vec<(String, Labels, Vec<f64>)>> = Mutex::new(Vec::new());

/// The samples of histogram `name` with exactly `labels`, in the order recorded.
fn samples(name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    let _ = value("", &[]);
    let all = SAMPLES.lock().unwrap();
    let labels: Labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    all.iter()
        .find(|(n, l, _)| n == name && *l == labels)
        .map(|(_, _, s)| s.clone())
        .unwrap_or_default()
}

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
            DebugValue::Histogram(values) => {
                let (name, labels) = (seen[slot].0.clone(), seen[slot].1.clone());
                let mut all = SAMPLES.lock().unwrap();
                let i = match all.iter().position(|(n, l, _)| *n == name && *l == labels) {
                    Some(i) => i,
                    None => {
                        all.push((name, labels, Vec::new()));
                        all.len() - 1
                    }
                };
                all[i].2.extend(values.iter().map(|v| v.into_inner()));
            }
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

static FEW: TokenBucket = TokenBucket::standard().with_capacity(12);

#[retry(max_attempts = 3, initial_backoff = "1ms", bucket = FEW)]
async fn refills(fail: u32, n: &mut u32) -> Result<(), Error> {
    *n += 1;
    if *n <= fail {
        Err(Error::Fault(ErrorClass::Transient))
    } else {
        Ok(())
    }
}

#[retry(max_attempts = 3, partition = "metrics-healthy")]
async fn healthy() -> Result<(), Error> {
    Ok(())
}

/// The bucket's gauge is its level: as a function first runs (not 0 for one that never
/// retried), after a retry's cost, and after each success that gives tokens back.
#[test]
fn the_bucket_gauge_follows_the_bucket() {
    snapshotter();
    paused().block_on(async {
        healthy().await.unwrap();
        let labels = [("function", "healthy"), ("partition", "metrics-healthy")];
        assert_eq!(value(meters::BUCKET_TOKENS, &labels), Some(500.0));

        let labels = [("function", "refills"), ("partition", "")];
        // Two retries of 5: 2 left; the success refunds the last retry's 5.
        let mut n = 0;
        refills(2, &mut n).await.unwrap();
        assert_eq!(FEW.available(), 7);
        assert_eq!(value(meters::BUCKET_TOKENS, &labels), Some(7.0));
        // First attempts that succeed earn the reward (1 each), up to the capacity.
        for (i, level) in [8.0, 9.0, 10.0, 11.0, 12.0, 12.0].into_iter().enumerate() {
            let mut n = 0;
            refills(0, &mut n).await.unwrap();
            assert_eq!(
                value(meters::BUCKET_TOKENS, &labels),
                Some(level),
                "call {i}"
            );
        }
        assert_eq!(FEW.available(), 12);
    });
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
        // Two retries of a timeout cost 10 each; the success gives the last one's back.
        assert_eq!(value(meters::BUCKET_TOKENS, &labels), Some(490.0));

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

/// One limit shared by two functions: each function's gauge is its own.
static LIMIT: retry_runtime::AdaptiveConcurrency = retry_runtime::AdaptiveConcurrency::new();

#[retry(max_attempts = 1, guard = LIMIT)]
async fn limited_reads() -> Result<(), Error> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}

#[retry(max_attempts = 1, guard = LIMIT, partition = "metrics-writes")]
async fn limited_writes() -> Result<(), Error> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}

static PACED: retry_runtime::RateLimiter = retry_runtime::RateLimiter::adaptive();

#[retry(mode = "adaptive", max_attempts = 2, initial_backoff = "1ms", rate_limiter = PACED)]
async fn throttled_once(n: &mut u32) -> Result<(), Error> {
    *n += 1;
    if *n == 1 {
        Err(Error::Fault(ErrorClass::Throttling))
    } else {
        Ok(())
    }
}

#[test]
fn a_limit_and_a_send_rate_reach_their_gauges_as_they_change() {
    snapshotter();
    paused().block_on(async {
        limited_reads().await.unwrap();
        limited_writes().await.unwrap();
        let limit = LIMIT.limit();
        let reads = [
            ("guard", "adaptive_concurrency"),
            ("function", "limited_reads"),
            ("partition", ""),
        ];
        let writes = [
            ("guard", "adaptive_concurrency"),
            ("function", "limited_writes"),
            ("partition", "metrics-writes"),
        ];
        assert_eq!(value(meters::GUARD_LIMIT, &writes), Some(f64::from(limit)));
        assert!(
            value(meters::GUARD_LIMIT, &reads).is_some(),
            "each function its own gauge"
        );

        // A throttle turns the limiter on and sets its rate; the gauge follows it.
        let mut n = 0;
        throttled_once(&mut n).await.unwrap();
        let labels = [("function", "throttled_once"), ("partition", "")];
        assert_eq!(value(meters::FILL_RATE, &labels), Some(PACED.fill_rate()));
        assert!(PACED.fill_rate() > 0.0);
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

/// A recorder whose every handle is an atomic it made when the handle was registered: a
/// histogram counts its samples. (metrics-util's debugging recorder and Prometheus's exporter
/// keep a histogram's samples in blocks they allocate as the samples come.)
#[derive(Default)]
struct Atomics {
    counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    samples: std::sync::Arc<Samples>,
}

#[derive(Default)]
struct Samples(std::sync::atomic::AtomicU64);

impl metrics::HistogramFn for Samples {
    fn record(&self, _: f64) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl metrics::Recorder for Atomics {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::from_arc(self.counter.clone())
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::from_arc(self.samples.clone())
    }
}

#[test]
fn a_call_allocates_nothing_with_a_recorder_installed() {
    let atomics = Atomics::default();
    metrics::with_local_recorder(&atomics, || {
        paused().block_on(async {
            // The first call resolves the function and takes its handles.
            quick(1).await.unwrap();
            ALLOCATIONS.with(|a| a.set(0));
            COUNTING.with(|c| c.set(true));
            for i in 0..10_000 {
                std::hint::black_box(quick(i).await.unwrap());
            }
            COUNTING.with(|c| c.set(false));
        })
    });
    assert_eq!(ALLOCATIONS.with(Cell::get), 0);
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    // Each call: its attempt counted, its three histograms recorded.
    assert_eq!(load(&atomics.counter), 10_001);
    assert_eq!(load(&atomics.samples.0), 3 * 10_001);
}

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none")]
async fn histogrammed(fail: u32, n: &mut u32) -> Result<(), Error> {
    *n += 1;
    tokio::time::sleep(Duration::from_millis(10)).await;
    if *n <= fail {
        Err(Error::Fault(ErrorClass::Transient))
    } else {
        Ok(())
    }
}

#[test]
fn per_call_histograms_of_attempts_retry_delay_and_duration_by_outcome() {
    snapshotter();
    paused().block_on(async {
        // Succeeds at once; then after two failures (backoffs 100 and 200 ms); then fails 3 times.
        for fail in [0, 2, 3] {
            let mut n = 0;
            let _ = histogrammed(fail, &mut n).await;
        }
    });
    let ok = [
        ("function", "histogrammed"),
        ("partition", ""),
        ("outcome", "ok"),
    ];
    let error = [ok[0], ok[1], ("outcome", "error")];
    assert_eq!(samples(meters::CALL_ATTEMPTS, &ok), [1.0, 3.0]);
    assert_eq!(samples(meters::CALL_ATTEMPTS, &error), [3.0]);
    let round = |v: Vec<f64>| v.iter().map(|s| (s * 1000.0).round()).collect::<Vec<_>>();
    assert_eq!(round(samples(meters::CALL_RETRY_DELAY, &ok)), [0.0, 300.0]);
    assert_eq!(round(samples(meters::CALL_RETRY_DELAY, &error)), [300.0]);
    // Each attempt takes 10 ms of the paused clock.
    assert_eq!(round(samples(meters::CALL_DURATION, &ok)), [10.0, 330.0]);
    assert_eq!(round(samples(meters::CALL_DURATION, &error)), [330.0]);
}

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none")]
async fn scraped(fail: u32, n: &mut u32) -> Result<(), Error> {
    *n += 1;
    if *n <= fail {
        Err(Error::Fault(ErrorClass::Transient))
    } else {
        Ok(())
    }
}

/// One scrape of the exporter's HTTP listener on 127.0.0.1: the response's body.
fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let mut last = None;
    // The listener starts on the exporter's runtime: a few tries while it binds.
    for _ in 0..100 {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut stream) => {
                stream
                    .write_all(
                        b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                    )
                    .unwrap();
                let mut response = String::new();
                stream.read_to_string(&mut response).unwrap();
                assert!(response.starts_with("HTTP/1.1 200"), "{response}");
                let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
                return body.unwrap_or_default();
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no exporter on port {port}: {last:?}");
}

/// The `(le, count)` of each bucket of histogram `name` (as Prometheus names it) for
/// `function` and `outcome`, and its `_count`.
fn buckets(text: &str, name: &str, function: &str, outcome: &str) -> (Vec<(f64, u64)>, u64) {
    let ours = |line: &str| {
        line.contains(&format!("function=\"{function}\""))
            && line.contains(&format!("outcome=\"{outcome}\""))
    };
    let mut buckets = Vec::new();
    let mut count = None;
    for line in text.lines().filter(|l| ours(l)) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        if series.starts_with(&format!("{name}_bucket{{")) {
            let le = series
                .split("le=\"")
                .nth(1)
                .unwrap()
                .trim_end_matches("\"}");
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            buckets.push((le, value.parse().unwrap()));
        } else if series.starts_with(&format!("{name}_count{{")) {
            count = Some(value.parse().unwrap());
        }
    }
    (
        buckets,
        count.unwrap_or_else(|| panic!("no {name}_count in\n{text}")),
    )
}

/// The exporter's builder as the README sets it up.
fn with_buckets()
-> Result<metrics_exporter_prometheus::PrometheusBuilder, metrics_exporter_prometheus::BuildError> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    // The `retry.call.*` histograms with buckets (`_bucket` lines): attempts, and seconds.
    let seconds = [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ];
    let builder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("retry.call.attempts".into()),
            &[1.0, 2.0, 3.0, 4.0, 5.0],
        )?
        .set_buckets_for_metric(Matcher::Prefix("retry.call.".into()), &seconds)?;
    Ok(builder)
}

#[test]
fn the_histograms_as_prometheus_scrapes_them_over_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let exporter_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (recorder, exporter) = exporter_runtime.block_on(async {
        with_buckets()
            .unwrap()
            .with_http_listener(([127, 0, 0, 1], port))
            .build()
            .unwrap()
    });
    exporter_runtime.spawn(exporter);
    // This test's function takes its handles from the Prometheus recorder, on its first call.
    metrics::with_local_recorder(&recorder, || {
        paused().block_on(async {
            for fail in [0, 1, 2, 3] {
                let mut n = 0;
                let _ = scraped(fail, &mut n).await;
            }
        })
    });
    let text = scrape(port);
    let (attempts, calls) = buckets(&text, "retry_call_attempts", "scraped", "ok");
    assert_eq!(calls, 3, "three calls succeeded");
    // 1, 2 and 3 attempts: cumulative buckets.
    assert_eq!(
        attempts,
        [
            (1.0, 1),
            (2.0, 2),
            (3.0, 3),
            (4.0, 3),
            (5.0, 3),
            (f64::INFINITY, 3)
        ]
    );
    let (delays, _) = buckets(&text, "retry_call_retry_delay", "scraped", "ok");
    // 0 s, 0.1 s and 0.3 s slept, in the buckets of seconds.
    assert_eq!(
        delays[..8],
        [
            (0.005, 1),
            (0.01, 1),
            (0.025, 1),
            (0.05, 1),
            (0.1, 2),
            (0.25, 2),
            (0.5, 3),
            (1.0, 3)
        ]
    );
    let (failed, calls) = buckets(&text, "retry_call_attempts", "scraped", "error");
    assert_eq!(calls, 1);
    assert_eq!(failed[1..3], [(2.0, 0), (3.0, 1)]);
    let (_, durations) = buckets(&text, "retry_call_duration", "scraped", "error");
    assert_eq!(durations, 1);
}
