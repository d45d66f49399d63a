//! `#[retry]` clients through real network faults: each of Toxiproxy's seven toxics, played
//! by a fault proxy on 127.0.0.1 (`proxy/`: noxious, the Rust port of Toxiproxy, in-process)
//! between reqwest and tonic clients and the loopback HTTP and gRPC test servers.
//!
//! For each toxic, a batch of concurrent calls (idempotent reads and non-idempotent writes,
//! over HTTP/1.1 and gRPC) with an attempt timeout and a deadline, and after it:
//!
//! - no write was executed twice by its server (the servers count executions per request),
//!   and no write was retried after a failure that may have reached its server;
//! - no call ended later than its deadline plus `TOLERANCE` (real time on a loaded machine:
//!   one timer tick and the scheduling of a busy runtime, generously);
//! - no call hung (each runs under an outer timeout far beyond its deadline);
//! - the test's own token bucket holds exactly its capacity less the cost of every retry
//!   that did not end in a success (no success reward, so nothing clips);
//! - every answer that arrived is the right one, however the bytes were cut.
//!
//! The figures vary a little from run to run (jitter, the interleaving of concurrent calls);
//! what is asserted does not. `cargo test -p retry-workspace --test reliability_faults --
//! --nocapture` prints each toxic's figures (RELIABILITY.md has a run's). The soak that toggles
//! the toxics for minutes, ignored unless asked for, is the `soak` module
//! (`reliability_faults/soak.rs`).

mod faults;
mod grpc_server;
mod http_server;
mod proxy;
#[path = "util/resettable.rs"]
mod resettable;
#[path = "reliability_faults/soak.rs"]
mod soak;

use proxy::calls::{CallError, Op, Target, assert_write_retries, kept, outcome};
use proxy::{Downstream, Proxy, StreamDirection, Toxic, Upstream};
use retry_runtime::testing::{self, Overrides, Record};
use retry_runtime::{Classify, ErrorClass, TokenBucket, retry};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The deadline every function below is given (`deadline = "700ms"`).
const DEADLINE: Duration = Duration::from_millis(700);
/// How much later than its deadline a call may end: a timer tick (1 ms), the network, and
/// the scheduling of a runtime shared by every test of the file on two cores.
const TOLERANCE: Duration = Duration::from_millis(100);
/// A call still running this long after it started has hung.
const HANG: Duration = Duration::from_secs(10);
/// Calls of each kind per toxic (reads and writes, HTTP and gRPC: four kinds).
const CALLS: u32 = 12;
/// Each test's bucket; no call earns a success reward, so the level is exact.
const CAPACITY: u32 = 10_000;
/// After the calls, time for bytes still held in a proxy to reach the servers before their
/// counters are read.
const SETTLE: Duration = Duration::from_millis(500);

type Call = fn(Arc<Target>, Op) -> Pin<Box<dyn Future<Output = Result<(), CallError>> + Send>>;

/// A test of one toxic: its own bucket, and a `#[retry]` function on it whose idempotency is
/// the operation's. Every test uses the same policy: 3 attempts of at most 250 ms within a
/// 700 ms deadline, backoff from 20 ms up to 100 ms.
#[rustfmt::skip] // rustfmt indents the attribute further on each run
macro_rules! toxic_test {
    ($test:ident, $toxic:expr, $direction:expr, $toxicity:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            static BUCKET: TokenBucket = TokenBucket::standard()
                .with_capacity(CAPACITY)
                .with_success_reward(0);

            #[retry(
                max_attempts = 3,
                initial_backoff = "20ms",
                max_backoff = "100ms",
                attempt_timeout = "250ms",
                deadline = "700ms",
                idempotent_if = op.idempotent(),
                bucket = BUCKET
            )]
            async fn call(target: &Target, op: Op) -> Result<(), CallError> {
                target.attempt(op).await
            }

            fn boxed(
                target: Arc<Target>,
                op: Op,
            ) -> Pin<Box<dyn Future<Output = Result<(), CallError>> + Send>> {
                Box::pin(async move { call(&target, op).await })
            }

            run($toxic, $direction, $toxicity, &BUCKET, boxed).await;
        }
    };
}

// Each toxic on the responses (downstream): the server has acted on a request by the time
// the fault strikes, the worst case for a write.
toxic_test!(
    latency,
    Toxic::Latency {
        latency: 150,
        jitter: 100
    },
    Downstream,
    1.0
);
toxic_test!(black_hole, Toxic::Timeout { timeout: 0 }, Downstream, 1.0);
toxic_test!(reset_peer, Toxic::ResetPeer { timeout: 0 }, Downstream, 0.5);
toxic_test!(
    slow_close,
    Toxic::SlowClose { delay: 2000 },
    Downstream,
    1.0
);
toxic_test!(
    slicer,
    Toxic::Slicer {
        average_size: 8,
        size_variation: 4,
        delay: 10_000
    },
    Downstream,
    1.0
);
toxic_test!(limit_data, Toxic::LimitData { bytes: 200 }, Downstream, 1.0);
toxic_test!(bandwidth, Toxic::Bandwidth { rate: 1 }, Downstream, 1.0);
// And on the requests (upstream): a black hole that never delivers them, and requests cut
// short on their way, which the servers never see whole.
toxic_test!(
    black_hole_upstream,
    Toxic::Timeout { timeout: 0 },
    Upstream,
    1.0
);
toxic_test!(
    limit_data_upstream,
    Toxic::LimitData { bytes: 60 },
    Upstream,
    1.0
);

/// One finished call.
struct Outcome {
    op: Op,
    result: Result<(), CallError>,
    record: Record,
    elapsed: Duration,
}

async fn run(
    toxic: Toxic,
    direction: StreamDirection,
    toxicity: f32,
    bucket: &'static TokenBucket,
    call: Call,
) {
    let http = http_server::Server::start().await;
    let grpc = grpc_server::Server::start().await;
    let http_proxy = Proxy::start("http", http.addr).await;
    let grpc_proxy = Proxy::start("grpc", grpc.addr).await;
    http_proxy.set(&[(toxic, direction, toxicity)]).await;
    grpc_proxy.set(&[(toxic, direction, toxicity)]).await;
    let target = Arc::new(Target::new(http_proxy.addr, grpc_proxy.addr));

    let mut calls = JoinSet::new();
    for id in 0..CALLS {
        for op in Op::all(id) {
            let target = target.clone();
            calls.spawn(async move {
                let started = Instant::now();
                let call = testing::record(Overrides::new(), call(target, op));
                let Ok((result, record)) = tokio::time::timeout(HANG, call).await else {
                    panic!("{op:?} hung: still running after {HANG:?}");
                };
                let elapsed = started.elapsed();
                Outcome {
                    op,
                    result,
                    record,
                    elapsed,
                }
            });
        }
    }
    let mut outcomes = calls.join_all().await;
    outcomes.sort_by_key(|o| o.op);

    // Bytes still in a proxy may yet reach a server: count executions once they have.
    tokio::time::sleep(SETTLE).await;
    let executed = |op: Op| match op {
        Op::HttpGet(id) => http.executed(&format!("/items/{id}")),
        Op::HttpPost(id) => http.executed(&format!("/orders/{id}")),
        Op::GrpcGet(id) => grpc.executed("Get", id),
        Op::GrpcPlace(id) => grpc.executed("Place", id),
    };

    let mut kept_by_retries = 0;
    for o in &outcomes {
        let op = o.op;
        assert!(
            o.elapsed <= DEADLINE + TOLERANCE,
            "{op:?} ended {:?} after it started, past its {DEADLINE:?} deadline: {:?}",
            o.elapsed,
            o.result
        );
        assert!(o.record.retries().len() < 3, "{op:?}: {:?}", o.record);
        if let Err(CallError::Wrong(answer)) = &o.result {
            panic!("a wrong answer arrived: {answer}");
        }
        if !op.idempotent() {
            let n = executed(op);
            assert!(n <= 1, "{op:?} executed {n} times: {:?}", o.result);
            if o.result.is_ok() {
                assert_eq!(n, 1, "{op:?} succeeded without being executed");
            }
            assert_write_retries(op, &o.record);
        }
        kept_by_retries += kept(bucket, o.result.is_ok(), &o.record);
    }
    assert_eq!(
        bucket.available(),
        CAPACITY - kept_by_retries,
        "the bucket is off the retries' costs"
    );
    // The calls went through the proxies.
    assert!(http_proxy.connections() > 0 && grpc_proxy.connections() > 0);
    if matches!(toxic, Toxic::ResetPeer { .. }) {
        assert!(http_proxy.resets() > 0 && grpc_proxy.resets() > 0);
    }

    for (http, proxy) in [(true, &http_proxy), (false, &grpc_proxy)] {
        println!(
            "{}",
            figures(
                toxic, direction, toxicity, http, &outcomes, &executed, proxy
            )
        );
    }
    println!(
        "| {} {direction} | bucket | {CAPACITY} -> {} ({kept_by_retries} kept by retries that did not succeed) |",
        toxic.name(),
        bucket.available()
    );
    for ((http, kind), e) in examples(&outcomes) {
        let protocol = if http { "HTTP/1.1" } else { "gRPC" };
        println!("    {} {direction} {protocol} {kind}: {e}", toxic.name());
    }
    drop(target);
    http_proxy.stop().await;
    grpc_proxy.stop().await;
}

/// A row of the table in RELIABILITY.md: the toxic, the calls of one protocol, their
/// outcomes, and the figures behind what held.
fn figures(
    toxic: Toxic,
    direction: StreamDirection,
    toxicity: f32,
    http: bool,
    outcomes: &[Outcome],
    executed: &dyn Fn(Op) -> u32,
    proxy: &Proxy,
) -> String {
    let mut row = format!("| {} {direction}", toxic.name());
    if toxicity < 1.0 {
        write!(row, " (toxicity {toxicity})").unwrap();
    }
    write!(row, " | {} |", if http { "HTTP/1.1" } else { "gRPC" }).unwrap();
    let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.op.is_http() == http).collect();
    let mut latest = Duration::ZERO;
    for idempotent in [true, false] {
        let calls: Vec<&&Outcome> = mine
            .iter()
            .filter(|o| o.op.idempotent() == idempotent)
            .collect();
        let mut kinds: BTreeMap<String, u32> = BTreeMap::new();
        let (mut attempts, mut executions) = (0, 0);
        for o in &calls {
            *kinds.entry(label(o)).or_default() += 1;
            attempts += o.record.retries().len() + 1;
            executions += executed(o.op);
            latest = latest.max(o.elapsed);
        }
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        write!(
            row,
            " {} {}: {}; {attempts} attempts, {executions} executed |",
            calls.len(),
            calls[0].op.kind(),
            kinds.join(", ")
        )
        .unwrap();
    }
    write!(
        row,
        " latest end {} ms; {} connections",
        latest.as_millis(),
        proxy.connections()
    )
    .unwrap();
    if proxy.resets() > 0 {
        write!(row, ", {} reset", proxy.resets()).unwrap();
    }
    row.push_str(" |");
    row
}

/// How a call ended, with why the loop stopped before its attempts ran out, if it did.
fn label(o: &Outcome) -> String {
    let mut label = outcome(&o.result);
    if let Some(end) = o.record.early_ends().first() {
        write!(label, " ({})", end.reason.label()).unwrap();
    }
    label
}

/// The first error of each protocol and label, as it was returned.
fn examples(outcomes: &[Outcome]) -> BTreeMap<(bool, String), String> {
    let mut examples = BTreeMap::new();
    for o in outcomes {
        if let Err(e) = &o.result {
            examples
                .entry((o.op.is_http(), label(o)))
                .or_insert_with(|| format!("{e:?}"));
        }
    }
    examples
}

/// A gRPC connection that ends in the middle of a frame (`limit_data` cutting a response):
/// h2 reports it as an `io::Error` of kind `Other`, "bytes remaining on stream", under
/// `hyper::Error(Io)`, and `Classify for tonic::Status` makes that `Permanent`, so an
/// idempotent call is not retried after a connection that broke off. The same cut on
/// HTTP/1.1 (`IncompleteMessage`) is `Transient`.
#[tokio::test]
async fn a_grpc_connection_cut_mid_frame_is_transient() {
    let grpc = grpc_server::Server::start().await;
    let mut seen = 0;
    // However many bytes get through, a cut mid-frame is a transient failure.
    for bytes in (20..=400).step_by(20) {
        let proxy = Proxy::start("grpc", grpc.addr).await;
        proxy
            .set(&[(Toxic::LimitData { bytes }, Downstream, 1.0)])
            .await;
        let target = Target::new(proxy.addr, proxy.addr);
        if let Err(e) = target.attempt(Op::GrpcGet(bytes.try_into().unwrap())).await
            && format!("{e:?}").contains("bytes remaining on stream")
        {
            seen += 1;
            assert_eq!(e.classify(), ErrorClass::Transient, "{bytes} bytes: {e:?}");
        }
        proxy.stop().await;
    }
    assert!(seen > 0, "no connection was cut mid-frame");
}

/// An HTTP/1.1 response whose body is cut short (`limit_data` closing the connection after
/// the head): hyper reports `IncompleteBody`, an `UnexpectedEof` I/O error, and reqwest's
/// `Response::text` wraps it as a decode error, which `Classify for reqwest::Error` makes
/// `Permanent` (`is_decode()`) before it looks at the cause, so an idempotent call is not
/// retried. The same connection cut before the head arrives (`IncompleteMessage`) is
/// `Transient`.
#[tokio::test]
async fn an_http_body_cut_short_is_transient() {
    let http = http_server::Server::start().await;
    let mut seen = 0;
    // The head is about 80 bytes, the body 12: some of these limits cut the body.
    for bytes in (60..=100).step_by(2) {
        let proxy = Proxy::start("http", http.addr).await;
        proxy
            .set(&[(Toxic::LimitData { bytes }, Downstream, 1.0)])
            .await;
        let target = Target::new(proxy.addr, proxy.addr);
        // hyper's `IncompleteBody`, as the error's `Debug` shows it: its message.
        if let Err(e) = target.attempt(Op::HttpGet(1)).await
            && format!("{e:?}").contains("end of file before message length reached")
        {
            seen += 1;
            assert_eq!(e.classify(), ErrorClass::Transient, "{bytes} bytes: {e:?}");
        }
        proxy.stop().await;
    }
    assert!(seen > 0, "no body was cut short");
}
