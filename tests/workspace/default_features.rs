//! The workspace's tests build the runtime with the features they need, `config-file` and
//! `aws-config` among them; the runtime's default build reads no config file, and a
//! `RETRY_CONFIG_FILE` there is one warning. This test runs the runtime's configuration unit
//! tests in a build with its default features alone, so `cargo test` covers that warning too;
//! and a user's crate on the default features that asks for the AWS SDKs' settings, which they
//! do not build, is a compile error that names the feature:
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
    // The file's own parser is not in this build, nor the AWS SDKs' settings: none of their
    // tests ran.
    assert!(!stdout.contains("config::file::"), "{stdout}");
    assert!(!stdout.contains("config::aws::"), "{stdout}");
}

/// A user's crate on the runtime's default features: `aws_config = true` in the attribute (its
/// `attribute` feature), in `Policy::aws_config(true)` (`policy`), and in a policy read with
/// serde (`serde`, which turns on the runtime's).
const AWS_PROBE: &str = r#"
#[cfg(feature = "attribute")]
use retry_runtime::{ErrorClass, retry};

#[cfg(feature = "attribute")]
#[retry(aws_config = true)]
async fn get() -> Result<u32, ErrorClass> {
    Ok(1)
}

#[cfg(feature = "policy")]
fn policy() -> retry_runtime::Policy {
    retry_runtime::Policy::new().aws_config(true)
}

/// A policy read with serde, from a map that sets `aws_config`.
#[cfg(feature = "serde")]
fn read(aws_config: bool) -> Result<retry_runtime::Policy, serde::de::value::Error> {
    use serde::Deserialize;
    let map = serde::de::value::MapDeserializer::new([("aws_config", aws_config)].into_iter());
    retry_runtime::Policy::deserialize(map)
}

#[cfg(not(feature = "attribute"))]
fn get() {}

fn main() {
    let _ = get();
    #[cfg(feature = "policy")]
    let _ = policy();
    #[cfg(feature = "serde")]
    {
        assert!(read(false).is_ok());
        println!("{}", read(true).unwrap_err());
    }
}
"#;

/// The line of the probe's `main.rs` (1-based) that has `text`.
fn line_of(text: &str) -> usize {
    1 + AWS_PROBE
        .lines()
        .position(|l| l.contains(text))
        .expect("in the probe")
}

/// The probe crate on the runtime's default features.
fn aws_probe() -> std::path::PathBuf {
    let tail = r#"[dependencies]
retry-runtime = { path = {runtime} }
serde = { version = "1", optional = true }

[features]
attribute = []
policy = []
serde = ["dep:serde", "retry-runtime/serde"]
"#;
    crate::probe_crate("aws-config-off", tail, AWS_PROBE)
}

/// Without the `aws-config` feature the AWS SDKs' settings are not built in, and asking for them
/// is a compile error that names the feature, in the attribute and in a `Policy`: never a
/// function that silently reads nothing.
#[test]
fn without_the_aws_config_feature_asking_for_the_aws_settings_names_the_feature() {
    let dir = aws_probe();
    let error = "error[E0277]: `aws_config` reads the AWS SDKs' settings, which needs the \
                 `aws-config` feature of `retry-runtime`";
    // On the attribute's key.
    let out = crate::cargo_in(&dir, &["check", "--quiet", "--features", "attribute"], &[]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert_eq!(all.matches(error).count(), 1, "{all}");
    let at = format!(
        "--> src/main.rs:{}:9",
        line_of("#[retry(aws_config = true)]")
    );
    assert!(all.contains(&at), "{all}");
    assert!(
        all.contains(
            "= note: `retry-runtime = { version = \"0.1\", features = [\"aws-config\"] }`"
        ),
        "{all}"
    );
    // On `Policy::aws_config`.
    let out = crate::cargo_in(&dir, &["check", "--quiet", "--features", "policy"], &[]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert_eq!(all.matches(error).count(), 1, "{all}");
    let at = format!("--> src/main.rs:{}:34", line_of(".aws_config(true)"));
    assert!(all.contains(&at), "{all}");
    // And a policy read with serde: an error, where `aws_config = false` reads.
    let out = crate::cargo_in(&dir, &["run", "--quiet", "--features", "serde"], &[]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "aws_config: reading the AWS SDKs' settings needs the `aws-config` feature of \
             `retry-runtime`"
        ),
        "{all}"
    );
}
