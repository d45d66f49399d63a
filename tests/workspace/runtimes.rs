//! The runtime features, each in a build of its own: the engine's tests under smol without
//! tokio (`retry-runtime/tests/smol.rs`) and its example; tokio absent from that build's tree;
//! and a small crate of a user's that depends on the runtime with no runtime feature (a
//! blocking `#[retry]` fn runs, an async one is the compile error that names the features), and
//! with both `tokio` and `smol` (tokio's timers: its paused clock drives them); and the tree of a
//! browser build (`wasm32-unknown-unknown`, default features): no tokio. (The browser tests
//! themselves run under wasm-bindgen-test's runner: `.ci/run`.) The builds are in the test
//! build's target directory, whose dependencies they share where their features are the same.
//!
//! ```text
//! cargo test -p retry-runtime --no-default-features --features smol --test smol
//! ```

use crate::{cargo, cargo_in, probe_crate, text};
use std::path::PathBuf;

const SMOL: [&str; 4] = [
    "-p",
    "retry-runtime",
    "--no-default-features",
    "--features=smol",
];

#[test]
fn the_engine_runs_on_smol() {
    let out = cargo(&[&["test"][..], &SMOL, &["--test", "smol"]].concat());
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("test the_backoff_schedule_is_exact_in_an_instant_seeded_scope ... ok"));
    assert!(
        all.contains("test a_slow_attempt_is_hedged ... ok"),
        "{all}"
    );
    assert!(all.contains("0 failed"), "{all}");
}

#[test]
fn the_smol_example_runs() {
    let out = cargo(&[&["run", "--quiet"][..], &SMOL, &["--example", "smol"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    for line in [
        "client: attempt 1, 1000 ms left",
        "server: request 1 -> busy",
        "client: attempt 3, ",
        "server: request 3 -> hello from smol",
        "client: \"hello from smol\" after 3 attempts, 150 ms of backoff or more",
        "server: request 5 -> hello from smol",
        "client: hedged call answered \"hello from smol\"",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "{line:?} in:\n{stdout}"
        );
    }
}

#[test]
fn a_smol_build_has_no_tokio() {
    let out = cargo(&[&["tree", "-e", "normal"][..], &SMOL].concat());
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(tree.contains("async-io"), "{tree}");
    assert!(!tree.contains("tokio"), "{tree}");
}

#[test]
fn a_browser_build_with_the_default_features_has_no_tokio() {
    // The target chooses the browser backend: tokio (a default feature) and async-io are
    // declared for the other targets only, so nothing of theirs is in the tree.
    for features in [&[][..], &["--features=smol"]] {
        let args = [
            &["tree", "-e", "normal", "-p", "retry-runtime"][..],
            &["--target", "wasm32-unknown-unknown"],
            features,
        ]
        .concat();
        let out = cargo(&args);
        let tree = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", text(&out));
        assert!(tree.contains("web-time"), "{tree}");
        assert!(tree.contains("wasm-bindgen"), "{tree}");
        assert!(!tree.contains("tokio"), "{tree}");
        assert!(!tree.contains("async-io"), "{tree}");
        assert!(!tree.contains("getrandom"), "{tree}");
    }
}

/// A user's crate: a blocking `#[retry]` fn always, an async one with its `async` feature.
const PROBE: &str = r#"
use retry_runtime::{ErrorClass, retry};
use std::sync::atomic::{AtomicU32, Ordering};

static RUNS: AtomicU32 = AtomicU32::new(0);

#[retry(max_attempts = 3, initial_backoff = "10ms", deadline = "5s")]
fn blocking() -> Result<u32, ErrorClass> {
    let n = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
    if n < 3 { Err(ErrorClass::Transient) } else { Ok(n) }
}

#[cfg(feature = "async")]
#[retry(max_attempts = 3, initial_backoff = "10s", jitter = "none")]
async fn slow() -> Result<u32, ErrorClass> {
    let n = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
    if n < 5 { Err(ErrorClass::Transient) } else { Ok(n) }
}

fn main() {
    println!("blocking: {:?}", blocking());
    #[cfg(feature = "tokio")]
    {
        // Tokio's paused clock skips the two 10 s backoffs: its timers are the ones used.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let start = std::time::Instant::now();
        println!("async: {:?}", rt.block_on(slow()));
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
"#;

/// The probe crate with `retry-runtime`'s default features off.
fn probe(name: &str) -> PathBuf {
    let tail = r#"[dependencies]
retry-runtime = { path = {runtime}, default-features = false }
tokio = { version = "1.40", optional = true, features = ["rt", "time", "test-util"] }

[features]
async = []
tokio = ["dep:tokio", "async", "retry-runtime/tokio", "retry-runtime/smol"]
"#;
    probe_crate(name, tail, PROBE)
}

#[test]
fn without_a_runtime_feature_blocking_works_and_async_names_the_features() {
    let dir = probe("no-runtime");
    let out = cargo_in(&dir, &["run", "--quiet"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("blocking: Ok(3)"));

    let out = cargo_in(&dir, &["check", "--quiet", "--features", "async"], &[]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains(
            "error[E0277]: async retries need an async runtime's timers: turn on the `tokio` \
             (default) or the `smol` feature of `retry-runtime`"
        ),
        "{all}"
    );
    // The line to write keeps the default features off, as this manifest has them, so that
    // the runtime is the one named.
    assert!(
        all.contains("default-features = false, features = [\"smol\"]"),
        "{all}"
    );
}

#[test]
fn with_tokio_and_smol_on_tokio_wins() {
    let dir = probe("both-runtimes");
    let out = cargo_in(&dir, &["run", "--quiet", "--features", "tokio"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout.contains("blocking: Ok(3)"), "{stdout}");
    assert!(stdout.contains("async: Ok(5)"), "{stdout}");
}
