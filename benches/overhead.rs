//! The cost of `#[retry]` on the success path: the same async fn with and without the
//! attribute, side by side, for three bodies (a trivial one, one scheduler yield, and a 1 KiB
//! checksum). Every sample runs its calls inside one `block_on`, so the runtime's entry cost
//! does not dilute the ratio.
//!
//! ```text
//! cargo bench -p retry-benches --bench overhead
//! ```

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_runtime::{Classify, ErrorClass, TimedOut, retry};
use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error
    }
}

async fn plain_trivial(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

#[retry]
async fn retry_trivial(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

async fn plain_yield(x: u64) -> Result<u64, Error> {
    tokio::task::yield_now().await;
    Ok(black_box(x).wrapping_add(1))
}

#[retry]
async fn retry_yield(x: u64) -> Result<u64, Error> {
    tokio::task::yield_now().await;
    Ok(black_box(x).wrapping_add(1))
}

fn checksum(buf: &[u8]) -> u64 {
    buf.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

async fn plain_checksum(buf: &[u8]) -> Result<u64, Error> {
    Ok(checksum(black_box(buf)))
}

#[retry]
async fn retry_checksum(buf: &[u8]) -> Result<u64, Error> {
    Ok(checksum(black_box(buf)))
}

#[retry(attempt_timeout = "1s", deadline = "10s")]
async fn retry_checksum_timed(buf: &[u8]) -> Result<u64, Error> {
    Ok(checksum(black_box(buf)))
}

async fn plain_checksum_timed(buf: &[u8]) -> Result<u64, Error> {
    tokio::time::timeout(Duration::from_secs(1), plain_checksum(buf))
        .await
        .map_err(|_| Error)?
}

/// Times `iters` sequential calls inside one `block_on`.
fn run<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, f: F) -> Duration
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<u64, Error>>,
{
    rt.block_on(async {
        let start = Instant::now();
        for i in 0..iters {
            let _ = black_box(f(i).await);
        }
        start.elapsed()
    })
}

fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let buf = vec![7u8; 1024];

    let mut g = c.benchmark_group("success_path");
    g.bench_function(BenchmarkId::new("trivial", "plain"), |b| {
        b.iter_custom(|n| run(&rt, n, plain_trivial));
    });
    g.bench_function(BenchmarkId::new("trivial", "retry"), |b| {
        b.iter_custom(|n| run(&rt, n, retry_trivial));
    });
    g.bench_function(BenchmarkId::new("yield", "plain"), |b| {
        b.iter_custom(|n| run(&rt, n, plain_yield));
    });
    g.bench_function(BenchmarkId::new("yield", "retry"), |b| {
        b.iter_custom(|n| run(&rt, n, retry_yield));
    });
    g.bench_function(BenchmarkId::new("checksum_1k", "plain"), |b| {
        b.iter_custom(|n| run(&rt, n, |_| plain_checksum(&buf)));
    });
    g.bench_function(BenchmarkId::new("checksum_1k", "retry"), |b| {
        b.iter_custom(|n| run(&rt, n, |_| retry_checksum(&buf)));
    });
    g.bench_function(BenchmarkId::new("checksum_1k_timed", "plain"), |b| {
        b.iter_custom(|n| run(&rt, n, |_| plain_checksum_timed(&buf)));
    });
    g.bench_function(BenchmarkId::new("checksum_1k_timed", "retry"), |b| {
        b.iter_custom(|n| run(&rt, n, |_| retry_checksum_timed(&buf)));
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
