//! The examples run as a user runs them, each against the loopback server it starts itself,
//! and say what they should; and the README's first command, `cargo run --example quickstart`
//! at the root, stays light.
//!
//! A user runs `cargo run --example NAME` (`cargo run -p retry-workspace --example NAME` for the
//! two examples of the root package). Each `cargo run` of a package alone would build the
//! example's dependencies with that package's features, again: the test build has them with
//! the whole workspace's. So the examples are built once, by `cargo build --workspace
//! --examples` (the test build's features and target directory: after `cargo test --workspace`
//! it compiles nothing), and each executable it names runs as `cargo run` would run it.

use crate::{cargo, root, text};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The value of the string field `key` in a line of cargo's JSON messages.
fn field<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let start = json.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = json[start..].find('"')?;
    Some(&json[start..start + len])
}

/// Each example of the workspace, by name: its package's manifest and its executable.
fn examples() -> &'static BTreeMap<String, (PathBuf, PathBuf)> {
    static BUILT: OnceLock<BTreeMap<String, (PathBuf, PathBuf)>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = cargo(&[
            "build",
            "--workspace",
            "--examples",
            "--message-format=json-render-diagnostics",
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let mut built = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some(target) = line.find("\"target\":{\"kind\":[\"example\"]") else {
                continue;
            };
            let (Some(manifest), Some(name), Some(exe)) = (
                field(line, "manifest_path"),
                field(&line[target..], "name"),
                field(line, "executable"),
            ) else {
                continue;
            };
            built.insert(name.to_owned(), (manifest.into(), exe.into()));
        }
        built
    })
}

fn run_example(name: &str) -> String {
    let (_, exe) = &examples()[name];
    let out = Command::new(exe)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    stdout
}

/// `cargo run --example NAME` at the root selects the workspace's default member, the
/// `retry-examples` package (`examples/`), and builds what its tree holds: at most 80 crates
/// (the workspace's own included), where an example of the root package builds its whole dev
/// tree (tonic, proptest, noxious...). The examples of the package share its dependencies, so a
/// first `cargo run --example NAME` of any of them, the quickstart's included, builds the same.
#[test]
fn the_first_command_builds_at_most_80_crates() {
    let out = cargo(&[
        "tree",
        "--prefix",
        "none",
        "-e",
        "normal,build,dev",
        "-f",
        "{p}",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: BTreeSet<&str> = tree.lines().map(|l| l.trim_end_matches(" (*)")).collect();
    assert!(
        tree.starts_with("retry-examples "),
        "the root's default member is not the examples' package:\n{tree}"
    );
    assert!(
        crates.len() <= 80,
        "`cargo run --example quickstart` builds {} crates (at most 80; with idna_adapter 1.2, \
         `cargo update -p idna_adapter --precise 1.1.0` takes ICU4X's out): {crates:#?}",
        crates.len()
    );
    let (manifest, _) = &examples()["quickstart"];
    assert_eq!(*manifest, root().join("examples").join("Cargo.toml"));
}

fn assert_lines(output: &str, expected: &[&str]) {
    for line in expected {
        assert!(
            output.lines().any(|l| l.trim_start().starts_with(line)),
            "no line starting with {line:?} in:\n{output}"
        );
    }
}

#[test]
fn quickstart() {
    let out = run_example("quickstart");
    assert_lines(
        &out,
        &[
            "server: listening on http://127.0.0.1:",
            "server: request 1 -> 503 Service Unavailable",
            "client: attempt 1: HTTP status 503 Service Unavailable from http://127.0.0.1:",
            "server: request 2 -> 503 Service Unavailable, Retry-After: 1",
            "client: attempt 2: HTTP status 503 Service Unavailable from http://127.0.0.1:",
            "server: request 3 -> 200 OK",
            "client: \"hello from the flaky server\" after 3 attempts",
        ],
    );
    // The first retry waits the jittered backoff, the second the server's hint.
    let client: Vec<&str> = out.lines().filter(|l| l.starts_with("client:")).collect();
    assert!(client[0].contains("(transient), retrying in "), "{out}");
    assert!(client[1].ends_with("(transient), retrying in 1s"), "{out}");
}

#[test]
fn http_client() {
    let out = run_example("http_client");
    assert_lines(
        &out,
        &[
            "quote attempt 2 failed (transient: HTTP status 503",
            "quote attempt 1 failed (throttling: HTTP status 429 Too Many Requests",
            "-> EUR/USD 1.0842",
            "-> gave up: HTTP status 503",
        ],
    );
    assert!(out.contains("next in 1s"), "{out}");
    assert!(out.contains("the server took 1 order(s)"), "{out}");
    // The server prints the attempt each request carries: three of the first call, with one
    // invocation id, counting up to `max=4` with a `ttl` (the function has a deadline).
    let seen: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("server: GET /quote"))
        .collect();
    assert!(seen.len() >= 3, "{out}");
    let id = |line: &str| line.split("amz-sdk-invocation-id: ").nth(1).unwrap()[..36].to_owned();
    assert_eq!(id(seen[0]), id(seen[2]), "{out}");
    for (n, line) in seen[..3].iter().enumerate() {
        assert!(line.contains("[amz-sdk-request: ttl="), "{line}");
        assert!(
            line.contains(&format!("; attempt={}; max=4]", n + 1)),
            "{line}"
        );
    }
}

#[test]
fn grpc_client() {
    let out = run_example("grpc_client");
    assert_lines(
        &out,
        &[
            "attempt 1 failed: Unavailable (transient)",
            "-> 12 units",
            "attempt 1 failed: ResourceExhausted (throttling), next in 200ms",
            "-> reserved, 11 units left",
            "-> ResourceExhausted: too many reservations (the server said not to retry)",
        ],
    );
}

#[test]
fn polling() {
    let out = run_example("polling");
    assert_lines(
        &out,
        &[
            "poll 1: NOT_READY, next in 100ms",
            "poll 2: NOT_READY, next in 200ms",
            "poll 3: THROTTLED, next in 400ms",
            "poll 4: SERVER_ERROR, next in 800ms",
            "-> Success(\"report.csv, 1,204 rows\")",
        ],
    );
}

#[test]
fn s3_like() {
    let out = run_example("s3_like");
    assert_lines(
        &out,
        &[
            "attempt 1 failed: 503 SlowDown (throttling), next in 150ms",
            "attempt 2 failed: 500 InternalError (transient)",
            "-> stored",
            "-> 404 NoSuchKey: permanent, not retried",
            "retry bucket: 490 of 500 tokens left",
        ],
    );
}

#[test]
fn blocking() {
    let out = run_example("blocking");
    assert_lines(
        &out,
        &[
            "attempt 1 failed (transient: status 503), next in 50ms",
            "attempt 2 failed (transient: status 503), next in 100ms",
            "server: request 3: GET /report HTTP/1.1 -> 200 OK",
            "-> HTTP/1.1 200 OK after 3 requests",
        ],
    );
}

#[test]
fn policy() {
    let out = run_example("policy");
    assert_lines(
        &out,
        &[
            "attempt 1 of 4 (stock)",
            "attempt 1 failed (transient), next in 50ms",
            "attempt 2 failed (transient), next in 100ms",
            "attempt 3 of 4 (stock)",
            "-> 12 in stock after 3 requests",
        ],
    );
}

#[test]
fn hedging() {
    let out = run_example("hedging");
    // Which calls meet the slow replica depends on how many requests came before (a loaded
    // machine may hedge a request that was merely late), so the checks are what always holds.
    for call in 1..=6 {
        assert_lines(&out, &[&format!("client: call {call}: item from request")]);
    }
    assert_lines(
        &out,
        &[
            "server: request 3 (slow replica: 2 s)",
            "client:   attempt 1 has not answered: hedging with attempt 2",
            "client: 6 calls, ",
        ],
    );
    assert!(
        out.contains("(attempt 2) in "),
        "a hedge answered a call:\n{out}"
    );
}

#[test]
fn tower_client() {
    let out = run_example("tower_client");
    for line in [
        "attempt 1 answered 503 Service Unavailable, next in",
        "attempt 2 answered 429 Too Many Requests, next in 1s",
        "-> 200 OK: EUR/USD 1.0842",
        "-> 503 Service Unavailable; the server took 1 order(s)",
        "attempt 1 failed (not_sent: ",
        "-> gave up: ",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
}
