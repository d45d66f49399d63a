//! Every setting the attribute leaves open, from the environment and the config file.
//!
//! They are read once per process, so each case runs this test binary again as a child
//! process (its ignored `child` test) with the case's environment, and reads what the child
//! printed: the mode and attempt count every function resolved to, each function's settings
//! as `config::explain` reports them (with the values from outside the attribute shadows), and
//! the warnings.

mod capture;
mod util;

use retry_runtime::testing::{self, Overrides};
use retry_runtime::{ErrorClass, Partition, Policy, retry};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const CHILD: &str = "RETRY_CONFIG_TEST_CHILD";
/// Text the child writes over the config file between its two rounds of calls.
const REWRITE: &str = "RETRY_CONFIG_TEST_REWRITE";
/// Set: the child installs a tracing subscriber and prints the warnings it received.
const TRACE: &str = "RETRY_CONFIG_TEST_TRACE";
/// Set: the child also calls a `Policy` kept in a `static` and one built for each call, each
/// `POLICY_CALLS` times.
const POLICY: &str = "RETRY_CONFIG_TEST_POLICY";
const POLICY_CALLS: u32 = 5;
/// Set: the child also calls `aws`, the function that reads the AWS SDKs' settings.
const AWS: &str = "RETRY_CONFIG_TEST_AWS";
/// Set: the child also calls, `POLICY_CALLS` times, a `Policy` built for each call with values
/// `Policy::build` refuses, and not checked with it.
const UNCHECKED: &str = "RETRY_CONFIG_TEST_UNCHECKED";

/// A policy kept for every call, whose `max_attempts` is written in code.
static KEPT: Policy = Policy::new()
    .name("kept")
    .max_attempts(2)
    .initial_backoff(std::time::Duration::from_millis(1));

/// The `max_attempts` the last attempt's context reported.
static SEEN_MAX: AtomicU32 = AtomicU32::new(0);

fn seen_max() {
    let a = retry_runtime::attempt().expect("inside the body");
    SEEN_MAX.store(a.max_attempts(), Ordering::SeqCst);
}

// Every call fails with `Throttling` until max_attempts; in adaptive mode that turns the
// partition's rate limiter on, which tells the modes apart.

#[retry(initial_backoff = "1ms", partition = "config-plain")]
async fn plain(calls: &AtomicU32) -> Result<(), ErrorClass> {
    calls.fetch_add(1, Ordering::SeqCst);
    seen_max();
    Err(ErrorClass::Throttling)
}

#[retry(
    initial_backoff = "1ms",
    partition = "config-billing",
    profile = "billing-eu"
)]
async fn billing(calls: &AtomicU32) -> Result<(), ErrorClass> {
    calls.fetch_add(1, Ordering::SeqCst);
    seen_max();
    Err(ErrorClass::Throttling)
}

#[retry(
    initial_backoff = "1ms",
    partition = "config-fixed",
    profile = "billing-eu",
    mode = "standard",
    max_attempts = 2
)]
async fn fixed(calls: &AtomicU32) -> Result<(), ErrorClass> {
    calls.fetch_add(1, Ordering::SeqCst);
    seen_max();
    Err(ErrorClass::Throttling)
}

// A function that also reads the AWS SDKs' variables and shared config file.

#[retry(initial_backoff = "1ms", partition = "config-aws", aws_config = true)]
async fn aws(calls: &AtomicU32) -> Result<(), ErrorClass> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(ErrorClass::Throttling)
}

// Two functions with a timer (one written key each): a timeout from outside applies to them.

#[retry(profile = "billing-eu", deadline = "10m")]
async fn slow_a() -> Result<(), std::io::Error> {
    Ok(())
}

#[retry(profile = "billing-eu", attempt_timeout = "1s")]
async fn slow_b() -> Result<(), std::io::Error> {
    Ok(())
}

// A hedged function: the hedging keys from outside apply to it alone.

#[retry(profile = "billing-eu", hedge_after = "50ms")]
async fn hedged() -> Result<(), std::io::Error> {
    Ok(())
}

/// The child process of the other tests of this file, which run it with `--ignored --exact`
/// and the case's environment: calls each function (twice round), prints what it resolved to.
/// Run any other way it fails, so that it never passes without having checked anything.
#[test]
#[ignore = "the child process of the other tests of this file, which run it themselves"]
fn child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "`child` runs only as the child process of the other tests of this file"
    );
    let capture = capture::Capture::default();
    if std::env::var_os(TRACE).is_some() {
        tracing::subscriber::set_global_default(capture.clone()).unwrap();
    }
    let rt = util::paused_runtime();
    rt.block_on(async {
        for round in 1..=2 {
            for (name, partition) in [
                ("plain", "config-plain"),
                ("billing", "config-billing"),
                ("fixed", "config-fixed"),
            ] {
                let calls = AtomicU32::new(0);
                let call = async {
                    let _ = match name {
                        "plain" => plain(&calls).await,
                        "billing" => billing(&calls).await,
                        _ => fixed(&calls).await,
                    };
                };
                testing::scope(Overrides::new().instant(), call).await;
                let adaptive = Partition::named(partition).rate_limiter().is_enabled();
                let mode = if adaptive { "adaptive" } else { "standard" };
                let n = calls.load(Ordering::SeqCst);
                // The body's context reports the max_attempts the call resolved (environment,
                // file and attribute): every attempt fails, so it is the attempts made.
                assert_eq!(
                    SEEN_MAX.load(Ordering::SeqCst),
                    n,
                    "{name}: attempt().max_attempts()"
                );
                println!("RESULT round{round} {name} {mode} {n}");
            }
            if let (1, Some(text)) = (round, std::env::var_os(REWRITE)) {
                let path = std::env::var_os("RETRY_CONFIG_FILE").unwrap();
                std::fs::write(path, text.into_encoded_bytes()).unwrap();
            }
        }
        slow_a().await.unwrap();
        slow_b().await.unwrap();
        hedged().await.unwrap();
        if std::env::var_os(AWS).is_some() {
            let calls = AtomicU32::new(0);
            let out = testing::scope(Overrides::new().instant(), aws(&calls)).await;
            assert!(out.is_err());
            let adaptive = Partition::named("config-aws").rate_limiter().is_enabled();
            let mode = if adaptive { "adaptive" } else { "standard" };
            println!("RESULT round1 aws {mode} {}", calls.load(Ordering::SeqCst));
        }
        if std::env::var_os(POLICY).is_some() {
            for name in ["kept", "built"] {
                for _ in 0..POLICY_CALLS {
                    let calls = AtomicU32::new(0);
                    let attempt = || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        async { Err::<(), _>(ErrorClass::Throttling) }
                    };
                    let out = if name == "kept" {
                        testing::scope(Overrides::new().instant(), KEPT.retry(attempt)).await
                    } else {
                        // A policy built for each call resolves on each call.
                        let built = Policy::new()
                            .name("built")
                            .max_attempts(2)
                            .initial_backoff(std::time::Duration::from_millis(1));
                        testing::scope(Overrides::new().instant(), built.retry(attempt)).await
                    };
                    assert!(out.is_err());
                    println!("POLICY {name} {}", calls.load(Ordering::SeqCst));
                }
            }
        }
        if std::env::var_os(UNCHECKED).is_some() {
            for _ in 0..POLICY_CALLS {
                let calls = AtomicU32::new(0);
                let attempt = || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async { Err::<(), _>(ErrorClass::Transient) }
                };
                let unchecked = Policy::new().name("unchecked").max_attempts(0).budget("20");
                let out = testing::scope(Overrides::new().instant(), unchecked.retry(attempt));
                assert!(out.await.is_err());
                println!("POLICY unchecked {}", calls.load(Ordering::SeqCst));
            }
        }
    });
    for explained in retry_runtime::config::explain() {
        for e in &explained.entries {
            println!(
                "EXPLAIN {} {} {} {}",
                explained.function, e.key, e.value, e.source
            );
            if let Some(shadowed) = &e.shadowed {
                println!(
                    "SHADOWED {} {} {} {}",
                    explained.function, e.key, shadowed.value, shadowed.source
                );
            }
        }
        if explained.function == "fixed" {
            for line in explained.to_string().lines() {
                println!("SHOWN {line}");
            }
        }
        for note in &explained.notes {
            println!("NOTE {} {note}", explained.function);
        }
        if explained.function == "aws" {
            for line in explained.to_string().lines() {
                println!("AWSSHOWN {line}");
            }
        }
    }
    for e in capture.of("retry::config", tracing::Level::WARN) {
        println!("TRACED {}", e.field("message"));
    }
}

/// What the child printed.
struct Outcome {
    /// `function -> (mode, attempts)` of the first round.
    first: BTreeMap<String, (String, u32)>,
    /// `function -> attempts` of the second round.
    second: BTreeMap<String, u32>,
    warnings: Vec<String>,
    /// Warnings the child's tracing subscriber received.
    traced: Vec<String>,
    /// `(function, key) -> (value, source)`, as `config::explain` reported them.
    explained: BTreeMap<(String, String), (String, String)>,
    /// `(function, key) -> (value, source)` of the values from outside the attribute shadows.
    shadowed: BTreeMap<(String, String), (String, String)>,
    /// `config::explain`'s `Display` of `fixed`, line by line.
    shown: Vec<String>,
    /// `config::explain`'s `Display` of `aws`, line by line.
    aws_shown: Vec<String>,
    /// `(function, note)` of each note `config::explain` gave.
    notes: Vec<(String, String)>,
    /// The attempts of each call of the policies, by name.
    policy: BTreeMap<String, Vec<u32>>,
}

/// `PREFIX function key value source` lines: `(function, key) -> (value, source)`.
fn entries(stdout: &str, prefix: &str) -> BTreeMap<(String, String), (String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(prefix).map(|(_, r)| r))
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ' ').collect();
            ((f[0].into(), f[1].into()), (f[2].into(), f[3].into()))
        })
        .collect()
}

/// Runs the child with `env` (and nothing else of the `RETRY_` family) and, if given, a
/// config file holding `file`.
fn run(case: &str, env: &[(&str, &str)], file: Option<&str>, rewrite: Option<&str>) -> Outcome {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("RETRY_") || key_text.starts_with("AWS_") {
            cmd.env_remove(key);
        }
    }
    cmd.env(CHILD, "1");
    let path = file.map(|text| {
        let path = temp_file(case);
        std::fs::write(&path, text).unwrap();
        cmd.env("RETRY_CONFIG_FILE", &path);
        path
    });
    if let Some(text) = rewrite {
        cmd.env(REWRITE, text);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    if let Some(path) = path {
        let _ = std::fs::remove_file(path);
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    let mut outcome = Outcome {
        first: BTreeMap::new(),
        second: BTreeMap::new(),
        warnings: stderr
            .lines()
            .filter_map(|l| l.strip_prefix("warning: retry: "))
            .map(str::to_string)
            .collect(),
        traced: stdout
            .lines()
            .filter_map(|l| l.strip_prefix("TRACED "))
            .map(str::to_string)
            .collect(),
        explained: entries(&stdout, "EXPLAIN "),
        shadowed: entries(&stdout, "SHADOWED "),
        shown: stdout
            .lines()
            .filter(|l| !l.contains("AWSSHOWN "))
            .filter_map(|l| l.split_once("SHOWN ").map(|(_, r)| r.to_string()))
            .collect(),
        aws_shown: stdout
            .lines()
            .filter_map(|l| l.split_once("AWSSHOWN ").map(|(_, r)| r.to_string()))
            .collect(),
        notes: stdout
            .lines()
            .filter_map(|l| l.split_once("NOTE ").map(|(_, r)| r))
            .filter_map(|r| r.split_once(' '))
            .map(|(f, n)| (f.to_string(), n.to_string()))
            .collect(),
        policy: BTreeMap::new(),
    };
    for line in stdout
        .lines()
        .filter_map(|l| l.split_once("POLICY ").map(|(_, r)| r))
    {
        let (name, n) = line.split_once(' ').unwrap();
        let entry = outcome.policy.entry(name.to_string()).or_default();
        entry.push(n.parse().unwrap());
    }
    // The harness writes `test child ... ` before the first line.
    for line in stdout
        .lines()
        .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
    {
        let f: Vec<&str> = line.split(' ').collect();
        let n: u32 = f[3].parse().unwrap();
        let new = match f[0] {
            "round1" => outcome
                .first
                .insert(f[1].into(), (f[2].into(), n))
                .is_none(),
            "round2" => outcome.second.insert(f[1].into(), n).is_none(),
            other => panic!("no round {other}:\n{stdout}"),
        };
        assert!(new, "{} printed twice in {}:\n{stdout}", f[1], f[0]);
    }
    // The child ran: one line per function and round (and one for `aws` if asked).
    let with_aws = env.iter().any(|(k, _)| *k == AWS);
    assert_eq!(outcome.first.len(), 3 + usize::from(with_aws), "{stdout}");
    assert_eq!(outcome.second.len(), 3, "{stdout}");
    outcome
}

fn temp_file(case: &str) -> PathBuf {
    std::env::temp_dir().join(format!("retry-config-{}-{case}.toml", std::process::id()))
}

/// `function`'s settings as `config::explain` reported them: `key -> "value (source)"`.
fn explained(o: &Outcome, function: &str) -> BTreeMap<String, String> {
    o.explained
        .iter()
        .filter(|((f, _), _)| f == function)
        .map(|((_, k), (v, s))| (k.clone(), format!("{v} ({s})")))
        .collect()
}

fn resolved<'a>(o: &'a Outcome, function: &str) -> (&'a str, u32) {
    let (mode, n) = &o.first[function];
    (mode.as_str(), *n)
}

#[test]
fn without_environment_or_file_the_mode_defaults_apply() {
    let o = run("defaults", &[], None, None);
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
    assert_eq!(resolved(&o, "billing"), ("standard", 3));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
}

#[test]
fn the_environment_sets_what_the_attribute_leaves_open() {
    let o = run(
        "env",
        &[
            ("RETRY_MODE", "adaptive"),
            ("RETRY_MAX_ATTEMPTS", "4"),
            ("RETRY_BILLING_EU_MAX_ATTEMPTS", "6"),
        ],
        None,
        None,
    );
    assert_eq!(resolved(&o, "plain"), ("adaptive", 4));
    assert_eq!(resolved(&o, "billing"), ("adaptive", 6));
    // The attribute wins, and says so once per key it shadows.
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    let shadowed: Vec<&str> = o
        .warnings
        .iter()
        .map(|w| w.split(": its attribute writes").next().unwrap())
        .collect();
    assert_eq!(
        shadowed,
        [
            "ignoring RETRY_MODE (mode = adaptive) for `fixed`",
            "ignoring RETRY_BILLING_EU_MAX_ATTEMPTS (max_attempts = 6) for `fixed`",
        ]
    );
}

#[test]
fn a_profile_variable_comes_before_the_general_one() {
    let o = run(
        "profile-env",
        &[
            ("RETRY_MODE", "adaptive"),
            ("RETRY_BILLING_EU_MODE", "standard"),
        ],
        None,
        None,
    );
    assert_eq!(resolved(&o, "plain"), ("adaptive", 3));
    assert_eq!(resolved(&o, "billing"), ("standard", 3));
}

#[test]
fn the_file_sets_what_the_environment_leaves_open() {
    let file = "# retry settings\n\
                [default]\n\
                mode = \"adaptive\"\n\
                max_attempts = 5\n\
                \n\
                [profile.billing-eu]\n\
                max_attempts = 2 # the billing service is slow to recover\n";
    let o = run("file", &[], Some(file), None);
    assert_eq!(resolved(&o, "plain"), ("adaptive", 5));
    assert_eq!(resolved(&o, "billing"), ("adaptive", 2));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    // `fixed` writes mode = "standard" over the file's "adaptive": one warning. It writes
    // max_attempts = 2 too, as the file's profile does: the same value, nothing to say.
    assert_eq!(o.warnings.len(), 1, "{:?}", o.warnings);
    assert!(
        o.warnings[0]
            .contains("(mode = adaptive) for `fixed`: its attribute writes mode = standard"),
        "{:?}",
        o.warnings
    );
}

#[test]
fn the_environment_comes_before_the_file() {
    let file =
        "[default]\nmax_attempts = 5\n[profile.billing-eu]\nmax_attempts = 7\nmode = 'adaptive'\n";
    let o = run(
        "env-over-file",
        &[("RETRY_MAX_ATTEMPTS", "4")],
        Some(file),
        None,
    );
    assert_eq!(resolved(&o, "plain"), ("standard", 4));
    // Even the general variable beats the file's profile section.
    assert_eq!(resolved(&o, "billing"), ("adaptive", 4));
}

#[test]
fn settings_are_read_once_per_process() {
    let o = run(
        "once",
        &[],
        Some("[default]\nmax_attempts = 5\n"),
        Some("[default]\nmax_attempts = 2\n"),
    );
    assert_eq!(resolved(&o, "plain"), ("standard", 5));
    // The file changed between the rounds; the process kept what it read.
    assert_eq!(o.second["plain"], 5);
    assert_eq!(o.second["billing"], 5);
}

#[test]
fn each_bad_value_is_one_warning_and_is_ignored() {
    let file = "[default]\n\
                max_attempts = 0\n\
                mode = \"adaptive\"\n\
                [profile.billing-eu]\n\
                mode = \"fast\"\n\
                max_attempts = 6\n";
    let o = run(
        "bad",
        &[
            ("RETRY_MODE", "turbo"),
            ("RETRY_MAX_ATTEMPTS", "-1"),
            ("RETRY_BILLING_EU_MAX_ATTEMPTS", "many"),
        ],
        Some(file),
        None,
    );
    // The good values are kept, the bad ones ignored.
    assert_eq!(resolved(&o, "plain"), ("adaptive", 3));
    assert_eq!(resolved(&o, "billing"), ("adaptive", 6));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    // Two functions of the profile and two rounds of calls: still one warning per value.
    let path = temp_file("bad");
    let path = path.display();
    assert_eq!(
        o.warnings,
        [
            "ignoring RETRY_MODE=\"turbo\": mode is \"standard\" or \"adaptive\"".to_string(),
            "ignoring RETRY_MAX_ATTEMPTS=\"-1\": max_attempts is a whole number from 1 to \
             4294967295"
                .to_string(),
            format!(
                "{path}:2: max_attempts = 0: max_attempts is a whole number from 1 to \
                 4294967295; ignored"
            ),
            format!("{path}:5: mode = \"fast\": mode is \"standard\" or \"adaptive\"; ignored"),
            "ignoring RETRY_BILLING_EU_MAX_ATTEMPTS=\"many\": max_attempts is a whole number \
             from 1 to 4294967295"
                .to_string(),
            // The good values `fixed` writes over.
            format!(
                "ignoring {path}:3 in [default] (mode = adaptive) for `fixed`: its attribute \
                 writes mode = standard, which is used (the code's values take precedence over \
                 the environment and the config file, as in the AWS SDKs: code, then \
                 environment, then shared config file); leave mode out of the attribute to set \
                 it from outside"
            ),
            format!(
                "ignoring {path}:6 in [profile.billing-eu] (max_attempts = 6) for `fixed`: its \
                 attribute writes max_attempts = 2, which is used (the code's values take \
                 precedence over the environment and the config file, as in the AWS SDKs: code, \
                 then environment, then shared config file); leave max_attempts out of the \
                 attribute to set it from outside"
            ),
        ]
    );
}

/// `config::explain` notes each value from outside it warned about and ignored, for the
/// functions that would have read it: a function shows the default (or a lower layer's value)
/// and, after it, why the value set for it did not apply.
#[test]
fn explain_notes_each_bad_value_a_function_would_have_read() {
    let file = "[default]\n\
                max_attempts = 0\n\
                [profile.billing-eu]\n\
                mode = \"fast\"\n";
    let o = run(
        "bad-noted",
        &[
            ("RETRY_MODE", "turbo"),
            ("RETRY_BILLING_EU_MAX_ATTEMPTS", "many"),
        ],
        Some(file),
        None,
    );
    let path = temp_file("bad-noted");
    let path = path.display();
    let mode = "ignoring RETRY_MODE=\"turbo\": mode is \"standard\" or \"adaptive\"".to_string();
    let attempts = format!(
        "{path}:2: max_attempts = 0: max_attempts is a whole number from 1 to 4294967295; ignored"
    );
    let profile_mode =
        format!("{path}:4: mode = \"fast\": mode is \"standard\" or \"adaptive\"; ignored");
    let profile_attempts = "ignoring RETRY_BILLING_EU_MAX_ATTEMPTS=\"many\": max_attempts is a \
                            whole number from 1 to 4294967295"
        .to_string();
    let notes = |function: &str| -> Vec<String> {
        o.notes
            .iter()
            .filter(|(f, _)| f == function)
            .map(|(_, n)| n.clone())
            .collect()
    };
    // Most specific first: the profile's variables, the general ones, the profile's table, the
    // file's `[default]`.
    assert_eq!(notes("plain"), [mode.clone(), attempts.clone()]);
    assert_eq!(
        notes("billing"),
        [profile_attempts, mode, profile_mode, attempts]
    );
    assert_eq!(explained(&o, "plain")["max_attempts"], "3 (default)");
    // Each note is the warning given once.
    for (_, note) in &o.notes {
        assert_eq!(
            o.warnings.iter().filter(|w| *w == note).count(),
            1,
            "{note}"
        );
    }
    // `Display` ends with them.
    assert_eq!(
        o.shown.last(),
        Some(&format!("  note: {}", notes("fixed")[3]))
    );
}

/// A table whose name is close to a profile's (`billing_eu` for `billing-eu`, whose variables
/// are `RETRY_BILLING_EU_*`) applies to no function of that profile: one warning says which
/// table it most likely meant, and `explain` notes it for the profile's functions.
#[test]
fn a_profile_table_under_a_close_name_is_one_warning() {
    let o = run(
        "misnamed",
        &[],
        Some("[profile.billing_eu]\nmax_attempts = 6\n"),
        None,
    );
    assert_eq!(resolved(&o, "billing"), ("standard", 3));
    let path = temp_file("misnamed");
    let warning = format!(
        "{} has no [profile.billing-eu] table for the functions of profile `billing-eu`: did \
         you mean [profile.billing_eu]? its values apply to a profile `billing_eu`, not to \
         `billing-eu`",
        path.display()
    );
    assert_eq!(o.warnings, std::slice::from_ref(&warning));
    assert!(o.notes.contains(&("billing".to_string(), warning.clone())));
    assert!(!o.notes.iter().any(|(f, _)| f == "plain"), "{:?}", o.notes);
}

#[test]
fn a_missing_file_is_one_warning() {
    let o = run(
        "missing",
        &[("RETRY_CONFIG_FILE", "/nonexistent/retry.toml")],
        None,
        None,
    );
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
    assert_eq!(o.warnings.len(), 1, "{:?}", o.warnings);
    assert!(
        o.warnings[0].starts_with("ignoring RETRY_CONFIG_FILE=\"/nonexistent/retry.toml\""),
        "{:?}",
        o.warnings
    );
}

#[test]
fn with_a_tracing_subscriber_warnings_are_events() {
    let o = run(
        "traced",
        &[(TRACE, "1"), ("RETRY_MAX_ATTEMPTS", "lots")],
        None,
        None,
    );
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    assert_eq!(
        o.traced,
        [
            "ignoring RETRY_MAX_ATTEMPTS=\"lots\": max_attempts is a whole number from 1 to \
          4294967295"
        ]
    );
}

/// Every key, for the profile of `billing`, `fixed`, `slow_a`, `slow_b` and `hedged`.
const EVERY_KEY: [(&str, &str); 15] = [
    ("mode", "adaptive"),
    ("behavior", "2026"),
    ("max_attempts", "4"),
    ("initial_backoff", "2ms"),
    ("multiplier", "3"),
    ("max_backoff", "50ms"),
    ("jitter", "none"),
    ("attempt_timeout", "2s"),
    ("attempt_timeout_multiplier", "1.5"),
    ("max_attempt_timeout", "4s"),
    ("deadline", "30s"),
    ("hedge_after", "p95"),
    ("max_in_flight", "3"),
    ("min_hedge_after", "2ms"),
    ("max_hedge_after", "300ms"),
];

/// The keys that shape an attempt's timer, which apply only to a function with one.
const TIMER_KEYS: [&str; 4] = [
    "attempt_timeout",
    "attempt_timeout_multiplier",
    "max_attempt_timeout",
    "deadline",
];

/// The keys that shape hedging, which apply only to a function whose attribute writes
/// hedge_after.
const HEDGE_KEYS: [&str; 4] = [
    "hedge_after",
    "max_in_flight",
    "min_hedge_after",
    "max_hedge_after",
];

/// What the functions resolve to under `EVERY_KEY` from `source` (a variable's or the file's
/// own description of each key).
fn check_every_key(o: &Outcome, source: &dyn Fn(&str) -> String) {
    let from = |key: &str, value: &str| format!("{value} ({})", source(key));
    // `billing` writes initial_backoff; it has no timer and does not hedge, so the four timer
    // keys and the four hedging keys cannot apply to it: `explain` leaves them out.
    let billing = explained(o, "billing");
    assert_eq!(billing["mode"], from("mode", "adaptive"));
    assert_eq!(billing["behavior"], from("behavior", "2026"));
    assert_eq!(billing["max_attempts"], from("max_attempts", "4"));
    assert_eq!(billing["initial_backoff"], "1ms (attribute)");
    assert_eq!(billing["multiplier"], from("multiplier", "3"));
    assert_eq!(billing["max_backoff"], from("max_backoff", "50ms"));
    assert_eq!(billing["jitter"], from("jitter", "none"));
    for key in TIMER_KEYS.iter().chain(&HEDGE_KEYS) {
        assert!(!billing.contains_key(*key), "{key}: {billing:?}");
    }
    assert_eq!(billing.len(), 7, "{billing:?}");
    // The mode and attempts the calls ran with.
    assert_eq!(resolved(o, "billing"), ("adaptive", 4));
    assert_eq!(resolved(o, "fixed"), ("standard", 2));
    // `slow_a` writes deadline: the attempt timeout and its shape come from outside.
    let slow_a = explained(o, "slow_a");
    assert_eq!(slow_a["attempt_timeout"], from("attempt_timeout", "2s"));
    assert_eq!(
        slow_a["attempt_timeout_multiplier"],
        from("attempt_timeout_multiplier", "1.5")
    );
    assert_eq!(
        slow_a["max_attempt_timeout"],
        from("max_attempt_timeout", "4s")
    );
    assert_eq!(slow_a["deadline"], "600s (attribute)");
    assert_eq!(slow_a["initial_backoff"], from("initial_backoff", "2ms"));
    // `slow_b` writes attempt_timeout: the deadline comes from outside.
    let slow_b = explained(o, "slow_b");
    assert_eq!(slow_b["attempt_timeout"], "1s (attribute)");
    assert_eq!(slow_b["deadline"], from("deadline", "30s"));
    // `hedged` writes hedge_after, which stays the attribute's; its bounds and max_in_flight
    // come from outside.
    let hedged = explained(o, "hedged");
    assert_eq!(hedged["hedge_after"], "50ms (attribute)");
    assert_eq!(hedged["max_in_flight"], from("max_in_flight", "3"));
    assert_eq!(hedged["min_hedge_after"], from("min_hedge_after", "2ms"));
    assert_eq!(hedged["max_hedge_after"], from("max_hedge_after", "300ms"));
    // A timed function that does not hedge lists the timer keys alone; the hedged one, which
    // has no timer, the hedging keys alone.
    for key in TIMER_KEYS {
        assert!(
            slow_b.contains_key(key) && !hedged.contains_key(key),
            "{key}"
        );
    }
    for key in HEDGE_KEYS {
        assert!(
            !slow_a.contains_key(key) && !slow_b.contains_key(key),
            "{key}"
        );
    }
    // One warning per untimed function of the profile and timer key (billing, fixed, hedged),
    // per function that does not hedge and hedging key (billing, fixed, slow_a, slow_b), and
    // per key a function writes over another value from outside (billing: initial_backoff;
    // fixed: mode, max_attempts, initial_backoff; slow_a: deadline; slow_b: attempt_timeout;
    // hedged: hedge_after).
    let untimed: Vec<&String> = o
        .warnings
        .iter()
        .filter(|w| w.contains("its attribute sets neither attempt_timeout nor deadline"))
        .collect();
    assert_eq!(untimed.len(), 12, "{:?}", o.warnings);
    let unhedged = o
        .warnings
        .iter()
        .filter(|w| w.contains("its attribute does not set hedge_after"))
        .count();
    assert_eq!(unhedged, 16, "{:?}", o.warnings);
    let mut shadowed: Vec<(&str, &str)> = o
        .warnings
        .iter()
        .filter(|w| w.contains(", which is used (the code's values take precedence"))
        .map(|w| {
            let function = w.split('`').nth(1).unwrap();
            let key = w.split(" (").nth(1).unwrap().split(' ').next().unwrap();
            (function, key)
        })
        .collect();
    shadowed.sort_unstable();
    assert_eq!(
        shadowed,
        [
            ("billing", "initial_backoff"),
            ("fixed", "initial_backoff"),
            ("fixed", "max_attempts"),
            ("fixed", "mode"),
            ("hedged", "hedge_after"),
            ("slow_a", "deadline"),
            ("slow_b", "attempt_timeout"),
        ],
        "{:?}",
        o.warnings
    );
    assert_eq!(o.warnings.len(), 35, "{:?}", o.warnings);
    // `explain` shows each shadowed value beside the attribute's.
    let shadow = |function: &str, key: &str| {
        o.shadowed
            .get(&(function.to_string(), key.to_string()))
            .map(|(v, s)| format!("{v} ({s})"))
    };
    assert_eq!(shadow("slow_a", "deadline"), Some(from("deadline", "30s")));
    assert_eq!(shadow("fixed", "mode"), Some(from("mode", "adaptive")));
    assert_eq!(shadow("fixed", "multiplier"), None);
    assert_eq!(o.shadowed.len(), 7, "{:?}", o.shadowed);
}

#[test]
fn every_key_from_the_environment() {
    let vars: Vec<(String, &str)> = EVERY_KEY
        .iter()
        .map(|(k, v)| (format!("RETRY_BILLING_EU_{}", k.to_uppercase()), *v))
        .collect();
    let env: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let o = run("every-env", &env, None, None);
    check_every_key(&o, &|key| {
        format!("env RETRY_BILLING_EU_{}", key.to_uppercase())
    });
    // `plain` has no profile: none of it applies.
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
}

#[test]
fn every_key_from_the_file() {
    let mut file = String::from("[default]\nmax_attempts = 5\n\n[profile.billing-eu]\n");
    for (k, v) in EVERY_KEY {
        let value = match k {
            "max_attempts" | "multiplier" | "attempt_timeout_multiplier" | "max_in_flight" => {
                v.to_string()
            }
            _ => format!("\"{v}\""),
        };
        file.push_str(&format!("{k} = {value}\n"));
    }
    let o = run("every-file", &[], Some(&file), None);
    let path = temp_file("every-file");
    // The profile's keys are on lines 5 to 19, in EVERY_KEY's order.
    let line = |key: &str| 5 + EVERY_KEY.iter().position(|(k, _)| *k == key).unwrap();
    check_every_key(&o, &|key| format!("file {}:{}", path.display(), line(key)));
    let plain = explained(&o, "plain");
    assert_eq!(
        plain["max_attempts"],
        format!("5 (file {}:2)", path.display())
    );
}

#[test]
fn an_incoherent_value_from_outside_is_ignored_with_a_warning() {
    // `plain` writes initial_backoff = "1ms": a max_backoff below it is ignored.
    let o = run(
        "incoherent",
        &[("RETRY_MAX_BACKOFF", "500us"), ("RETRY_MULTIPLIER", "1.5")],
        None,
        None,
    );
    assert_eq!(explained(&o, "plain")["max_backoff"], "20s (default)");
    assert_eq!(
        explained(&o, "plain")["multiplier"],
        "1.5 (env RETRY_MULTIPLIER)"
    );
    let expected: Vec<String> = ["plain", "billing", "fixed"]
        .iter()
        .map(|f| {
            format!(
                "ignoring RETRY_MAX_BACKOFF (max_backoff = 500µs) for `{f}`: max_backoff \
                 would be below initial_backoff"
            )
        })
        .collect();
    assert_eq!(o.warnings, expected);
    // The functions that write no backoff take it: 500us alone lowers initial_backoff too.
    assert_eq!(
        explained(&o, "slow_a")["initial_backoff"],
        "500µs (default)"
    );
    assert_eq!(
        explained(&o, "slow_a")["max_backoff"],
        "500µs (env RETRY_MAX_BACKOFF)"
    );
}

/// The end of every warning about a value the code shadows, after `writes KEY = VALUE`.
fn precedence(writer: &str, key: &str) -> String {
    format!(
        ", which is used (the code's values take precedence over the environment and the config \
         file, as in the AWS SDKs: code, then environment, then shared config file); leave {key} \
         out of the {writer} to set it from outside"
    )
}

#[test]
fn a_variable_the_attribute_shadows_is_one_warning() {
    let o = run("shadow-env", &[("RETRY_MAX_ATTEMPTS", "1")], None, None);
    // The functions that leave max_attempts open take the variable; `fixed` writes 2.
    assert_eq!(resolved(&o, "plain"), ("standard", 1));
    assert_eq!(resolved(&o, "billing"), ("standard", 1));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    assert_eq!(o.second["fixed"], 2);
    // Two rounds of calls, one warning: the function, the key, the variable and its value, the
    // attribute's value, and why.
    assert_eq!(
        o.warnings,
        [format!(
            "ignoring RETRY_MAX_ATTEMPTS (max_attempts = 1) for `fixed`: its attribute writes \
             max_attempts = 2{}",
            precedence("attribute", "max_attempts")
        )]
    );
    // `explain` shows the shadowed value beside the one in effect.
    let key = |f: &str| (f.to_string(), "max_attempts".to_string());
    assert_eq!(
        o.explained[&key("fixed")],
        ("2".to_string(), "attribute".to_string())
    );
    assert_eq!(
        o.shadowed[&key("fixed")],
        ("1".to_string(), "env RETRY_MAX_ATTEMPTS".to_string())
    );
    assert_eq!(
        o.explained[&key("plain")],
        ("1".to_string(), "env RETRY_MAX_ATTEMPTS".to_string())
    );
    assert!(!o.shadowed.contains_key(&key("plain")), "{:?}", o.shadowed);
    assert_eq!(o.shadowed.len(), 1, "{:?}", o.shadowed);
    assert_eq!(o.shown[0], "fixed (profile billing-eu)");
    assert_eq!(
        o.shown[2],
        "  behavior                    classic    default"
    );
    assert_eq!(
        o.shown[3],
        "  max_attempts                2          attribute; shadows 1 (env RETRY_MAX_ATTEMPTS)"
    );
    assert_eq!(
        o.shown[4],
        "  initial_backoff             1ms        attribute"
    );
    // `fixed` has no timer and does not hedge: its seven other keys, no more.
    assert_eq!(o.shown.len(), 8, "{:?}", o.shown);
    assert_eq!(
        o.shown[7],
        "  jitter                      full       default"
    );
}

#[test]
fn a_profile_variable_the_attribute_shadows_is_one_warning() {
    let o = run(
        "shadow-profile-env",
        &[("RETRY_BILLING_EU_MODE", "adaptive")],
        None,
        None,
    );
    assert_eq!(resolved(&o, "billing"), ("adaptive", 3));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    assert_eq!(
        o.warnings,
        [format!(
            "ignoring RETRY_BILLING_EU_MODE (mode = adaptive) for `fixed`: its attribute writes \
             mode = standard{}",
            precedence("attribute", "mode")
        )]
    );
    assert_eq!(
        o.shadowed[&("fixed".to_string(), "mode".to_string())],
        (
            "adaptive".to_string(),
            "env RETRY_BILLING_EU_MODE".to_string()
        )
    );
}

#[test]
fn a_file_value_the_attribute_shadows_is_one_warning_naming_the_file_and_profile() {
    let file = "[default]\n\
                max_attempts = 5\n\
                [profile.billing-eu]\n\
                mode = \"adaptive\"\n";
    let o = run("shadow-file", &[], Some(file), None);
    assert_eq!(resolved(&o, "plain"), ("standard", 5));
    assert_eq!(resolved(&o, "billing"), ("adaptive", 5));
    assert_eq!(resolved(&o, "fixed"), ("standard", 2));
    let path = temp_file("shadow-file");
    let path = path.display();
    assert_eq!(
        o.warnings,
        [
            format!(
                "ignoring {path}:4 in [profile.billing-eu] (mode = adaptive) for `fixed`: its \
                 attribute writes mode = standard{}",
                precedence("attribute", "mode")
            ),
            format!(
                "ignoring {path}:2 in [default] (max_attempts = 5) for `fixed`: its attribute \
                 writes max_attempts = 2{}",
                precedence("attribute", "max_attempts")
            ),
        ]
    );
    let shadow = |key: &str| o.shadowed[&("fixed".to_string(), key.to_string())].clone();
    assert_eq!(
        shadow("mode"),
        ("adaptive".into(), format!("file {path}:4"))
    );
    assert_eq!(
        shadow("max_attempts"),
        ("5".into(), format!("file {path}:2"))
    );
}

#[test]
fn a_value_the_attribute_leaves_open_applies_without_a_warning() {
    let o = run(
        "not-shadowed",
        &[("RETRY_MULTIPLIER", "3"), ("RETRY_JITTER", "none")],
        Some("[profile.billing-eu]\nmax_backoff = \"50ms\"\n"),
        None,
    );
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    assert!(o.shadowed.is_empty(), "{:?}", o.shadowed);
    let fixed = explained(&o, "fixed");
    assert_eq!(fixed["multiplier"], "3 (env RETRY_MULTIPLIER)");
    assert_eq!(fixed["jitter"], "none (env RETRY_JITTER)");
    assert_eq!(
        fixed["max_backoff"],
        format!("50ms (file {}:2)", temp_file("not-shadowed").display())
    );
}

#[test]
fn a_shadowed_value_is_a_tracing_event_with_a_subscriber() {
    let o = run(
        "shadow-traced",
        &[(TRACE, "1"), ("RETRY_BILLING_EU_MAX_ATTEMPTS", "9")],
        None,
        None,
    );
    assert_eq!(resolved(&o, "billing"), ("standard", 9));
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    assert_eq!(
        o.traced,
        [format!(
            "ignoring RETRY_BILLING_EU_MAX_ATTEMPTS (max_attempts = 9) for `fixed`: its \
             attribute writes max_attempts = 2{}",
            precedence("attribute", "max_attempts")
        )]
    );
}

#[test]
fn a_policy_built_in_code_is_warned_about_once_over_many_calls() {
    let o = run(
        "shadow-policy",
        &[(POLICY, "1"), ("RETRY_MAX_ATTEMPTS", "1")],
        None,
        None,
    );
    // Both policies write max_attempts = 2, which every call runs with.
    let calls = vec![2; POLICY_CALLS as usize];
    assert_eq!(o.policy["kept"], calls);
    assert_eq!(o.policy["built"], calls);
    // One warning for `fixed`, and one per policy: the kept policy resolves once, the one
    // built for each call on each call, and says the same thing once.
    let policy = |name: &str| {
        format!(
            "ignoring RETRY_MAX_ATTEMPTS (max_attempts = 1) for `{name}`: its Policy writes \
             max_attempts = 2{}",
            precedence("Policy", "max_attempts")
        )
    };
    assert_eq!(o.warnings.len(), 3, "{:?}", o.warnings);
    assert!(o.warnings[0].contains("for `fixed`: its attribute writes"));
    assert_eq!(o.warnings[1..], [policy("kept"), policy("built")]);
    assert_eq!(
        o.shadowed[&("kept".to_string(), "max_attempts".to_string())],
        ("1".to_string(), "env RETRY_MAX_ATTEMPTS".to_string())
    );
}

/// A `Policy` with values that `Policy::build` refuses, used without it, says what is wrong
/// with it once (as a bad value from the environment does), however many times it is built.
#[test]
fn a_policy_not_checked_with_build_says_what_build_would_refuse_once() {
    let o = run("unchecked", &[(UNCHECKED, "1")], None, None);
    // The policy runs with what it can use: one attempt, no budget.
    assert_eq!(o.policy["unchecked"], vec![1; POLICY_CALLS as usize]);
    let said = |problem: &str| {
        format!(
            "`unchecked`'s Policy has a problem that `Policy::build` refuses, and runs with \
             what it can use of it: {problem}"
        )
    };
    let expected = Policy::new()
        .max_attempts(0)
        .budget("20")
        .build()
        .unwrap_err();
    assert_eq!(expected.problems().len(), 2, "{expected}");
    let warned: Vec<String> = expected.problems().iter().map(|p| said(p)).collect();
    assert_eq!(o.warnings, warned);
}

/// A policy without timeouts in code (a `Policy`) cannot time out, so a timeout
/// from outside is one warning per policy and ignored, as for an untimed `#[retry]` function.
#[test]
fn a_timeout_from_outside_is_one_warning_for_an_untimed_policy() {
    let o = run(
        "untimed-policy",
        &[(POLICY, "1"), ("RETRY_DEADLINE", "5s")],
        None,
        None,
    );
    assert_eq!(o.policy["kept"], vec![2; POLICY_CALLS as usize]);
    for name in ["kept", "built"] {
        let warned: Vec<&String> = o
            .warnings
            .iter()
            .filter(|w| w.contains(&format!("`{name}`")))
            .collect();
        assert_eq!(warned.len(), 1, "{name}: {:?}", o.warnings);
        assert!(
            warned[0].contains("RETRY_DEADLINE")
                && warned[0].contains("its Policy sets neither attempt_timeout nor deadline"),
            "{warned:?}"
        );
    }
}

#[test]
fn a_misspelt_value_says_what_it_meant() {
    let o = run(
        "did-you-mean",
        &[
            ("RETRY_MODE", "standrd"),
            ("RETRY_BEHAVIOR", "2025"),
            ("RETRY_BILLING_EU_JITTER", "ful"),
        ],
        Some("[profile.billing-eu]\nhedge_after = \"p955\"\n"),
        None,
    );
    let path = temp_file("did-you-mean");
    assert_eq!(
        o.warnings,
        [
            "ignoring RETRY_MODE=\"standrd\": did you mean \"standard\"? mode is \"standard\" \
             or \"adaptive\""
                .to_string(),
            "ignoring RETRY_BEHAVIOR=\"2025\": did you mean \"2026\"? behavior is \"classic\" \
             or \"2026\""
                .to_string(),
            format!(
                "{}:2: hedge_after = \"p955\": did you mean \"p95\"? hedge_after is a duration \
                 above zero with a unit, such as \"50ms\", or a percentile of the function's \
                 latency: \"p50\", \"p90\", \"p95\" or \"p99\"; ignored",
                path.display()
            ),
            "ignoring RETRY_BILLING_EU_JITTER=\"ful\": did you mean \"full\"? jitter is \
             \"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]"
                .to_string(),
        ]
    );
    // Ignored: the defaults apply.
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
    assert_eq!(explained(&o, "billing")["jitter"], "full (default)");
    assert_eq!(explained(&o, "plain")["behavior"], "classic (default)");
}

/// A home directory holding `~/.aws/config` with `text`.
fn aws_home(case: &str, text: &str) -> PathBuf {
    let home = std::env::temp_dir().join(format!("retry-aws-home-{}-{case}", std::process::id()));
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws").join("config"), text).unwrap();
    home
}

#[test]
fn aws_config_reads_the_aws_variables_and_shared_config_file() {
    let home = aws_home(
        "aws",
        "[default]\nmax_attempts = 9\n\n[profile ops]\nretry_mode = adaptive\nmax_attempts = 5\n",
    );
    let config = home.join(".aws").join("config");
    let o = run(
        "aws",
        &[
            (AWS, "1"),
            ("HOME", home.to_str().unwrap()),
            ("AWS_PROFILE", "ops"),
            ("AWS_MAX_ATTEMPTS", "4"),
            ("AWS_NEW_RETRIES_2026", "true"),
        ],
        None,
        None,
    );
    // The variable over the file; the file's profile `ops`, not `[default]`.
    assert_eq!(resolved(&o, "aws"), ("adaptive", 4));
    let explained_aws = explained(&o, "aws");
    assert_eq!(explained_aws["max_attempts"], "4 (env AWS_MAX_ATTEMPTS)");
    assert_eq!(
        explained_aws["mode"],
        format!("adaptive (aws config {}:5)", config.display())
    );
    assert_eq!(explained_aws["behavior"], "2026 (env AWS_NEW_RETRIES_2026)");
    // A function without `aws_config` reads none of it.
    assert_eq!(resolved(&o, "plain"), ("standard", 3));
    assert_eq!(explained(&o, "plain")["behavior"], "classic (default)");
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn the_retry_settings_come_before_the_aws_ones() {
    let home = aws_home(
        "aws-order",
        "[default]\nretry_mode = adaptive\nmax_attempts = 5\n",
    );
    let o = run(
        "aws-order",
        &[
            (AWS, "1"),
            ("HOME", home.to_str().unwrap()),
            ("AWS_MAX_ATTEMPTS", "4"),
            ("RETRY_MAX_ATTEMPTS", "2"),
            ("AWS_RETRY_MODE", "legacy"),
        ],
        Some("[default]\nmode = \"standard\"\n"),
        None,
    );
    // `RETRY_*` over `AWS_*`; `RETRY_CONFIG_FILE` over the AWS config file.
    assert_eq!(resolved(&o, "aws"), ("standard", 2));
    let explained_aws = explained(&o, "aws");
    assert_eq!(explained_aws["max_attempts"], "2 (env RETRY_MAX_ATTEMPTS)");
    assert!(
        explained_aws["mode"].starts_with("standard (file "),
        "{explained_aws:?}"
    );
    assert_eq!(
        o.warnings,
        [
            "ignoring AWS_RETRY_MODE=\"legacy\": the legacy mode has no equivalent here; \
          \"standard\" or \"adaptive\""
        ]
    );
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn an_aws_profile_that_names_no_profile_is_one_warning() {
    let home = aws_home(
        "aws-no-profile",
        "[default]\nmax_attempts = 9\n\n[profile ops]\nretry_mode = adaptive\n",
    );
    let config = home.join(".aws").join("config");
    let o = run(
        "aws-no-profile",
        &[
            (AWS, "1"),
            ("HOME", home.to_str().unwrap()),
            ("AWS_PROFILE", "opz"),
        ],
        None,
        None,
    );
    // As in the AWS SDKs, no other profile stands in: not `[default]`'s max_attempts = 9, nor
    // `ops`'s mode. The defaults apply.
    assert_eq!(resolved(&o, "aws"), ("standard", 3));
    assert_eq!(explained(&o, "aws")["max_attempts"], "3 (default)");
    let why = format!(
        "AWS_PROFILE=\"opz\" names no profile of the AWS config file {} (its profiles: \
         default, ops) nor of the shared credentials file: no profile's retry_mode or \
         max_attempts apply, not even [default]'s (the AWS SDKs read the named profile alone)",
        config.display()
    );
    assert_eq!(o.warnings, std::slice::from_ref(&why));
    // `explain` says why the defaults apply, for the function that reads the AWS settings.
    assert_eq!(o.notes, [("aws".to_string(), why.clone())]);
    assert_eq!(o.aws_shown.last(), Some(&format!("  note: {why}")));
    std::fs::remove_dir_all(&home).unwrap();
}
