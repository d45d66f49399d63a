//! The loom models of the retry bucket, the rate limiter, the budget's counters and the circuit
//! breaker (each in its module's `loom` tests under `retry-runtime/src/protect/`) need the
//! whole runtime built against loom's primitives, which is a build of its own (`--cfg
//! retry_loom`, in `target/loom`: flags other than the test build's, so a directory other than
//! its). This test runs that build, so `cargo test` runs the models too, and checks that every
//! model ran and passed:
//!
//! ```text
//! RUSTFLAGS="--cfg retry_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p retry-runtime --lib --release loom -- --nocapture
//! ```

use crate::{cargo_in, root};

/// The models, by the name of their test function.
const MODELS: &[&str] = &[
    "protect::breaker::loom::loom_racing_failures_open_it_once",
    "protect::breaker::loom::loom_a_half_open_breaker_lets_out_at_most_its_probes",
    "protect::breaker::loom::loom_a_failed_probe_wins_over_a_racing_success",
    "protect::window::loom::loom_a_late_add_never_turns_a_slot_back",
    "protect::bucket::loom::loom_concurrent_takes_and_refunds_conserve_tokens",
    "protect::bucket::loom::loom_two_takes_on_a_short_bucket_never_overdraw",
    "protect::bucket::loom::loom_rewards_racing_a_refund_clip_at_capacity",
    "protect::bucket::loom::loom_a_take_racing_a_refill_sees_its_tokens",
    "protect::limiter::loom::loom_two_senders_never_take_the_same_token",
    "protect::limiter::loom::loom_a_throttle_racing_a_send_leaves_the_limiter_enabled_at_the_throttled_rate",
    "protect::limiter::loom::loom_concurrent_updates_and_a_send_are_each_atomic",
    "protect::throttle::loom::loom_racing_outcomes_are_each_counted_once",
    "protect::concurrency::loom::loom_two_retries_racing_for_the_last_place_take_it_once",
    "protect::concurrency::loom::loom_admissions_and_settles_racing_leave_no_place_behind",
    "protect::bulkhead::loom::loom_two_attempts_racing_for_the_last_place_take_it_once",
    "protect::bulkhead::loom::loom_admissions_and_settles_racing_leave_it_empty",
    "protect::bulkhead::line_loom::loom_a_waiter_is_woken_by_a_release",
    "protect::bulkhead::line_loom::loom_a_cancelled_waiter_leaves_no_place_behind",
    "protect::adaptive::loom::loom_concurrent_settles_keep_the_count_and_the_bounds",
    "protect::adaptive::loom::loom_two_admissions_racing_for_the_last_place_take_it_once",
    "protect::quota::loom::loom_two_attempts_racing_for_the_last_turn_take_it_once",
];

#[test]
fn every_loom_model_passes() {
    let target = root().join("target").join("loom");
    let out = cargo_in(
        root(),
        &[
            "test",
            "-p",
            "retry-runtime",
            "--lib",
            "--release",
            "loom",
            "--",
            "--nocapture",
            "--test-threads=1",
        ],
        &[
            ("RUSTFLAGS", "--cfg retry_loom".as_ref()),
            ("CARGO_TARGET_DIR", target.as_os_str()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the loom models failed:\n{stdout}\n{stderr}"
    );
    for model in MODELS {
        let line = format!("{model} ... ok");
        assert!(stdout.contains(&line), "{model} did not pass:\n{stdout}");
    }
    assert!(
        stdout.contains(&format!("{} passed", MODELS.len())),
        "a model was added or lost: update MODELS\n{stdout}"
    );
    // How much each model explored, for the test log.
    for line in stderr.lines().filter(|l| l.contains("interleavings")) {
        eprintln!("{line}");
    }
}
