//! The workspace's tests build the runtime with the features they need, `config-file` among
//! them; the runtime's default build reads no config file, and a `RETRY_CONFIG_FILE` there is
//! one warning. This test runs the runtime's configuration unit tests in a build with its
//! default features alone, so `cargo test` covers that warning too. It shares its target
//! directory with `integration_metrics.rs` (`target/metrics`), whose dependencies are the same:
//!
//! ```text
//! CARGO_TARGET_DIR=target/metrics cargo test -p retry-runtime --lib config::
//! ```

use std::path::Path;
use std::process::Command;

#[test]
fn the_default_build_reads_no_config_file_and_warns_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO"))
        .args(["test", "-p", "retry-runtime", "--lib", "config::"])
        .env("CARGO_TARGET_DIR", root.join("target").join("metrics"))
        .current_dir(root)
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let test = "config::tests::without_the_config_file_feature_a_named_file_is_one_warning";
    assert!(stdout.contains(&format!("test {test} ... ok")), "{stdout}");
    // The file's own parser is not in this build: none of its tests ran.
    assert!(!stdout.contains("config::file::"), "{stdout}");
}
