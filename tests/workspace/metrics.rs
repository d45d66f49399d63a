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
//!
//! The README's "Operating it" shows that example's code and output: its code is checked to be
//! the example's (and its Prometheus builder `tests/metrics.rs`'s), line for line, and the
//! versions it names those of the workspace's `Cargo.lock`.

use crate::{cargo, root, text};
use std::process::Output;

fn with_metrics(args: &[&str]) -> Output {
    cargo(&[args, &["-p", "retry-runtime", "--features", "metrics"]].concat())
}

#[test]
fn the_metrics_feature_passes_its_tests_and_its_example_prints_every_metric() {
    let out = with_metrics(&["test", "--test", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout.contains("test result: ok. 8 passed"), "{stdout}");

    let out = with_metrics(&["run", "--example", "metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let labels = "{function=\"reserve\", partition=\"inventory\"}";
    for line in [
        format!("retry.attempts {labels} 3"),
        format!("retry.calls.recovered {labels} 1"),
        format!("retry.bucket.tokens {labels} 495"),
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
        "retry.attempt=1 http.response.status_code=503 error.type=503 status=Error",
        "retry.attempt=3 http.request.resend_count=2 http.response.status_code=200",
        r#"retry_call_attempts_bucket{function="get_item",partition="catalog",outcome="ok",le="3"} 1"#,
        r#"retry_call_attempts_count{function="get_item",partition="catalog",outcome="ok"} 1"#,
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
}

/// The lines of the first block of `fence` (```` ```rust ````, ```` ```toml ````) in the README's
/// "Operating it".
fn operating_it(fence: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let section = readme
        .split_once("### Operating it\n")
        .expect("the section")
        .1;
    let section = section.split_once("\n### ").map_or(section, |(s, _)| s);
    let block = section
        .split_once(&format!("```{fence}\n"))
        .unwrap_or_else(|| panic!("a {fence} block in Operating it"))
        .1;
    let block = block.split_once("```").expect("the block's end").0;
    block.lines().map(str::to_owned).collect()
}

/// Whether every non-blank line of `block` is a line of `file` (leading spaces aside), in the
/// block's order.
fn assert_in(block: &[String], file: &str) {
    let text = std::fs::read_to_string(root().join(file)).expect(file);
    let mut lines = text.lines().map(str::trim);
    for line in block.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        assert!(
            lines.any(|l| l == line),
            "README.md's line {line:?} is not in {file} (in this order)"
        );
    }
}

#[test]
fn the_readme_shows_the_observability_examples_code_and_its_crates_versions() {
    let code = operating_it("rust");
    assert_in(&code, "retry-runtime/examples/observability.rs");
    // The Prometheus builder, which `tests/metrics.rs` scrapes.
    let builder = code
        .iter()
        .position(|l| l.contains("retry.call.*"))
        .expect("the histograms' comment");
    let end = code
        .iter()
        .position(|l| l.contains("install_recorder"))
        .expect("the recorder");
    assert_in(&code[builder..end], "retry-runtime/tests/metrics.rs");

    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let locked = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("\nname = \"{name}\"\n")))
            .and_then(|p| p.split("version = \"").nth(1))
            .and_then(|v| v.split('"').next())
            .map(str::to_owned)
    };
    let mut named = 0;
    for line in operating_it("toml") {
        let (name, version) = line.split_once(" = ").expect("name = version");
        if name == "retry-runtime" {
            continue;
        }
        let version = version.trim_matches('"');
        assert_eq!(locked(name).as_deref(), Some(version), "{line}");
        named += 1;
    }
    assert!(named >= 4, "the README names the pipeline's crates");
}
