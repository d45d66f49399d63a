//! `retry-sim` as a user installs it: `cargo install --path retry-sim` (the command README and
//! SIMULATION.md give), then the installed command on the sample files those documents show:
//! `--help`, README's `--check` passing and the same check tightened failing with exit status 1,
//! and `--json` read back as one JSON object.
//!
//! The install is a debug build (`--debug`) in the test build's target directory, with the
//! workspace's `Cargo.lock` (`--locked`), into `target/install`: it compiles `retry-sim` with
//! the features it asks for alone, so it shares with the test build what those leave the same.

use crate::{cargo, root, target, text};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The installed `retry-sim`, installed once for the tests of this module.
fn installed() -> &'static PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let prefix = target().join("install");
        let out = cargo(&[
            "install",
            "--path",
            "retry-sim",
            "--debug",
            "--locked",
            "--force",
            "--root",
            prefix.to_str().expect("a UTF-8 path"),
        ]);
        assert!(
            out.status.success(),
            "cargo install failed:\n{}",
            text(&out)
        );
        let bin = prefix
            .join("bin")
            .join(format!("retry-sim{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "no {} after cargo install", bin.display());
        bin
    })
}

/// The installed command with `args`, from the workspace's root, as the documents run it.
fn retry_sim(args: &[&str]) -> Output {
    Command::new(installed())
        .args(args)
        .current_dir(root())
        .output()
        .expect("the installed retry-sim runs")
}

#[test]
fn the_installed_command_runs_the_documented_samples() {
    let help = retry_sim(&["--help"]);
    assert!(help.status.success(), "{}", text(&help));
    let usage = String::from_utf8_lossy(&help.stdout);
    for word in ["what-if", "--check", "--json", "--policy", "callgraph"] {
        assert!(
            usage.contains(word),
            "--help does not mention {word}:\n{usage}"
        );
    }

    // README's command, as written there.
    let sample = "retry-sim/examples/two-tier.toml";
    let pass = retry_sim(&[
        "what-if",
        sample,
        "--check",
        "tier.db.amplification_fault <= 1.5",
    ]);
    assert_eq!(pass.status.code(), Some(0), "{}", text(&pass));
    let tables = String::from_utf8_lossy(&pass.stdout);
    assert!(
        tables.contains("pass tier.db.amplification_fault <= 1.5"),
        "{tables}"
    );

    // The same figure held to less than it is: the check fails, is printed on standard error,
    // and the exit status is 1.
    let fail = retry_sim(&[
        "what-if",
        sample,
        "--check",
        "tier.db.amplification_fault <= 1.01",
    ]);
    assert_eq!(fail.status.code(), Some(1), "{}", text(&fail));
    assert!(
        String::from_utf8_lossy(&fail.stderr).contains("tier.db.amplification_fault <= 1.01"),
        "{}",
        text(&fail)
    );

    // `--json`: one object, the tiers and the checks in it.
    let json = retry_sim(&[
        "what-if",
        sample,
        "--json",
        "--check",
        "users.failed <= 100%",
    ]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let value: serde_json::Value =
        serde_json::from_slice(&json.stdout).expect("--json prints one JSON object");
    assert_eq!(value["passed"], serde_json::Value::Bool(true), "{value}");
    let tiers = value["tiers"].as_array().expect("`tiers` is an array");
    let names: Vec<&str> = tiers.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"db") && names.contains(&"api"), "{value}");
}
