//! A flaky HTTP server on 127.0.0.1 and a `#[retry]` client that gets through.
//!
//! The server answers 503 twice, the second time with `Retry-After: 1`, then 200. The client
//! retries the first 503 after a jittered backoff of at most 50 ms, waits the second the server
//! asked for after the other, and prints each failed attempt and the result.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use axum::Router;
use axum::http::{StatusCode, header::RETRY_AFTER};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::{RetryEvent, retry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The client: one attempt is one GET; a 5xx, a 429, a timeout or a failed connection is
/// retried, and a `Retry-After` is waited.
#[retry(max_attempts = 4, initial_backoff = "50ms", deadline = "10s", on_retry = log)]
async fn greeting(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

/// Called before each retry's sleep.
fn log(event: &RetryEvent<'_, Error>) {
    let error = event.error().map(ToString::to_string).unwrap_or_default();
    println!(
        "client: attempt {}: {error} ({}), retrying in {:?}",
        event.attempt(),
        event.class(),
        event.delay()
    );
}

static REQUESTS: AtomicU32 = AtomicU32::new(0);

/// The flaky server: 503, 503 with `Retry-After: 1`, then 200.
async fn flaky() -> Response {
    let n = REQUESTS.fetch_add(1, Ordering::SeqCst) + 1;
    let (response, said) = match n {
        1 => (StatusCode::SERVICE_UNAVAILABLE.into_response(), ""),
        2 => (
            (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "1")]).into_response(),
            ", Retry-After: 1",
        ),
        _ => ("hello from the flaky server".into_response(), ""),
    };
    println!("server: request {n} -> {}{said}", response.status());
    response
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/greeting", listener.local_addr()?);
    tokio::spawn(axum::serve(listener, Router::new().route("/greeting", get(flaky))).into_future());
    println!("server: listening on {url}");

    // `no_proxy`: straight to 127.0.0.1, whatever proxy the environment names.
    let client = reqwest::Client::builder().no_proxy().build()?;
    let started = Instant::now();
    let text = greeting(&client, &url).await?;
    println!(
        "client: {text:?} after {} attempts, in {:.2?}",
        REQUESTS.load(Ordering::SeqCst),
        started.elapsed()
    );
    Ok(())
}
