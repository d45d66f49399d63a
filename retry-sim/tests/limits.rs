//! The self-sizing limit in the simulator, at the tests' sizes (SIMULATION.md, "Self-sizing
//! limits"): `AdaptiveConcurrency` fails no more calls than the bucket in normal operation at
//! every client size (the seed whose clients of 100 calls a second it once held at one
//! attempt included), keeps an overloaded queueing server doing useful work where the bucket
//! alone lets every answer come too late, gives small clients their attempts back once the
//! metastable trigger ends, and sheds throttled attempts.

use retry_sim::scenario::{guards, metastable, normal, overload, sizes, throttling};
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

#[test]
fn overload_after_normal_operation_the_limit_keeps_the_queue_short() {
    // The same overload after 30 s at half of C: the limit's baseline is the unloaded latency,
    // so it holds the queue near it (the quick run's 20 s of overload: 96.5 % of C, the p99
    // about twice the unloaded one; the full run's figures are in SIMULATION.md).
    let config = overload::Config::after_normal_quick();
    let (factor, size) = (config.factors[0], config.sizes[0]);
    let unloaded = overload::unloaded_p99(&config, size);
    let limit = overload::run_policy(&config, sizes::PRESET, factor, size);
    let from_start = overload::run_policy(&overload::Config::quick(), sizes::PRESET, factor, size);
    assert!(
        limit.goodput > 0.9,
        "{:.1}% of capacity",
        100.0 * limit.goodput
    );
    assert!(
        limit.p99 < 2.5 * unloaded && limit.p99 < from_start.p99,
        "p99 {:.1} ms against the unloaded {:.1} ms, and {:.1} ms from the start",
        1000.0 * limit.p99,
        1000.0 * unloaded,
        1000.0 * from_start.p99
    );
    let bucket = overload::run_policy(&config, Policy::of(Strategy::Standard), factor, size);
    assert!(bucket.goodput < 0.05, "{:.1}%", 100.0 * bucket.goodput);
}

#[test]
fn small_clients_recover_from_the_metastable_trigger_and_shed_throttles() {
    // Clients of 5 calls a second: the trigger cuts their limits below one attempt, and the
    // first sample that passed no queue gives each its attempt back.
    let config = sizes::config(&guards::Config::quick(), 5.0);
    let limit = metastable::run_policy(&config.metastable, sizes::PRESET);
    let bucket = metastable::run_policy(&config.metastable, Policy::of(Strategy::Standard));
    let recovered = limit.recovered_after.expect("recovered");
    assert!(
        recovered <= 5.0,
        "recovered {recovered} s after the trigger"
    );
    assert!(
        bucket.recovered_after.is_none_or(|b| b > recovered),
        "the bucket alone: {:?}",
        bucket.recovered_after
    );
    // Under throttling, each throttle cuts the limit: fewer attempts per success than the
    // bucket alone sends.
    let config = sizes::config(&guards::Config::quick(), 1000.0);
    let limit = throttling::run_policy(&config.throttling, sizes::PRESET);
    let bucket = throttling::run_policy(&config.throttling, Policy::of(Strategy::Standard));
    assert!(
        limit.load / limit.goodput < 0.6 * (bucket.load / bucket.goodput),
        "{} against the bucket's {}",
        limit.load / limit.goodput,
        bucket.load / bucket.goodput
    );
}
