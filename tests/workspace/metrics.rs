//! The `metrics` feature's own test and example live in `retry-runtime` and need the feature,
//! which the workspace's other tests and benchmarks build without (so that their figures are
//! those of the default build). This test runs both in a build with the feature, so `cargo
//! test` covers them:
//!
//! ```text
//! cargo test -p retry-runtime --features metrics --test metrics
//! cargo run -p retry-runtime --features metrics --example metrics
//! cargo run -p retry-runtime --features tracing,metrics,reqwest --example observability
//! ```

use crate::{cargo, text};
use std::process::Output;

fn with_metrics(args: &[&str]) -> Output {
    cargo(&[args, &["-p", "retry-runtime", "--features", "metrics"]].concat())
}

#[test]
fn the_metrics_feature_passes_its_tests_and_its_example_prints_every_metric() {
    let out = with_metrics(&["test", "--test", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout.contains("test result: ok. 6 passed"), "{stdout}");

    let out = with_metrics(&["run", "--example", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
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

#[test]
fn the_observability_example_prints_the_span_tree_and_the_histograms() {
    let out = cargo(&[
        "run",
        "-p",
        "retry-runtime",
        "--features",
        "tracing,metrics,reqwest",
        "--example",
        "observability",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    for line in [
        "got \"item 42\"",
        "retry.attempts=3",
        "attempt failed, retrying attempt=1 class=transient",
        "retry.attempt=1 http.response.status_code=503 error.type=transient",
        "retry.attempt=3 http.request.resend_count=2 http.response.status_code=200",
        r#"retry_call_attempts_bucket{function="get_item",partition="catalog",outcome="ok",le="3"} 1"#,
        r#"retry_call_attempts_count{function="get_item",partition="catalog",outcome="ok"} 1"#,
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
}
