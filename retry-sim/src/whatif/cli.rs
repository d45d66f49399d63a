//! `retry-sim what-if TOPOLOGY [OPTIONS]`: the command line of a what-if run.

use super::check::{self, Verdict};
use super::measure;
use super::output;
use super::problem::Problem;
use super::progress::{Bar, Progress};
use super::simulate;
use super::topology::{self, Options};
use std::path::PathBuf;
use std::process::ExitCode;

/// The options of `what-if`, for `--help`.
pub const HELP: &str = "\
retry-sim what-if TOPOLOGY [OPTIONS]
    Runs your policy on your topology: the users, the tiers of services with their replicas
    and policies, the faults (TOPOLOGY: a TOML file, SIMULATION.md's \"What does my policy
    do?\"; samples in retry-sim/examples/). Prints per tier: requests per user call, goodput,
    p50/p99/p99.9 latency, time to recover, and what each protection refused.

  inputs:
    --config FILE         the project's config file (RETRY_CONFIG_FILE's TOML: [default],
                          [profile.NAME]) for `profile = \"NAME\"` (else the topology's
                          `config`, else RETRY_CONFIG_FILE)
    --aws-config FILE     the AWS shared config file for `aws_profile = \"NAME\"` (else the
                          topology's `aws_config`, AWS_CONFIG_FILE, ~/.aws/config)
    --policy [TIER:]KEYS  attribute keys over the topology's, for one tier (`users` too) or
                          all: 'api: max_attempts = 5, budget = \"20%\"'
    --seed N              the seed (over the topology's)
    --duration D          how long the users offer calls, such as 120s (over the topology's)
    a policy may also name a gRPC service config: policy = { grpc = \"FILE.json\",
    method = \"pkg.Service/Method\" }, and the crate's guards: guard = [{ bulkhead = 4 },
    { quota = 100, max_wait = \"200ms\" }] (bulkhead, concurrency_budget, adaptive_throttle,
    adaptive_concurrency, quota)

  outputs:
    (default)             Markdown tables on standard output
    --json                the result as one JSON object on standard output instead
    --out DIR             also NAME.csv (per tier), NAME_series.csv (per second),
                          NAME_requests.svg and NAME_goodput.svg in DIR
    --check EXPR          a condition on a figure, such as 'tier.api.amplification <= 1.5',
                          'users.failed <= 0.1%' or 'tier.db.p99 < 200ms'; repeatable; each
                          check that fails makes the exit status 1
    --no-progress         no progress bar (one is drawn on standard error for a run of more
                          than a second, when standard error is a terminal)

  exit status: 0, every check passed; 1, a check failed; 2, a problem with the input (every
  problem of every file is printed, with its line, and nothing runs)";

/// Runs `what-if` with `args` (those after `what-if`).
pub fn main(args: &[String]) -> ExitCode {
    let mut options = Options::default();
    let mut topology: Option<PathBuf> = None;
    let mut checks: Vec<String> = Vec::new();
    let mut json = false;
    let mut out: Option<PathBuf> = None;
    let mut progress = true;
    let mut problems: Vec<String> = Vec::new();
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            let v = args.next().cloned();
            if v.is_none() {
                problems.push(format!("{name} needs a value"));
            }
            v
        };
        match a.as_str() {
            "--config" => options.config = value("--config").map(PathBuf::from),
            "--aws-config" => options.aws_config = value("--aws-config").map(PathBuf::from),
            "--policy" => options.policies.extend(value("--policy")),
            "--check" => checks.extend(value("--check")),
            "--out" => out = value("--out").map(PathBuf::from),
            "--seed" => {
                if let Some(v) = value("--seed") {
                    match v.parse() {
                        Ok(s) => options.seed = Some(s),
                        Err(_) => problems.push(format!("--seed {v}: a whole number")),
                    }
                }
            }
            "--duration" => {
                if let Some(v) = value("--duration") {
                    match retry_keys::parse_duration(&v) {
                        Ok(d) if !d.is_zero() => options.duration = Some(d.as_secs_f64()),
                        _ => problems.push(format!(
                            "--duration {v}: a duration above zero with a unit, such as 120s"
                        )),
                    }
                }
            }
            "--json" => json = true,
            "--no-progress" => progress = false,
            "-h" | "--help" => {
                println!("{HELP}");
                return ExitCode::SUCCESS;
            }
            other if other.starts_with('-') => {
                problems.push(format!(
                    "unknown option `{other}` (retry-sim what-if --help)"
                ));
            }
            other => match topology {
                None => topology = Some(PathBuf::from(other)),
                Some(_) => problems.push(format!("a second topology `{other}`: one per run")),
            },
        }
    }
    let Some(topology) = topology else {
        eprintln!("retry-sim what-if: no topology file\n\n{HELP}");
        return ExitCode::from(2);
    };
    if !problems.is_empty() {
        for p in problems {
            eprintln!("error: {p}");
        }
        return ExitCode::from(2);
    }
    let (plan, notes) = match topology::load(&topology, &options) {
        Ok(loaded) => loaded,
        Err(found) => return report(&found, &[]),
    };
    let names: Vec<&str> = plan.tiers.iter().map(|t| t.name.as_str()).collect();
    let mut parsed = Vec::new();
    let mut bad = Vec::new();
    for c in &checks {
        match check::parse(c, &names, !plan.faults.is_empty()) {
            Ok(c) => parsed.push(c),
            Err(p) => bad.push(p),
        }
    }
    if !bad.is_empty() {
        return report(&bad, &notes);
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    let started = std::time::Instant::now();
    let shared = Progress::new();
    let bar = Bar::start(shared.clone(), progress);
    let outcome = simulate::run(&plan, Some(shared));
    bar.finish();
    let wall = started.elapsed().as_secs_f64();
    let figures = measure::figures(&plan, &outcome);
    let verdicts: Vec<Verdict> = parsed.iter().map(|c| check::judge(c, &figures)).collect();
    let text = if json {
        format!(
            "{}\n",
            output::json(&plan, &outcome, &figures, &verdicts, wall)
        )
    } else {
        output::tables(&plan, &outcome, &figures, &verdicts)
    };
    // A reader that stops early (`| head`) is no failure of the run.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if let Some(dir) = out {
        match output::write(&dir, &plan, &outcome, &figures) {
            Ok(files) => {
                for f in files {
                    eprintln!("wrote {}", f.display());
                }
            }
            Err(e) => {
                eprintln!("error: cannot write into {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        }
    }
    eprintln!(
        "what-if: {:.1} s of wall time for {:.0} s simulated",
        wall, outcome.simulated
    );
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    if failed > 0 {
        for v in verdicts.iter().filter(|v| !v.passed) {
            eprintln!(
                "check failed: {} (is {})",
                v.check.text,
                check::show(v.check.kind, v.actual)
            );
        }
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Prints `problems` (and the notes) on standard error: exit status 2.
fn report(problems: &[Problem], notes: &[String]) -> ExitCode {
    for n in notes {
        eprintln!("note: {n}");
    }
    for p in problems {
        eprintln!("error: {p}");
    }
    eprintln!(
        "{} problem{}; nothing was run",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    ExitCode::from(2)
}
