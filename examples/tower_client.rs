//! Retrying a tower service: hyper-util's HTTP client wrapped in `RetryLayer`.
//!
//! The example starts its own flaky server on 127.0.0.1, then, through one client:
//! - reads a quote through a `503 Service Unavailable` and a `429 Too Many Requests` whose
//!   `Retry-After: 1` is waited;
//! - places an order (a POST: not idempotent) that meets a `503`: it is not sent twice, and
//!   the caller gets the 503;
//! - places an order with a server that is down: the connection is refused, so the request
//!   never left, and even a POST is retried.
//!
//! The policy's `on_retry` hook prints each failed attempt before the wait.
//!
//! Run it with `cargo run --example tower_client`.

mod support;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::{Failure, RetryLayer};
use retry_runtime::{Policy, RetryEvent};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use support::{Reply, reply};
use tower::{ServiceBuilder, ServiceExt};

/// Prints a failed attempt: the response the server gave, or the error.
fn log_retry(event: &RetryEvent<'_, Failure<Response<Incoming>>>) {
    let Some(failure) = event.error() else { return };
    match (failure.response(), failure.error()) {
        (Some(response), _) => println!(
            "  attempt {} answered {}, next in {:?}",
            event.attempt(),
            response.status(),
            event.delay(),
        ),
        (None, Some(error)) => println!(
            "  attempt {} failed ({}: {error}), next in {:?}",
            event.attempt(),
            event.class(),
            event.delay(),
        ),
        (None, None) => {}
    }
}

#[tokio::main]
async fn main() {
    let addr = support::serve(handle).await;
    let policy = Policy::new()
        .name("shop")
        .max_attempts(4)
        .initial_backoff(Duration::from_millis(50))
        .attempt_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(10))
        .on_retry(log_retry);
    // One layer, one policy: every service built with it shares its retry token bucket.
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(policy))
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());

    println!("GET /quote (the server answers 503, then 429 with Retry-After: 1):");
    let started = Instant::now();
    let response = client
        .clone()
        .oneshot(request(Method::GET, &format!("http://{addr}/quote")))
        .await
        .unwrap();
    let status = response.status();
    println!(
        "  -> {status}: {} after {:?}",
        text(response).await,
        started.elapsed()
    );

    println!("POST /orders (the server takes the order, then answers 503):");
    let response = client
        .clone()
        .oneshot(request(Method::POST, &format!("http://{addr}/orders")))
        .await
        .unwrap();
    println!(
        "  -> {}; the server took {} order(s)",
        response.status(),
        ORDERS.load(Ordering::SeqCst)
    );

    println!("POST /orders to a server that is down (the connection is refused):");
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    match client
        .oneshot(request(Method::POST, &format!("http://{down}/orders")))
        .await
    {
        Ok(response) => println!("  -> {}", response.status()),
        Err(e) => println!("  -> gave up: {e}"),
    }
}

fn request(method: Method, url: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from_static(b"{\"pair\":\"EUR/USD\"}")))
        .unwrap()
}

async fn text(response: Response<Incoming>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

static QUOTES: AtomicU32 = AtomicU32::new(0);
static ORDERS: AtomicU32 = AtomicU32::new(0);

/// The flaky server: its answers depend on how many requests it has seen.
async fn handle(req: Request<Incoming>) -> Reply {
    println!("  server: {} {}", req.method(), req.uri().path());
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/quote") => match QUOTES.fetch_add(1, Ordering::SeqCst) {
            0 => reply(StatusCode::SERVICE_UNAVAILABLE, "warming up"),
            1 => {
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
