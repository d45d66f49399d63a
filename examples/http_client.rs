//! Retrying HTTP calls made with reqwest.
//!
//! The example starts its own flaky server on 127.0.0.1, then:
//! - reads a quote through two `503 Service Unavailable`;
//! - reads it again through a `429 Too Many Requests` whose `Retry-After: 1` is waited;
//! - places an order (not idempotent) that meets a `503`: it is not sent twice.
//!
//! Each request carries its attempt (`.with_attempt()`): the server prints the AWS SDKs'
//! `amz-sdk-invocation-id` (one per call) and `amz-sdk-request` (`ttl`, attempt, max) it gets.
//!
//! Run it with `cargo run --example http_client`.

mod support;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::wire::{AMZ_SDK_INVOCATION_ID, AMZ_SDK_REQUEST, WithAttempt};
use retry_runtime::{RetryEvent, retry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use support::{Reply, reply};

/// Logs each retry before its sleep.
fn log_retry(event: &RetryEvent<'_, Error>) {
    println!(
        "  {} attempt {} failed ({}: {}), next in {:?}",
        event.function(),
        event.attempt(),
        event.class(),
        event.error().map_or_else(String::new, ToString::to_string),
        event.delay(),
    );
}

/// Idempotent: retried on 5xx, 429, timeouts and connection failures.
#[retry(
    max_attempts = 4,
    initial_backoff = "50ms",
    attempt_timeout = "2s",
    deadline = "10s",
    on_retry = log_retry
)]
async fn quote(client: &reqwest::Client, base: &str) -> Result<String, Error> {
    let request = client.get(format!("{base}/quote")).with_attempt();
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

/// Not idempotent: retried only when the server did not act on the request (429, or the
/// connection was refused).
#[retry(
    max_attempts = 4,
    initial_backoff = "50ms",
    idempotent = false,
    on_retry = log_retry
)]
async fn place_order(client: &reqwest::Client, base: &str) -> Result<String, Error> {
    let request = client.post(format!("{base}/orders")).with_attempt();
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

#[tokio::main]
async fn main() {
    let addr = support::serve(handle).await;
    let base = format!("http://{addr}");
    let client = support::client();

    println!("GET /quote (the server answers 503 twice):");
    println!("  -> {}", quote(&client, &base).await.unwrap());

    println!("GET /quote (the server answers 429 with Retry-After: 1):");
    let started = Instant::now();
    println!(
        "  -> {} after {:?}",
        quote(&client, &base).await.unwrap(),
        started.elapsed()
    );

    println!("POST /orders (the server takes the order, then answers 503):");
    match place_order(&client, &base).await {
        Ok(body) => println!("  -> {body}"),
        Err(e) => println!(
            "  -> gave up: {e}; the server took {} order(s)",
            ORDERS.load(Ordering::SeqCst)
        ),
    }
}

static QUOTES: AtomicU32 = AtomicU32::new(0);
static ORDERS: AtomicU32 = AtomicU32::new(0);

/// The flaky server: its answers depend on how many requests it has seen. It prints the
/// attempt each request says it is.
async fn handle(req: Request<Incoming>) -> Reply {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
    };
    println!(
        "  server: {} {} [{AMZ_SDK_INVOCATION_ID}: {}] [{AMZ_SDK_REQUEST}: {}]",
        req.method(),
        req.uri().path(),
        header(AMZ_SDK_INVOCATION_ID),
        header(AMZ_SDK_REQUEST),
    );
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/quote") => match QUOTES.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => reply(StatusCode::SERVICE_UNAVAILABLE, "warming up"),
            3 => {
                let mut r = reply(StatusCode::TOO_MANY_REQUESTS, "slow down");
                r.headers_mut().insert("retry-after", "1".parse().unwrap());
                r
            }
            _ => reply(StatusCode::OK, "EUR/USD 1.0842"),
        },
        (&Method::POST, "/orders") => {
            ORDERS.fetch_add(1, Ordering::SeqCst);
            reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "order stored, but the reply failed",
            )
        }
        _ => reply(StatusCode::NOT_FOUND, "no such resource"),
    }
}
