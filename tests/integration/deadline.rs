//! A deadline carried across three real servers on 127.0.0.1: A's `#[retry]` client calls B
//! (a hyper server whose handler runs under `retry_runtime::tower::DeadlineLayer`), whose
//! handler calls C (a tonic server that fails or hangs) with a `#[retry]` client that writes
//! each attempt into its request (`with_attempt`, so `grpc-timeout`). A has 300 ms in all and
//! 120 ms per attempt, and tells B what its attempt has left: as Envoy's
//! `x-envoy-expected-rq-timeout-ms`, which `with_attempt` writes with no header written by
//! hand, and once more with `grpc-timeout` written beside it; B's own client has a deadline of
//! 10 s, which B's caller cuts short.
//!
//! What is checked: no request reaches B or C after A's deadline (give or take
//! [`LATE`]), although B's client alone would go on for 10 s; and each `grpc-timeout` C
//! receives is what B had left, both as B's attempt saw it just before sending and as A's
//! header and the clock say (within [`SLACK`]).
//!
//! Real sockets need the real clock: the tolerances are there for a loaded machine, and are
//! far below what a wrong answer would give (B's own 10 s, A's whole 300 ms, a request long
//! after A gave up).

use crate::grpc_server::{self, Fault, GetItem, Item, unary_request};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::tower::DeadlineLayer;
use retry_runtime::wire::WithAttempt;
use retry_runtime::{attempt, retry};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tonic::transport::Channel;
use tower::{Layer, ServiceExt};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A's deadline for the whole call.
const DEADLINE: Duration = Duration::from_millis(300);

/// How late after A's deadline a request may still arrive: the header carries a duration,
/// not an instant, so B's deadline starts when B reads the request (after A sent it), and a
/// request B sent just before its deadline still has to cross the loopback.
const LATE: Duration = Duration::from_millis(50);

/// How far a `grpc-timeout` C receives may be from what B had left by the clock: the time
/// from B's send to C's record (the tonic client, HTTP/2 and the server on loopback, well under
/// a millisecond when the machine is idle) plus scheduling on a loaded 2-core machine. It is
/// small against the 120 ms A gives each attempt and B's own 10 s, which a header that did not
/// carry B's caller's deadline would show.
const SLACK: Duration = Duration::from_millis(25);

/// Which header A writes for B.
#[derive(Clone, Copy, Debug)]
enum Header {
    Envoy,
    Grpc,
}

/// One request that reached B: when, with A's header, and the time it gave.
#[derive(Clone, Debug)]
struct AtB {
    at: Instant,
    given: Duration,
}

/// One request B sent to C: which of B's requests it served, and what the attempt had left
/// when B built it.
#[derive(Clone, Copy, Debug)]
struct Sent {
    b_request: usize,
    left: Duration,
}

/// What B keeps: its requests, and the requests it sent to C (C sees the index as the id).
struct B {
    channel: Channel,
    header: Header,
    requests: Mutex<Vec<AtB>>,
    sent: Mutex<Vec<Sent>>,
}

/// A `grpc-timeout` or `x-envoy-expected-rq-timeout-ms` value as written here and by tonic.
fn parse(header: Header, value: &str) -> Duration {
    match header {
        Header::Envoy => MS(value.parse().unwrap()),
        Header::Grpc => {
            let (digits, unit) = value.split_at(value.len() - 1);
            let n: u64 = digits.parse().unwrap();
            match unit {
                "H" => Duration::from_secs(n * 3600),
                "M" => Duration::from_secs(n * 60),
                "S" => Duration::from_secs(n),
                "m" => MS(n),
                "u" => Duration::from_micros(n),
                "n" => Duration::from_nanos(n),
                _ => panic!("grpc-timeout {value:?}"),
            }
        }
    }
}

impl Header {
    fn name(self) -> &'static str {
        match self {
            Header::Envoy => "x-envoy-expected-rq-timeout-ms",
            Header::Grpc => "grpc-timeout",
        }
    }

    /// The value for `left`, rounded down, as Envoy and gRPC clients write it.
    fn value(self, left: Duration) -> String {
        match self {
            Header::Envoy => left.as_millis().to_string(),
            Header::Grpc => format!("{}u", left.as_micros()),
        }
    }
}

/// B's client to C: a deadline of its own, far past what B's callers give; no attempt timeout,
/// so each attempt's `grpc-timeout` is what B has left.
#[retry(
    max_attempts = 1000,
    deadline = "10s",
    initial_backoff = "20ms",
    max_backoff = "20ms",
    jitter = "none",
    bucket = "none"
)]
async fn b_calls_c(b: &B, b_request: usize) -> Result<Item, tonic::Status> {
    let left = attempt().unwrap().time_left().unwrap();
    let id = {
        let mut sent = b.sent.lock().unwrap();
        sent.push(Sent { b_request, left });
        u32::try_from(sent.len() - 1).unwrap()
    };
    let request = tonic::Request::new(GetItem { id }).with_attempt();
    unary_request(&b.channel, "/shop.Orders/Get", request).await
}

/// B's handler: notes the request, asks C, answers 200 or 503.
async fn b_handle(b: Arc<B>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let given = req
        .headers()
        .get(b.header.name())
        .map(|v| parse(b.header, v.to_str().unwrap()))
        .expect("A sends the header");
    let index = {
        let mut requests = b.requests.lock().unwrap();
        requests.push(AtB {
            at: Instant::now(),
            given,
        });
        requests.len() - 1
    };
    Ok(match b_calls_c(&b, index).await {
        Ok(item) => Response::new(Full::new(Bytes::from(item.name))),
        Err(status) => {
            let mut response = Response::new(Full::new(Bytes::from(status.message().to_owned())));
            *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            response
        }
    })
}

/// B: a hyper HTTP/1.1 server, each request's handler under `DeadlineLayer`.
async fn start_b(
    c: SocketAddr,
    header: Header,
) -> (SocketAddr, Arc<B>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let b = Arc::new(B {
        channel: grpc_server::channel_to(c),
        header,
        requests: Mutex::new(Vec::new()),
        sent: Mutex::new(Vec::new()),
    });
    let state = b.clone();
    let task = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            while connections.try_join_next().is_some() {}
            let b = state.clone();
            let handler =
                DeadlineLayer::new().layer(tower::service_fn(move |req| b_handle(b.clone(), req)));
            let service = hyper::service::service_fn(move |req| handler.clone().oneshot(req));
            // With half-closed connections allowed, B does not drop a handler when A closes
            // its side, as when a proxy keeps its connection to B: only the deadline stops it.
            connections.spawn(async move {
                let _ = http1::Builder::new()
                    .half_close(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, b, task)
}

/// A's client: 300 ms in all, 120 ms per attempt; it tells B what its attempt has left.
#[retry(
    max_attempts = 100,
    attempt_timeout = "120ms",
    deadline = "300ms",
    initial_backoff = "10ms",
    max_backoff = "10ms",
    jitter = "none",
    bucket = "none"
)]
async fn a_calls_b(client: &reqwest::Client, url: &str, header: Header) -> Result<String, Error> {
    let request = client.get(url).with_attempt();
    // `with_attempt` writes Envoy's header itself; gRPC's is written here, beside it.
    let request = match header {
        Header::Envoy => request,
        Header::Grpc => {
            let left = attempt().unwrap().time_left().unwrap();
            request.header(header.name(), header.value(left))
        }
    };
    Ok(error_for_status(request.send().await?)?.text().await?)
}

async fn chain(header: Header) {
    let c = grpc_server::Server::start().await;
    // C never answers well: UNAVAILABLE at once, but B's sixth call hangs (B's first
    // request then runs to its deadline, and A's first attempt is cut).
    c.script(&[Fault::Unavailable; 5]);
    c.script(&[Fault::Hang]);
    c.random_faults(7, 1.0, &[Fault::Unavailable]);
    let (b_addr, b, b_task) = start_b(c.addr, header).await;
    let client = crate::http_server::client();

    let t0 = Instant::now();
    let out = a_calls_b(&client, &format!("http://{b_addr}/items/1"), header).await;
    let a_ended = t0.elapsed();
    assert!(out.is_err(), "C never answers well: {out:?}");
    // Time for anything still running to show.
    tokio::time::sleep(MS(400)).await;

    let at_b = b.requests.lock().unwrap().clone();
    let sent = b.sent.lock().unwrap().clone();
    let at_c = c.arrivals();
    // B and A retried: A made several attempts, and B several calls to C.
    assert!(at_b.len() >= 2, "{header:?}: B saw {} requests", at_b.len());
    assert!(at_c.len() >= 4, "{header:?}: C saw {} requests", at_c.len());
    assert!(
        a_ended >= DEADLINE - LATE && a_ended <= DEADLINE + LATE,
        "A ended at {a_ended:?}"
    );

    // Nothing reached B or C after A's deadline.
    let latest_b = at_b.iter().map(|r| r.at - t0).max().unwrap();
    let latest_c = at_c.iter().map(|r| r.at - t0).max().unwrap();
    assert!(
        latest_b <= DEADLINE + LATE,
        "{header:?}: B got a request at {latest_b:?}"
    );
    assert!(
        latest_c <= DEADLINE + LATE,
        "{header:?}: C got a request at {latest_c:?}"
    );
    // Each request A sent gave B at most what A had left of its attempt (120 ms at most).
    assert!(at_b.iter().all(|r| r.given <= MS(120)), "{at_b:?}");

    // Each grpc-timeout C received is what B had left.
    for arrival in &at_c {
        let got = parse(
            Header::Grpc,
            arrival.headers["grpc-timeout"].to_str().unwrap(),
        );
        let Sent { b_request, left } = sent[usize::try_from(arrival.id).unwrap()];
        // As B's attempt saw it just before the request was built (with_attempt reads it
        // again a moment later, and tonic rounds down).
        assert!(got <= left, "{header:?}: C got {got:?}, B had {left:?}");
        assert!(
            left - got <= MS(5),
            "{header:?}: C got {got:?}, B had {left:?}"
        );
        // As A's header and the clock say: B's deadline is when B read the request plus what
        // A gave it.
        let request = &at_b[b_request];
        let by_clock = (request.at + request.given).saturating_duration_since(arrival.at);
        let off = got.abs_diff(by_clock);
        assert!(
            off <= SLACK,
            "{header:?}: C got {got:?}, B had {by_clock:?} left by the clock"
        );
    }
    // Within one of B's requests, what is left only shrinks.
    for pair in sent.windows(2) {
        if pair[0].b_request == pair[1].b_request {
            assert!(pair[1].left < pair[0].left, "{sent:?}");
        }
    }
    b_task.abort();
}

#[tokio::test]
async fn a_deadline_crosses_three_servers_through_envoys_header() {
    chain(Header::Envoy).await;
}

#[tokio::test]
async fn a_deadline_crosses_three_servers_through_grpc_timeout() {
    chain(Header::Grpc).await;
}
