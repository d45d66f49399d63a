//! HTTP/2's "not processed" signals (RFC 9113 section 8.7), from a real HTTP/2 server on
//! 127.0.0.1 to calls that are not idempotent: a stream the server refuses with
//! `RST_STREAM(REFUSED_STREAM)`, and one above the last stream id of its `GOAWAY`, are retried
//! and executed once; a stream the server resets with `INTERNAL_ERROR` after executing it is
//! not sent again. Through hyper-util's client (HTTP/2 only), reqwest (HTTP/2 by prior
//! knowledge), a tonic channel and the tower layer, each by a `#[retry(idempotent = false)]`
//! function and a `Policy` with `idempotent(false)` (the layer: a `POST`).
//!
//! The server is h2's own server API, which sends the frames a test asks for. For the `GOAWAY`,
//! it reads the client's bytes up to the request's `HEADERS` frame itself, then hands them to
//! h2 and shuts the connection down before h2 has read them: the `GOAWAY`'s last stream id is
//! 0, below the request's stream, whichever way the bytes were split.
//!
//! As in `http.rs`, the assertions are the server's counters and what the retry loop recorded
//! (`testing::record`, instant retries), never elapsed time.

use crate::faults::Running;
use crate::grpc_server::{PlaceOrder, Receipt, channel_to, unary};
use crate::util::{classes, instant};
use bytes::Bytes;
use h2::server::{self, SendResponse};
use h2::{Reason, RecvStream};
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use prost::Message;
use retry_runtime::reqwest::error_for_status;
use retry_runtime::testing::{self, EarlyEnd, Record};
use retry_runtime::tower::{BoxError, RetryLayer};
use retry_runtime::{Classify, ErrorClass, Jitter, Policy, retry};
use std::collections::{HashMap, VecDeque};
use std::io::Cursor;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tower::{ServiceBuilder, ServiceExt};

/// What the server does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// `RST_STREAM(REFUSED_STREAM)` as the request arrives, before executing it.
    Refuse,
    /// `GOAWAY(NO_ERROR)` with last stream id 0 as the request arrives on a new connection,
    /// before h2 reads it; then the connection closes. (A connection's first request only.)
    GoAway,
    /// Execute the request, then `RST_STREAM(INTERNAL_ERROR)` instead of an answer.
    Reset,
}

/// What the server keeps: the faults to play, in order, and what it saw.
#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Fault>>,
    connections: AtomicU32,
    /// Requests that reached the server (their `HEADERS` arrived), executed or not.
    arrivals: AtomicU32,
    /// How many times the request of each path was executed.
    executed: Mutex<HashMap<String, u32>>,
}

type Server = Running<State>;

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        Server::spawn(addr, state.clone(), serve(listener, state))
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn script(&self, faults: &[Fault]) {
        self.script.lock().unwrap().extend(faults);
    }

    fn executed(&self, path: &str) -> u32 {
        self.executed
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    fn arrivals(&self) -> u32 {
        self.arrivals.load(Ordering::SeqCst)
    }

    fn connections(&self) -> u32 {
        self.connections.load(Ordering::SeqCst)
    }
}

impl State {
    /// The next request's fault, if it gets one.
    fn next_fault(&self) -> Option<Fault> {
        let fault = self.script.lock().unwrap().pop_front();
        assert_ne!(
            fault,
            Some(Fault::GoAway),
            "a GOAWAY is a connection's first fault"
        );
        fault
    }

    /// Whether the next fault is a `GOAWAY` (taken, if so).
    fn take_go_away(&self) -> bool {
        let mut script = self.script.lock().unwrap();
        let go_away = script.front() == Some(&Fault::GoAway);
        if go_away {
            script.pop_front();
        }
        go_away
    }
}

/// Serves every connection until the server is dropped (which drops them all).
async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    while let Ok((tcp, _)) = listener.accept().await {
        connections.spawn(connection(tcp, state.clone()));
    }
}

async fn connection(tcp: TcpStream, state: Arc<State>) {
    state.connections.fetch_add(1, Ordering::SeqCst);
    if state.take_go_away() {
        return go_away(tcp, &state).await;
    }
    let Ok(mut conn) = server::handshake(tcp).await else {
        return;
    };
    let mut streams = JoinSet::new();
    while let Some(Ok((request, respond))) = conn.accept().await {
        streams.spawn(answer(request, respond, state.clone()));
    }
}

/// Reads the client's preface and frames up to its first request's `HEADERS`, hands them to
/// h2 and sends a `GOAWAY` before h2 has read them: none of the client's streams is processed.
async fn go_away(tcp: TcpStream, state: &State) {
    let (mut read, write) = tcp.into_split();
    let Ok(seen) = until_headers(&mut read).await else {
        return;
    };
    state.arrivals.fetch_add(1, Ordering::SeqCst);
    let io = tokio::io::join(Cursor::new(seen).chain(read), write);
    let Ok(mut conn) = server::handshake(io).await else {
        return;
    };
    conn.abrupt_shutdown(Reason::NO_ERROR);
    let _ = std::future::poll_fn(|cx| conn.poll_closed(cx)).await;
}

/// The bytes of the client's connection preface and of its frames up to the first `HEADERS`
/// frame (type 1), as read from `io`.
async fn until_headers(io: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Vec<u8>> {
    let mut seen = vec![0; 24];
    io.read_exact(&mut seen).await?;
    loop {
        let mut head = [0; 9];
        io.read_exact(&mut head).await?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        io.read_exact(&mut payload).await?;
        seen.extend_from_slice(&head);
        seen.extend_from_slice(&payload);
        if head[3] == 1 {
            return Ok(seen);
        }
    }
}

/// Plays the request's fault, else executes it and answers: `METHOD /path` as the body, or for
/// a gRPC call, the `Receipt` of its `PlaceOrder` with `grpc-status: 0`.
async fn answer(request: Request<RecvStream>, mut respond: SendResponse<Bytes>, state: Arc<State>) {
    state.arrivals.fetch_add(1, Ordering::SeqCst);
    let fault = state.next_fault();
    if fault == Some(Fault::Refuse) {
        respond.send_reset(Reason::REFUSED_STREAM);
        return;
    }
    let (head, mut body) = request.into_parts();
    let mut message = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else {
            return;
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        message.extend_from_slice(&chunk);
    }
    let path = head.uri.path().to_owned();
    *state
        .executed
        .lock()
        .unwrap()
        .entry(path.clone())
        .or_default() += 1;
    if fault == Some(Fault::Reset) {
        respond.send_reset(Reason::INTERNAL_ERROR);
        return;
    }
    let grpc = head
        .headers
        .get("content-type")
        .is_some_and(|t| t.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        // A length-prefixed message: a compression flag, four bytes of length, the message.
        let order = PlaceOrder::decode(&message[5..]).unwrap();
        let receipt = Receipt { id: order.id }.encode_to_vec();
        let mut frame = vec![0];
        frame.extend_from_slice(&u32::try_from(receipt.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(&receipt);
        let response = Response::builder()
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        let Ok(mut send) = respond.send_response(response, false) else {
            return;
        };
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let _ = send.send_data(frame.into(), false);
        let _ = send.send_trailers(trailers);
    } else {
        let Ok(mut send) = respond.send_response(Response::new(()), false) else {
            return;
        };
        let _ = send.send_data(format!("{} {path}", head.method).into(), true);
    }
}

/// Five attempts, 10 ms doubling, no jitter, not idempotent.
fn policy() -> Policy {
    Policy::new()
        .max_attempts(5)
        .initial_backoff(Duration::from_millis(10))
        .jitter(Jitter::None)
        .idempotent(false)
}

/// What a call that is not idempotent records for a fault the server did not process: one
/// retry, `NotSent`.
fn assert_one_not_sent_retry(record: &Record) {
    assert_eq!(classes(record), [ErrorClass::NotSent]);
    assert!(record.early_ends().is_empty());
}

/// What it records for a stream reset after the server executed it: no retry, and the loop
/// ended because the call is not idempotent.
fn assert_not_repeated(record: &Record) {
    assert!(record.retries().is_empty());
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
}

// hyper-util's client, HTTP/2 only (prior knowledge).

type HyperClient = Client<HttpConnector, Full<Bytes>>;

fn hyper_client() -> HyperClient {
    Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http()
}

async fn post_over_hyper(client: &HyperClient, url: &str) -> Result<String, BoxError> {
    let request = Request::post(url).body(Full::new(Bytes::from_static(b"{\"item\": 1}")))?;
    let response = client.request(request).await?;
    let body = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8(body.to_vec())?)
}

#[retry(
    max_attempts = 5,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn place_over_hyper(client: &HyperClient, url: &str) -> Result<String, BoxError> {
    post_over_hyper(client, url).await
}

/// `fault` on the first attempt of a `#[retry]` function, then of a `Policy` call, each a
/// `POST` that is not idempotent over a client of its own (a `GOAWAY` is played on a new
/// connection) of hyper-util's: retried, executed once.
async fn hyper_retries(fault: Fault) {
    let server = Server::start().await;
    let client = hyper_client();

    server.script(&[fault]);
    let url = server.url("/orders/1");
    let (out, record) = testing::record(instant(), place_over_hyper(&client, &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/1");
    assert_eq!(server.executed("/orders/1"), 1);
    assert_one_not_sent_retry(&record);

    // A new client: a GOAWAY is played on a new connection.
    let client = hyper_client();
    server.script(&[fault]);
    let url = server.url("/orders/2");
    let policy = policy();
    let call = policy.retry(|| post_over_hyper(&client, &url));
    let (out, record) = testing::record(instant(), call).await;
    assert_eq!(out.unwrap(), "POST /orders/2");
    assert_eq!(server.executed("/orders/2"), 1);
    assert_one_not_sent_retry(&record);
    assert_eq!(server.arrivals(), 4);
}

#[tokio::test]
async fn hyper_a_refused_stream_is_retried_for_a_post() {
    hyper_retries(Fault::Refuse).await;
}

#[tokio::test]
async fn hyper_a_stream_above_the_goaway_is_retried_for_a_post() {
    hyper_retries(Fault::GoAway).await;
}

#[tokio::test]
async fn hyper_a_stream_reset_after_it_was_executed_is_not_repeated() {
    let server = Server::start().await;
    let client = hyper_client();

    server.script(&[Fault::Reset]);
    let url = server.url("/orders/1");
    let (out, record) = testing::record(instant(), place_over_hyper(&client, &url)).await;
    let err = out.unwrap_err();
    assert_eq!(err.classify(), ErrorClass::Transient, "{err:?}");
    assert_not_repeated(&record);

    server.script(&[Fault::Reset]);
    let url = server.url("/orders/2");
    let policy = policy();
    let (out, record) =
        testing::record(instant(), policy.retry(|| post_over_hyper(&client, &url))).await;
    assert_eq!(out.unwrap_err().classify(), ErrorClass::Transient);
    assert_not_repeated(&record);

    assert_eq!(server.executed("/orders/1"), 1);
    assert_eq!(server.executed("/orders/2"), 1);
    assert_eq!(server.arrivals(), 2);
}

// reqwest, HTTP/2 by prior knowledge.

/// A client whose own retries are off, so that the loop sees every refusal.
fn reqwest_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .retry(reqwest::retry::never())
        .build()
        .unwrap()
}

async fn post_over_reqwest(
    client: &reqwest::Client,
    url: &str,
) -> Result<String, retry_runtime::reqwest::Error> {
    let response = error_for_status(client.post(url).body("{\"item\": 1}").send().await?)?;
    Ok(response.text().await?)
}

#[retry(
    max_attempts = 5,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn place_over_reqwest(
    client: &reqwest::Client,
    url: &str,
) -> Result<String, retry_runtime::reqwest::Error> {
    post_over_reqwest(client, url).await
}

async fn reqwest_retries(fault: Fault) {
    let server = Server::start().await;
    let client = reqwest_client();

    server.script(&[fault]);
    let url = server.url("/orders/1");
    let (out, record) = testing::record(instant(), place_over_reqwest(&client, &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/1");
    assert_eq!(server.executed("/orders/1"), 1);
    assert_one_not_sent_retry(&record);

    let client = reqwest_client();
    server.script(&[fault]);
    let url = server.url("/orders/2");
    let policy = policy();
    let call = policy.retry(|| post_over_reqwest(&client, &url));
    let (out, record) = testing::record(instant(), call).await;
    assert_eq!(out.unwrap(), "POST /orders/2");
    assert_eq!(server.executed("/orders/2"), 1);
    assert_one_not_sent_retry(&record);
    assert_eq!(server.arrivals(), 4);
}

#[tokio::test]
async fn reqwest_a_refused_stream_is_retried_for_a_post() {
    reqwest_retries(Fault::Refuse).await;
}

#[tokio::test]
async fn reqwest_a_stream_above_the_goaway_is_retried_for_a_post() {
    reqwest_retries(Fault::GoAway).await;
}

#[tokio::test]
async fn reqwest_a_stream_reset_after_it_was_executed_is_not_repeated() {
    let server = Server::start().await;
    let client = reqwest_client();

    server.script(&[Fault::Reset]);
    let url = server.url("/orders/1");
    let (out, record) = testing::record(instant(), place_over_reqwest(&client, &url)).await;
    let err = out.unwrap_err();
    assert_eq!(err.classify(), ErrorClass::Transient, "{err:?}");
    assert_not_repeated(&record);

    server.script(&[Fault::Reset]);
    let url = server.url("/orders/2");
    let policy = policy();
    let (out, record) =
        testing::record(instant(), policy.retry(|| post_over_reqwest(&client, &url))).await;
    assert_eq!(out.unwrap_err().classify(), ErrorClass::Transient);
    assert_not_repeated(&record);

    assert_eq!(server.executed("/orders/1"), 1);
    assert_eq!(server.executed("/orders/2"), 1);
    assert_eq!(server.arrivals(), 2);
}

/// reqwest's client retries a refused stream twice itself (its default "protocol NACKs"
/// policy); the third refusal reaches the loop, which retries it once more.
#[tokio::test]
async fn reqwest_retries_refusals_itself_first() {
    let server = Server::start().await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    server.script(&[Fault::Refuse; 3]);
    let url = server.url("/orders/3");
    let (out, record) = testing::record(instant(), place_over_reqwest(&client, &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/3");
    assert_eq!(server.arrivals(), 4);
    assert_eq!(server.executed("/orders/3"), 1);
    assert_one_not_sent_retry(&record);
}

// tonic, over its channel (HTTP/2).

#[retry(
    max_attempts = 5,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn place_over_tonic(channel: &Channel, id: u32) -> Result<Receipt, Status> {
    unary(channel, "/shop.Orders/Place", PlaceOrder { id }).await
}

async fn tonic_retries(fault: Fault) {
    let server = Server::start().await;
    let channel = channel_to(server.addr);

    server.script(&[fault]);
    let (out, record) = testing::record(instant(), place_over_tonic(&channel, 1)).await;
    assert_eq!(out.unwrap().id, 1);
    assert_one_not_sent_retry(&record);

    let channel = channel_to(server.addr);
    server.script(&[fault]);
    let policy = policy();
    let call =
        policy.retry(|| unary::<_, Receipt>(&channel, "/shop.Orders/Place", PlaceOrder { id: 2 }));
    let (out, record) = testing::record(instant(), call).await;
    assert_eq!(out.unwrap().id, 2);
    assert_one_not_sent_retry(&record);

    assert_eq!(server.executed("/shop.Orders/Place"), 2);
    assert_eq!(server.arrivals(), 4);
}

#[tokio::test]
async fn tonic_a_refused_stream_is_retried_for_a_call_that_is_not_idempotent() {
    tonic_retries(Fault::Refuse).await;
}

#[tokio::test]
async fn tonic_a_stream_above_the_goaway_is_retried_for_a_call_that_is_not_idempotent() {
    tonic_retries(Fault::GoAway).await;
}

#[tokio::test]
async fn tonic_a_stream_reset_after_it_was_executed_is_not_repeated() {
    let server = Server::start().await;
    let channel = channel_to(server.addr);
    server.script(&[Fault::Reset]);
    let (out, record) = testing::record(instant(), place_over_tonic(&channel, 1)).await;
    let status = out.unwrap_err();
    assert_eq!(status.code(), Code::Internal, "{status:?}");
    assert_eq!(status.classify(), ErrorClass::Transient);
    assert_not_repeated(&record);
    assert_eq!(server.executed("/shop.Orders/Place"), 1);
    assert_eq!(server.arrivals(), 1);
}

// The tower layer over hyper-util's client: a POST is not idempotent.

async fn post_through_layer(
    fault: Fault,
) -> (
    Result<Response<hyper::body::Incoming>, BoxError>,
    Record,
    Server,
) {
    let server = Server::start().await;
    server.script(&[fault]);
    let retrying = ServiceBuilder::new()
        .layer(RetryLayer::new(policy().idempotent(true)))
        .service(hyper_client());
    let request = Request::post(server.url("/orders/1"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let call = retrying.oneshot(request);
    let (out, record) = testing::record(instant(), call).await;
    (out, record, server)
}

#[tokio::test]
async fn the_layer_retries_a_refused_stream_and_a_stream_above_the_goaway_for_a_post() {
    for fault in [Fault::Refuse, Fault::GoAway] {
        let (out, record, server) = post_through_layer(fault).await;
        let body = out.unwrap().into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "POST /orders/1", "{fault:?}");
        assert_eq!(server.executed("/orders/1"), 1, "{fault:?}");
        assert_eq!(server.arrivals(), 2, "{fault:?}");
        assert_one_not_sent_retry(&record);
    }
}

#[tokio::test]
async fn the_layer_does_not_repeat_a_post_reset_after_it_was_executed() {
    let (out, record, server) = post_through_layer(Fault::Reset).await;
    let err = out.unwrap_err();
    assert_eq!(err.classify(), ErrorClass::Transient, "{err:?}");
    assert_not_repeated(&record);
    assert_eq!(server.executed("/orders/1"), 1);
}

/// The GOAWAY closes the connection it was sent on: the retry opens another.
#[tokio::test]
async fn a_goaway_sends_the_retry_over_a_new_connection() {
    let server = Server::start().await;
    server.script(&[Fault::GoAway]);
    let url = server.url("/orders/1");
    let (out, _) = testing::record(instant(), place_over_hyper(&hyper_client(), &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/1");
    assert_eq!(server.connections(), 2);
}
