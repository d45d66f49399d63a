//! A soak, not run in CI: mixed `#[retry]` calls (HTTP/1.1 and gRPC, reads and writes) at a
//! bounded rate through the fault proxies of the fault tests (`reliability_faults.rs`, whose
//! binary this module is), while the proxies' toxics change every few seconds, for ten minutes
//! (`RETRY_SOAK_SECS` sets another length). Run it alone (`--ignored`): it samples the process's
//! memory and the runtime's tasks, which the fault tests beside it would move.
//!
//! ```text
//! RETRY_SOAK_SECS=600 cargo test --release -p retry-workspace --test reliability_faults soak -- --ignored --nocapture
//! ```
//!
//! At the end: no call hung or outlived its deadline by more than the tolerance, no write was
//! executed twice, the bucket holds exactly its capacity less what the retries kept, the
//! runtime's live tasks are back to where they were before the servers started, and the
//! resident memory (`VmRSS`) printed along the way stays flat once warm.

use crate::proxy::calls::{CallError, Op, Target, assert_write_retries, kept, outcome};
use crate::proxy::{Downstream, Proxy, StreamDirection, Toxic, Upstream};
use retry_runtime::testing::{self, Overrides};
use retry_runtime::{TokenBucket, retry};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Calls started per second, at most.
const RATE: u64 = 200;
/// Calls in flight at once, at most.
const IN_FLIGHT: usize = 512;
/// How long each toxic stays on.
const PHASE: Duration = Duration::from_secs(5);
/// The functions' deadline (`deadline = "700ms"`), and how much later a call may end.
const DEADLINE: Duration = Duration::from_millis(700);
const TOLERANCE: Duration = Duration::from_millis(100);
/// A call still running this long after it started has hung.
const HANG: Duration = Duration::from_secs(10);
/// Memory and tasks are sampled this often.
const SAMPLE: Duration = Duration::from_secs(30);

const CAPACITY: u32 = 1_000_000_000;
static SOAK: TokenBucket = TokenBucket::standard()
    .with_capacity(CAPACITY)
    .with_success_reward(0);

#[retry(
    max_attempts = 3,
    initial_backoff = "20ms",
    max_backoff = "100ms",
    attempt_timeout = "250ms",
    deadline = "700ms",
    idempotent_if = op.idempotent(),
    bucket = SOAK
)]
async fn call(target: &Target, op: Op) -> Result<(), CallError> {
    target.attempt(op).await
}

/// The toxics in turn, `PHASE` each, round and round: none, each of the seven on the
/// responses, then three on the requests.
const SCHEDULE: [(Option<Toxic>, StreamDirection, f32); 11] = [
    (None, Downstream, 1.0),
    (
        Some(Toxic::Latency {
            latency: 150,
            jitter: 100,
        }),
        Downstream,
        1.0,
    ),
    (Some(Toxic::Timeout { timeout: 0 }), Downstream, 1.0),
    (Some(Toxic::ResetPeer { timeout: 0 }), Downstream, 1.0),
    (Some(Toxic::SlowClose { delay: 2000 }), Downstream, 1.0),
    (
        Some(Toxic::Slicer {
            average_size: 8,
            size_variation: 4,
            delay: 10_000,
        }),
        Downstream,
        1.0,
    ),
    (Some(Toxic::LimitData { bytes: 200 }), Downstream, 1.0),
    (Some(Toxic::Bandwidth { rate: 1 }), Downstream, 1.0),
    (Some(Toxic::Timeout { timeout: 0 }), Upstream, 1.0),
    (Some(Toxic::LimitData { bytes: 60 }), Upstream, 1.0),
    (Some(Toxic::ResetPeer { timeout: 0 }), Upstream, 0.5),
];

fn schedule_name(i: usize) -> String {
    match SCHEDULE[i] {
        (None, _, _) => "none".to_string(),
        (Some(t), d, toxicity) if toxicity < 1.0 => format!("{} {d} ({toxicity})", t.name()),
        (Some(t), d, _) => format!("{} {d}", t.name()),
    }
}

/// What the finished calls add up to.
#[derive(Default)]
struct Totals {
    calls: u64,
    attempts: u64,
    /// Tokens the retries kept, by the rule of `calls::kept`.
    kept: u64,
    latest: Duration,
    /// Calls that ended later than `DEADLINE + TOLERANCE`.
    late: u64,
    /// By schedule entry, kind of call, then outcome.
    outcomes: BTreeMap<(usize, &'static str, String), u64>,
    /// The first error of each kind of call and outcome, as it was returned.
    examples: BTreeMap<(&'static str, String), String>,
}

/// Resident memory of this process, in KiB.
fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[test]
#[ignore = "a soak of ten minutes: RETRY_SOAK_SECS=600 cargo test --release -p retry-workspace --test reliability_faults soak -- --ignored --nocapture"]
fn soak() {
    let secs: u64 = std::env::var("RETRY_SOAK_SECS").map_or(600, |s| s.parse().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(soak_for(Duration::from_secs(secs)));
}

/// Execution counts of the writes, by id: the servers' ledgers drained into one byte per
/// write, so that they do not grow with the run.
struct Writes {
    http: Vec<u8>,
    grpc: Vec<u8>,
    get_executions: u64,
    arrivals: u64,
}

impl Writes {
    fn drain(&mut self, http: &crate::http_server::Server, grpc: &crate::grpc_server::Server) {
        self.arrivals += (http.drain_arrivals().len() + grpc.drain_arrivals().len()) as u64;
        for (path, n) in http.drain_executed() {
            match path.strip_prefix("/orders/") {
                Some(id) => self.http[id.parse::<usize>().unwrap()] += u8::try_from(n).unwrap(),
                None => self.get_executions += u64::from(n),
            }
        }
        for ((method, id), n) in grpc.drain_executed() {
            match method {
                "Place" => self.grpc[id as usize] += u8::try_from(n).unwrap(),
                _ => self.get_executions += u64::from(n),
            }
        }
        let twice = |counts: &[u8]| counts.iter().position(|&n| n > 1);
        assert_eq!(twice(&self.http), None, "an HTTP POST executed twice");
        assert_eq!(twice(&self.grpc), None, "a gRPC Place executed twice");
    }
}

async fn soak_for(length: Duration) {
    let rss_start = vm_rss_kib();
    let tasks_start = alive_tasks();
    let http = crate::http_server::Server::start().await;
    let grpc = crate::grpc_server::Server::start().await;
    let http_proxy = Proxy::start("http", http.addr).await;
    let grpc_proxy = Proxy::start("grpc", grpc.addr).await;
    let target = Arc::new(Target::new(http_proxy.addr, grpc_proxy.addr));
    let ids = usize::try_from(length.as_secs() * RATE / 4 + RATE).unwrap();
    let mut writes = Writes {
        http: vec![0; ids],
        grpc: vec![0; ids],
        get_executions: 0,
        arrivals: 0,
    };
    let totals = Arc::new(Mutex::new(Totals::default()));
    let phase_now = Arc::new(AtomicUsize::new(0));
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    println!(
        "soak: {} s at {RATE} calls/s, toxics changing every {} s; VmRSS {rss_start} KiB, {tasks_start} tasks before the servers start",
        length.as_secs(),
        PHASE.as_secs()
    );
    println!("| at | calls | in flight | VmRSS | live tasks | proxy connections | bucket |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");

    let started = Instant::now();
    let mut calls = JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / u32::try_from(RATE).unwrap());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut n, mut phase, mut next_phase, mut next_sample, mut next_drain) =
        (0u64, 0usize, started, started, started);
    let mut samples = Vec::new();
    while started.elapsed() < length {
        tick.tick().await;
        let now = Instant::now();
        if now >= next_phase {
            let (toxic, direction, toxicity) = SCHEDULE[phase % SCHEDULE.len()];
            let toxics: Vec<_> = toxic
                .map(|t| (t, direction, toxicity))
                .into_iter()
                .collect();
            http_proxy.set(&toxics).await;
            grpc_proxy.set(&toxics).await;
            phase_now.store(phase % SCHEDULE.len(), Ordering::Relaxed);
            phase += 1;
            next_phase += PHASE;
        }
        if now >= next_drain {
            writes.drain(&http, &grpc);
            next_drain += Duration::from_secs(1);
        }
        if now >= next_sample {
            let sample = (
                started.elapsed().as_secs(),
                n,
                IN_FLIGHT - permits.available_permits(),
                vm_rss_kib(),
                alive_tasks(),
                http_proxy.connections() + grpc_proxy.connections(),
                SOAK.available(),
            );
            println!(
                "| {} s | {} | {} | {} KiB | {} | {} | {} |",
                sample.0, sample.1, sample.2, sample.3, sample.4, sample.5, sample.6
            );
            samples.push(sample);
            next_sample += SAMPLE;
        }
        while calls.try_join_next().is_some() {}

        let permit = permits.clone().acquire_owned().await.unwrap();
        let op = Op::all(u32::try_from(n / 4).unwrap())[usize::try_from(n % 4).unwrap()];
        n += 1;
        let (target, totals, phase) = (target.clone(), totals.clone(), phase_now.clone());
        calls.spawn(async move {
            let during = phase.load(Ordering::Relaxed);
            let begun = Instant::now();
            let call = testing::record(Overrides::new(), call(&target, op));
            let Ok((result, record)) = tokio::time::timeout(HANG, call).await else {
                panic!("{op:?} hung: still running after {HANG:?}");
            };
            let elapsed = begun.elapsed();
            drop(permit);
            if let Err(CallError::Wrong(answer)) = &result {
                panic!("a wrong answer arrived: {answer}");
            }
            if !op.idempotent() {
                assert_write_retries(op, &record);
            }
            let label = outcome(&result);
            let mut t = totals.lock().unwrap();
            t.calls += 1;
            t.attempts += record.retries().len() as u64 + 1;
            t.kept += u64::from(kept(&SOAK, result.is_ok(), &record));
            t.latest = t.latest.max(elapsed);
            if elapsed > DEADLINE + TOLERANCE {
                t.late += 1;
                eprintln!("{op:?} ended after {elapsed:?}: {result:?}");
            }
            *t.outcomes
                .entry((during, op.kind(), label.clone()))
                .or_default() += 1;
            if let Err(e) = &result {
                t.examples
                    .entry((op.kind(), label))
                    .or_insert_with(|| format!("{e:?}"));
            }
        });
    }
    // Every call started ends (or its task panics, which fails the soak here).
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
    let rss_end = vm_rss_kib();
    let tasks_end = alive_tasks();

    // Bytes held in the proxies may still reach a server: give them time, stop the proxies
    // (which drops what they still hold), and count every execution.
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(target);
    http_proxy.stop().await;
    grpc_proxy.stop().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    writes.drain(&http, &grpc);
    drop(http);
    drop(grpc);
    // The servers' connections close once their tasks see the abort.
    let wait = Instant::now();
    while alive_tasks() > tasks_start && wait.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tasks_after = alive_tasks();
    let rss_after = vm_rss_kib();

    let t = totals.lock().unwrap();
    println!(
        "| end | {} | 0 | {rss_end} KiB | {tasks_end} | | {} |",
        t.calls,
        SOAK.available()
    );
    println!(
        "after teardown: VmRSS {rss_after} KiB, {tasks_after} live tasks (before the servers: {tasks_start})"
    );
    println!(
        "{} calls in {:.0} s, {} attempts, {} reached the servers, {} executions of reads; latest end {} ms, {} past the tolerance",
        t.calls,
        started.elapsed().as_secs_f64(),
        t.attempts,
        writes.arrivals,
        writes.get_executions,
        t.latest.as_millis(),
        t.late
    );
    let executed_writes = writes.http.iter().chain(&writes.grpc).filter(|&&n| n == 1);
    println!(
        "writes executed once: {}, twice or more: 0",
        executed_writes.count()
    );
    println!(
        "bucket: {CAPACITY} -> {} ({} kept by retries that did not succeed)",
        SOAK.available(),
        t.kept
    );
    println!("| toxic | calls | HTTP GET | HTTP POST | gRPC Get | gRPC Place |");
    println!("|---|---:|---|---|---|---|");
    for i in 0..SCHEDULE.len() {
        let mut row = String::new();
        let mut calls = 0;
        for kind in Op::all(0).map(Op::kind) {
            let labels: Vec<String> = t
                .outcomes
                .iter()
                .filter(|((p, k, _), _)| *p == i && *k == kind)
                .map(|((_, _, l), n)| {
                    calls += n;
                    format!("{l} {n}")
                })
                .collect();
            row.push_str(&format!(" {} |", labels.join(", ")));
        }
        println!("| {} | {calls} |{row}", schedule_name(i));
    }
    for ((kind, label), e) in &t.examples {
        println!("    {kind} {label}: {e}");
    }

    assert_eq!(t.late, 0, "calls outlived their deadline");
    assert_eq!(
        u64::from(SOAK.available()),
        u64::from(CAPACITY) - t.kept,
        "the bucket is off the retries' costs"
    );
    assert_eq!(tasks_after, tasks_start, "tasks left behind");
}
