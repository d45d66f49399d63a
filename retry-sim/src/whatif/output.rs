//! What a run prints and writes: the tables on standard output, CSV files and SVG plots in a
//! folder, and the one JSON object of `--json`.

use super::check::{Verdict, show};
use super::measure::{Figures, ratio};
use super::model::Plan;
use super::simulate::{BIN, Outcome};
use crate::report::{self, Line};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "-".to_owned(), f)
}

fn ms(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1}", 1000.0 * s)
    } else {
        format!("{:.0}", 1000.0 * s)
    }
}

fn recovery(f: &Figures, faults: bool) -> String {
    match (faults, f.recovery) {
        (false, _) => "-".to_owned(),
        (true, None) => "never".to_owned(),
        (true, Some(s)) => format!("{s:.1} s"),
    }
}

/// The tables of a run, as Markdown: each tier's figures, what the protections refused, and
/// the checks.
pub fn tables(plan: &Plan, outcome: &Outcome, figures: &[Figures], verdicts: &[Verdict]) -> String {
    let faults = plan.fault_window();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} user process{}, {} tier{}, {:.0} s simulated (seed {}){}",
        plan.topology,
        plan.users.clients,
        if plan.users.clients == 1 { "" } else { "es" },
        plan.tiers.len(),
        if plan.tiers.len() == 1 { "" } else { "s" },
        outcome.simulated,
        plan.seed,
        match faults {
            Some((a, b)) if b.is_finite() => format!(", faults from {a:.1} s to {b:.1} s"),
            Some((a, _)) => format!(", faults from {a:.1} s to the end"),
            None => ", no fault".to_owned(),
        }
    );
    out.push('\n');
    out.push_str(
        "| tier | processes | requests | per user call (nominal) | per user call in the faults | amplification in the faults | goodput | goodput in the faults | p50 (ms) | p99 (ms) | p99.9 (ms) | time to recover |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for f in figures {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} ({}) | {} | {} | {:.2}% | {} | {} | {} | {} | {} |",
            f.name,
            f.processes,
            f.requests,
            f.per_call,
            f.nominal,
            opt(f.per_call_fault, |x| format!("{x:.3}")),
            opt(f.amplification_fault(), |x| format!("{x:.3}x")),
            100.0 * f.goodput,
            opt(f.goodput_fault, |x| format!("{:.2}%", 100.0 * x)),
            ms(f.latency.p50),
            ms(f.latency.p99),
            ms(f.latency.p999),
            recovery(f, faults.is_some()),
        );
    }
    out.push('\n');
    out.push_str(
        "| tier | calls made | attempts | calls failed | bucket empty | budget exhausted | breaker open (retries / calls) | guards | deadline | retries arrived | throttled (429) | shed | told not to retry |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for f in figures {
        if f.policy == "-" {
            // A tier that calls nothing makes no calls: what it received alone.
            let _ = writeln!(
                out,
                "| {} | - | - | - | - | - | - | - | - | {} | {} | {} | {} |",
                f.name, f.retries, f.throttled, f.shed, f.told_not_to_retry,
            );
            continue;
        }
        let c = counts(f);
        let cells = |from: usize, to: usize| {
            c[from..to]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" | ")
        };
        // The breaker's two counts share a column.
        let _ = writeln!(
            out,
            "| {} | {} | {} / {} | {} |",
            f.name,
            cells(0, 5),
            c[5],
            c[6],
            cells(7, c.len()),
        );
    }
    out.push('\n');
    for f in figures {
        let _ = writeln!(out, "- {} policy: {}", f.name, f.policy);
    }
    if !verdicts.is_empty() {
        out.push('\n');
        for v in verdicts {
            let _ = writeln!(
                out,
                "{} {} (is {})",
                if v.passed { "pass" } else { "FAIL" },
                v.check.text,
                show(v.check.kind, v.actual)
            );
        }
    }
    out
}

/// The run as one JSON object.
pub fn json(
    plan: &Plan,
    outcome: &Outcome,
    figures: &[Figures],
    verdicts: &[Verdict],
    wall: f64,
) -> Value {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let tiers: Vec<Value> = figures
        .iter()
        .map(|f| {
            let r = &f.refused;
            json!({
                "name": f.name,
                "processes": f.processes,
                "policy": f.policy,
                "requests": f.requests,
                "nominal": f.nominal,
                "per_call": f.per_call,
                "per_call_fault": f.per_call_fault,
                "amplification": f.amplification(),
                "amplification_fault": f.amplification_fault(),
                "goodput": f.goodput,
                "goodput_fault": f.goodput_fault,
                "failed": f.failed(),
                "latency_s": { "p50": f.latency.p50, "p99": f.latency.p99, "p999": f.latency.p999 },
                "recovery_s": f.recovery,
                "recovered": f.recovery.is_some(),
                "retries": f.retries,
                "throttled": f.throttled,
                "shed": f.shed,
                "told_not_to_retry": f.told_not_to_retry,
                "calls": f.calls,
                "attempts": f.attempts,
                "calls_failed": f.calls_failed,
                "refused": {
                    "bucket_empty": r.bucket_empty,
                    "budget_exhausted": r.budget_exhausted,
                    "circuit_open": r.circuit_open,
                    "circuit_open_calls": r.circuit_open_calls,
                    "guard": r.guard,
                    "deadline": r.deadline,
                    "hint_too_long": r.hint_too_long,
                    "not_idempotent": r.not_idempotent,
                },
            })
        })
        .collect();
    let checks: Vec<Value> = verdicts
        .iter()
        .map(|v| {
            json!({
                "check": v.check.text,
                "value": num(v.actual),
                "threshold": num(v.check.value),
                "passed": v.passed,
            })
        })
        .collect();
    json!({
        "topology": plan.topology,
        "seed": plan.seed,
        "duration_s": plan.duration,
        "simulated_s": outcome.simulated,
        "wall_s": wall,
        "faults_s": plan.fault_window().map(|(a, b)| json!([a, num(b)])),
        "tiers": tiers,
        "checks": checks,
        "passed": verdicts.iter().all(|v| v.passed),
    })
}

/// A tier's counts in the order of the second table and of the CSV's last columns: calls
/// made, attempts, calls failed, what each protection refused (the breaker's retries, then its
/// calls), the retries that arrived, the 429s, the shed requests and the answers that said not
/// to retry.
fn counts(f: &Figures) -> [u64; 13] {
    let r = &f.refused;
    [
        f.calls,
        f.attempts,
        f.calls_failed,
        r.bucket_empty,
        r.budget_exhausted,
        r.circuit_open,
        r.circuit_open_calls,
        r.guard,
        r.deadline,
        f.retries,
        f.throttled,
        f.shed,
        f.told_not_to_retry,
    ]
}

/// Writes the run's CSV files and SVG plots into `dir`, named after the topology's file
/// (`NAME.csv`, `NAME_series.csv`, `NAME_requests.svg`, `NAME_goodput.svg`); returns them.
pub fn write(
    dir: &Path,
    plan: &Plan,
    outcome: &Outcome,
    figures: &[Figures],
) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let stem = Path::new(&plan.topology).file_stem().map_or_else(
        || "what-if".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let summary = dir.join(format!("{stem}.csv"));
    let rows: Vec<String> = figures
        .iter()
        .map(|f| {
            format!(
                "{},{},{},{:.4},{:.4},{},{:.6},{},{:.6},{:.6},{:.6},{},{}",
                f.name,
                f.processes,
                f.requests,
                f.nominal,
                f.per_call,
                f.per_call_fault
                    .map_or(String::new(), |x| format!("{x:.4}")),
                f.goodput,
                f.goodput_fault.map_or(String::new(), |x| format!("{x:.6}")),
                f.latency.p50,
                f.latency.p99,
                f.latency.p999,
                f.recovery.map_or(String::new(), |x| format!("{x:.1}")),
                counts(f).map(|x| x.to_string()).join(","),
            )
        })
        .collect();
    report::write_csv(
        &summary,
        "tier,processes,requests,nominal_per_user_call,per_user_call,per_user_call_in_faults,\
         goodput,goodput_in_faults,p50_s,p99_s,p999_s,recovery_s,calls,attempts,calls_failed,\
         bucket_empty,budget_exhausted,circuit_open,circuit_open_calls,guard,deadline,\
         retries_arrived,throttled,shed,told_not_to_retry",
        &rows,
    )?;
    // Per second: what the users offered and each tier received.
    let seconds = (outcome.simulated.ceil() as usize).max(1);
    let per = (1.0 / BIN).round() as usize;
    let second = |bins: &[super::simulate::Bin], s: usize| {
        bins.iter()
            .skip(s * per)
            .take(per)
            .fold((0u64, 0u64, 0u64, 0u64), |(a, o, k, c), b| {
                (a + b.arrived, o + b.ok, k + b.booked, c + b.carried)
            })
    };
    let mut series = Vec::new();
    let mut requests: Vec<Line> = Vec::new();
    let mut goodput: Vec<Line> = Vec::new();
    let named = std::iter::once(("users", &outcome.users)).chain(
        plan.tiers
            .iter()
            .map(|t| t.name.as_str())
            .zip(&outcome.tiers),
    );
    for (name, c) in named {
        let (mut req, mut good) = (Vec::new(), Vec::new());
        for s in 0..seconds {
            let (arrived, ok, booked, carried) = second(&c.bins, s);
            series.push(format!("{name},{s},{arrived},{ok},{booked},{carried}"));
            req.push((s as f64, arrived as f64));
            if arrived > 0 {
                good.push((s as f64, 100.0 * ratio(ok, arrived)));
            }
        }
        requests.push((name.to_owned(), req));
        goodput.push((name.to_owned(), good));
    }
    let series_path = dir.join(format!("{stem}_series.csv"));
    report::write_csv(
        &series_path,
        "tier,second,requests,ok,requests_of_calls_offered,requests_for_calls_offered_before_the_faults_end",
        &series,
    )?;
    let requests_path = dir.join(format!("{stem}_requests.svg"));
    report::line_plot(
        &requests_path,
        &format!("{stem}: requests per second (the users: calls offered)"),
        "seconds",
        "per second",
        &requests,
    )?;
    let goodput_path = dir.join(format!("{stem}_goodput.svg"));
    report::line_plot(
        &goodput_path,
        &format!("{stem}: share answered Ok, by second of arrival"),
        "seconds",
        "%",
        &goodput,
    )?;
    Ok(vec![summary, series_path, requests_path, goodput_path])
}
