//! The workspace's tests build the runtime with the features they need, `config-file` among
//! them; the runtime's default build reads no config file, and a `RETRY_CONFIG_FILE` there is
//! one warning. This test runs the runtime's configuration unit tests in a build with its
//! default features alone, so `cargo test` covers that warning too:
//!
//! ```text
//! cargo test -p retry-runtime --lib config::
//! ```

use crate::{cargo, text};

#[test]
fn the_default_build_reads_no_config_file_and_warns_once() {
    let out = cargo(&["test", "-p", "retry-runtime", "--lib", "config::"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let test = "config::tests::without_the_config_file_feature_a_named_file_is_one_warning";
    assert!(stdout.contains(&format!("test {test} ... ok")), "{stdout}");
    // The file's own parser is not in this build: none of its tests ran.
    assert!(!stdout.contains("config::file::"), "{stdout}");
}
