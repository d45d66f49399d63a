//! The crate's guards' shared state under contention: one admitted attempt and its settlement
//! (`admit` then `settle`, as the engine calls them for each attempt) per iteration, on one
//! thread and split over two threads in tight loops (the most contention there can be), for
//! `Bulkhead`, `ConcurrencyBudget` (a retry: the kind it counts), `AdaptiveThrottle` (a
//! retry, settled as a success: one window update, two when accepted) and `Quota` (a billion a
//! second: every attempt finds its turn). A user's guard that keeps nothing (`open`) is the
//! floor.
//!
//! ```text
//! cargo bench -p retry-benches --bench guards
//! ```

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_runtime::{
    AdaptiveThrottle, Admit, AttemptKind, Bulkhead, ConcurrencyBudget, Guard, GuardContext,
    GuardOutcome, Quota,
};
use std::time::{Duration, Instant};

struct Open;

impl Guard for Open {
    fn admit(&self, _: &GuardContext<'_>) -> Admit {
        Admit::Go
    }
    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
}

/// One attempt through `guard`: admitted, then settled as a success.
fn once(guard: &dyn Guard, cx: &GuardContext<'_>) {
    assert_eq!(guard.admit(cx), Admit::Go);
    guard.settle(cx, GuardOutcome::Success);
}

/// `iters` attempts on `threads` threads (split between them).
fn run(guard: &(dyn Guard + Sync), kind: AttemptKind, threads: u64, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let cx = GuardContext::new(kind, 2);
                for _ in 0..iters / threads {
                    once(guard, &cx);
                }
            });
        }
    });
    start.elapsed()
}

fn contention(c: &mut Criterion) {
    static OPEN: Open = Open;
    static BULKHEAD: Bulkhead = Bulkhead::new(64);
    static BUDGET: ConcurrencyBudget = ConcurrencyBudget::ratio(0.2);
    static THROTTLE: AdaptiveThrottle = AdaptiveThrottle::new(2.0);
    static QUOTA: Quota = Quota::per_second(1_000_000_000);
    let guards: [(&str, &(dyn Guard + Sync), AttemptKind); 5] = [
        ("open", &OPEN, AttemptKind::First),
        ("bulkhead", &BULKHEAD, AttemptKind::First),
        ("concurrency_budget", &BUDGET, AttemptKind::Retry),
        ("adaptive_throttle", &THROTTLE, AttemptKind::Retry),
        ("quota", &QUOTA, AttemptKind::First),
    ];
    for threads in [1, 2] {
        let mut g = c.benchmark_group(format!(
            "guards_{threads}_thread{}",
            if threads > 1 { "s" } else { "" }
        ));
        for (name, guard, kind) in guards {
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|n| run(guard, kind, threads, n));
            });
        }
        g.finish();
    }
    assert_eq!(BULKHEAD.in_flight(), 0);
    assert_eq!(BUDGET.in_flight(), 0);
}

criterion_group!(benches, contention);
criterion_main!(benches);
