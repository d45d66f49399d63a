//! `retry-sim [brooker|outage|throttling|metastable|normal|side-by-side|hedging|aws2026|guards|
//! callgraph|all]... [--quick] [--out DIR]`
//!
//! Runs the scenarios, prints their figures as Markdown tables, and writes CSV files and SVG
//! plots into DIR (default `retry-sim/results`). `--quick` runs the small sizes of the tests.
//!
//! `retry-sim what-if TOPOLOGY [OPTIONS]` runs the user's own policy on the user's own
//! topology (`retry_sim::whatif`).

use retry_sim::fleet::Run;
use retry_sim::report::{self, Line, Scale, TIMESERIES_HEADER};
use retry_sim::scenario::{
    aws2026, brooker, callgraph, guards, hedging, metastable, normal, outage, overload, sizes,
    throttling,
};
use retry_sim::sim::{Bin, Policy, Strategy};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const SCENARIOS: [&str; 12] = [
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
    "overload",
    "sizes",
];

fn main() -> ExitCode {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if all.first().is_some_and(|a| a == "what-if") {
        return retry_sim::whatif::cli::main(&all[1..]);
    }
    let mut chosen = Vec::new();
    let mut quick = false;
    let mut out = PathBuf::from("retry-sim/results");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--out" => match args.next() {
                Some(dir) => out = PathBuf::from(dir),
                None => return usage("--out needs a directory"),
            },
            "all" => chosen.extend(SCENARIOS),
            s if SCENARIOS.contains(&s) => {
                chosen.push(SCENARIOS[SCENARIOS.iter().position(|x| *x == s).unwrap_or(0)])
            }
            "-h" | "--help" => return usage(""),
            other => return usage(&format!("unknown argument `{other}`")),
        }
    }
    if chosen.is_empty() {
        chosen.extend(SCENARIOS);
    }
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    for s in chosen {
        let started = std::time::Instant::now();
        let done = match s {
            "brooker" => run_brooker(quick, &out),
            "outage" => run_outage(quick, &out),
            "throttling" => run_throttling(quick, &out),
            "metastable" => run_metastable(quick, &out),
            "normal" => run_normal(quick, &out),
            "hedging" => run_hedging(quick, &out),
            "aws2026" => run_aws2026(quick, &out),
            "guards" => run_guards(quick, &out),
            "callgraph" => run_callgraph(quick, &out),
            "overload" => run_overload(quick, &out),
            "sizes" => run_sizes(quick, &out),
            _ => run_side_by_side(quick, &out),
        };
        if let Err(e) = done {
            eprintln!("{s}: {e}");
            return ExitCode::FAILURE;
        }
        eprintln!("{s}: {:.1} s of wall time", started.elapsed().as_secs_f64());
    }
    ExitCode::SUCCESS
}

/// The columns of an outage summary's CSV, today's policies' and the guarded ones'.
const OUTAGE_SUMMARY_HEADER: &str = "strategy,amplification_outage,amplification_per_call,\
     amplification_last_third,amplification_10s_after,outage_attempts,cut_vs_no_bucket_pct,\
     cut_vs_standard_pct,time_to_recover_s,goodput_recovery_s,failed_fraction";

/// How much `s` cut the outage's attempts against `base`, in percent (`NaN` without it).
fn cut(s: &outage::Summary, base: Option<&outage::Summary>) -> f64 {
    base.map_or(f64::NAN, |b| 100.0 * s.cut_against(b))
}

/// One policy's row of an outage summary's CSV, its cuts against no bucket and the standard
/// bucket's runs.
fn outage_summary_row(
    name: &str,
    s: &outage::Summary,
    none: Option<&outage::Summary>,
    standard: Option<&outage::Summary>,
) -> String {
    format!(
        "{},{:.4},{:.4},{:.4},{:.4},{},{:.2},{:.2},{:.0},{:.0},{:.4}",
        name,
        s.amplification_outage,
        s.amplification_per_call,
        s.amplification_drained,
        s.amplification_after,
        s.outage_attempts,
        cut(s, none),
        cut(s, standard),
        s.time_to_recover,
        s.goodput_recovery,
        s.failed_fraction
    )
}

/// The same policy's row of the outage's Markdown table.
fn outage_table_row(
    name: &str,
    s: &outage::Summary,
    none: Option<&outage::Summary>,
    standard: Option<&outage::Summary>,
) -> String {
    format!(
        "| {} | {:.3}x | {:.3}x | {:.2}x | {:.2}x | {:.1}% | {:.1}% | {:.0} | {:.0} | {:.1}% |",
        name,
        s.amplification_outage,
        s.amplification_per_call,
        s.amplification_drained,
        s.amplification_after,
        cut(s, none),
        cut(s, standard),
        s.time_to_recover,
        s.goodput_recovery,
        100.0 * s.failed_fraction
    )
}

/// What `--help` prints: every scenario, and `what-if` with its inputs and outputs.
const HELP: &str = "\
retry-sim: fleets of clients running the real retry engine on tokio's paused clock
(SIMULATION.md describes every scenario and its figures)

usage: retry-sim [SCENARIO]... [--quick] [--out DIR]
       retry-sim what-if TOPOLOGY [OPTIONS]

scenarios (none named: all of them):
    brooker        Brooker's contention: N clients, one conditional write each, five backoffs
    outage         1,000 clients, a server down for 30 s: amplification, recovery
    throttling     20 clients offering twice a server's capacity: goodput, load carried
    metastable     a queue at half speed for 10 s under 0.8 of its capacity: recovery
    normal         transient failures (1 %, 3 %, 5 %): calls failed, attempts per call
    side-by-side   the outage and throttling with the AWS SDK's own retry loop beside ours
    hedging        hedged requests at fan-out: the tail, the extra load
    aws2026        AWS's 2026 standard mode beside the classic one
    guards         the bulkhead, the concurrency budget and the throttle in every scenario
    callgraph      retries from hop to hop: tiers of services to a faulty leaf
    all            every scenario above

  inputs:   --quick       the small sizes the tests run
  outputs:  Markdown tables on standard output; CSV files and SVG plots in DIR
            --out DIR     (default retry-sim/results)

";

fn usage(problem: &str) -> ExitCode {
    if !problem.is_empty() {
        eprintln!("{problem}\n");
    }
    let text = format!("{HELP}{}", retry_sim::whatif::cli::HELP);
    if problem.is_empty() {
        println!("{text}");
        ExitCode::SUCCESS
    } else {
        eprintln!("{text}");
        ExitCode::from(2)
    }
}

fn run_brooker(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        brooker::Config::quick()
    } else {
        brooker::Config::full()
    };
    let points = brooker::run(&config);
    let rows: Vec<String> = points
        .iter()
        .map(|p| {
            format!(
                "{},{},{:.1},{:.1}",
                p.clients,
                p.backoff.name(),
                p.calls,
                p.time_ms
            )
        })
        .collect();
    report::write_csv(
        &out.join("brooker.csv"),
        "clients,strategy,mean_calls,mean_time_ms",
        &rows,
    )?;
    let lines = |f: fn(&brooker::Point) -> f64| -> Vec<Line> {
        brooker::Backoff::ALL
            .iter()
            .map(|b| {
                let pts = points
                    .iter()
                    .filter(|p| p.backoff == *b)
                    .map(|p| (p.clients as f64, f(p)))
                    .collect();
                (b.name().to_string(), pts)
            })
            .collect()
    };
    report::line_plot(
        &out.join("brooker_calls.svg"),
        "Contention: calls until every client has written",
        "clients",
        "calls (reads + conditional writes)",
        &lines(|p| p.calls),
    )?;
    report::line_plot(
        &out.join("brooker_time.svg"),
        "Contention: time until the last client has written",
        "clients",
        "milliseconds",
        &lines(|p| p.time_ms),
    )?;
    println!(
        "\n### Brooker contention ({} runs per point)\n",
        config.runs
    );
    println!("| clients | strategy | calls | time to finish (ms) |");
    println!("|---:|---|---:|---:|");
    for p in &points {
        if quick || [10, 50, 100, 200].contains(&p.clients) {
            println!(
                "| {} | {} | {:.0} | {:.0} |",
                p.clients,
                p.backoff.name(),
                p.calls,
                p.time_ms
            );
        }
    }
    Ok(())
}

fn series_csv(out: &Path, name: &str, runs: &[(Strategy, &Run)], horizon: f64) -> Result<()> {
    let rows = report::timeseries_rows(runs, horizon);
    report::write_csv(&out.join(name), TIMESERIES_HEADER, &rows)?;
    Ok(())
}

fn run_outage(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        outage::Config::quick()
    } else {
        outage::Config::full()
    };
    let results = outage::run(&config);
    let runs: Vec<(Strategy, &Run)> = results
        .iter()
        .map(|s| (s.policy.strategy, &s.run))
        .collect();
    series_csv(out, "outage.csv", &runs, config.horizon)?;
    let mut lines = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        Some(b.attempts as f64)
    });
    lines.push((
        "offered".to_string(),
        report::per_second(&runs[..1], config.horizon, |b: &Bin, _, _| {
            Some(b.offered as f64)
        })
        .remove(0)
        .1,
    ));
    report::line_plot(
        &out.join("outage.svg"),
        &format!(
            "Outage from {} s to {} s: attempts reaching the server",
            config.outage_start,
            config.outage_start + config.outage_len
        ),
        "second",
        "attempts per second",
        &lines,
    )?;
    let goodput = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        (b.offered > 0).then(|| b.offered_succeeded as f64 / b.offered as f64)
    });
    report::line_plot(
        &out.join("outage_goodput.svg"),
        &format!(
            "Outage from {} s to {} s: calls that succeeded over calls offered",
            config.outage_start,
            config.outage_start + config.outage_len
        ),
        "second",
        "succeeded / offered",
        &goodput,
    )?;
    let find = |s: Strategy| results.iter().find(|r| r.policy.strategy == s);
    let (none, standard) = (find(Strategy::NoBucket), find(Strategy::Standard));
    let rows: Vec<String> = results
        .iter()
        .map(|s| outage_summary_row(s.policy.strategy.name(), s, none, standard))
        .collect();
    report::write_csv(
        &out.join("outage_summary.csv"),
        OUTAGE_SUMMARY_HEADER,
        &rows,
    )?;
    println!(
        "\n### Outage ({} clients, {} requests/s offered)\n",
        config.clients,
        config.clients as f64 * config.rate_per_client
    );
    println!(
        "| policy | amplification during the outage | per call offered in it | same, last third \
         (drained) | 10 s after | attempts in the outage, cut against no-bucket | \
         against standard | time to recover (s) | goodput back (s) | calls failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &results {
        println!(
            "{}",
            outage_table_row(s.policy.strategy.name(), s, none, standard)
        );
    }
    Ok(())
}

fn run_throttling(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        throttling::Config::quick()
    } else {
        throttling::Config::full()
    };
    let results = throttling::run(&config);
    let runs: Vec<(Strategy, &Run)> = results
        .iter()
        .map(|s| (s.policy.strategy, &s.run))
        .collect();
    series_csv(out, "throttling.csv", &runs, config.horizon)?;
    let c = config.capacity;
    let mut goodput = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        Some(b.succeeded as f64 / c)
    });
    goodput.push((
        "capacity C".to_string(),
        vec![(0.0, 1.0), (config.horizon, 1.0)],
    ));
    report::line_plot(
        &out.join("throttling_goodput.svg"),
        "Offered 2C: successful calls per second, over C",
        "second",
        "goodput / C",
        &goodput,
    )?;
    let throttled = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        (b.attempts > 0).then(|| b.throttled as f64 / b.attempts as f64)
    });
    report::line_plot(
        &out.join("throttling_throttled.svg"),
        "Offered 2C: fraction of attempts throttled",
        "second",
        "throttled / attempts",
        &throttled,
    )?;
    // Only adaptive mode has a rate limiter to plot.
    let adaptive: Vec<(Strategy, &Run)> = runs
        .iter()
        .filter(|(s, _)| *s == Strategy::Adaptive)
        .copied()
        .collect();
    let fill = report::per_second(&adaptive, config.horizon, |_, i, run: &Run| {
        run.fill_rate.get(i).map(|f| f * config.clients as f64 / c)
    });
    report::line_plot(
        &out.join("throttling_fill_rate.svg"),
        "Adaptive mode: the clients' fill rates, summed, over C",
        "second",
        "sum of fill rates / C",
        &fill,
    )?;
    println!(
        "\n### Throttling (C = {} requests/s, {} clients offering 2C; steady state from {} s to {} s)\n",
        c, config.clients, config.steady_from, config.horizon
    );
    println!(
        "| policy | goodput / C | throttled attempts | attempts / C | answers that came too late |"
    );
    println!("|---|---:|---:|---:|---:|");
    for s in &results {
        let b = s.run.series.total(config.steady_from, config.horizon);
        println!(
            "| {} | {:.1}% | {:.1}% | {:.2} | {:.1}% |",
            s.policy.strategy.name(),
            100.0 * s.goodput,
            100.0 * s.throttled,
            s.load,
            100.0 * retry_sim::sim::ratio(b.served - b.delivered.min(b.served), b.served)
        );
    }
    Ok(())
}

fn run_normal(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        normal::Config::quick()
    } else {
        normal::Config::full()
    };
    let results = normal::run(&config);
    let mut csv = String::from("strategy,error_rate,failed_fraction,amplification\n");
    for s in &results {
        csv.push_str(&format!(
            "{},{},{:.6},{:.6}\n",
            s.policy.strategy.name(),
            s.error_rate,
            s.failed_fraction,
            s.amplification
        ));
    }
    std::fs::write(out.join("normal.csv"), csv)?;
    println!(
        "\n### Normal operation ({} clients offering {} requests/s, attempts failing on their own)\n",
        config.clients,
        config.clients as f64 * config.rate_per_client
    );
    print!("| policy |");
    for p in &config.error_rates {
        print!(
            " calls failed at {:.0}% | attempts per call at {:.0}% |",
            100.0 * p,
            100.0 * p
        );
    }
    println!();
    println!("|---|{}", "---:|---:|".repeat(config.error_rates.len()));
    for strategy in Strategy::COMPARED {
        print!("| {} |", strategy.name());
        for s in results.iter().filter(|s| s.policy.strategy == strategy) {
            print!(
                " {:.3}% | {:.3} |",
                100.0 * s.failed_fraction,
                s.amplification
            );
        }
        println!();
    }
    Ok(())
}

fn run_metastable(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        metastable::Config::quick()
    } else {
        metastable::Config::full()
    };
    let results = metastable::run(&config);
    let runs: Vec<(Strategy, &Run)> = results
        .iter()
        .map(|s| (s.policy.strategy, &s.run))
        .collect();
    series_csv(out, "metastable.csv", &runs, config.horizon)?;
    let offered = metastable::LOAD * metastable::CAPACITY;
    let goodput = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        Some(b.succeeded as f64 / offered)
    });
    report::line_plot(
        &out.join("metastable_goodput.svg"),
        &format!(
            "Server at half speed from {} s to {} s: goodput over offered load",
            metastable::TRIGGER_START,
            metastable::TRIGGER_END
        ),
        "second",
        "successful calls / offered",
        &goodput,
    )?;
    let queue = report::per_second(&runs, config.horizon, |b: &Bin, _, _| {
        (b.attempts > 0).then(|| b.queue_s / b.attempts as f64)
    });
    report::line_plot(
        &out.join("metastable_queue.svg"),
        "Mean time an arriving attempt spends queued at the server",
        "second",
        "seconds",
        &queue,
    )?;
    println!(
        "\n### Metastable ({} clients offering {} requests/s to a server of {} requests/s, 1 s attempt timeout)\n",
        config.clients,
        offered,
        metastable::CAPACITY
    );
    println!(
        "| policy | goodput before the trigger | goodput, last 10 s | attempts per call, last 10 s | \
         recovered | calls failed |"
    );
    println!("|---|---:|---:|---:|---|---:|");
    for s in &results {
        let rec = match s.recovered_after {
            Some(t) => format!("{t:.0} s after the trigger"),
            None => "never".to_string(),
        };
        println!(
            "| {} | {:.1}% | {:.1}% | {:.2} | {} | {:.1}% |",
            s.policy.strategy.name(),
            100.0 * s.goodput_before,
            100.0 * s.goodput_end,
            s.amplification_end,
            rec,
            100.0 * s.failed_fraction
        );
    }
    Ok(())
}

fn run_side_by_side(quick: bool, out: &Path) -> Result<()> {
    use retry_sim::scenario::side_by_side;
    let (oc, tc) = if quick {
        (outage::Config::quick(), throttling::Config::quick())
    } else {
        (outage::Config::full(), throttling::Config::full())
    };
    let outage = side_by_side::outage(&oc);
    let throttling = side_by_side::throttling(&tc);
    let mut rows = Vec::new();
    let mut table = Vec::new();
    let mut add = |scenario: &str, policy: Strategy, metric: &str, ours: f64, theirs: f64| {
        let ratio = if theirs == 0.0 {
            f64::NAN
        } else {
            ours / theirs
        };
        rows.push(format!(
            "{scenario},{},{metric},{ours:.4},{theirs:.4},{ratio:.3}",
            policy.name()
        ));
        table.push(format!(
            "| {scenario} | {} | {metric} | {ours:.3} | {theirs:.3} | {} |",
            policy.name(),
            if ratio.is_finite() {
                format!("{ratio:.2}")
            } else {
                "n/a".to_string()
            }
        ));
    };
    for p in &outage {
        add(
            "outage",
            p.strategy,
            "amplification during the outage",
            p.ours.amplification_outage,
            p.theirs.amplification_outage,
        );
        add(
            "outage",
            p.strategy,
            "amplification, last third",
            p.ours.amplification_drained,
            p.theirs.amplification_drained,
        );
        add(
            "outage",
            p.strategy,
            "amplification, 10 s after",
            p.ours.amplification_after,
            p.theirs.amplification_after,
        );
        add(
            "outage",
            p.strategy,
            "time to recover (s)",
            p.ours.time_to_recover,
            p.theirs.time_to_recover,
        );
        add(
            "outage",
            p.strategy,
            "calls failed",
            p.ours.failed_fraction,
            p.theirs.failed_fraction,
        );
    }
    for p in &throttling {
        add(
            "throttling",
            p.strategy,
            "goodput / C",
            p.ours.goodput,
            p.theirs.goodput,
        );
        add(
            "throttling",
            p.strategy,
            "throttled attempts",
            p.ours.throttled,
            p.theirs.throttled,
        );
        add(
            "throttling",
            p.strategy,
            "attempts / C",
            p.ours.load,
            p.theirs.load,
        );
    }
    report::write_csv(
        &out.join("side_by_side.csv"),
        "scenario,policy,metric,ours,aws_smithy_runtime,ratio",
        &rows,
    )?;
    let c = tc.capacity;
    let mut lines: Vec<Line> = Vec::new();
    for p in &throttling {
        for (who, run) in [("ours", &p.ours.run), ("smithy", &p.theirs.run)] {
            let pts = run
                .series
                .bins
                .iter()
                .enumerate()
                .take_while(|(i, _)| (*i as f64) < tc.horizon)
                .map(|(i, b)| (i as f64, b.succeeded as f64 / c))
                .collect();
            lines.push((format!("{} ({who})", p.strategy.name()), pts));
        }
    }
    report::line_plot(
        &out.join("side_by_side_throttling.svg"),
        "Offered 2C: goodput over C, ours and aws-smithy-runtime",
        "second",
        "goodput / C",
        &lines,
    )?;
    println!("\n### Side by side with aws-smithy-runtime\n");
    println!("| scenario | policy | figure | ours | aws-smithy-runtime | ours / theirs |");
    println!("|---|---|---|---:|---:|---:|");
    for line in table {
        println!("{line}");
    }
    Ok(())
}

fn run_hedging(quick: bool, out: &Path) -> Result<()> {
    use hedging::Summary;
    let config = if quick {
        hedging::Config::quick()
    } else {
        hedging::Config::full()
    };
    let results = hedging::run(&config);
    hedging_csv(&out.join("hedging.csv"), &results)?;
    let ms = |s: f64| 1000.0 * s;
    // Latency by nines: x = 1 is the 90th percentile, 2 the 99th, 3 the 99.9th; up to where
    // at least 10 samples lie above the percentile, and at most 4 (p99.99).
    let nines = |sorted: &[f64]| -> Vec<(f64, f64)> {
        let top = ((sorted.len() as f64).log10() - 1.0).clamp(0.0, 4.0);
        (0..=(top * 20.0).floor() as usize)
            .map(|i| {
                let x = i as f64 / 20.0;
                (x, ms(hedging::quantile(sorted, 1.0 - 10f64.powf(-x))))
            })
            .collect()
    };
    let mut quantile_rows = Vec::new();
    for s in &results {
        for (kind, sorted) in [("fan-out", &s.fan_out_sorted), ("leaf", &s.leaf_sorted)] {
            for (x, y) in nines(sorted) {
                quantile_rows.push(format!("{},{kind},{x:.2},{y:.1}", s.variant.csv_name()));
            }
        }
    }
    report::write_csv(
        &out.join("hedging_quantiles.csv"),
        "policy,latency_of,nines,ms",
        &quantile_rows,
    )?;
    hedging_series(out, "hedging_series.csv", &results, &config)?;
    let curves = |f: fn(&Summary) -> &[f64]| -> Vec<Line> {
        results
            .iter()
            .map(|s| (s.variant.name(), nines(f(s))))
            .collect()
    };
    report::plot(
        &out.join("hedging_fan_out.svg"),
        &format!(
            "User requests (fan-out {}): latency by percentile",
            config.fan_out
        ),
        "nines (1 = p90, 2 = p99, 3 = p99.9)",
        "milliseconds (log scale)",
        &curves(|s| &s.fan_out_sorted),
        Scale::Log,
        &[],
    )?;
    report::plot(
        &out.join("hedging_leaf.svg"),
        "Leaf requests: latency by percentile",
        "nines (1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99)",
        "milliseconds (log scale)",
        &curves(|s| &s.leaf_sorted),
        Scale::Log,
        &[],
    )?;
    hedging_per_second_plots(out, "hedging", &results, &config, "")?;
    let s = &config.service;
    println!(
        "\n### Hedging ({} frontends, {} user requests/s, fan-out {} over {} servers of {} \
         workers, {:.0}% busy without hedging; service log-normal, median {} ms, sigma {}, {}% \
         of requests {}x longer; {} s)\n",
        config.frontends,
        config.rate,
        config.fan_out,
        config.servers,
        config.workers,
        100.0 * config.utilization(),
        ms(s.median),
        s.sigma,
        100.0 * s.slow_fraction,
        s.slow_factor,
        config.horizon
    );
    hedging_table(&results);
    hedging_checks(&results)?;
    println!(
        "\nEvery check of the engine held in every run: no attempt alive once its call returned, \
         one winner per leaf, no hedge before its delay or beyond max_in_flight, the hedges the \
         engine recorded equal to the extra attempts sent, every bucket at its replayed level \
         after every hedge and leaf."
    );
    run_hedging_shift(quick, out)
}

/// The servers slow down halfway through: a fixed delay against a percentile.
fn run_hedging_shift(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        hedging::Config::shifted_quick()
    } else {
        hedging::Config::shifted()
    };
    hedging_shift(&config, out, "hedging_shift")?;
    run_hedging_budget(quick, out)
}

/// A run of the servers' slowdown (`config`), its files named from `name`: `NAME.csv`,
/// `NAME_series.csv` and the per-second plots.
fn hedging_shift(config: &hedging::Config, out: &Path, name: &str) -> Result<()> {
    let shift = config.shift.ok_or("the shifted scenario has a shift")?;
    let results = hedging::run(config);
    hedging_series(out, &format!("{name}_series.csv"), &results, config)?;
    let title = format!(", service x{} from {} s", shift.factor, shift.at);
    hedging_per_second_plots(out, name, &results, config, &title)?;
    // Before the shift (after the warm-up), its first 2 s, and the rest.
    let settle = (config.horizon - shift.at).min(2.0);
    let phases = [
        ("before", config.warmup, shift.at),
        ("first 2 s after", shift.at, shift.at + settle),
        ("after that", shift.at + settle, config.horizon),
    ];
    let mut rows = Vec::new();
    let mut table = Vec::new();
    for r in &results {
        for (phase, from, to) in phases {
            let sorted = r.fan_out_between(from, to);
            let q = |p: f64| 1000.0 * hedging::quantile(&sorted, p);
            let delays: Vec<f64> = r
                .seconds
                .iter()
                .enumerate()
                .filter(|(i, _)| (*i as f64) >= from && (*i as f64) < to)
                .map(|(_, b)| 1000.0 * b.delay)
                .collect();
            let delay = delays.iter().sum::<f64>() / delays.len().max(1) as f64;
            let low = match r.bucket_low_between(from, to) {
                u32::MAX => "none".to_string(),
                l => format!("{l} / 500"),
            };
            let extra = 100.0 * r.extra_between(from, to);
            let over = 100.0 * hedging::share_above(&sorted, 0.1);
            rows.push(format!(
                "{},{phase},{from},{to},{},{:.1},{:.1},{:.1},{over:.3},{extra:.3},{delay:.2},{}",
                r.variant.csv_name(),
                sorted.len(),
                q(0.5),
                q(0.99),
                q(0.999),
                low.trim_end_matches(" / 500"),
            ));
            table.push(format!(
                "| {} | {phase} ({from:.0} to {to:.0} s) | {:.0} ms | {:.0} ms | {:.0} ms | \
                 {over:.2}% | {extra:.2}% | {} | {low} |",
                r.variant.name(),
                q(0.5),
                q(0.99),
                q(0.999),
                if r.variant.hedge == hedging::Hedge::Never {
                    "-".to_string()
                } else {
                    format!("{delay:.1} ms")
                },
            ));
        }
    }
    report::write_csv(
        &out.join(format!("{name}.csv")),
        "policy,phase,from_s,to_s,user_requests,fan_out_p50_ms,fan_out_p99_ms,\
         fan_out_p999_ms,fan_out_over_100ms_pct,extra_requests_pct,mean_hedge_delay_ms,\
         bucket_lowest",
        &rows,
    )?;
    println!(
        "\n### Hedging when the servers slow down (the same world; every quick-mode service \
         time x{} from {} s of {} s)\n",
        shift.factor, shift.at, config.horizon
    );
    println!(
        "| policy | phase | fan-out p50 | p99 | p99.9 | over 100 ms | extra requests | hedge \
         delay (mean) | bucket's lowest level |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for line in table {
        println!("{line}");
    }
    hedging_checks(&results)?;
    Ok(())
}

/// The hedge budget: the fan-out's world with one hedge at the p95 and a second (the hedging
/// section's best cut), without and with `hedge_budget = "2%"`; then the servers' slowdown
/// with the same policies.
fn run_hedging_budget(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        hedging::Config::budget_quick()
    } else {
        hedging::Config::budget()
    };
    let results = hedging::run(&config);
    hedging_csv(&out.join("hedging_budget.csv"), &results)?;
    hedging_series(out, "hedging_budget_series.csv", &results, &config)?;
    hedging_per_second_plots(out, "hedging_budget", &results, &config, "")?;
    println!("\n### Hedging within a budget (the fan-out's world)\n");
    hedging_table(&results);
    hedging_checks(&results)?;
    let shifted = if quick {
        hedging::Config::budget_shifted_quick()
    } else {
        hedging::Config::budget_shifted()
    };
    hedging_shift(&shifted, out, "hedging_budget_shift")
}

/// Every check of the engine's hedging held in every run of `results`, or which did not.
fn hedging_checks(results: &[hedging::Summary]) -> Result<()> {
    let faulty: Vec<String> = results
        .iter()
        .filter(|r| !r.faults.none())
        .map(|r| format!("{}: {:?}", r.variant.name(), r.faults))
        .collect();
    if faulty.is_empty() {
        Ok(())
    } else {
        Err(format!("the engine's hedging failed a check: {}", faulty.join("; ")).into())
    }
}

/// One row per policy of a hedging run, the columns of `results/hedging.csv`.
fn hedging_csv(path: &Path, results: &[hedging::Summary]) -> Result<()> {
    use hedging::Summary;
    let base = &results[0];
    let ms = |s: f64| 1000.0 * s;
    let bounded = |s: &Summary| s.variant.bucket != Strategy::NoBucket;
    let rows: Vec<String> = results
        .iter()
        .map(|s| {
            let mut r = format!("{},{},{}", s.variant.csv_name(), s.user_requests, s.leaves);
            for q in [&s.fan_out, &s.leaf] {
                for v in [q.p50, q.p90, q.p95, q.p99, q.p999, q.max] {
                    r.push_str(&format!(",{:.1}", ms(v)));
                }
            }
            r.push_str(&format!(
                ",{:.5},{:.6},{},{},{},{:.3},{:.3},{:.4},{},{},{}",
                hedging::share_above(&s.fan_out_sorted, 0.1),
                hedging::share_above(&s.leaf_sorted, 0.1),
                s.hedges,
                s.hedges_won,
                s.cancelled,
                100.0 * s.extra_requests(),
                100.0 * s.work_added(base),
                ms(s.mean_queue),
                if bounded(s) {
                    format!("{:.4}", s.tokens_lost as f64 / s.leaves as f64)
                } else {
                    String::new()
                },
                if bounded(s) {
                    s.bucket_low.to_string()
                } else {
                    String::new()
                },
                s.faults.none(),
            ));
            r
        })
        .collect();
    report::write_csv(
        path,
        "policy,user_requests,leaves,fan_out_p50_ms,fan_out_p90_ms,fan_out_p95_ms,\
         fan_out_p99_ms,fan_out_p999_ms,fan_out_max_ms,leaf_p50_ms,leaf_p90_ms,leaf_p95_ms,\
         leaf_p99_ms,leaf_p999_ms,leaf_max_ms,fan_out_over_100ms,leaf_over_100ms,hedges,\
         hedges_won,attempts_dropped,extra_requests_pct,server_work_added_pct,mean_queue_ms,\
         tokens_kept_by_lost_hedges_per_leaf,bucket_lowest,engine_checks_held",
        &rows,
    )?;
    Ok(())
}

/// A hedging run's table, as the hedging section shows it.
fn hedging_table(results: &[hedging::Summary]) {
    use hedging::Summary;
    let ms = |s: f64| 1000.0 * s;
    let bounded = |s: &Summary| s.variant.bucket != Strategy::NoBucket;
    println!(
        "| policy | fan-out p50 | p99 | p99.9 | over 100 ms | leaf p50 | p99 | p99.9 | extra \
         requests (hedges / leaves) | hedges that won | mean queue wait | tokens kept by lost \
         hedges, per leaf | bucket's lowest level |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in results {
        let (lost, low) = if bounded(r) {
            (
                format!("{:.3}", r.tokens_lost as f64 / r.leaves as f64),
                format!("{} / 500", r.bucket_low),
            )
        } else {
            ("no bucket".to_string(), "no bucket".to_string())
        };
        println!(
            "| {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.2}% | {:.0} ms | {:.0} ms | {:.0} ms | \
             {:.2}% | {:.2}% | {:.2} ms | {} | {} |",
            r.variant.name(),
            ms(r.fan_out.p50),
            ms(r.fan_out.p99),
            ms(r.fan_out.p999),
            100.0 * hedging::share_above(&r.fan_out_sorted, 0.1),
            ms(r.leaf.p50),
            ms(r.leaf.p99),
            ms(r.leaf.p999),
            100.0 * r.extra_requests(),
            100.0 * retry_sim::sim::ratio(r.hedges_won, r.leaves),
            ms(r.mean_queue),
            lost,
            low
        );
    }
}

/// The per-second counters of a hedging run's policies as CSV.
fn hedging_series(
    out: &Path,
    name: &str,
    results: &[hedging::Summary],
    config: &hedging::Config,
) -> Result<()> {
    let mut rows = Vec::new();
    for s in results {
        for (i, b) in s.seconds.iter().enumerate() {
            if (i as f64) < config.horizon {
                let low = match b.bucket_low {
                    u32::MAX => String::new(),
                    l => l.to_string(),
                };
                rows.push(format!(
                    "{},{i},{},{},{:.2},{low}",
                    s.variant.csv_name(),
                    b.leaves,
                    b.hedges,
                    1000.0 * b.delay
                ));
            }
        }
    }
    report::write_csv(
        &out.join(name),
        "policy,second,leaves,hedges,hedge_delay_ms_at_its_end,bucket_lowest",
        &rows,
    )?;
    Ok(())
}

/// `{prefix}_extra.svg` (hedges per leaf, each second) and `{prefix}_delay.svg` (the delay
/// in effect) of the hedged policies; each policy keeps the color of the latency plots.
fn hedging_per_second_plots(
    out: &Path,
    prefix: &str,
    results: &[hedging::Summary],
    config: &hedging::Config,
    title_suffix: &str,
) -> Result<()> {
    use hedging::{Hedge, Summary};
    // `offset`: where in its second a bin's figure belongs (0 for a count over the second, 1
    // for a sample taken at its end).
    let per_second = |keep: fn(&Summary) -> bool,
                      f: fn(&hedging::Second) -> Option<f64>,
                      offset: f64|
     -> (Vec<Line>, Vec<usize>) {
        results
            .iter()
            .enumerate()
            .filter(|(_, s)| keep(s))
            .map(|(i, s)| {
                let pts = s
                    .seconds
                    .iter()
                    .enumerate()
                    .take_while(|(i, _)| (*i as f64) < config.horizon)
                    .filter_map(|(i, b)| f(b).map(|y| (i as f64 + offset, y)))
                    .collect();
                ((s.variant.name(), pts), i)
            })
            .unzip()
    };
    let (lines, colors) = per_second(
        |s| s.variant.hedge != Hedge::Never,
        |b| (b.leaves > 0).then(|| 100.0 * b.hedges as f64 / b.leaves as f64),
        0.0,
    );
    report::plot(
        &out.join(format!("{prefix}_extra.svg")),
        &format!("Hedges sent per leaf request, each second{title_suffix}"),
        "second",
        "hedges / leaves, % (log scale)",
        &lines,
        Scale::Log,
        &colors,
    )?;
    let (lines, colors) = per_second(
        |s| {
            matches!(s.variant.hedge, Hedge::Percentile(_))
                || s.variant == hedging::Variant::fixed(hedging::FIXED_MS)
        },
        |b| Some(1000.0 * b.delay),
        1.0,
    );
    report::plot(
        &out.join(format!("{prefix}_delay.svg")),
        &format!("The hedge delay in effect, mean over the frontends{title_suffix}"),
        "second",
        "milliseconds",
        &lines,
        Scale::Linear,
        &colors,
    )?;
    Ok(())
}

/// AWS's 2026 standard mode beside the classic one in the outage, throttling and
/// normal-operation scenarios (their own sizes and seeds), with the latency of the calls that
/// met an error.
fn run_aws2026(quick: bool, out: &Path) -> Result<()> {
    use aws2026::Latency;
    let (oc, tc, nc) = if quick {
        (
            outage::Config::quick(),
            throttling::Config::quick(),
            normal::Config::quick(),
        )
    } else {
        (
            outage::Config::full(),
            throttling::Config::full(),
            normal::Config::full(),
        )
    };
    let results = aws2026::run(&oc, &tc, &nc);
    let ms = |s: f64| 1000.0 * s;
    // count, succeeded, p50, p90, p99, max
    let latency_csv = |l: &Latency| -> String {
        format!(
            "{},{},{:.1},{:.1},{:.1},{:.1}",
            l.calls,
            l.succeeded,
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.max)
        )
    };
    let latency_md = |l: &Latency| -> String {
        if l.calls == 0 {
            "0 | - | - | - |".to_string()
        } else {
            format!(
                "{} | {:.0} ms | {:.0} ms | {:.1}% |",
                l.calls,
                ms(l.p50),
                ms(l.p99),
                100.0 * l.success()
            )
        }
    };

    // The outage.
    let runs: Vec<(Strategy, &Run)> = results
        .outage
        .iter()
        .map(|o| (o.summary.policy.strategy, &o.summary.run))
        .collect();
    series_csv(out, "aws2026_outage_series.csv", &runs, oc.horizon)?;
    let mut lines = report::per_second(&runs, oc.horizon, |b: &Bin, _, _| Some(b.attempts as f64));
    lines.push((
        "offered".to_string(),
        report::per_second(&runs[..1], oc.horizon, |b: &Bin, _, _| {
            Some(b.offered as f64)
        })
        .remove(0)
        .1,
    ));
    report::line_plot(
        &out.join("aws2026_outage.svg"),
        &format!(
            "Outage from {} s to {} s, classic and 2026 rules: attempts reaching the server",
            oc.outage_start,
            oc.outage_start + oc.outage_len
        ),
        "second",
        "attempts per second",
        &lines,
    )?;
    let outage_row = |o: &aws2026::Outage| {
        let s = &o.summary;
        format!(
            "{},{},{:.4},{:.4},{:.4},{:.4},{},{:.0},{:.0},{:.0},{:.4},{:.4},{}",
            s.policy.strategy.name(),
            o.outage_len,
            s.amplification_outage,
            s.amplification_per_call,
            s.amplification_drained,
            s.amplification_after,
            s.outage_attempts,
            o.storm,
            s.time_to_recover,
            s.goodput_recovery,
            o.offered_in_it_succeeded,
            s.failed_fraction,
            latency_csv(&o.transient)
        )
    };
    let outage_header = "strategy,outage_s,amplification_outage,amplification_per_call,\
                         amplification_last_third,amplification_10s_after,outage_attempts,\
                         storm_s,time_to_recover_s,goodput_recovery_s,\
                         offered_in_outage_succeeded,failed_fraction,transient_calls,\
                         transient_succeeded,transient_p50_ms,transient_p90_ms,\
                         transient_p99_ms,transient_max_ms";
    let rows: Vec<String> = results.outage.iter().map(outage_row).collect();
    report::write_csv(&out.join("aws2026_outage.csv"), outage_header, &rows)?;
    let rows: Vec<String> = results.shorter.iter().map(outage_row).collect();
    report::write_csv(
        &out.join("aws2026_shorter_outages.csv"),
        outage_header,
        &rows,
    )?;
    println!(
        "\n### AWS's 2026 standard mode: outage ({} clients, {} requests/s offered, 5xx from {} s \
         to {} s)\n",
        oc.clients,
        oc.clients as f64 * oc.rate_per_client,
        oc.outage_start,
        oc.outage_start + oc.outage_len
    );
    println!(
        "| policy | amplification during the outage | per call offered in it | retry storm \
         (s) | 10 s after | time to recover (s) | goodput back (s) | calls offered in it that \
         succeeded | all calls succeeded | calls that met a 5xx | their p50 | their p99 | of them \
         succeeded |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in &results.outage {
        let s = &o.summary;
        println!(
            "| {} | {:.3}x | {:.3}x | {:.0} | {:.2}x | {:.0} | {:.0} | {:.1}% | {:.1}% | {}",
            s.policy.strategy.name(),
            s.amplification_outage,
            s.amplification_per_call,
            o.storm,
            s.amplification_after,
            s.time_to_recover,
            s.goodput_recovery,
            100.0 * o.offered_in_it_succeeded,
            100.0 * (1.0 - s.failed_fraction),
            latency_md(&o.transient)
        );
    }
    println!(
        "\n### AWS's 2026 standard mode: shorter outages (the same fleet and server, 5xx from {} s \
         for each length)\n",
        oc.outage_start
    );
    println!(
        "| outage | policy | amplification during the outage | per call offered in it | 10 s \
         after | time to recover (s) | goodput back (s) | calls offered in it that succeeded | \
         calls that met a 5xx | their p50 | their p99 | of them succeeded |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in &results.shorter {
        let s = &o.summary;
        println!(
            "| {} s | {} | {:.3}x | {:.3}x | {:.2}x | {:.0} | {:.0} | {:.1}% | {}",
            o.outage_len,
            s.policy.strategy.name(),
            s.amplification_outage,
            s.amplification_per_call,
            s.amplification_after,
            s.time_to_recover,
            s.goodput_recovery,
            100.0 * o.offered_in_it_succeeded,
            latency_md(&o.transient)
        );
    }

    // Throttling.
    let rows: Vec<String> = results
        .throttling
        .iter()
        .map(|t| {
            let s = &t.summary;
            format!(
                "{},{:.4},{:.4},{:.4},{:.4},{:.4},{},{}",
                s.policy.strategy.name(),
                s.goodput,
                s.throttled,
                s.load,
                t.amplification,
                t.failed_fraction,
                latency_csv(&t.throttled),
                latency_csv(&t.transient)
            )
        })
        .collect();
    report::write_csv(
        &out.join("aws2026_throttling.csv"),
        "strategy,goodput_over_c,throttled_fraction,attempts_over_c,attempts_per_call,\
         failed_fraction,throttled_calls,throttled_succeeded,throttled_p50_ms,throttled_p90_ms,\
         throttled_p99_ms,throttled_max_ms,transient_calls,transient_succeeded,transient_p50_ms,\
         transient_p90_ms,transient_p99_ms,transient_max_ms",
        &rows,
    )?;
    println!(
        "\n### AWS's 2026 standard mode: throttling (C = {} requests/s, {} clients offering 2C; \
         steady state from {} s to {} s)\n",
        tc.capacity, tc.clients, tc.steady_from, tc.horizon
    );
    println!(
        "| policy | goodput / C | throttled attempts | attempts / C | attempts per call | calls \
         succeeded | calls that met a 429 | their p50 | their p99 | of them succeeded |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for t in &results.throttling {
        let s = &t.summary;
        println!(
            "| {} | {:.1}% | {:.1}% | {:.2} | {:.3} | {:.1}% | {}",
            s.policy.strategy.name(),
            100.0 * s.goodput,
            100.0 * s.throttled,
            s.load,
            t.amplification,
            100.0 * (1.0 - t.failed_fraction),
            latency_md(&t.throttled)
        );
    }

    // Normal operation.
    let rows: Vec<String> = results
        .normal
        .iter()
        .map(|n| {
            let s = &n.summary;
            format!(
                "{},{},{:.6},{:.6},{}",
                s.policy.strategy.name(),
                s.error_rate,
                s.failed_fraction,
                s.amplification,
                latency_csv(&n.transient)
            )
        })
        .collect();
    report::write_csv(
        &out.join("aws2026_normal.csv"),
        "strategy,error_rate,failed_fraction,attempts_per_call,transient_calls,\
         transient_succeeded,transient_p50_ms,transient_p90_ms,transient_p99_ms,transient_max_ms",
        &rows,
    )?;
    println!(
        "\n### AWS's 2026 standard mode: normal operation ({} clients offering {} requests/s, \
         attempts failing on their own)\n",
        nc.clients,
        nc.clients as f64 * nc.rate_per_client
    );
    println!(
        "| policy | attempts failing | calls succeeded | attempts per call | calls that met a \
         5xx | their p50 | their p99 | of them succeeded |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for n in &results.normal {
        let s = &n.summary;
        println!(
            "| {} | {:.0}% | {:.3}% | {:.3} | {}",
            s.policy.strategy.name(),
            100.0 * s.error_rate,
            100.0 * (1.0 - s.failed_fraction),
            s.amplification,
            latency_md(&n.transient)
        );
    }
    Ok(())
}

/// `x` as a percentage with `digits` decimals, or a dash for a NaN.
fn pct(x: f64, digits: usize) -> String {
    if x.is_nan() {
        "-".to_string()
    } else {
        format!("{:.*}%", digits, 100.0 * x)
    }
}

/// Each of `policies` in every scenario of the guards section, its time on standard error
/// after `what`.
fn guard_rows(config: &guards::Config, policies: Vec<Policy>, what: &str) -> Vec<guards::Row> {
    policies
        .into_iter()
        .map(|p| {
            let started = std::time::Instant::now();
            let row = guards::run_one(config, p);
            eprintln!(
                "{what}: {} in {:.1} s",
                p.name,
                started.elapsed().as_secs_f64()
            );
            row
        })
        .collect()
}

fn run_guards(quick: bool, out: &Path) -> Result<()> {
    let config = if quick {
        guards::Config::quick()
    } else {
        guards::Config::full()
    };
    let rows = guard_rows(&config, guards::policies(), "guards");
    let guarded: Vec<&guards::Row> = rows.iter().filter(|r| r.policy.has_guards()).collect();
    let name = |r: &guards::Row| r.policy.name;

    // Normal operation at 5 %, every policy, every seed.
    let mut csv = Vec::new();
    for r in &rows {
        let seeds = (0..config.normal_seeds).map(|i| (&config.normal, config.normal.seed + i));
        let large = std::iter::once((&config.normal_large, config.normal_large.seed));
        for ((c, seed), s) in seeds
            .chain(large)
            .zip(r.normal.iter().chain([&r.normal_large]))
        {
            let all = s.run.series.total(0.0, f64::INFINITY);
            csv.push(format!(
                "{},{},{},{},{},{},{},{:.6},{:.6}",
                name(r),
                c.clients,
                c.rate_per_client,
                seed,
                s.error_rate,
                all.failed + all.succeeded,
                all.failed,
                s.failed_fraction,
                s.amplification
            ));
        }
    }
    report::write_csv(
        &out.join("normal_guards.csv"),
        "strategy,clients,calls_per_second_per_client,seed,error_rate,calls,calls_failed,\
         failed_fraction,amplification",
        &csv,
    )?;

    // The outage: per-second counters of the guarded policies, the summary of every policy.
    let series = |f: fn(&guards::Row) -> &Run| -> Vec<(&str, &Run)> {
        guarded.iter().map(|r| (name(r), f(r))).collect()
    };
    let oc = &config.outage;
    report::write_csv(
        &out.join("outage_guards.csv"),
        TIMESERIES_HEADER,
        &report::timeseries_rows_named(&series(|r| &r.outage.run), oc.horizon),
    )?;
    let find = |s: Strategy| {
        rows.iter()
            .find(|r| r.policy.strategy == s && !r.policy.has_guards())
            .map(|r| &r.outage)
    };
    let (none, standard) = (find(Strategy::NoBucket), find(Strategy::Standard));
    let csv: Vec<String> = rows
        .iter()
        .map(|r| outage_summary_row(name(r), &r.outage, none, standard))
        .collect();
    report::write_csv(
        &out.join("outage_guards_summary.csv"),
        OUTAGE_SUMMARY_HEADER,
        &csv,
    )?;
    report::write_csv(
        &out.join("metastable_guards.csv"),
        TIMESERIES_HEADER,
        &report::timeseries_rows_named(&series(|r| &r.metastable.run), config.metastable.horizon),
    )?;
    report::write_csv(
        &out.join("throttling_guards.csv"),
        TIMESERIES_HEADER,
        &report::timeseries_rows_named(&series(|r| &r.throttling.run), config.throttling.horizon),
    )?;
    let csv: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r.brooker.iter().map(move |p| {
                format!(
                    "{},{},{:.1},{:.1},{:.2}",
                    p.clients,
                    name(r),
                    p.calls,
                    p.time_ms,
                    p.gave_up
                )
            })
        })
        .collect();
    report::write_csv(
        &out.join("brooker_guards.csv"),
        "clients,strategy,mean_calls,mean_time_ms,mean_gave_up",
        &csv,
    )?;

    println!(
        "\n### The guards in the outage ({} clients, {} requests/s offered)\n",
        oc.clients,
        oc.clients as f64 * oc.rate_per_client
    );
    println!(
        "| policy | amplification during the outage | per call offered in it | same, last third \
         (drained) | 10 s after | attempts in the outage, cut against no-bucket | \
         against standard | time to recover (s) | goodput back (s) | calls failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &guarded {
        println!("{}", outage_table_row(name(r), &r.outage, none, standard));
    }
    let tc = &config.throttling;
    println!(
        "\n### The guards under throttling (C = {} requests/s, {} clients offering 2C; steady \
         state from {} s to {} s)\n",
        tc.capacity, tc.clients, tc.steady_from, tc.horizon
    );
    println!(
        "| policy | goodput / C | throttled attempts | attempts / C | answers that came too late \
         | attempts per successful call |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &guarded {
        let s = &r.throttling;
        let b = s.run.series.total(tc.steady_from, tc.horizon);
        println!(
            "| {} | {:.1}% | {:.1}% | {:.2} | {:.1}% | {:.3} |",
            name(r),
            100.0 * s.goodput,
            100.0 * s.throttled,
            s.load,
            100.0 * retry_sim::sim::ratio(b.served - b.delivered.min(b.served), b.served),
            s.load / s.goodput
        );
    }
    println!(
        "\n### The guards in the metastable failure ({} clients, 1 s attempt timeout)\n",
        config.metastable.clients
    );
    println!(
        "| policy | goodput before the trigger | goodput, last 10 s | attempts per call, last 10 s | \
         recovered | calls failed |"
    );
    println!("|---|---:|---:|---:|---|---:|");
    for r in &guarded {
        let s = &r.metastable;
        let rec = match s.recovered_after {
            Some(t) => format!("{t:.0} s after the trigger"),
            None => "never".to_string(),
        };
        println!(
            "| {} | {:.1}% | {:.1}% | {:.2} | {} | {:.1}% |",
            name(r),
            100.0 * s.goodput_before,
            100.0 * s.goodput_end,
            s.amplification_end,
            rec,
            100.0 * s.failed_fraction
        );
    }
    println!(
        "\n### Normal operation at {:.0}% of attempts failing, seeds {} to {}\n",
        100.0 * guards::HEADLINE_ERROR_RATE,
        config.normal.seed,
        config.normal.seed + config.normal_seeds - 1
    );
    println!(
        "| policy | calls failed (seed {}) | calls failed, mean of the seeds | attempts per call, \
         mean | calls failed, {} clients of {} calls/s |",
        config.normal.seed, config.normal_large.clients, config.normal_large.rate_per_client
    );
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        let amplification =
            r.normal.iter().map(|s| s.amplification).sum::<f64>() / r.normal.len() as f64;
        println!(
            "| {} | {} | {} | {:.3} | {} |",
            name(r),
            pct(r.normal[0].failed_fraction, 3),
            pct(r.headline().failed, 4),
            amplification,
            pct(r.normal_large.failed_fraction, 3)
        );
    }
    println!(
        "\n### Brooker's contention on full jitter, under each policy ({} runs per point)\n",
        config.brooker.runs
    );
    println!("| policy | clients | calls | time to finish (ms) | clients that gave up |");
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        for p in &r.brooker {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.1} |",
                name(r),
                p.clients,
                p.calls,
                p.time_ms,
                p.gave_up
            );
        }
    }

    // The no-regret table.
    let table = guards::table(&rows);
    let mark = |m: bool| if m { "" } else { " ✗" };
    let csv: Vec<String> = rows
        .iter()
        .zip(&table)
        .map(|(r, t)| {
            let h = &t.headline;
            format!(
                "{},{:.6},{:.4},{:.4},{:.3},{},{},{:.4},{:.4},{:.4},{:.1},{:.1},{:.2},{},{},{},{},{},{},{:.3},{:.6}",
                name(r),
                h.failed,
                t.normal_points,
                h.amplification,
                t.outage_ratio,
                h.recovered_after.map_or("never".to_string(), |s| format!("{s:.0}")),
                t.metastable_s.map_or("never".to_string(), |s| format!("{s:.0}")),
                h.attempts_per_success,
                h.goodput,
                t.throttling_ratio,
                h.brooker_calls,
                h.brooker_time_ms,
                h.brooker_gave_up,
                t.brooker_ratio.map_or("gave_up".to_string(), |x| format!("{x:.3}")),
                t.meets[0],
                t.meets[1],
                t.meets[2],
                t.meets[3],
                t.meets[4],
                t.worst_share,
                r.normal_large.failed_fraction
            )
        })
        .collect();
    report::write_csv(
        &out.join("no_regret.csv"),
        "strategy,normal_failed_fraction,normal_points_over_best,outage_amplification,\
         outage_ratio_to_best,metastable_recovered_s,metastable_s_after_best,\
         throttling_attempts_per_success,throttling_goodput,throttling_ratio_to_best,\
         brooker_calls,brooker_time_ms,brooker_gave_up,brooker_ratio_to_best,meets_normal,\
         meets_outage,meets_metastable,meets_throttling,meets_brooker,worst_share_of_goal,\
         large_clients_normal_failed_fraction",
        &csv,
    )?;
    println!("\n### No regret: each policy's distance from the best on each headline\n");
    println!(
        "| policy | normal: calls failed at 5% (points over the best) | outage: amplification \
         (over the best) | metastable: recovered (s after the best) | throttling: attempts per \
         success, goodput (over the best) | Brooker: calls, time at {} clients (over the best) \
         | goals met | worst, share of its goal | not a goal: normal, clients of {} calls/s, \
         calls failed |",
        r_max_clients(&rows),
        config.normal_large.rate_per_client
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (r, t) in rows.iter().zip(&table) {
        let h = &t.headline;
        let metastable = match (h.recovered_after, t.metastable_s) {
            (Some(s), Some(d)) => format!("{s:.0} s (+{d:.0}){}", mark(t.meets[2])),
            _ => format!("never{}", mark(false)),
        };
        let brooker = match t.brooker_ratio {
            Some(x) => format!(
                "{:.0}, {:.0} ms (x{x:.2}){}",
                h.brooker_calls,
                h.brooker_time_ms,
                mark(t.meets[4])
            ),
            None => format!("{:.1} gave up{}", h.brooker_gave_up, mark(false)),
        };
        let worst = if t.worst_share.is_finite() {
            format!("{:.2}", t.worst_share)
        } else {
            "∞".to_string()
        };
        println!(
            "| {} | {} (+{:.4}){} | {:.3}x (x{:.2}){} | {} | {:.3}, {} (x{:.3}){} | {} | {}/5 | {} | {} |",
            name(r),
            pct(h.failed, 4),
            t.normal_points,
            mark(t.meets[0]),
            h.amplification,
            t.outage_ratio,
            mark(t.meets[1]),
            metastable,
            h.attempts_per_success,
            pct(h.goodput, 1),
            t.throttling_ratio,
            mark(t.meets[3]),
            brooker,
            t.meets.iter().filter(|&&m| m).count(),
            worst,
            pct(r.normal_large.failed_fraction, 3)
        );
    }
    if let Some((r, t)) = guards::closest(&table).map(|i| (&rows[i], &table[i])) {
        println!(
            "\nClosest to the goal: {} (worst distance {:.2} of its goal's allowance; {}).",
            name(r),
            t.worst_share,
            if t.meets_all() {
                "meets every goal"
            } else {
                "misses at least one goal"
            }
        );
        let meeting: Vec<&str> = rows
            .iter()
            .zip(&table)
            .filter(|(_, t)| t.meets_all())
            .map(|(r, _)| name(r))
            .collect();
        println!("Policies meeting every goal: {}.", meeting.join(", "));
    }
    Ok(())
}

/// The largest size of Brooker's contention the rows ran.
fn r_max_clients(rows: &[guards::Row]) -> usize {
    rows.iter()
        .flat_map(|r| r.brooker.iter().map(|p| p.clients))
        .max()
        .unwrap_or(0)
}

/// The rows of a call graph table: each rule of the comparison, then the runtime's server
/// layer (the figures of the rule it runs the same processes as).
fn callgraph_rows(
    summaries: &[callgraph::Summary],
    shape: callgraph::Shape,
) -> Vec<(String, &callgraph::Summary)> {
    let of = |rule: callgraph::Rule| {
        summaries
            .iter()
            .find(|s| s.shape == shape && s.rule.same_as(&rule))
    };
    let mut rows: Vec<(String, &callgraph::Summary)> = callgraph::Rule::ALL
        .iter()
        .filter_map(|&r| of(r).map(|s| (r.name.to_string(), s)))
        .collect();
    let layer = callgraph::Rule::SERVER_LAYER;
    if let (Some(twin), Some(s)) = (layer.twin(), of(layer)) {
        rows.push((format!("{} = {}", layer.name, twin.name), s));
    }
    rows
}

/// A leaf's requests per user call, with the multiple of its failure-free count after it when
/// the graph fans out.
fn leaf_figure(per_call: f64, shape: callgraph::Shape) -> String {
    if shape.fan_out == 1 {
        format!("{per_call:.2}")
    } else {
        format!("{per_call:.2} ({:.2}x)", per_call / shape.leaf_per_call())
    }
}

/// The services' requests per user call (tiers 1 to depth - 1) of `tiers`, by `f`.
fn services_figure(
    tiers: &[callgraph::Amplification],
    f: impl Fn(&callgraph::Amplification) -> f64,
) -> String {
    let services = &tiers[..tiers.len() - 1];
    if services.is_empty() {
        "-".to_string()
    } else {
        services
            .iter()
            .map(|a| format!("{:.2}", f(a)))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

fn recovered(s: &callgraph::Summary) -> String {
    s.recovered_after
        .map_or("never".to_string(), |t| format!("{t:.0} s"))
}

/// One row per run of the summary CSV.
fn callgraph_csv_rows(
    summaries: &[callgraph::Summary],
    seed: impl Fn(&callgraph::Summary) -> u64,
) -> Vec<String> {
    summaries
        .iter()
        .map(|s| {
            let leaf = s.leaf();
            let services: Vec<String> = (0..3)
                .map(|i| {
                    if i + 1 < s.shape.depth {
                        format!("{:.4}", s.tiers[i].per_call)
                    } else {
                        String::new()
                    }
                })
                .collect();
            format!(
                "{},{},{},{},{},{},{},{:.6},{:.4},{:.4},{},{:.3},{:.4},{:.4},{:.4},{:.4},{:.4},{}",
                s.setup,
                seed(s),
                s.shape.depth,
                s.shape.fan_out,
                s.rule.name,
                s.calls,
                s.failed_calls,
                s.failed,
                s.goodput_fault,
                s.goodput_after,
                s.recovered_after
                    .map_or(String::new(), |t| format!("{t:.0}")),
                s.leaf_peak,
                leaf.early,
                leaf.per_call,
                leaf.during,
                leaf.last_third,
                leaf.after,
                services.join(",")
            )
        })
        .collect()
}

fn run_callgraph(quick: bool, out: &Path) -> Result<()> {
    use callgraph::{Rule, Shape};
    let config = if quick {
        callgraph::Config::quick()
    } else {
        callgraph::Config::full()
    };
    let results = callgraph::run(&config);

    // What one retrying hop gives: the standard bucket's calls failed in the single-tier
    // normal-operation scenario at the transient setup's rate, over the same seeds.
    let normal_config = if quick {
        normal::Config::quick()
    } else {
        normal::Config::full()
    };
    let rate = match config.transient.fault {
        callgraph::Fault::Transient { rate } => rate,
        _ => 0.0,
    };
    let one_hop: Vec<f64> = callgraph::par_map(config.transient_seeds.clone(), |&seed| {
        let c = normal::Config {
            seed,
            ..normal_config.clone()
        };
        normal::run_one(&c, Strategy::Standard, rate).failed_fraction
    });
    let one_hop = one_hop.iter().sum::<f64>() / one_hop.len().max(1) as f64;
    // The same hop when its retries must fit inside its caller's attempt: the same fleet, each
    // call under a deadline of the attempt timeout the timed setup gives every hop (1 s), as a
    // service's calls are under its caller's.
    let one_hop_within: Vec<f64> = callgraph::par_map(config.transient_seeds.clone(), |&seed| {
        let c = normal::Config {
            seed,
            ..normal_config.clone()
        };
        let fleet = retry_sim::fleet::Fleet {
            deadline: config.transient_timed.attempt_timeout,
            ..c.fleet(Strategy::Standard)
        };
        let all = fleet.run(&c.server(rate)).series.total(0.0, f64::INFINITY);
        retry_sim::sim::ratio(all.failed, all.failed + all.succeeded)
    });
    let one_hop_within = one_hop_within.iter().sum::<f64>() / one_hop_within.len().max(1) as f64;

    // The summary CSV, every run.
    let header = "setup,seed,depth,fan_out,policy,user_calls,user_calls_failed,failed_fraction,\
                  goodput_fault,goodput_10s_after,recovered_s,leaf_peak_over_load,leaf_early,\
                  leaf_per_call,leaf_during,leaf_last_third,leaf_10s_after,tier1_per_call,\
                  tier2_per_call,tier3_per_call";
    let first = config.down.seed;
    let mut rows = callgraph_csv_rows(&results.down, |_| first);
    rows.extend(callgraph_csv_rows(&results.down_timed, |_| {
        config.down_timed.seed
    }));
    rows.extend(callgraph_csv_rows(&results.overload, |_| {
        config.overload.seed
    }));
    rows.extend(callgraph_csv_rows(&results.overload_shedding, |_| {
        config.overload.seed
    }));
    let seeds = config.transient_seeds.len();
    for summaries in [&results.transient, &results.transient_timed] {
        let per_seed = summaries.len() / seeds.max(1);
        for (i, chunk) in summaries.chunks(per_seed.max(1)).enumerate() {
            rows.extend(callgraph_csv_rows(chunk, |_| config.transient_seeds[i]));
        }
    }
    report::write_csv(&out.join("callgraph.csv"), header, &rows)?;

    let chain_rows: Vec<String> = results
        .chains
        .iter()
        .map(|c| {
            let tiers: Vec<String> = (0..4)
                .map(|i| {
                    c.per_call
                        .get(i)
                        .map_or(String::new(), |x| format!("{x:.4}"))
                })
                .collect();
            format!(
                "{},{},{},{}",
                c.shape.depth,
                c.rule.name,
                c.calls,
                tiers.join(",")
            )
        })
        .collect();
    report::write_csv(
        &out.join("callgraph_chains.csv"),
        "depth,policy,user_calls,tier1_per_call,tier2_per_call,tier3_per_call,tier4_per_call",
        &chain_rows,
    )?;

    // Per second, depth 3: the users' calls and each tier's arrivals.
    let mut series = Vec::new();
    for (summaries, horizon) in [
        (&results.down, config.down.horizon),
        (&results.overload, config.overload.horizon),
    ] {
        for s in summaries.iter().filter(|s| s.shape.depth == 3) {
            for (i, b) in s.run.series.bins.iter().enumerate() {
                if i as f64 >= horizon {
                    break;
                }
                let queue = if b.attempts == 0 {
                    0.0
                } else {
                    b.queue_s / b.attempts as f64
                };
                series.push(format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{:.4}",
                    s.setup,
                    s.shape.depth,
                    s.shape.fan_out,
                    s.rule.name,
                    i,
                    b.offered,
                    b.offered_succeeded,
                    s.run.tiers[0].arrived[i],
                    s.run.tiers[1].arrived[i],
                    b.attempts,
                    b.shed,
                    queue
                ));
            }
        }
    }
    report::write_csv(
        &out.join("callgraph_series.csv"),
        "setup,depth,fan_out,policy,second,user_calls_offered,user_calls_offered_that_succeeded,\
         tier1_requests,tier2_requests,leaf_requests,leaf_shed,leaf_mean_queue_s",
        &series,
    )?;

    // Plots: the leaf's load per second at depth 3 in a chain, the users' goodput through the
    // trigger, and the leaf's requests per user call early in the outage by depth.
    let per_second = |summaries: &[callgraph::Summary],
                      horizon: f64,
                      f: &dyn Fn(&retry_sim::sim::Bin) -> Option<f64>|
     -> Vec<Line> {
        Rule::ALL
            .iter()
            .filter_map(|r| {
                let s = summaries
                    .iter()
                    .find(|s| s.shape == Shape::chain(3) && s.rule == *r)?;
                let pts = s
                    .run
                    .series
                    .bins
                    .iter()
                    .enumerate()
                    .take_while(|(i, _)| (*i as f64) < horizon)
                    .filter_map(|(i, b)| f(b).map(|y| (i as f64, y)))
                    .collect();
                Some((r.name.to_string(), pts))
            })
            .collect()
    };
    let (down_from, down_to) = config.down.fault.window(config.down.horizon);
    let load = config.down.leaf_load;
    report::line_plot(
        &out.join("callgraph_down_leaf.svg"),
        &format!(
            "Users → A → B → leaf, leaf down from {down_from} s to {down_to} s: leaf requests"
        ),
        "second",
        "leaf requests / its load when nothing fails",
        &per_second(&results.down, config.down.horizon, &|b| {
            Some(b.attempts as f64 / load)
        }),
    )?;
    let early: Vec<Line> = Rule::ALL
        .iter()
        .map(|r| {
            let pts = results
                .down
                .iter()
                .filter(|s| s.shape.fan_out == 1 && s.rule == *r)
                .map(|s| (s.shape.depth as f64, s.leaf().early))
                .collect();
            (r.name.to_string(), pts)
        })
        .collect();
    report::plot(
        &out.join("callgraph_down_depth.svg"),
        &format!(
            "Leaf down: leaf requests per user call offered in the outage's first {} s",
            callgraph::EARLY
        ),
        "depth (retrying hops, fan-out 1)",
        "leaf requests per user call",
        &early,
        Scale::Log,
        &[],
    )?;
    report::line_plot(
        &out.join("callgraph_overload_goodput.svg"),
        &format!(
            "Users → A → B → leaf, leaf at half speed from {} s to {} s: user calls that succeeded",
            metastable::TRIGGER_START,
            metastable::TRIGGER_END
        ),
        "second",
        "succeeded / offered",
        &per_second(&results.overload, config.overload.horizon, &|b| {
            (b.offered > 0).then(|| b.offered_succeeded as f64 / b.offered as f64)
        }),
    )?;
    let capacity = match config.overload.fault {
        callgraph::Fault::Overload { capacity, .. } => capacity,
        _ => 1.0,
    };
    report::line_plot(
        &out.join("callgraph_overload_leaf.svg"),
        "Users → A → B → leaf, the overload trigger: leaf requests",
        "second",
        "leaf requests / its capacity",
        &per_second(&results.overload, config.overload.horizon, &|b| {
            Some(b.attempts as f64 / capacity)
        }),
    )?;

    // Goal 1: the leaf down.
    for (setup, summaries) in [
        (&config.down, &results.down),
        (&config.down_timed, &results.down_timed),
    ] {
        callgraph_down_table(setup, &config.shapes, summaries);
    }

    println!(
        "\n### Call graph: the leaf down throughout, {} user calls one after the other, one \
         replica per tier (no attempt timeouts)\n",
        config.chain_calls
    );
    println!(
        "| depth | policy | leaf requests per user call | requests per user call, tiers 1..d |"
    );
    println!("|---:|---|---:|---|");
    for c in &results.chains {
        println!(
            "| {} | {} | {:.2} | {} |",
            c.shape.depth,
            c.rule.name,
            c.leaf(),
            c.per_call
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" / ")
        );
    }
    println!(
        "\nLoopback chain (users → A → B → leaf C down, {} sequential calls):",
        callgraph::LOOPBACK_CALLS
    );
    for rule in Rule::ALL.into_iter().chain([Rule::SERVER_LAYER]) {
        let chain = callgraph::loopback(rule);
        println!(
            "- {}: {:.2} leaf requests per user call",
            rule.name,
            chain.leaf()
        );
    }

    // Goal 2: transient failures.
    println!(
        "\n### Call graph: {:.0}% of leaf requests failing ({} leaf requests/s, {} s; without \
         attempt timeouts and with 1 s attempt timeouts at every hop; means of seeds {:?})\n",
        100.0 * rate,
        config.transient.leaf_load,
        config.transient.horizon,
        config.transient_seeds,
    );
    println!(
        "One retrying hop (the single-tier normal-operation scenario, the standard bucket, \
         same seeds): {:.4}% of calls failed; the same hop with its calls under a deadline of \
         1 s, as a service's calls are under its caller's 1 s attempt: {:.4}%.\n",
        100.0 * one_hop,
        100.0 * one_hop_within
    );
    println!(
        "| depth | fan-out | policy | one hop per leaf request would give | user calls failed | \
         within 0.01 points | leaf per user call | services per user call | one hop within 1 s \
         per leaf request would give | calls failed, 1 s attempt timeouts | within 0.01 points | \
         leaf per user call, 1 s attempt timeouts | services per user call, 1 s attempt \
         timeouts |"
    );
    println!("|---:|---:|---|---:|---:|---|---:|---|---:|---:|---|---:|---|");
    for &shape in &config.shapes {
        let expected = 1.0 - (1.0 - one_hop).powf(shape.leaf_per_call());
        let expected_within = 1.0 - (1.0 - one_hop_within).powf(shape.leaf_per_call());
        let within = |failed: f64, expected: f64| {
            if failed <= expected + 0.0001 {
                "yes"
            } else {
                "no"
            }
        };
        for (name, first) in callgraph_rows(&results.transient, shape) {
            let plain = seeds_mean(&results.transient, shape, first.rule);
            let timed = seeds_mean(&results.transient_timed, shape, first.rule);
            println!(
                "| {} | {} | {} | {:.4}% | {:.4}% | {} | {} | {} | {:.4}% | {:.4}% | {} | {} | {} |",
                shape.depth,
                shape.fan_out,
                name,
                100.0 * expected,
                100.0 * plain.failed,
                within(plain.failed, expected),
                leaf_figure(plain.leaf, shape),
                services_figure(&plain.tiers, |a| a.per_call),
                100.0 * expected_within,
                100.0 * timed.failed,
                within(timed.failed, expected_within),
                leaf_figure(timed.leaf, shape),
                services_figure(&timed.tiers, |a| a.per_call),
            );
        }
    }

    // Goal 3: the overload trigger.
    println!(
        "\n### Call graph: the leaf's overload trigger (a queue at {} requests/s, half of it \
         from {} s to {} s, offered 0.8 of it; 1 s attempt timeouts)\n",
        capacity,
        metastable::TRIGGER_START,
        metastable::TRIGGER_END
    );
    println!(
        "| depth | fan-out | policy | recovered after the trigger | goodput in it | goodput, 10 s \
         after | calls failed | leaf per user call in it | leaf's peak / capacity | leaf's \
         arrivals shed, trigger and 10 s after | services per user call in it |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let (trigger_from, trigger_to) = config.overload.fault.window(config.overload.horizon);
    for &shape in &config.shapes {
        for (name, s) in callgraph_rows(&results.overload, shape) {
            let span = s.run.series.total(trigger_from, trigger_to + 10.0);
            println!(
                "| {} | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% | {} | {:.2} | {:.1}% | {} |",
                shape.depth,
                shape.fan_out,
                name,
                recovered(s),
                100.0 * s.goodput_fault,
                100.0 * s.goodput_after,
                100.0 * s.failed,
                leaf_figure(s.leaf().per_call, shape),
                s.leaf_peak * config.overload.leaf_load / capacity,
                100.0 * retry_sim::sim::ratio(span.shed, span.attempts),
                services_figure(&s.tiers, |a| a.per_call)
            );
        }
    }
    println!(
        "\nThe leaf's shedding under the rules that do not answer (the same trigger; every other \
         rule as above):\n"
    );
    println!(
        "| depth | fan-out | policy | recovered after the trigger | goodput in it | goodput, 10 s \
         after | calls failed | leaf per user call in it | leaf's peak / capacity | leaf's \
         arrivals shed, trigger and 10 s after |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for &shape in &config.shapes {
        for s in results
            .overload_shedding
            .iter()
            .filter(|s| s.shape == shape)
        {
            let span = s.run.series.total(trigger_from, trigger_to + 10.0);
            println!(
                "| {} | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% | {} | {:.2} | {:.1}% |",
                shape.depth,
                shape.fan_out,
                s.rule.name,
                recovered(s),
                100.0 * s.goodput_fault,
                100.0 * s.goodput_after,
                100.0 * s.failed,
                leaf_figure(s.leaf().per_call, shape),
                s.leaf_peak * config.overload.leaf_load / capacity,
                100.0 * retry_sim::sim::ratio(span.shed, span.attempts),
            );
        }
    }
    Ok(())
}

/// The means over a setup's seeds of one shape's runs under one rule.
struct SeedsMean {
    /// User calls failed.
    failed: f64,
    /// Leaf requests per user call.
    leaf: f64,
    /// Every tier's requests per user call (only `per_call` set).
    tiers: Vec<callgraph::Amplification>,
}

fn seeds_mean(
    summaries: &[callgraph::Summary],
    shape: callgraph::Shape,
    rule: callgraph::Rule,
) -> SeedsMean {
    let runs: Vec<&callgraph::Summary> = summaries
        .iter()
        .filter(|s| s.shape == shape && s.rule == rule)
        .collect();
    let n = runs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&callgraph::Summary) -> f64| runs.iter().map(|s| f(s)).sum::<f64>() / n;
    SeedsMean {
        failed: mean(&|s| s.failed),
        leaf: mean(&|s| s.leaf().per_call),
        tiers: (0..shape.depth)
            .map(|i| callgraph::Amplification {
                per_call: mean(&|s| s.tiers[i].per_call),
                ..Default::default()
            })
            .collect(),
    }
}

/// The table of the leaf down under `setup`.
fn callgraph_down_table(
    setup: &callgraph::Setup,
    shapes: &[callgraph::Shape],
    summaries: &[callgraph::Summary],
) {
    let (from, to) = setup.fault.window(setup.horizon);
    println!(
        "\n### Call graph: the leaf down from {from} s to {to} s ({} leaf requests/s when nothing \
         fails; {})\n",
        setup.leaf_load,
        setup
            .attempt_timeout
            .map_or("no attempt timeouts".to_string(), |t| format!(
                "{} s attempt timeouts",
                t.as_secs_f64()
            ))
    );
    println!(
        "| depth | fan-out | policy | leaf per user call, first {} s | per call offered in the \
         outage | arrivals, last third | 10 s after | services per user call (tiers 1..d-1) | \
         calls failed | goodput back |",
        callgraph::EARLY
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---|---:|---:|");
    for &shape in shapes {
        for (name, s) in callgraph_rows(summaries, shape) {
            let leaf = s.leaf();
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% | {} |",
                shape.depth,
                shape.fan_out,
                name,
                leaf_figure(leaf.early, shape),
                leaf_figure(leaf.per_call, shape),
                leaf_figure(leaf.last_third, shape),
                leaf_figure(leaf.after, shape),
                services_figure(&s.tiers, |a| a.per_call),
                100.0 * s.failed,
                recovered(s)
            );
        }
    }
}

fn run_overload(quick: bool, out: &Path) -> Result<()> {
    let (from_start, after_normal) = if quick {
        (
            overload::Config::quick(),
            overload::Config::after_normal_quick(),
        )
    } else {
        (overload::Config::full(), overload::Config::after_normal())
    };
    overload_table(&from_start, out, "overload", "Overload")?;
    overload_table(
        &after_normal,
        out,
        "overload_after_normal",
        &format!(
            "Overload after {} s of normal operation",
            after_normal.normal_before
        ),
    )
}

/// One overload run of every policy at every size and load, its table printed under `title`,
/// its CSV `NAME.csv` and the limit's goodput `NAME_goodput.svg`.
fn overload_table(config: &overload::Config, out: &Path, name: &str, title: &str) -> Result<()> {
    let mut csv = Vec::new();
    println!("## {title}\n");
    println!(
        "| policy | offered | client size (calls/s) | goodput / C | p99 of successes (ms) | \
         unloaded p99 (ms) | p99 over unloaded | calls failed | attempts / C | goal |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut series = Vec::new();
    for &size in &config.sizes {
        let unloaded = overload::unloaded_p99(config, size);
        for policy in sizes::policies() {
            for &factor in &config.factors {
                let started = std::time::Instant::now();
                let s = overload::run_policy(config, policy, factor, size);
                eprintln!(
                    "overload: {} at {factor}x, size {size}, in {:.1} s",
                    policy.name,
                    started.elapsed().as_secs_f64()
                );
                let meets = overload::meets(&s, unloaded);
                let clients = overload::fleet(config, policy, factor, size).clients;
                // No call succeeded: no p99 of successes (empty CSV fields, "-" in the table).
                let (p99_csv, over_csv, p99_md, over_md) = if s.p99.is_nan() {
                    (
                        String::new(),
                        String::new(),
                        "-".to_string(),
                        "-".to_string(),
                    )
                } else {
                    (
                        format!("{:.2}", 1000.0 * s.p99),
                        format!("{:.3}", s.p99 / unloaded),
                        format!("{:.1}", 1000.0 * s.p99),
                        format!("{:.2}x", s.p99 / unloaded),
                    )
                };
                csv.push(format!(
                    "{},{factor},{size},{clients},{:.4},{p99_csv},{:.2},{over_csv},{:.4},{:.4},{meets}",
                    policy.name,
                    s.goodput,
                    1000.0 * unloaded,
                    s.failed_fraction,
                    s.load
                ));
                println!(
                    "| {} | {factor}x | {size} | {:.1}% | {p99_md} | {:.1} | {over_md} | {:.1}% | {:.2} | {} |",
                    policy.name,
                    100.0 * s.goodput,
                    1000.0 * unloaded,
                    100.0 * s.failed_fraction,
                    s.load,
                    if meets { "met" } else { "✗" }
                );
                if policy.name == sizes::PRESET.name {
                    series.push((format!("{factor}x C, clients of {size}/s"), s.run));
                }
            }
        }
    }
    report::write_csv(
        &out.join(format!("{name}.csv")),
        "strategy,offered_over_capacity,calls_per_second_per_client,clients,goodput,p99_ms,\
         unloaded_p99_ms,p99_over_unloaded,failed_fraction,attempts_over_capacity,meets_goal",
        &csv,
    )?;
    let goodput: Vec<Line> = series
        .iter()
        .map(|(name, run)| {
            let points = run
                .series
                .bins
                .iter()
                .enumerate()
                .take((config.normal_before + config.horizon) as usize)
                .map(|(i, b)| (i as f64, b.succeeded as f64 / overload::CAPACITY))
                .collect();
            (name.clone(), points)
        })
        .collect();
    report::line_plot(
        &out.join(format!("{name}_goodput.svg")),
        &format!(
            "{title}: goodput of standard+adaptive-concurrency (successful calls per second / C)"
        ),
        "seconds",
        "goodput / C",
        &goodput,
    )?;
    println!();
    Ok(())
}

fn run_sizes(quick: bool, out: &Path) -> Result<()> {
    let base = if quick {
        guards::Config::quick()
    } else {
        guards::Config::full()
    };
    let mut csv = Vec::new();
    println!("## No regret at every client size\n");
    println!(
        "| client size (calls/s) | policy | normal: calls failed (points over the bucket) | \
         outage: amplification | metastable: recovered | throttling: attempts per success, \
         goodput (over the best) | Brooker (over the best) | goals met | worst share |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for size in sizes::SIZES {
        let config = sizes::config(&base, size);
        let rows = guard_rows(
            &config,
            sizes::policies(),
            &format!("sizes at {size} calls/s"),
        );
        let table = guards::table(&rows);
        let bucket = table[0].headline.failed;
        for (r, g) in rows.iter().zip(&table) {
            let h = g.headline;
            let rec = h
                .recovered_after
                .map_or("never".to_string(), |s| format!("{s:.0} s"));
            let brooker = g
                .brooker_ratio
                .map_or(format!("{:.1} gave up", h.brooker_gave_up), |x| {
                    format!("x{x:.2}")
                });
            let mark = |i: usize| if g.meets[i] { "" } else { " ✗" };
            csv.push(format!(
                "{size},{},{:.6},{:.6},{:.4},{},{:.4},{:.4},{:.4},{},{},{:.3}",
                r.policy.name,
                h.failed,
                100.0 * (h.failed - bucket),
                h.amplification,
                h.recovered_after
                    .map_or("never".to_string(), |s| format!("{s:.0}")),
                h.attempts_per_success,
                h.goodput,
                g.throttling_ratio,
                g.brooker_ratio
                    .map_or("gave_up".to_string(), |x| format!("{x:.4}")),
                g.meets.iter().filter(|m| **m).count(),
                g.worst_share
            ));
            println!(
                "| {size} | {} | {:.4}% ({:+.4}){} | {:.3}x{} | {rec}{} | {:.3}, {:.1}% (x{:.3}){} | {brooker}{} | {}/5 | {:.2} |",
                r.policy.name,
                100.0 * h.failed,
                100.0 * (h.failed - bucket),
                mark(0),
                h.amplification,
                mark(1),
                mark(2),
                h.attempts_per_success,
                100.0 * h.goodput,
                g.throttling_ratio,
                mark(3),
                mark(4),
                g.meets.iter().filter(|m| **m).count(),
                g.worst_share
            );
        }
    }
    report::write_csv(
        &out.join("no_regret_sizes.csv"),
        "calls_per_second_per_client,strategy,normal_failed,normal_points_over_bucket,\
         outage_amplification,metastable_recovered_s,throttling_attempts_per_success,\
         throttling_goodput,throttling_ratio,brooker_ratio,goals_met,worst_share",
        &csv,
    )?;
    println!();
    Ok(())
}
