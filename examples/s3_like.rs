//! A client of an S3-style service without an AWS SDK: errors are classified by their AWS
//! error code and HTTP status (`retry_runtime::aws`), the server's `x-amz-retry-after` is the
//! delay, and retries draw on a bucket with the AWS SDK for Kotlin's costs.
//!
//! The example starts its own object store on 127.0.0.1. Its PUT meets `503 SlowDown` (with
//! `x-amz-retry-after: 150`), then `500 InternalError`, then succeeds; its GET of a missing
//! key meets `404 NoSuchKey`, which is not retried.
//!
//! Run it with `cargo run --example s3_like`.

mod support;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use retry_runtime::{Classify, ErrorClass, RetryEvent, TimedOut, TokenBucket, aws, hint, retry};
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use support::Reply;

/// An error of the object store, as its XML error body and headers describe it.
#[derive(Debug)]
enum S3Error {
    Service {
        status: u16,
        code: Option<String>,
        retry_after: Option<Duration>,
    },
    Transport(reqwest::Error),
    TimedOut(TimedOut),
}

impl Classify for S3Error {
    fn classify(&self) -> ErrorClass {
        match self {
            S3Error::Service { status, code, .. } => aws::classify(code.as_deref(), Some(*status)),
            S3Error::Transport(e) => e.classify(),
            S3Error::TimedOut(_) => ErrorClass::Timeout,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            S3Error::Service { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl From<TimedOut> for S3Error {
    fn from(t: TimedOut) -> Self {
        S3Error::TimedOut(t)
    }
}

impl From<reqwest::Error> for S3Error {
    fn from(e: reqwest::Error) -> Self {
        S3Error::Transport(e)
    }
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            S3Error::Service { status, code, .. } => {
                write!(f, "{status} {}", code.as_deref().unwrap_or("(no code)"))
            }
            S3Error::Transport(e) => write!(f, "{e}"),
            S3Error::TimedOut(t) => write!(f, "{t}"),
        }
    }
}

/// The error of a non-2xx response: its `<Code>` and its `x-amz-retry-after`.
async fn service_error(response: reqwest::Response) -> S3Error {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(hint::AMZ_RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(hint::amz_retry_after);
    let body = response.text().await.unwrap_or_default();
    let code = body
        .split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map(|(code, _)| code.to_string());
    S3Error::Service {
        status,
        code,
        retry_after,
    }
}

/// The Kotlin SDK's costs: 5 for a retry, 10 after a timeout or throttling.
static STORE: TokenBucket = TokenBucket::standard().with_costs(5, 10, 10);

fn log_retry(event: &RetryEvent<'_, S3Error>) {
    if let Some(e) = event.error() {
        println!(
            "  attempt {} failed: {e} ({}), next in {:?}",
            event.attempt(),
            event.class(),
            event.delay()
        );
    }
}

#[retry(max_attempts = 4, initial_backoff = "50ms", attempt_timeout = "2s", bucket = STORE, on_retry = log_retry)]
async fn put_object(
    client: &reqwest::Client,
    url: &str,
    body: &'static str,
) -> Result<(), S3Error> {
    let response = client.put(url).body(body).send().await?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(service_error(response).await)
    }
}

#[retry(max_attempts = 4, initial_backoff = "50ms", attempt_timeout = "2s", bucket = STORE, on_retry = log_retry)]
async fn get_object(client: &reqwest::Client, url: &str) -> Result<String, S3Error> {
    let response = client.get(url).send().await?;
    if response.status().is_success() {
        Ok(response.text().await?)
    } else {
        Err(service_error(response).await)
    }
}

#[tokio::main]
async fn main() {
    let addr = support::serve(handle).await;
    let client = support::client();
    let base = format!("http://{addr}/reports");

    println!("PUT /reports/2024.csv:");
    put_object(&client, &format!("{base}/2024.csv"), "q1,q2,q3,q4")
        .await
        .unwrap();
    println!("  -> stored");

    println!("GET /reports/1999.csv:");
    match get_object(&client, &format!("{base}/1999.csv")).await {
        Ok(body) => println!("  -> {body}"),
        Err(e) => println!("  -> {e}: {}, not retried", e.classify()),
    }
    println!(
        "retry bucket: {} of {} tokens left",
        STORE.available(),
        STORE.capacity()
    );
}

static PUTS: AtomicU32 = AtomicU32::new(0);

fn error(status: StatusCode, code: &str) -> Reply {
    let body = format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code></Error>");
    Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

/// The object store: the first PUT is throttled, the second fails, the third works.
async fn handle(req: Request<Incoming>) -> Reply {
    match *req.method() {
        Method::PUT => match PUTS.fetch_add(1, Ordering::SeqCst) {
            0 => {
                let mut r = error(StatusCode::SERVICE_UNAVAILABLE, "SlowDown");
                r.headers_mut()
                    .insert("x-amz-retry-after", "150".parse().unwrap());
                r
            }
            1 => error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError"),
            _ => Response::new(Full::new(Bytes::new())),
        },
        _ => error(StatusCode::NOT_FOUND, "NoSuchKey"),
    }
}
