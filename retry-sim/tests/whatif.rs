//! `retry-sim what-if` as a user runs it: the built binary on the sample files of
//! `retry-sim/examples/` (those the README and SIMULATION.md show), its `--check`s passing and
//! failing by the exit status, its `--json` read back, its files, its problems; the samples in
//! the Markdown files are the files; the reproductions of "Retries upon retries" and the SRE
//! book's 64x at a reduced size; and mutated topologies never make the reader panic.

use retry_sim::whatif::measure;
use retry_sim::whatif::simulate;
use retry_sim::whatif::topology::{self, Options};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn examples() -> PathBuf {
    root().join("retry-sim/examples")
}

/// The binary with `args`, run from the workspace's root (as the docs' commands are).
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retry-sim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_scenario_input_and_output() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for word in [
        "brooker",
        "outage",
        "throttling",
        "metastable",
        "normal",
        "side-by-side",
        "hedging",
        "aws2026",
        "guards",
        "callgraph",
        "all",
        "--quick",
        "--out DIR",
        "what-if TOPOLOGY",
        "--config FILE",
        "--aws-config FILE",
        "--policy [TIER:]KEYS",
        "--seed N",
        "--duration D",
        "grpc = \"FILE.json\"",
        "--json",
        "--check EXPR",
        "NAME.csv",
        "NAME_series.csv",
        "NAME_requests.svg",
        "NAME_goodput.svg",
        "exit status",
    ] {
        assert!(
            help.contains(word),
            "--help does not mention {word}:\n{help}"
        );
    }
    let sub = run(&["what-if", "--help"]);
    assert!(sub.status.success());
    assert!(text(&sub.stdout).contains("--check EXPR"));
    let wrong = run(&["nonsense"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(text(&wrong.stderr).contains("unknown argument `nonsense`"));
}

/// The SRE book's sample, shortened: the database down from 10 s to the end of 12 s of calls.
const SRE: [&str; 4] = [
    "what-if",
    "retry-sim/examples/sre-64x.toml",
    "--duration",
    "12s",
];

#[test]
fn a_check_that_holds_passes_and_one_that_fails_makes_the_exit_status_1() {
    let holds = run(&[
        SRE[0],
        SRE[1],
        SRE[2],
        SRE[3],
        "--check",
        "tier.db.amplification_fault >= 60",
        "--check",
        "users.p50 < 10s",
    ]);
    let stdout = text(&holds.stdout);
    assert_eq!(
        holds.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&holds.stderr)
    );
    assert!(
        stdout.contains("pass tier.db.amplification_fault >= 60"),
        "{stdout}"
    );
    assert!(stdout.contains("| db | 2 |"), "{stdout}");
    let fails = run(&[
        SRE[0],
        SRE[1],
        SRE[2],
        SRE[3],
        "--check",
        "tier.db.amplification_fault <= 1.5",
        "--check",
        "users.p50 < 10s",
    ]);
    assert_eq!(fails.status.code(), Some(1));
    let stdout = text(&fails.stdout);
    assert!(
        stdout.contains("FAIL tier.db.amplification_fault <= 1.5"),
        "{stdout}"
    );
    assert!(stdout.contains("pass users.p50 < 10s"), "{stdout}");
    assert!(text(&fails.stderr).contains("check failed: tier.db.amplification_fault <= 1.5"));
}

#[test]
fn json_is_one_object_that_reads_back() {
    let out = run(&[
        SRE[0],
        SRE[1],
        SRE[2],
        SRE[3],
        "--json",
        "--check",
        "tier.db.amplification_fault > 100",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["topology"], "retry-sim/examples/sre-64x.toml");
    assert_eq!(v["duration_s"], 12.0);
    assert_eq!(v["passed"], false);
    assert_eq!(v["checks"][0]["check"], "tier.db.amplification_fault > 100");
    assert_eq!(v["checks"][0]["passed"], false);
    let tiers = v["tiers"].as_array().expect("tiers");
    let names: Vec<&str> = tiers.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["users", "frontend", "backend", "db"]);
    let db = &tiers[3];
    let during = db["amplification_fault"].as_f64().unwrap();
    assert_eq!(v["checks"][0]["value"].as_f64(), Some(during));
    assert!(during > 55.0 && during <= 64.0, "{during}");
    assert_eq!(db["nominal"], 1.0);
    assert!(db["latency_s"]["p99"].as_f64().is_some());
    assert_eq!(db["refused"]["bucket_empty"], 0);
    // Each user call of the outage made four attempts (none succeeds while it lasts).
    let users = &tiers[0];
    assert!(users["amplification_fault"].as_f64().unwrap() > 3.5);
    assert_eq!(users["processes"], 200);
}

#[test]
fn out_writes_the_csv_files_and_the_plots() {
    let dir = std::env::temp_dir().join(format!("retry-sim-whatif-out-{}", std::process::id()));
    let out = run(&[
        "what-if",
        "retry-sim/examples/checkout.toml",
        "--duration",
        "45s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = std::fs::read_to_string(dir.join("checkout.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert!(lines[0].starts_with("tier,processes,requests,"));
    assert_eq!(lines.len(), 7, "users and six tiers:\n{summary}");
    assert!(lines[1].starts_with("users,200,"));
    let series = std::fs::read_to_string(dir.join("checkout_series.csv")).unwrap();
    assert!(
        series.lines().any(|l| l.starts_with("stock,31,")),
        "{series}"
    );
    for svg in ["checkout_requests.svg", "checkout_goodput.svg"] {
        let plot = std::fs::read_to_string(dir.join(svg)).unwrap();
        assert!(
            plot.starts_with("<svg") && plot.contains("inventory"),
            "{svg}"
        );
    }
    // The tables name every input's policy.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("gRPC shop.Payments/Charge of payments.json"),
        "{stdout}"
    );
    assert!(
        stdout.contains("aws-config:7 [profile inventory]"),
        "{stdout}"
    );
    assert!(stdout.contains("retry.toml:19 [profile.web]"), "{stdout}");
}

#[test]
fn bad_input_is_every_problem_at_once_and_nothing_runs() {
    let dir = std::env::temp_dir().join(format!("retry-sim-whatif-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[users]\nrate = 5\ncalls = \"gatway\"\npolicy = { profile = \"frontnd\" }\n\n\
         [tier.gateway]\ncalls = \"orders\"\n\n[tier.orders]\ncalls = \"gateway\"\n",
    )
    .unwrap();
    let out = run(&[
        "what-if",
        bad.to_str().unwrap(),
        "--config",
        "retry-sim/examples/retry.toml",
        "--check",
        "tier.ordrs.p99 < 1s",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing ran, nothing printed");
    let stderr = text(&out.stderr);
    let shown = bad.display().to_string();
    for expected in [
        format!("{shown}:3: no tier `gatway`: did you mean `gateway`?"),
        format!("{shown}:6: the calls go round in a cycle: gateway → orders → gateway"),
        format!(
            "{shown}:4: profile = \"frontnd\": the config file retry-sim/examples/retry.toml has \
             no [profile.frontnd]: did you mean `frontend`?"
        ),
        "problems; nothing was run".to_owned(),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in\n{stderr}"
        );
    }
    // Once the topology is right, a check that names no tier is the one problem.
    std::fs::write(
        &bad,
        "[users]\nrate = 5\ncalls = \"gateway\"\n[tier.gateway]\ncalls = \"orders\"\n[tier.orders]\n",
    )
    .unwrap();
    let out = run(&[
        "what-if",
        bad.to_str().unwrap(),
        "--check",
        "tier.ordrs.p99 < 1s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--check tier.ordrs.p99 < 1s: no tier `ordrs`: did you mean `orders`?"),
        "{stderr}"
    );
    let out = run(&[
        "what-if",
        bad.to_str().unwrap(),
        "--check",
        "tier.orders.p99 < 1",
    ]);
    assert!(text(&out.stderr).contains("`1` needs a unit: p99 is a duration"));
}

/// The fenced blocks of `text` whose info string names a sample (```` ```toml
/// retry-sim/examples/NAME.toml ````), with the file named.
fn samples_shown(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                if let Some(path) = info.split_whitespace().nth(1) {
                    open = Some((path.to_owned(), String::new()));
                } else {
                    open = Some((String::new(), String::new()));
                }
            }
            (Some(_), Some("")) => {
                let (path, body) = open.take().expect("open");
                if path.starts_with("retry-sim/examples/") {
                    out.push((path, body));
                }
            }
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn the_samples_the_docs_show_are_the_files() {
    let mut shown = 0;
    for doc in ["README.md", "SIMULATION.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let samples = samples_shown(&text);
        assert!(!samples.is_empty(), "{doc} shows no sample");
        for (path, body) in samples {
            let file = std::fs::read_to_string(root().join(&path))
                .unwrap_or_else(|e| panic!("{doc} shows {path}, which is not a file: {e}"));
            assert_eq!(body, file, "{doc}'s {path} is not the file");
            shown += 1;
        }
    }
    assert!(shown >= 4, "{shown}");
    // Every sample topology loads.
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml")
            && path.file_name().unwrap() != "retry.toml"
        {
            let loaded = topology::load(&path, &Options::default());
            assert!(loaded.is_ok(), "{}: {:?}", path.display(), loaded.err());
        }
    }
}

/// A sample's text with `from` replaced by `to` (a smaller size for a test), loaded.
fn sample(name: &str, from: &str, to: &str) -> retry_sim::whatif::model::Plan {
    let path = examples().join(name);
    let text = std::fs::read_to_string(&path).unwrap().replace(from, to);
    let (plan, _) = topology::load_str(name, &text, &examples(), &Options::default(), &|_| None)
        .unwrap_or_else(|p| panic!("{p:?}"));
    plan
}

#[test]
fn retries_upon_retries_send_64_leaf_requests_per_user_call() {
    // Thom Wright's three servers in series, 1,000 user calls (the sample makes 10,000).
    let plan = sample(
        "retries-upon-retries.toml",
        "sequential = 10000",
        "sequential = 1000",
    );
    let outcome = simulate::run(&plan, None);
    let figures = measure::figures(&plan, &outcome);
    let leaf = figures.iter().find(|f| f.name == "c").unwrap();
    assert_eq!(outcome.users.requests, 1000);
    let leaf_requests = leaf.requests as f64;
    assert!(
        (leaf_requests / 64_000.0 - 1.0).abs() <= 0.01,
        "{leaf_requests}"
    );
    // Every hop makes its four attempts: 4, 16 and 64 per user call, exactly.
    let per_call: Vec<f64> = figures[1..].iter().map(|f| f.per_call).collect();
    assert_eq!(per_call, [4.0, 16.0, 64.0]);
    assert_eq!(figures[0].goodput, 0.0);
}

#[test]
fn the_sre_books_three_layers_of_four_attempts_send_64_per_user_request() {
    // The sample's fleet at a tenth of its clients.
    let plan = sample("sre-64x.toml", "clients = 200", "clients = 20");
    let outcome = simulate::run(&plan, None);
    let figures = measure::figures(&plan, &outcome);
    let db = figures.iter().find(|f| f.name == "db").unwrap();
    let during = db.amplification_fault().unwrap();
    // The calls offered in the outage's last second send part of their requests after it.
    assert!(during > 62.0 && during <= 64.0, "{during}");
    let backend = figures.iter().find(|f| f.name == "backend").unwrap();
    assert!(backend.amplification_fault().unwrap() > 15.5, "{backend:?}");
    // Back within a second of its end: the retries of the calls it failed take less.
    let back = db.recovery.unwrap();
    assert!((0.0..1.0).contains(&back), "{back}");
}

#[test]
fn a_seed_gives_the_same_run() {
    let plan = sample("checkout.toml", "duration = \"100s\"", "duration = \"45s\"");
    let a = measure::figures(&plan, &simulate::run(&plan, None));
    let b = measure::figures(&plan, &simulate::run(&plan, None));
    let view = |f: &[measure::Figures]| format!("{f:?}");
    assert_eq!(view(&a), view(&b));
    let other = retry_sim::whatif::model::Plan { seed: 2, ..plan };
    let c = measure::figures(&other, &simulate::run(&other, None));
    assert_ne!(view(&a), view(&c));
}

/// A generator of mutations (xorshift), seeded.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `text` with one to four edits: a byte deleted, duplicated or replaced, a line dropped
    /// or repeated, a token of the format inserted.
    fn mutate(&mut self, text: &str) -> String {
        const TOKENS: [&str; 16] = [
            "=",
            "[",
            "]",
            "{",
            "}",
            "\"",
            ",",
            "\n",
            "[[fault]]\n",
            "-1",
            "1e309",
            "\"0s\"",
            "tier",
            "calls = \"users\"",
            "replica = 99",
            "ü",
        ];
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..1 + self.below(4) {
            if bytes.is_empty() {
                break;
            }
            let at = self.below(bytes.len());
            match self.below(6) {
                0 => {
                    bytes.remove(at);
                }
                1 => {
                    let b = bytes[at];
                    bytes.insert(at, b);
                }
                2 => bytes[at] = (self.next() % 128) as u8,
                3 => {
                    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
                    let drop = self.below(lines.len());
                    bytes = lines
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != drop)
                        .flat_map(|(_, l)| l.iter().copied().chain([b'\n']))
                        .collect();
                }
                4 => {
                    let lines: Vec<Vec<u8>> =
                        bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                    let twice = self.below(lines.len());
                    let mut out = Vec::new();
                    for (i, l) in lines.iter().enumerate() {
                        out.extend_from_slice(l);
                        out.push(b'\n');
                        if i == twice {
                            out.extend_from_slice(l);
                            out.push(b'\n');
                        }
                    }
                    bytes = out;
                }
                _ => {
                    let token = TOKENS[self.below(TOKENS.len())];
                    bytes.splice(at..at, token.bytes());
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[test]
fn ten_thousand_mutated_files_never_panic() {
    let mut sources: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        sources.push((name, std::fs::read_to_string(&path).unwrap()));
    }
    sources.sort();
    let mut m = Mutator(0x9e37_79b9_7f4a_7c15);
    let mut rejected = 0;
    for i in 0..10_000 {
        let (name, text) = &sources[i % sources.len()];
        let mutated = m.mutate(text);
        // Every reader of the inputs: the topology (with the files it names), the config
        // file, the AWS config file, and a check.
        let loaded =
            topology::load_str(name, &mutated, &examples(), &Options::default(), &|_| None);
        rejected += usize::from(loaded.is_err());
        let _ = retry_sim::whatif::config_file::parse(name, &mutated);
        let _ = retry_sim::whatif::aws_file::parse(name, &mutated);
        let line = mutated.lines().nth(m.below(20)).unwrap_or("");
        let _ = retry_sim::whatif::check::parse(line, &["a", "db"], true);
    }
    // Most mutations break something, and each is reported rather than run.
    assert!(rejected > 5_000, "{rejected}");
}

#[test]
fn each_input_drives_its_tier() {
    // checkout.toml to the end of the ledger's throttling (40 s to 50 s).
    let plan = sample("checkout.toml", "duration = \"100s\"", "duration = \"55s\"");
    let outcome = simulate::run(&plan, None);
    let figures = measure::figures(&plan, &outcome);
    let tier = |name: &str| figures.iter().find(|f| f.name == name).unwrap();
    // The ledger throttles, and the payments' gRPC retry throttling (its service config's
    // `retryThrottling`) stops retrying: its refusals are the budget's.
    assert!(tier("ledger").throttled > 100, "{:?}", tier("ledger"));
    assert!(
        tier("payments").refused.budget_exhausted > 100,
        "{:?}",
        tier("payments")
    );
    // The inventory (its AWS profile: adaptive, from the AWS config file) retries the dead
    // replica of the stock: retries arrive there.
    assert!(tier("stock").retries > 100, "{:?}", tier("stock"));
    // The web tier runs behind the layer and tells the users not to retry: they never do.
    let users = tier("users");
    assert_eq!(users.attempts, users.calls);
    assert!(tier("web").told_not_to_retry > 0);
    // The users' attempt timeout (2 s, written in the topology) bounds their calls.
    assert!(users.latency.p999 < 2.1, "{:?}", users.latency);
}

#[test]
fn a_policy_that_hedges_sends_a_second_request_to_a_slow_tier() {
    let text = "duration = \"20s\"\n[users]\nclients = 20\nrate = 5\ncalls = \"api\"\n\
                [tier.api]\ncalls = \"slow\"\npolicy = { hedge_after = \"20ms\", bucket = \"none\" }\n\
                [tier.slow]\nreplicas = 4\nlatency = \"5ms\"\n\
                [[fault]]\ntier = \"slow\"\nreplica = 0\nkind = \"brownout\"\nfactor = 20\n";
    let run = |text: &str| {
        let (plan, _) = topology::load_str(
            "hedge.toml",
            text,
            &examples(),
            &Options::default(),
            &|_| None,
        )
        .unwrap_or_else(|p| panic!("{p:?}"));
        let outcome = simulate::run(&plan, None);
        let slow_calls = outcome.users.latencies.iter().filter(|&&l| l > 0.1).count() as f64
            / outcome.users.latencies.len() as f64;
        (measure::figures(&plan, &outcome), slow_calls)
    };
    let (hedged, slow_hedged) = run(text);
    let (plain, slow_plain) = run(&text.replace("hedge_after = \"20ms\", ", ""));
    // One replica in four answers in 100 ms: its requests are hedged after 20 ms (without a
    // bucket, whose tokens hedges spend), the others answer before: about a quarter more
    // requests.
    let slow = hedged.iter().find(|f| f.name == "slow").unwrap();
    assert!(slow.per_call > 1.15 && slow.per_call < 1.4, "{slow:?}");
    let plain_slow = plain.iter().find(|f| f.name == "slow").unwrap();
    assert_eq!(plain_slow.per_call, 1.0);
    // A quarter of the user calls take over 100 ms without hedging; with it, only those whose
    // hedge meets the slow replica too (a sixteenth).
    assert!(slow_plain > 0.2 && slow_plain < 0.3, "{slow_plain}");
    assert!(slow_hedged < 0.1, "{slow_hedged}");
}

/// A topology from `text`, loaded (its problems, if any).
fn load(text: &str) -> Result<retry_sim::whatif::model::Plan, Vec<String>> {
    topology::load_str(
        "guards.toml",
        text,
        &examples(),
        &Options::default(),
        &|_| None,
    )
    .map(|(plan, _)| plan)
    .map_err(|problems| problems.into_iter().map(|p| p.to_string()).collect())
}

#[test]
fn a_policys_guards_are_each_processs_own_and_refuse_as_they_would_in_it() {
    // 10 user processes offer 20 calls a second each for 10 s; each keeps to a quota of 10 a
    // second (10 at once after a quiet spell): each sends at most 10 + 10 * 10 of its calls.
    let text = "duration = \"10s\"\n[users]\nclients = 10\nrate = 20\ncalls = \"api\"\n\
                policy = { guard = [{ quota = 10 }] }\n[tier.api]\nlatency = \"2ms\"\n";
    let plan = load(text).unwrap();
    let outcome = simulate::run(&plan, None);
    let figures = measure::figures(&plan, &outcome);
    let (users, api) = (&figures[0], &figures[1]);
    assert!(
        users
            .policy
            .contains("guard = [{ quota = 10, per = \"1s\" }]"),
        "{}",
        users.policy
    );
    assert!(api.requests <= 10 * 110, "{api:?}");
    // Each process its own quota: together they send several times what one would.
    assert!(api.requests > 5 * 110, "{api:?}");
    assert_eq!(users.refused.guard, users.calls - api.requests, "{users:?}");
    assert_eq!(users.calls_failed, users.refused.guard);

    // A wait of a second for a turn: fewer calls refused, none sent faster than the quota
    // (the calls offered until 10 s are sent until 11 s: 10 + 10 * 11 each at most).
    let waiting =
        load(&text.replace("{ quota = 10 }", "{ quota = 10, max_wait = \"1s\" }")).unwrap();
    let outcome = simulate::run(&waiting, None);
    let waited = measure::figures(&waiting, &outcome);
    assert!(waited[1].requests <= 10 * 120, "{:?}", waited[1]);
    assert!(waited[1].requests >= api.requests, "{:?}", waited[1]);
    assert!(
        waited[0].latency.p99 >= 0.5,
        "calls waited: {:?}",
        waited[0].latency
    );

    // A bulkhead of one attempt per process, and a quota it never reaches, side by side: the
    // users' one call at a time never meets either.
    let sequential = "duration = \"5s\"\n[users]\nclients = 3\nsequential = 50\ncalls = \"api\"\n\
                      policy = { guard = [{ bulkhead = 1 }, { quota = 1000, per = \"1s\", burst = 5 }, \
                      { adaptive_concurrency = true }, { concurrency_budget = \"20%\", min_concurrency = 3 }, \
                      { adaptive_throttle = 2.0, window = \"10s\" }] }\n[tier.api]\nlatency = \"2ms\"\n";
    let plan = load(sequential).unwrap();
    let figures = measure::figures(&plan, &simulate::run(&plan, None));
    assert_eq!(figures[0].calls, 150);
    assert_eq!(figures[0].refused.guard, 0, "{:?}", figures[0]);
    assert_eq!(figures[1].requests, 150);
}

#[test]
fn a_guard_written_wrong_is_a_problem_on_its_line_with_what_to_write() {
    let text = "[users]\nrate = 5\ncalls = \"api\"\n\
                policy = { guard = [{ bulkhed = 4 }, { quota = 10, max_wiat = \"1s\" }, \"bulkhead\", \
                { bulkhead = 4, quota = 3 }, { adaptive_concurrency = true, window = \"1s\" }, \
                { bulkhead = 0 }, { quota = 10, per = 1 }] }\n\
                [tier.api]\npolicy = { guard = { bulkhead = 4 } }\ncalls = \"db\"\n[tier.db]\n";
    let problems = load(text).unwrap_err();
    for expected in [
        "a guard is named by its kind: did you mean `bulkhead`?",
        "`max_wiat` is not an option of `quota`: did you mean `max_wait`?",
        "guard = [.., \"bulkhead\", ..]: a guard is a table naming its kind, such as { bulkhead = 4 }",
        "one guard per table: `bulkhead` and `quota` are two",
        "`window` is not an option of `adaptive_concurrency`: it takes none",
        "bulkhead = 0: bulkhead is a whole number from 1 to 1000000",
        "per = 1: per needs a unit",
        "guard = { bulkhead = 4 }: guard is a list of guards",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "missing {expected:?} in {problems:#?}"
        );
    }
    assert!(
        problems
            .iter()
            .all(|p| p.starts_with("guards.toml:4") || p.starts_with("guards.toml:6")),
        "{problems:#?}"
    );
}

#[test]
fn a_quota_keeps_a_tier_to_its_dependencys_rate_limit() {
    // The sample for 20 s: the search answers 429 above 500 requests a second, and is offered
    // 600 calls a second.
    let run = |policy: &str| {
        let options = Options {
            policies: vec![policy.to_owned()]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect(),
            ..Options::default()
        };
        let name = "rate-limited.toml";
        let text = std::fs::read_to_string(examples().join(name))
            .unwrap()
            .replace("duration = \"60s\"", "duration = \"20s\"");
        let (plan, _) = topology::load_str(name, &text, &examples(), &options, &|_| None)
            .unwrap_or_else(|p| panic!("{p:?}"));
        let outcome = simulate::run(&plan, None);
        // The most requests the search got in any second (ten bins of 100 ms).
        let bins: Vec<u64> = outcome.tiers[1].bins.iter().map(|b| b.arrived).collect();
        let busiest = bins.windows(10).map(|w| w.iter().sum::<u64>()).max();
        (
            measure::figures(&plan, &outcome),
            outcome.simulated,
            busiest.unwrap_or(0),
        )
    };
    let (plain, _, busiest_plain) = run("");
    let (quota, simulated, busiest) = run("api: guard = [{ quota = 250, burst = 25 }]");
    let (search, search_quota) = (&plain[2], &quota[2]);
    assert!(search.throttled > 5_000, "{search:?}");
    assert_eq!(search_quota.throttled, 0, "{search_quota:?}");
    // Two processes of 250 a second, 25 at once: at most 2 * (25 + 250 * T) requests over the
    // run (the users' retries go on after their last call, at 20 s).
    let most = 2.0 * (25.0 + 250.0 * simulated);
    assert!(simulated > 20.0, "{simulated}");
    assert!(search_quota.requests as f64 <= most, "{search_quota:?}");
    assert!(
        search_quota.requests * 2 < search.requests,
        "{search_quota:?}"
    );
    // In any second, at most 2 * (25 + 250); without the quota, the retries of the 429s go
    // well over 1,000.
    assert!(busiest <= 2 * (25 + 250), "{busiest}");
    assert!(busiest_plain > 1_000, "{busiest_plain}");
    assert!(quota[1].refused.guard > 1_000, "{:?}", quota[1]);
    // The users' calls succeed as often (within a point), and sooner.
    assert!(
        (quota[0].goodput - plain[0].goodput).abs() < 0.01,
        "{quota:?}"
    );
    assert!(quota[0].latency.p50 < plain[0].latency.p50, "{quota:?}");
}
