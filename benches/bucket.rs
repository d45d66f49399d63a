//! The retry token bucket under contention: take a retry's cost (5 of 500) and refund it, from
//! two threads at once, ours against what aws-smithy-runtime's `TokenBucket` does.
//!
//! aws-smithy-runtime's `TokenBucket::acquire` (and the rest of what its retry strategy calls:
//! `reward_success`, `regenerate_a_token`) is `pub(crate)`; its public API is `new`, `builder`,
//! `unlimited`, `is_full` and `is_empty`. So the peer measured here is the code path its
//! `acquire` runs with the default (legacy) settings: `refill_rate` 0 skips the time refill,
//! the fractional-token conversion is one relaxed load and store of an `f32`, and the take is
//! `Arc<tokio::sync::Semaphore>::try_acquire_many_owned(cost)`; the refund is dropping the
//! `OwnedSemaphorePermit`. The `aws-semaphore` rows run exactly that semaphore call and permit
//! drop (with the same `tokio::sync::Semaphore`), without the `f32` bookkeeping, so they slightly
//! favour the peer.
//!
//! Ours is the engine's own take and refund (crate-private, reached through the runtime's
//! hidden `__private::shared`). `retry` reads the clock before each take, as the engine does;
//! `retry-no-clock` does not (a bucket without refill never needs the time).
//!
//! - `threads`: two OS threads in tight take/refund loops (the most contention there can be).
//! - `tasks`: a two-worker tokio runtime, 64 tasks each taking, yielding to the scheduler while
//!   holding the tokens (as a retry holds its cost across an attempt), and refunding.
//!
//! ```text
//! cargo bench -p retry-benches --bench bucket
//! ```

#![allow(dead_code)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use retry_runtime::__private::shared::{refund, take};
use retry_runtime::TokenBucket;

const COST: u32 = 5;

trait Quota: Send + Sync + 'static {
    /// Takes a retry's cost and gives it back; `false` if the take was refused.
    fn take_and_refund(&self) -> bool;
    /// Takes a retry's cost, yields while holding it, gives it back.
    fn take_yield_refund(&self) -> impl std::future::Future<Output = bool> + Send;
}

struct Ours {
    bucket: TokenBucket,
    clock: bool,
}

impl Quota for Ours {
    #[inline]
    fn take_and_refund(&self) -> bool {
        let now = if self.clock {
            tokio::time::Instant::now()
        } else {
            epoch()
        };
        if take(&self.bucket, COST, now) {
            refund(&self.bucket, COST);
            true
        } else {
            false
        }
    }

    async fn take_yield_refund(&self) -> bool {
        let now = if self.clock {
            tokio::time::Instant::now()
        } else {
            epoch()
        };
        if take(&self.bucket, COST, now) {
            tokio::task::yield_now().await;
            refund(&self.bucket, COST);
            true
        } else {
            false
        }
    }
}

fn epoch() -> tokio::time::Instant {
    static EPOCH: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(tokio::time::Instant::now)
}

struct AwsSemaphore(Arc<Semaphore>);

impl Quota for AwsSemaphore {
    #[inline]
    fn take_and_refund(&self) -> bool {
        match self.0.clone().try_acquire_many_owned(COST) {
            Ok(permit) => {
                drop(black_box(permit));
                true
            }
            Err(_) => false,
        }
    }

    async fn take_yield_refund(&self) -> bool {
        match self.0.clone().try_acquire_many_owned(COST) {
            Ok(permit) => {
                tokio::task::yield_now().await;
                drop(permit);
                true
            }
            Err(_) => false,
        }
    }
}

/// `iters` take/refund pairs, split over two threads.
fn threads<Q: Quota>(q: &Arc<Q>, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..iters / 2 {
                    assert!(q.take_and_refund());
                }
            });
        }
    });
    start.elapsed()
}

const TASKS: u64 = 64;

/// `iters` take/yield/refund rounds, split over 64 tasks on two workers.
fn tasks<Q: Quota>(rt: &tokio::runtime::Runtime, q: &Arc<Q>, iters: u64) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        let handles: Vec<_> = (0..TASKS)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    for _ in 0..iters.div_ceil(TASKS) {
                        assert!(q.take_yield_refund().await);
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        start.elapsed()
    })
}

fn contention(c: &mut Criterion) {
    let ours = Arc::new(Ours {
        bucket: TokenBucket::standard(),
        clock: true,
    });
    let ours_no_clock = Arc::new(Ours {
        bucket: TokenBucket::standard(),
        clock: false,
    });
    let aws = Arc::new(AwsSemaphore(Arc::new(Semaphore::new(500))));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");

    let mut g = c.benchmark_group("bucket_threads");
    g.bench_function(BenchmarkId::from_parameter("retry"), |b| {
        b.iter_custom(|n| threads(&ours, n));
    });
    g.bench_function(BenchmarkId::from_parameter("retry-no-clock"), |b| {
        b.iter_custom(|n| threads(&ours_no_clock, n));
    });
    g.bench_function(BenchmarkId::from_parameter("aws-semaphore"), |b| {
        b.iter_custom(|n| threads(&aws, n));
    });
    g.finish();

    let mut g = c.benchmark_group("bucket_tasks");
    g.bench_function(BenchmarkId::from_parameter("retry"), |b| {
        b.iter_custom(|n| tasks(&rt, &ours, n));
    });
    g.bench_function(BenchmarkId::from_parameter("retry-no-clock"), |b| {
        b.iter_custom(|n| tasks(&rt, &ours_no_clock, n));
    });
    g.bench_function(BenchmarkId::from_parameter("aws-semaphore"), |b| {
        b.iter_custom(|n| tasks(&rt, &aws, n));
    });
    g.finish();
    assert_eq!(ours.bucket.available(), 500);
    assert_eq!(aws.0.available_permits(), 500);
}

criterion_group!(benches, contention);
criterion_main!(benches);
