//! The `metrics` feature's own test and example live in `retry-runtime` and need the feature,
//! which the workspace's other tests and benchmarks build without (so that their figures are
//! those of the default build). This test runs both in a build of their own
//! (`target/metrics`), so `cargo test` covers them:
//!
//! ```text
//! CARGO_TARGET_DIR=target/metrics cargo test -p retry-runtime --features metrics --test metrics
//! CARGO_TARGET_DIR=target/metrics cargo run -p retry-runtime --features metrics --example metrics
//! ```

use std::path::Path;
use std::process::{Command, Output};

fn cargo(args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO"))
        .args(args)
        .args(["-p", "retry-runtime", "--features", "metrics"])
        .env("CARGO_TARGET_DIR", root.join("target").join("metrics"))
        .current_dir(root)
        .output()
        .expect("cargo runs")
}

#[test]
fn the_metrics_feature_passes_its_tests_and_its_example_prints_every_metric() {
    let out = cargo(&["test", "--test", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("test result: ok. 6 passed"), "{stdout}");

    let out = cargo(&["run", "--example", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let labels = "{function=\"reserve\", partition=\"inventory\"}";
    for line in [
        format!("retry.attempts {labels} 3"),
        format!("retry.calls.recovered {labels} 1"),
        format!("retry.bucket.tokens {labels} 490"),
        "retry.call.attempts {function=\"reserve\", partition=\"inventory\", outcome=\"ok\"} 1 samples"
            .to_owned(),
    ] {
        assert!(stdout.contains(&line), "no `{line}` in:\n{stdout}");
    }
}
