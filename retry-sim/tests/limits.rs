//! The self-sizing limit in the simulator, at the tests' sizes (SIMULATION.md, "Self-sizing
//! limits"): `AdaptiveConcurrency` fails no more calls than the bucket in normal operation at
//! every client size (the seed whose clients of 100 calls a second it once held at one
//! attempt included), and keeps an overloaded queueing server doing useful work where the
//! bucket alone lets every answer come too late.

use retry_sim::scenario::{guards, normal, overload, sizes};
use retry_sim::sim::{Policy, Strategy};

#[test]
fn normal_operation_the_limit_fails_no_more_calls_than_the_bucket_at_any_client_size() {
    let base = guards::Config::full();
    for (size, seed) in [(5.0, 1), (100.0, 1), (100.0, 8), (1000.0, 1)] {
        let config = sizes::config(&base, size);
        let c = normal::Config {
            seed,
            ..config.normal.clone()
        };
        let limit = normal::run_policy(&c, sizes::PRESET, 0.05);
        let bucket = normal::run_policy(&c, Policy::of(Strategy::Standard), 0.05);
        assert!(
            limit.failed_fraction <= bucket.failed_fraction + 0.0001,
            "clients of {size} calls/s, seed {seed}: {:.4}% failed against the bucket's {:.4}%",
            100.0 * limit.failed_fraction,
            100.0 * bucket.failed_fraction
        );
    }
}

#[test]
fn overload_the_limit_keeps_the_server_doing_useful_work() {
    let config = overload::Config::quick();
    let (factor, size) = (config.factors[0], config.sizes[0]);
    let limit = overload::run_policy(&config, sizes::PRESET, factor, size);
    let bucket = overload::run_policy(&config, Policy::of(Strategy::Standard), factor, size);
    assert!(
        bucket.goodput < 0.05,
        "the bucket alone: {:.1}% of capacity",
        100.0 * bucket.goodput
    );
    assert!(
        limit.goodput > 0.9,
        "the limit: {:.1}% of capacity",
        100.0 * limit.goodput
    );
}
