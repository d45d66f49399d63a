//! Bytes per in-flight call: the size of the future a call creates (what a spawned task or a
//! join set stores per call), with and without `#[retry]`, and for the peers, on the same body
//! as `benches/shared`. Sizes are exact (`size_of_val`); no heap is used on the success path
//! (`tests/engine_no_alloc.rs`).
//!
//! ```text
//! cargo bench -p retry-benches --bench memory
//! ```

mod shared;

use retry_runtime::retry;
use shared::*;
use std::hint::black_box;

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
