//! Bytes per in-flight call: the size of the future a call creates (what a spawned task or a
//! join set stores per call), with and without `#[retry]`, and for the peers, on the same body
//! as `benches/shared`. Sizes are exact (`size_of_val`); no heap is used on the success path
//! (`tests/engine_no_alloc.rs`) but by the tower layer, whose call boxes its future: the
//! allocator below records that box's size.
//!
//! ```text
//! cargo bench -p retry-benches --bench memory
//! ```

mod shared;

use retry_runtime::{Policy, retry};
use shared::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system's allocator, recording the largest allocation since [`largest_during`] began.
struct Recording;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the atomic only records the size.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System::alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// The largest allocation `f` makes, and what it returns.
fn largest_during<T>(f: impl FnOnce() -> T) -> (usize, T) {
    LARGEST.store(0, Ordering::Relaxed);
    let out = f();
    (LARGEST.load(Ordering::Relaxed), out)
}

/// The tower layer's boxed future for one call: `AddOne` with `Cloning` (a `u64` request), and
/// a service of `http::Request<String>` with `Http` (the request and its spare copy kept for a
/// replay).
fn tower_boxes() -> (usize, usize) {
    use tower::{Layer, Service};
    let mut service = retry_runtime::tower::RetryLayer::new(Policy::new().max_attempts(3))
        .exchange(retry_runtime::tower::Cloning)
        .layer(AddOne);
    let (u64_box, fut) = largest_during(|| service.call(1));
    drop(fut);

    #[derive(Clone)]
    struct Ok200;
    impl tower::Service<http::Request<String>> for Ok200 {
        type Response = http::Response<String>;
        type Error = Error;
        type Future = std::future::Ready<Result<http::Response<String>, Error>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Error>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: http::Request<String>) -> Self::Future {
            std::future::ready(Ok(http::Response::new(String::new())))
        }
    }
    let mut service =
        retry_runtime::tower::RetryLayer::new(Policy::new().max_attempts(3)).layer(Ok200);
    let request = http::Request::get("http://localhost/items/1")
        .body(String::new())
        .unwrap();
    let (http_box, fut) = largest_during(|| service.call(request));
    drop(fut);
    (u64_box, http_box)
}

#[retry(max_attempts = 3, attempt_timeout = "1s", deadline = "10s")]
async fn ours_timed(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

#[retry(max_attempts = 3, partition = "memory", mode = "adaptive")]
async fn ours_adaptive(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// A body holding a 1 KiB buffer across an await, as real bodies hold their request.
async fn plain_buffer(x: u64) -> Result<u64, Error> {
    let buf = [black_box(x as u8); 1024];
    tokio::task::yield_now().await;
    Ok(u64::from(buf[black_box(7)]))
}

#[retry(max_attempts = 3)]
async fn ours_buffer(x: u64) -> Result<u64, Error> {
    let buf = [black_box(x as u8); 1024];
    tokio::task::yield_now().await;
    Ok(u64::from(buf[black_box(7)]))
}

/// Hedged: two attempts' futures live in the call's, each holding the 1 KiB buffer.
#[retry(max_attempts = 3, hedge_after = "50ms")]
async fn hedged_buffer(x: u64) -> Result<u64, Error> {
    let buf = [black_box(x as u8); 1024];
    tokio::task::yield_now().await;
    Ok(u64::from(buf[black_box(7)]))
}

fn main() {
    let (tower_u64, tower_http) = tower_boxes();
    let rows = [
        ("plain", size_of_val(&plain(1))),
        ("retry", size_of_val(&ours(1))),
        ("retry, timed", size_of_val(&ours_timed(1))),
        ("retry, adaptive", size_of_val(&ours_adaptive(1))),
        ("retry, blocking fn", size_of_val(&ours_blocking(1))),
        ("retry, hedged", size_of_val(&ours_hedged(1))),
        ("retry, hedged p95", size_of_val(&ours_hedged_p95(1))),
        ("Policy closure", size_of_val(&with_policy(1))),
        ("tower RetryLayer call", size_of_val(&with_tower(1))),
        ("tower call's box: u64", tower_u64),
        ("tower call's box: http", tower_http),
        ("backon", size_of_val(&with_backon(1))),
        ("tokio-retry2", size_of_val(&with_tokio_retry2(1))),
        ("retry path: hand loop", size_of_val(&hand_loop(1))),
        ("retry path: retry", size_of_val(&ours_flaky(1))),
        ("retry path: Policy", size_of_val(&policy_flaky(1))),
        (
            "retry path: blocking fn",
            size_of_val(&ours_blocking_flaky(1)),
        ),
        ("retry path: backon", size_of_val(&backon_flaky(1))),
        (
            "retry path: tokio-retry2",
            size_of_val(&tokio_retry2_flaky(1)),
        ),
        ("1 KiB body: plain", size_of_val(&plain_buffer(1))),
        ("1 KiB body: retry", size_of_val(&ours_buffer(1))),
        ("1 KiB body: retry, hedged", size_of_val(&hedged_buffer(1))),
        ("tokio::time::Sleep", size_of::<tokio::time::Sleep>()),
    ];
    println!("{:<28} {:>6}", "future", "bytes");
    for (name, bytes) in rows {
        println!("{name:<28} {bytes:>6}");
    }
}
