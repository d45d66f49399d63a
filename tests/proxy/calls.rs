//! The client side of the fault tests: the calls they make through a proxy (reads and
//! writes, over HTTP/1.1 with reqwest and over gRPC with tonic), the error those calls fail
//! with, and the bucket's account of a finished call.

use crate::grpc_server::{self, GetItem, Item, PlaceOrder, Receipt, unary};
use crate::http_server;
use retry_runtime::reqwest::error_for_status;
use retry_runtime::testing::Record;
use retry_runtime::{Classify, ErrorClass, TimedOut, TokenBucket};
use std::net::SocketAddr;
use std::time::Duration;
use tonic::transport::Channel;

/// One call: a read (idempotent) or a write (not), over HTTP or gRPC, of the request `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// `GET /items/id`.
    HttpGet(u32),
    /// `POST /orders/id`.
    HttpPost(u32),
    /// `shop.Orders/Get`.
    GrpcGet(u32),
    /// `shop.Orders/Place`.
    GrpcPlace(u32),
}

impl Op {
    /// The four calls of request `id`.
    pub const fn all(id: u32) -> [Op; 4] {
        [
            Op::HttpGet(id),
            Op::HttpPost(id),
            Op::GrpcGet(id),
            Op::GrpcPlace(id),
        ]
    }

    pub const fn idempotent(self) -> bool {
        matches!(self, Op::HttpGet(_) | Op::GrpcGet(_))
    }

    pub const fn is_http(self) -> bool {
        matches!(self, Op::HttpGet(_) | Op::HttpPost(_))
    }

    pub const fn id(self) -> u32 {
        match self {
            Op::HttpGet(id) | Op::HttpPost(id) | Op::GrpcGet(id) | Op::GrpcPlace(id) => id,
        }
    }

    pub const fn kind(self) -> &'static str {
        match self {
            Op::HttpGet(_) => "HTTP GET",
            Op::HttpPost(_) => "HTTP POST",
            Op::GrpcGet(_) => "gRPC Get",
            Op::GrpcPlace(_) => "gRPC Place",
        }
    }
}

/// What a call fails with: reqwest's error, a gRPC status, the loop's timeout, or an answer
/// that arrived but is not the request's.
#[derive(Debug)]
pub enum CallError {
    Http(retry_runtime::reqwest::Error),
    Grpc(tonic::Status),
    TimedOut(TimedOut),
    Wrong(String),
}

impl Classify for CallError {
    fn classify(&self) -> ErrorClass {
        match self {
            CallError::Http(e) => e.classify(),
            CallError::Grpc(s) => s.classify(),
            CallError::TimedOut(_) => ErrorClass::Timeout,
            CallError::Wrong(_) => ErrorClass::Permanent,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::Http(e) => e.retry_after(),
            CallError::Grpc(s) => s.retry_after(),
            CallError::TimedOut(_) | CallError::Wrong(_) => None,
        }
    }
}

impl From<TimedOut> for CallError {
    fn from(t: TimedOut) -> Self {
        CallError::TimedOut(t)
    }
}

impl From<reqwest::Error> for CallError {
    fn from(e: reqwest::Error) -> Self {
        CallError::Http(e.into())
    }
}

impl From<retry_runtime::reqwest::Error> for CallError {
    fn from(e: retry_runtime::reqwest::Error) -> Self {
        CallError::Http(e)
    }
}

impl From<tonic::Status> for CallError {
    fn from(s: tonic::Status) -> Self {
        CallError::Grpc(s)
    }
}

/// How a call ended, as the tables count it: `ok`, `deadline` or `attempt timeout` for the
/// loop's own timeouts, or the last error's class.
pub fn outcome(result: &Result<(), CallError>) -> String {
    match result {
        Ok(()) => "ok".to_string(),
        Err(CallError::TimedOut(t)) if t.is_deadline() => "deadline".to_string(),
        Err(CallError::TimedOut(_)) => "attempt timeout".to_string(),
        Err(e) => format!("{:?}", e.classify()).to_lowercase(),
    }
}

/// The clients, each talking to its server through a proxy.
pub struct Target {
    http: reqwest::Client,
    http_base: String,
    grpc: Channel,
}

impl Target {
    /// Clients of the HTTP server behind `http` and the gRPC server behind `grpc`.
    pub fn new(http: SocketAddr, grpc: SocketAddr) -> Target {
        Target {
            http: http_server::client(),
            http_base: format!("http://{http}"),
            grpc: grpc_server::channel_to(grpc),
        }
    }

    /// One attempt of `op`: the request, and a check that the answer is the request's.
    pub async fn attempt(&self, op: Op) -> Result<(), CallError> {
        let (got, want) = match op {
            Op::HttpGet(id) => {
                let url = format!("{}/items/{id}", self.http_base);
                let response = error_for_status(self.http.get(url).send().await?)?;
                (response.text().await?, format!("GET /items/{id}"))
            }
            Op::HttpPost(id) => {
                let url = format!("{}/orders/{id}", self.http_base);
                let response = error_for_status(self.http.post(url).send().await?)?;
                (response.text().await?, format!("POST /orders/{id}"))
            }
            Op::GrpcGet(id) => {
                let item: Item = unary(&self.grpc, "/shop.Orders/Get", GetItem { id }).await?;
                (
                    format!("{} {}", item.id, item.name),
                    format!("{id} item {id}"),
                )
            }
            Op::GrpcPlace(id) => {
                let receipt: Receipt =
                    unary(&self.grpc, "/shop.Orders/Place", PlaceOrder { id }).await?;
                (receipt.id.to_string(), id.to_string())
            }
        };
        if got == want {
            Ok(())
        } else {
            Err(CallError::Wrong(format!("{op:?}: {got:?}")))
        }
    }
}

/// The tokens a finished call keeps out of `bucket`: each retry's cost, but the last one's if
/// its attempt succeeded (the rule of `reliability/props.rs`, with no success reward).
pub fn kept(bucket: &TokenBucket, succeeded: bool, record: &Record) -> u32 {
    let retries = record.retries();
    let mut kept: u32 = retries.iter().map(|r| bucket.cost(r.class)).sum();
    if succeeded && let Some(last) = retries.last() {
        kept -= bucket.cost(last.class);
    }
    kept
}

/// Checks what the loop did with a write: it retried only failures that provably did not
/// reach the server.
pub fn assert_write_retries(op: Op, record: &Record) {
    for r in record.retries() {
        assert!(
            matches!(r.class, ErrorClass::NotSent | ErrorClass::Throttling),
            "{op:?} retried after {:?}, which may have reached the server",
            r.class
        );
    }
}
