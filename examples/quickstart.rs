//! A flaky HTTP server on 127.0.0.1 and a `#[retry]` client that gets through.
//!
//! The server answers the first request with 503, the second with 429 and `Retry-After: 1`,
//! and the third with 200. The client retries the 503 after a jittered backoff, waits exactly
//! the second the server asked for after the 429, and prints each attempt.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::get;
use retry_runtime::{Classify, ErrorClass, RetryEvent, TimedOut, retry};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What one attempt of the client can fail with.
#[derive(Debug)]
enum FetchError {
    /// The server answered with an error status (and maybe a `Retry-After`).
    Status(StatusCode, Option<Duration>),
    /// The request did not complete.
    Network(reqwest::Error),
    /// The attempt timeout or the deadline cut the attempt off.
    TimedOut(TimedOut),
}

impl Classify for FetchError {
    fn classify(&self) -> ErrorClass {
        match self {
            FetchError::Status(s, _) if *s == StatusCode::TOO_MANY_REQUESTS => {
                ErrorClass::Throttling
            }
            FetchError::Status(s, _) if s.is_server_error() => ErrorClass::Transient,
            FetchError::Status(..) => ErrorClass::Permanent,
            // A refused connection never reached the server.
            FetchError::Network(e) if e.is_connect() => ErrorClass::NotSent,
            FetchError::Network(_) => ErrorClass::Transient,
            FetchError::TimedOut(_) => ErrorClass::Timeout,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            FetchError::Status(_, hint) => *hint,
            _ => None,
        }
    }
}

impl From<TimedOut> for FetchError {
    fn from(t: TimedOut) -> Self {
        FetchError::TimedOut(t)
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Status(s, Some(hint)) => write!(f, "{s} (Retry-After: {hint:?})"),
            FetchError::Status(s, None) => write!(f, "{s}"),
            FetchError::Network(e) => write!(f, "network error: {e}"),
            FetchError::TimedOut(t) => write!(f, "{t}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// Printed before each retry's sleep.
fn print_retry(ev: &RetryEvent<'_, FetchError>) {
    let why = ev.error().map_or_else(String::new, ToString::to_string);
    println!(
        "client: attempt {} failed: {why} -> {}, retrying in {:?}",
        ev.attempt(),
        ev.class(),
        ev.delay(),
    );
}

/// One attempt: GET the URL; 2xx is the body, anything else an error.
#[retry(
    max_attempts = 4,
    initial_backoff = "200ms",
    max_backoff = "2s",
    attempt_timeout = "2s",
    deadline = "10s",
    on_retry = print_retry
)]
async fn get_greeting(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let response = client.get(url).send().await.map_err(FetchError::Network)?;
    let status = response.status();
    if !status.is_success() {
        let hint = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        return Err(FetchError::Status(status, hint));
    }
    response.text().await.map_err(FetchError::Network)
}

/// The flaky server: 503, then 429 with `Retry-After: 1`, then 200.
async fn flaky(State(requests): State<Arc<AtomicU32>>) -> (StatusCode, HeaderMap, &'static str) {
    let n = requests.fetch_add(1, Ordering::SeqCst) + 1;
    let mut headers = HeaderMap::new();
    let (status, body) = match n {
        1 => (StatusCode::SERVICE_UNAVAILABLE, "busy, try again"),
        2 => {
            headers.insert(header::RETRY_AFTER, "1".parse().expect("a valid header"));
            (StatusCode::TOO_MANY_REQUESTS, "slow down")
        }
        _ => (StatusCode::OK, "hello from the flaky server"),
    };
    println!("server: request {n} -> {status}");
    (status, headers, body)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let requests = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route("/greeting", get(flaky))
        .with_state(requests.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/greeting", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    println!("server: listening on {url}");

    let client = reqwest::Client::new();
    let started = Instant::now();
    let greeting = get_greeting(&client, &url).await?;
    println!(
        "client: got {greeting:?} after {} attempts in {:.2?}",
        requests.load(Ordering::SeqCst),
        started.elapsed()
    );

    server.abort();
    Ok(())
}
