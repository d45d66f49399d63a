//! The workspace as a whole, one module each, in one test binary (see `tests/README.md`): the
//! builds of the runtime that are not this test build (its default features alone, the
//! `metrics` feature, the loom models, smol and no runtime at all, the browser's tree), the
//! examples run as a user runs them, and the shape of the source tree. `cargo test -p
//! retry-workspace --test workspace NAME::` runs one module.
//!
//! None of them calls the runtime in this process: they run cargo (or the examples it built)
//! as child processes, or read the sources, so they share a process with no state to keep
//! apart. The builds share the workspace's target directory wherever their flags are the
//! test build's, so that what the test build compiled is not compiled again; the loom build
//! has flags of its own (`--cfg retry_loom`) and its own directory (`target/loom`).

mod commands;
mod default_features;
mod examples;
mod install;
mod layout;
mod loom;
mod metrics;
mod runtimes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The test build's target directory: `CARGO_TARGET_DIR`'s, else the root's `target/`.
fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// `cargo ARGS` in `dir`, in the test build's target directory (`env` may name another).
fn cargo_in(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    Command::new(env!("CARGO"))
        .args(args)
        .env("CARGO_TARGET_DIR", target())
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("cargo runs")
}

/// `cargo ARGS` at the root, in the test build's target directory.
fn cargo(args: &[&str]) -> Output {
    cargo_in(root(), args, &[])
}

/// A user's crate, `NAME` with `main.rs`, in `target/probes/NAME`, whose manifest ends with
/// `tail` (its dependencies and features; `{runtime}` is the path of `retry-runtime`), with the
/// workspace's lock file (the same versions, nothing to resolve); built in the test build's
/// target directory.
fn probe_crate(name: &str, tail: &str, main_rs: &str) -> PathBuf {
    let dir = target().join("probes").join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let runtime = format!("{:?}", root().join("retry-runtime"));
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n{}",
        tail.replace("{runtime}", &runtime)
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src").join("main.rs"), main_rs).unwrap();
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

/// What a command printed, both streams, for a failed assertion's message.
fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
