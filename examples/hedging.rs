//! Hedged requests against a loopback HTTP server with a slow replica.
//!
//! Every third request the server receives takes two seconds; the others answer at once. The
//! client's `#[retry(hedge_after = "50ms")]` GET sends a copy of a request that has not
//! answered within 50 ms, takes whichever answers first and drops the other, and prints each
//! hedge as it starts. Six calls: two of them meet the slow replica and come back in about
//! 50 ms instead of two seconds, for two extra requests.
//!
//! ```text
//! cargo run --example hedging
//! ```

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::{RetryEvent, attempt, retry};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Printed as each hedge starts.
fn print_hedge(ev: &RetryEvent<'_, Error>) {
    if ev.is_hedge() {
        println!(
            "client:   attempt {} has not answered: hedging with attempt {}",
            ev.attempt(),
            ev.attempt() + 1
        );
    }
}

/// One attempt: GET the URL. Idempotent, so a copy may run beside it.
#[retry(hedge_after = "50ms", attempt_timeout = "5s", on_retry = print_hedge)]
async fn get_item(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let n = attempt().map_or(1, |a| a.number());
    let response = error_for_status(client.get(url).send().await?)?;
    let body = response.text().await?;
    Ok(format!("{body} (attempt {n})"))
}

/// The server: every third request is slow.
async fn item(State(requests): State<Arc<AtomicU32>>) -> String {
    let n = requests.fetch_add(1, Ordering::SeqCst) + 1;
    if n % 3 == 0 {
        println!("server: request {n} (slow replica: 2 s)");
        tokio::time::sleep(Duration::from_secs(2)).await;
    } else {
        println!("server: request {n}");
    }
    format!("item from request {n}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let requests = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route("/item", get(item))
        .with_state(requests.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/item", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::new();
    for call in 1..=6 {
        let started = Instant::now();
        let item = get_item(&client, &url).await?;
        println!("client: call {call}: {item} in {:.0?}", started.elapsed());
    }
    println!(
        "client: 6 calls, {} requests",
        requests.load(Ordering::SeqCst)
    );
    server.abort();
    Ok(())
}
