//! An error enum of one's own around reqwest, deriving `Classify` beside `thiserror::Error`,
//! against a real HTTP server on 127.0.0.1: the variant wrapping `retry_runtime::reqwest::Error`
//! delegates its class and the server's `Retry-After` to it, a body that does not parse is
//! `Permanent`, and reqwest's own error and the loop's timeouts become that variant through the
//! `From` impls `from(reqwest::Error, TimedOut)` writes.
//!
//! The tests run on the real clock: the one that waits for the hint bounds the wait from below
//! (the server cannot see the retry before the hint has passed) and only loosely from above.

use crate::faults::refused_addr;
use crate::http_server::{Fault, Server, client};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::{Classify, ErrorClass, TimedOut, TimeoutKind, retry};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error, Classify)]
enum ApiError {
    #[error(transparent)]
    // `?` on reqwest's own error, and the loop's timeouts: both through the runtime's error.
    #[classify(delegate, from(reqwest::Error, TimedOut))]
    Http(#[from] retry_runtime::reqwest::Error),
    #[error("the answer is not a count: {0}")]
    #[classify(permanent)]
    Parse(#[from] std::num::ParseIntError),
}

/// The number at the end of the server's answer (`GET /items/N`).
#[retry(
    max_attempts = 3,
    initial_backoff = "10ms",
    jitter = "none",
    attempt_timeout = "5s"
)]
async fn count(client: &reqwest::Client, url: &str) -> Result<u64, ApiError> {
    // `error_for_status` keeps the response's headers, which reqwest's own drops.
    let response = error_for_status(client.get(url).send().await?)?;
    let body = response.text().await?;
    Ok(body.rsplit('/').next().unwrap_or_default().parse()?)
}

#[tokio::test]
async fn a_503_with_retry_after_is_retried_after_the_hint() {
    let server = Server::start().await;
    server.script(&[Fault::UnavailableFor(1)]);
    let url = server.url("/items/42");
    let started = Instant::now();
    assert_eq!(count(&client(), &url).await.unwrap(), 42);
    let took = started.elapsed();
    assert_eq!(server.executed("/items/42"), 2);
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1].at - arrivals[0].at;
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// One attempt, cut off after 200 ms.
#[retry(max_attempts = 1, attempt_timeout = "200ms")]
async fn count_at_once(client: &reqwest::Client, url: &str) -> Result<u64, ApiError> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?.trim().parse()?)
}

#[tokio::test]
async fn reqwests_own_error_becomes_the_runtimes_in_the_variant() {
    let url = format!("http://{}/items/1", refused_addr());
    let error = count(&client(), &url).await.unwrap_err();
    let ApiError::Http(Error::Request(e)) = &error else {
        panic!("a refused connection: {error:?}")
    };
    assert!(e.is_connect(), "{e:?}");
    assert_eq!(error.classify(), ErrorClass::NotSent);
}

#[tokio::test]
async fn an_attempt_cut_off_becomes_the_runtimes_timed_out() {
    let server = Server::start().await;
    server.script(&[Fault::Hang]);
    let url = server.url("/items/7");
    let error = count_at_once(&client(), &url).await.unwrap_err();
    let ApiError::Http(Error::TimedOut(t)) = &error else {
        panic!("an attempt cut off: {error:?}")
    };
    assert_eq!(
        (t.kind(), t.limit()),
        (TimeoutKind::Attempt, Duration::from_millis(200))
    );
    assert_eq!(error.classify(), ErrorClass::Timeout);
    assert_eq!(server.executed("/items/7"), 1);
}

#[tokio::test]
async fn a_body_that_does_not_parse_is_not_retried() {
    let server = Server::start().await;
    let url = server.url("/items/many");
    let error = count(&client(), &url).await.unwrap_err();
    assert!(matches!(error, ApiError::Parse(_)), "{error:?}");
    assert_eq!(error.classify(), ErrorClass::Permanent);
    assert_eq!(server.executed("/items/many"), 1);
}
