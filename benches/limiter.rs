//! The adaptive rate limiter: what one send-token acquire costs, and the bookkeeping every
//! adaptive attempt does (acquire before, `record` after). Its methods are crate-private,
//! reached through the runtime's hidden `__private::shared`.
//!
//! - `disabled`: before the first throttling response (the AWS limiter is off until then):
//!   a look for a send token is one atomic load; `record` measures the send rate under the
//!   limiter's mutex.
//! - `disabled, 2 threads`: the same bookkeeping from two threads on one limiter.
//! - `enabled`: after a throttle, on tokio's paused clock (waits cost their CPU work, not
//!   their time: the runtime fires the timer as soon as it is idle), acquire and record.
//!
//! ```text
//! cargo bench -p retry-benches --bench limiter
//! ```

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_runtime::__private::shared;
use retry_runtime::RateLimiter;
use std::time::{Duration, Instant};

fn runtime(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(paused)
        .build()
        .expect("a runtime")
}

fn attempts(rt: &tokio::runtime::Runtime, l: &RateLimiter, iters: u64, record: bool) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            // The engine's step 1: look, sleep in the caller's future, look again.
            let mut lost = false;
            while let Some(wait) = shared::try_send(l, 1, None, lost).expect("no deadline") {
                tokio::time::sleep(wait).await;
                lost = true;
            }
            if record {
                shared::record(l, false);
            }
        }
        start.elapsed()
    })
}

fn limiter(c: &mut Criterion) {
    let rt = runtime(false);
    let mut g = c.benchmark_group("limiter");
    let off = RateLimiter::adaptive();
    g.bench_function(BenchmarkId::new("acquire", "disabled"), |b| {
        b.iter_custom(|n| attempts(&rt, &off, n, false));
    });
    g.bench_function(BenchmarkId::new("acquire+record", "disabled"), |b| {
        b.iter_custom(|n| attempts(&rt, &off, n, true));
    });
    g.bench_function(
        BenchmarkId::new("acquire+record", "disabled, 2 threads"),
        |b| {
            b.iter_custom(|n| {
                std::thread::scope(|s| {
                    let hs: Vec<_> = (0..2)
                        .map(|_| s.spawn(|| attempts(&runtime(false), &off, n / 2, true)))
                        .collect();
                    hs.into_iter().map(|h| h.join().unwrap()).max().unwrap()
                })
            });
        },
    );
    assert!(!off.is_enabled());

    let paused = runtime(true);
    let on = RateLimiter::adaptive();
    paused.block_on(async {
        for _ in 0..50 {
            shared::record(&on, false);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shared::record(&on, true);
    });
    assert!(on.is_enabled());
    g.bench_function(
        BenchmarkId::new("acquire+record", "enabled, paused clock"),
        |b| {
            b.iter_custom(|n| attempts(&paused, &on, n, true));
        },
    );
    g.finish();
}

criterion_group!(benches, limiter);
criterion_main!(benches);
