//! Polling an asynchronous job with increasing delays: the loop of the AWS guidance on
//! exponential backoff, written with `retry_if_ok`.
//!
//! ```text
//! DO
//!   wait for (2^retries * 100) milliseconds
//!   status = Get the result of the asynchronous operation
//!   IF status = SUCCESS           retry = false
//!   ELSE IF status = NOT_READY    retry = true
//!   ELSE IF status = THROTTLED    retry = true
//!   ELSE                          retry = false   (some other error: stop calling the API)
//! WHILE (retry AND (retries < MAX_RETRIES))
//! ```
//!
//! `NOT_READY` is a successful answer that asks to poll again (`retry_if_ok`); `THROTTLED` and
//! a server error are errors worth retrying; anything else ends the loop. The waits are
//! 100, 200, 400, 800 ms... (`jitter = "none"`: the guidance notes that polling does not need
//! it). The example starts its own job server on 127.0.0.1.
//!
//! Run it with `cargo run --example polling`.

mod support;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use retry_runtime::{Classify, ErrorClass, RetryEvent, retry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use support::{Reply, reply};

#[derive(Debug, PartialEq)]
enum Status {
    NotReady,
    Success(String),
}

#[derive(Debug)]
enum PollError {
    Throttled,
    ServerError,
    Other(String),
}

impl std::fmt::Display for PollError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PollError::Throttled => f.write_str("THROTTLED"),
            PollError::ServerError => f.write_str("SERVER_ERROR"),
            PollError::Other(what) => write!(f, "failed: {what}"),
        }
    }
}

impl Classify for PollError {
    fn classify(&self) -> ErrorClass {
        match self {
            PollError::Throttled => ErrorClass::Throttling,
            PollError::ServerError => ErrorClass::Transient,
            PollError::Other(_) => ErrorClass::Permanent,
        }
    }
}

fn not_ready(status: &Status) -> bool {
    *status == Status::NotReady
}

fn log_poll(event: &RetryEvent<'_, PollError>) {
    let what = match event.error() {
        None => "NOT_READY".to_string(),
        Some(e) => e.to_string(),
    };
    println!(
        "  poll {}: {what}, next in {:?}",
        event.attempt(),
        event.delay()
    );
}

/// One poll. Up to 10 polls, waiting 100 ms * 2^n (at most 5 s) between them.
#[retry(
    max_attempts = 10,
    initial_backoff = "100ms",
    multiplier = 2,
    max_backoff = "5s",
    jitter = "none",
    retry_if_ok = not_ready,
    on_retry = log_poll
)]
async fn job_status(client: &reqwest::Client, url: &str) -> Result<Status, PollError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| PollError::Other(e.to_string()))?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| PollError::Other(e.to_string()))?;
    match (status, body.as_str()) {
        (StatusCode::OK, "NOT_READY") => Ok(Status::NotReady),
        (StatusCode::OK, _) => Ok(Status::Success(body)),
        (StatusCode::TOO_MANY_REQUESTS, _) => Err(PollError::Throttled),
        (s, _) if s.is_server_error() => Err(PollError::ServerError),
        (s, _) => Err(PollError::Other(format!("{s}: {body}"))),
    }
}

#[tokio::main]
async fn main() {
    let addr = support::serve(handle).await;
    let client = support::client();

    let job = client
        .post(format!("http://{addr}/jobs"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    println!("started {job}; polling:");
    let started = Instant::now();
    let status = job_status(&client, &format!("http://{addr}/{job}")).await;
    match status {
        Ok(status) => println!("  -> {status:?} after {:?}", started.elapsed()),
        Err(e) => println!("  -> {e}"),
    }
}

static POLLS: AtomicU32 = AtomicU32::new(0);

/// The job server: the job is ready at the fifth poll; one poll is throttled, one fails.
async fn handle(req: Request<Incoming>) -> Reply {
    match (req.method(), req.uri().path()) {
        (&Method::POST, "/jobs") => reply(StatusCode::ACCEPTED, "jobs/42"),
        (&Method::GET, "/jobs/42") => match POLLS.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => reply(StatusCode::OK, "NOT_READY"),
            2 => reply(StatusCode::TOO_MANY_REQUESTS, "THROTTLED"),
            3 => reply(StatusCode::INTERNAL_SERVER_ERROR, "SERVER_ERROR"),
            _ => reply(StatusCode::OK, "report.csv, 1,204 rows"),
        },
        _ => reply(StatusCode::NOT_FOUND, "no such job"),
    }
}
