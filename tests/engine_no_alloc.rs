//! The success path allocates nothing: a counting global allocator watches a warmed-up
//! `#[retry]` function called many times, with and without timers, with a partition, with
//! guards, with a body that reads its attempt context, and under a caller's deadline.

mod util;

use retry_runtime::{retry, with_deadline};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;
use util::TestError;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// Counts allocations made by the measuring thread while counting is on.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|a| a.set(a.get() + 1));
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|a| a.set(a.get() + 1));
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made on this thread by `f`.
async fn allocations<F: std::future::Future>(f: impl Fn() -> F) -> u64 {
    f().await; // warm up: per-function settings and named partitions resolve on first use
    ALLOCATIONS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    for _ in 0..10_000 {
        black_box(f().await);
    }
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

#[retry]
async fn defaults(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

#[retry(max_attempts = 5, attempt_timeout = "1s", deadline = "10s")]
async fn timed(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

#[retry(partition = "no-alloc", jitter = "equal")]
async fn partitioned(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

#[retry(mode = "adaptive")]
async fn adaptive(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

/// A budget and a breaker shared by a partition: the window counters, lock-free.
#[retry(partition = "no-alloc-protected", budget = "20%", breaker = "50%")]
async fn protected(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

/// A guard of the user's own: admitted and settled on every call.
struct Count(std::sync::atomic::AtomicU64);

impl retry_runtime::Guard for Count {
    fn admit(&self, _: &retry_runtime::GuardContext<'_>) -> retry_runtime::Admit {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        retry_runtime::Admit::Go
    }
    fn settle(&self, _: &retry_runtime::GuardContext<'_>, _: retry_runtime::GuardOutcome) {}
}

static COUNT: Count = Count(std::sync::atomic::AtomicU64::new(0));
static PLACES: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(4);
static THROTTLE: retry_runtime::AdaptiveThrottle = retry_runtime::AdaptiveThrottle::new(2.0);

/// A user's guard and the crate's bulkhead and throttle.
#[retry(guard = [COUNT, PLACES, THROTTLE])]
async fn guarded(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

/// Reads the whole attempt context (its invocation id included) in the body.
#[retry(attempt_timeout = "1s", deadline = "10s")]
async fn asks(x: u64) -> Result<u64, TestError> {
    let a = retry_runtime::attempt().expect("inside the body");
    black_box((a.number(), a.time_left(), a.invocation_id(), a.depth()));
    Ok(black_box(x) + 1)
}

/// Hedged, answering on the first poll: no timer is even registered.
#[retry(hedge_after = "50ms")]
async fn hedged(x: u64) -> Result<u64, TestError> {
    Ok(black_box(x) + 1)
}

/// Hedged by a percentile, answering after a yield: the hedge timer is registered, then
/// dropped with the call.
#[retry(hedge_after = "p95", deadline = "10s")]
async fn hedged_yields(x: u64) -> Result<u64, TestError> {
    tokio::task::yield_now().await;
    Ok(black_box(x) + 1)
}

/// Hedged, and the hedge runs: the attempt and its hedge both live in the call's future.
#[retry(hedge_after = "1ms", bucket = "none")]
async fn hedge_runs(x: u64) -> Result<u64, TestError> {
    if retry_runtime::attempt().is_some_and(|a| a.number() == 1) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    Ok(black_box(x) + 1)
}

#[test]
fn the_success_path_allocates_nothing() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(allocations(|| defaults(1)).await, 0, "default attribute");
        assert_eq!(
            allocations(|| timed(1)).await,
            0,
            "attempt timeout and deadline"
        );
        assert_eq!(allocations(|| partitioned(1)).await, 0, "named partition");
        assert_eq!(allocations(|| adaptive(1)).await, 0, "adaptive mode");
        assert_eq!(
            allocations(|| protected(1)).await,
            0,
            "a budget and a breaker"
        );
        assert_eq!(
            allocations(|| asks(1)).await,
            0,
            "a body reading its attempt"
        );
        assert_eq!(allocations(|| guarded(1)).await, 0, "guards");
        assert_eq!(allocations(|| hedged(1)).await, 0, "hedged, fast answer");
        assert_eq!(
            allocations(|| hedged_yields(1)).await,
            0,
            "hedged by a percentile, answering after a yield"
        );
        // Under a caller's deadline, whose own timer is registered at the yield.
        let under_deadline = || {
            with_deadline(Duration::from_secs(5), async {
                tokio::task::yield_now().await;
                (defaults(1).await, asks(1).await)
            })
        };
        assert_eq!(
            allocations(under_deadline).await,
            0,
            "calls with and without timers under a caller's deadline"
        );
    });
}

#[test]
fn a_hedge_with_the_default_max_in_flight_allocates_nothing() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(
            allocations(|| hedge_runs(1)).await,
            0,
            "an attempt and its hedge in flight"
        );
    });
}

#[test]
fn the_counter_sees_allocations() {
    // The instrument itself works: a boxed value is counted.
    COUNTING.with(|c| c.set(true));
    ALLOCATIONS.with(|a| a.set(0));
    black_box(Box::new(7u64));
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCATIONS.with(Cell::get), 1);
}
