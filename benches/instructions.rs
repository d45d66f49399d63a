//! Instruction counts per call, for callgrind: `instructions VARIANT N` runs `N` sequential
//! calls of one variant of `benches/shared` on a current-thread runtime and exits. Counts are
//! stable where wall-clock timings on a shared machine are not; `benches/instructions.sh`
//! runs every variant at two values of `N` and prints the difference per call, so the
//! runtime's start-up cancels out.
//!
//! ```text
//! bash benches/instructions.sh
//! ```
//!
//! Under `cargo bench` (no variant given) it runs every variant briefly, as a smoke test.

mod shared;

use shared::*;
use std::future::Future;
use std::hint::black_box;

/// Every variant, as `group/name`.
const VARIANTS: &[&str] = &[
    "success/plain",
    "success/retry",
    "success/hedged",
    "success/hedged-p95",
    "success/policy",
    "success/tower",
    "success/blocking",
    "success/guard-open",
    "success/guard-timed",
    "success/bulkhead",
    "success/concurrency",
    "success/throttle",
    "success/limit",
    "success/quota",
    "success/backon",
    "success/tokio-retry2",
    "retry/hand-loop",
    "retry/retry",
    "retry/policy",
    "retry/blocking-no-wait",
    "retry/backon",
    "retry/tokio-retry2",
    "spans/instrument",
    "spans/retry",
    "spans/retry-flaky",
];

#[inline(never)]
fn run<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, f: F)
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<u64, Error>>,
{
    rt.block_on(async {
        for i in 0..iters {
            let out = f(i).await;
            assert!(out.is_ok());
            black_box(out.ok());
        }
    });
}

fn run_variant(rt: &tokio::runtime::Runtime, variant: &str, n: u64) {
    match variant {
        "success/plain" => run(rt, n, plain),
        "success/retry" => run(rt, n, ours),
        "success/hedged" => run(rt, n, ours_hedged),
        "success/hedged-p95" => run(rt, n, ours_hedged_p95),
        "success/policy" => run(rt, n, with_policy),
        "success/tower" => run(rt, n, with_tower),
        "success/blocking" => run(rt, n, ours_blocking),
        "success/guard-open" => run(rt, n, ours_guard_open),
        "success/guard-timed" => run(rt, n, ours_guard_timed),
        "success/bulkhead" => run(rt, n, ours_bulkhead),
        "success/concurrency" => run(rt, n, ours_concurrency),
        "success/throttle" => run(rt, n, ours_throttle),
        "success/limit" => run(rt, n, ours_limit),
        "success/quota" => run(rt, n, ours_quota),
        "success/backon" => run(rt, n, with_backon),
        "success/tokio-retry2" => run(rt, n, with_tokio_retry2),
        "retry/hand-loop" => run(rt, n, hand_loop),
        "retry/retry" => run(rt, n, ours_flaky),
        "retry/policy" => run(rt, n, policy_flaky),
        "retry/blocking-no-wait" => run(rt, n, ours_blocking_flaky),
        "retry/backon" => run(rt, n, backon_flaky),
        "retry/tokio-retry2" => run(rt, n, tokio_retry2_flaky),
        // With a subscriber that records every span (tracing-subscriber's registry alone): a
        // `#[tracing::instrument]`ed function's one span against a call's spans.
        "spans/instrument" => run(rt, n, instrumented),
        "spans/retry" => run(rt, n, ours),
        "spans/retry-flaky" => run(rt, n, ours_flaky),
        other => {
            eprintln!("unknown variant {other:?}; one of: {}", VARIANTS.join(", "));
            std::process::exit(2);
        }
    }
}

fn runtime(variant: &str) -> tokio::runtime::Runtime {
    // The retry path sleeps zero through tokio's millisecond timer: on the paused clock (as in
    // `peers.rs`) the timer fires as soon as the runtime is idle instead of at the next tick.
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(variant.starts_with("retry/") || variant.ends_with("-flaky"))
        .build()
        .expect("a runtime")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(variant) if !variant.starts_with('-') => {
            let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
            if variant.starts_with("spans/") {
                tracing::subscriber::set_global_default(tracing_subscriber::registry())
                    .expect("the first subscriber");
            }
            let rt = runtime(variant);
            // One warm-up call: per-function settings resolve on first use.
            run_variant(&rt, variant, 1);
            run_variant(&rt, variant, n);
        }
        _ => {
            for variant in VARIANTS {
                run_variant(&runtime(variant), variant, 1_000);
            }
        }
    }
}
