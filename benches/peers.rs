//! `#[retry]` side by side with the retry crates users would otherwise reach for, on equal
//! work: the same body, the same current-thread tokio runtime, the same number of attempts
//! (3), and, on the retry path, the same zero delay slept through tokio's timer.
//!
//! - `success`: the first attempt succeeds. Floor: the plain async fn.
//! - `retry`: the first attempt fails with a transient error, its retry succeeds after a zero
//!   delay. Floor: a hand-written loop (call, classify, `sleep(0)`, call again). Every side
//!   sleeps its zero delay through `tokio::time::sleep`, whose timer has millisecond ticks: on
//!   the real clock a zero sleep waits for the next tick (about 1 ms, the same for everyone,
//!   hiding the cost being measured), so this group runs on tokio's paused clock, where the
//!   runtime fires the timer as soon as it is idle and the timer's work is still done.
//!
//! Every sample runs its calls inside one `block_on`, so the runtime's entry cost does not
//! dilute the ratios.
//!
//! ```text
//! cargo bench -p retry-benches --bench peers
//! ```

mod shared;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shared::*;
use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Times `iters` sequential calls inside one `block_on`.
fn run<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, f: F) -> Duration
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<u64, Error>>,
{
    rt.block_on(async {
        let start = Instant::now();
        for i in 0..iters {
            let out = f(i).await;
            assert!(out.is_ok());
            black_box(out.ok());
        }
        start.elapsed()
    })
}

fn peers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");

    let mut g = c.benchmark_group("peers_success");
    g.bench_function(BenchmarkId::from_parameter("plain"), |b| {
        b.iter_custom(|n| run(&rt, n, plain));
    });
    g.bench_function(BenchmarkId::from_parameter("retry"), |b| {
        b.iter_custom(|n| run(&rt, n, ours));
    });
    g.bench_function(BenchmarkId::from_parameter("policy"), |b| {
        b.iter_custom(|n| run(&rt, n, with_policy));
    });
    g.bench_function(BenchmarkId::from_parameter("tower"), |b| {
        b.iter_custom(|n| run(&rt, n, with_tower));
    });
    g.bench_function(BenchmarkId::from_parameter("blocking"), |b| {
        b.iter_custom(|n| run(&rt, n, ours_blocking));
    });
    g.bench_function(BenchmarkId::from_parameter("backon"), |b| {
        b.iter_custom(|n| run(&rt, n, with_backon));
    });
    g.bench_function(BenchmarkId::from_parameter("tokio-retry2"), |b| {
        b.iter_custom(|n| run(&rt, n, with_tokio_retry2));
    });
    g.finish();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let mut g = c.benchmark_group("peers_retry");
    g.bench_function(BenchmarkId::from_parameter("hand-loop"), |b| {
        b.iter_custom(|n| run(&rt, n, hand_loop));
    });
    g.bench_function(BenchmarkId::from_parameter("retry"), |b| {
        b.iter_custom(|n| run(&rt, n, ours_flaky));
    });
    g.bench_function(BenchmarkId::from_parameter("policy"), |b| {
        b.iter_custom(|n| run(&rt, n, policy_flaky));
    });
    g.bench_function(BenchmarkId::from_parameter("blocking-no-wait"), |b| {
        b.iter_custom(|n| run(&rt, n, ours_blocking_flaky));
    });
    g.bench_function(BenchmarkId::from_parameter("backon"), |b| {
        b.iter_custom(|n| run(&rt, n, backon_flaky));
    });
    g.bench_function(BenchmarkId::from_parameter("tokio-retry2"), |b| {
        b.iter_custom(|n| run(&rt, n, tokio_retry2_flaky));
    });
    g.finish();
}

criterion_group!(benches, peers);
criterion_main!(benches);
