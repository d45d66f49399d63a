//! `#[retry]` functions calling a real HTTP server on 127.0.0.1 with reqwest, through injected
//! faults: 503, 429 with every form of hint, reset connections, responses slower than the
//! attempt timeout, refused connections; and a circuit breaker that stops calls from reaching a
//! failing server, then probes it once it has recovered.
//!
//! Real sockets need real time to make progress, so these tests do not pause tokio's clock.
//! They stay exact and independent of the machine's speed by asserting what does not depend on
//! it: the server's counters (how many requests arrived, how many it executed), the classes and
//! delays the retry loop recorded (`testing::record`, with instant retries), and for the one
//! test that really sleeps, a lower bound (the server cannot see the retry before the hint has
//! passed).

use crate::faults::refused_addr;
use crate::http_server::{Fault, Hint, Server, client};
use crate::util::{classes, instant};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::testing::{self, EarlyEnd};
use retry_runtime::{Classify, ErrorClass, RetryEvent, retry};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

#[retry(max_attempts = 5, initial_backoff = "10ms", jitter = "none")]
async fn get_item(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

#[retry(
    max_attempts = 5,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn place_order(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.post(url).send().await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn a_get_is_retried_through_503s() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let url = server.url("/items/1");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/1");
    assert_eq!(server.executed("/items/1"), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
    assert_eq!(
        record.delays(),
        [Duration::from_millis(10), Duration::from_millis(20)]
    );
}

#[tokio::test]
async fn a_get_is_retried_after_a_reset_connection() {
    let server = Server::start().await;
    server.script(&[Fault::Reset]);
    let url = server.url("/items/2");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/2");
    assert_eq!(server.arrivals().len(), 2);
    assert_eq!(classes(&record), [ErrorClass::Transient]);
}

#[tokio::test]
async fn a_post_is_not_repeated_after_a_503_or_a_reset() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Reset]);
    let c = client();

    let (out, record) = testing::record(instant(), place_order(&c, &server.url("/orders/1"))).await;
    let err = out.unwrap_err();
    assert_eq!(err.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(server.executed("/orders/1"), 1);
    assert!(record.retries().is_empty());
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);

    let (out, record) = testing::record(instant(), place_order(&c, &server.url("/orders/2"))).await;
    let err = out.unwrap_err();
    assert!(matches!(err, Error::Request(_)), "{err:?}");
    assert_eq!(err.classify(), ErrorClass::Transient);
    assert_eq!(server.executed("/orders/2"), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
    assert_eq!(server.arrivals().len(), 2);
}

#[tokio::test]
async fn a_post_is_repeated_after_a_429_which_it_was_not_executed_for() {
    let server = Server::start().await;
    server.script(&[Fault::Throttle(Hint::None), Fault::Throttle(Hint::None)]);
    let url = server.url("/orders/3");
    let (out, record) = testing::record(instant(), place_order(&client(), &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/3");
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(server.executed("/orders/3"), 1);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
}

/// 30% of requests fail (503, 429 with a hint, reset). A GET fails only when all its 5
/// attempts met a fault (0.3^5: about one call in 400); the server's log agrees attempt for
/// attempt.
#[tokio::test]
async fn gets_get_through_30_percent_faults() {
    #[retry(max_attempts = 5, initial_backoff = "10ms")]
    async fn get(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.get(url).send().await?)?;
        Ok(response.text().await?)
    }

    let server = Server::start().await;
    let faults = [
        Fault::Unavailable,
        Fault::Throttle(Hint::Seconds(1)),
        Fault::Reset,
    ];
    server.random_faults(30, 0.3, &faults);
    let c = client();
    let (calls, mut through, mut attempts) = (200, 0, 0);
    for id in 0..calls {
        let path = format!("/items/{id}");
        let (out, record) = testing::record(instant(), get(&c, &server.url(&path))).await;
        // The server saw every attempt; all but a successful last one were faults.
        let seen: Vec<Fault> = server
            .arrivals()
            .iter()
            .filter(|a| a.path == path)
            .map(|a| a.fault)
            .collect();
        let n = record.attempts("get");
        assert_eq!(seen.len(), n as usize);
        let (last, before) = seen.split_last().unwrap();
        assert!(before.iter().all(|f| *f != Fault::None));
        match out {
            Ok(body) => {
                assert_eq!((body, *last), (format!("GET {path}"), Fault::None));
                through += 1;
            }
            // Only a call whose five attempts all met a fault fails.
            Err(_) => assert_eq!((n, *last == Fault::None), (5, false)),
        }
        // A refused (429) attempt is not executed; every other one is.
        assert_eq!(server.executed(&path), n - throttled(&seen));
        attempts += n;
    }
    assert!(through >= 195, "{through} of {calls} got through");
    let arrivals = server.arrivals();
    assert_eq!(u32::try_from(arrivals.len()).unwrap(), attempts);
    let faulted = arrivals.iter().filter(|a| a.fault != Fault::None).count();
    // The plan really injected about 30% faults, of every kind.
    let share = faulted as f64 / arrivals.len() as f64;
    assert!((0.2..0.4).contains(&share), "{share}");
    server.assert_each_injected(&faults);
}

/// Attempts refused with 429 (not executed by the server).
fn throttled(seen: &[Fault]) -> u32 {
    let n = seen
        .iter()
        .filter(|f| matches!(f, Fault::Throttle(_)))
        .count();
    u32::try_from(n).unwrap()
}

/// Whatever the faults, a POST is executed at most once: it is repeated only after a 429
/// (refused before executing), never after a 503 or a reset (executed, then failed).
#[tokio::test]
async fn a_post_executes_at_most_once_whatever_the_faults() {
    #[retry(max_attempts = 5, initial_backoff = "10ms", idempotent = false)]
    async fn post(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.post(url).send().await?)?;
        Ok(response.text().await?)
    }

    let server = Server::start().await;
    let faults = [
        Fault::Unavailable,
        Fault::Throttle(Hint::None),
        Fault::Reset,
    ];
    server.random_faults(7, 0.3, &faults);
    let c = client();
    let (mut ok, mut failed) = (0, 0);
    for id in 0..200 {
        let path = format!("/orders/{id}");
        let (out, record) = testing::record(instant(), post(&c, &server.url(&path))).await;
        let executed = server.executed(&path);
        assert!(executed <= 1, "{path} executed {executed} times");
        match out {
            Ok(body) => {
                assert_eq!(body, format!("POST {path}"));
                assert_eq!(executed, 1);
                ok += 1;
            }
            Err(e) => {
                let class = e.classify();
                if class == ErrorClass::Throttling {
                    assert_eq!(executed, 0, "{path}: refused five times");
                } else {
                    assert_eq!(class, ErrorClass::Transient, "{e:?}");
                    assert_eq!(executed, 1);
                    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
                }
                failed += 1;
            }
        }
        // Only throttling was retried.
        assert!(
            record
                .retries()
                .iter()
                .all(|r| r.class == ErrorClass::Throttling)
        );
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
    server.assert_each_injected(&faults);
}

#[tokio::test]
async fn responses_slower_than_the_attempt_timeout() {
    // The first attempt (the one the server never answers) has 1 s, the second 5 s.
    #[retry(
        max_attempts = 3,
        initial_backoff = "10ms",
        attempt_timeout = "1s",
        attempt_timeout_multiplier = 5,
        max_attempt_timeout = "5s"
    )]
    async fn get(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.get(url).send().await?)?;
        Ok(response.text().await?)
    }
    #[retry(
        max_attempts = 3,
        initial_backoff = "10ms",
        attempt_timeout = "1s",
        attempt_timeout_multiplier = 5,
        max_attempt_timeout = "5s",
        idempotent = false
    )]
    async fn post(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.post(url).send().await?)?;
        Ok(response.text().await?)
    }

    let server = Server::start().await;
    let c = client();
    server.script(&[Fault::Hang]);
    let (out, record) = testing::record(instant(), get(&c, &server.url("/items/9"))).await;
    assert_eq!(out.unwrap(), "GET /items/9");
    assert_eq!(classes(&record), [ErrorClass::Timeout]);
    assert_eq!(server.executed("/items/9"), 2);

    server.script(&[Fault::Hang]);
    let (out, record) = testing::record(instant(), post(&c, &server.url("/orders/9"))).await;
    let Err(Error::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(t.limit(), Duration::from_secs(1));
    assert_eq!(server.executed("/orders/9"), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
}

/// Where the late server must start, and the server once started.
static LATE: Mutex<(Option<std::net::SocketAddr>, Option<Server>)> = Mutex::new((None, None));

/// Starts the server on the refused port after the first failed attempt.
fn start_late_server(event: &RetryEvent<'_, Error>) {
    let mut late = LATE.lock().unwrap();
    if let Some(addr) = late.0.take() {
        assert_eq!(event.class(), ErrorClass::NotSent);
        let std_listener = std::net::TcpListener::bind(addr).unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
        late.1 = Some(Server::on(listener));
    }
}

/// A refused connection never reached the server, so even a POST is repeated.
#[tokio::test]
async fn a_refused_connection_is_retried_even_for_a_post() {
    #[retry(
        max_attempts = 3,
        initial_backoff = "10ms",
        idempotent = false,
        on_retry = start_late_server
    )]
    async fn post(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.post(url).send().await?)?;
        Ok(response.text().await?)
    }

    let addr = refused_addr();
    LATE.lock().unwrap().0 = Some(addr);
    let url = format!("http://{addr}/orders/5");
    let (out, record) = testing::record(instant(), post(&client(), &url)).await;
    assert_eq!(out.unwrap(), "POST /orders/5");
    assert_eq!(classes(&record), [ErrorClass::NotSent]);
    let server = LATE.lock().unwrap().1.take().unwrap();
    assert_eq!(server.executed("/orders/5"), 1);
}

#[tokio::test]
async fn retry_after_in_seconds_is_the_delay() {
    let server = Server::start().await;
    server.script(&[
        Fault::Throttle(Hint::Seconds(3)),
        Fault::Throttle(Hint::Seconds(0)),
    ]);
    let url = server.url("/items/3");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/3");
    assert_eq!(record.delays(), [Duration::from_secs(3), Duration::ZERO]);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_the_delay() {
    let server = Server::start().await;
    server.script(&[Fault::Throttle(Hint::DateIn(6))]);
    let url = server.url("/items/4");
    let before = SystemTime::now();
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    let after = SystemTime::now();
    assert_eq!(out.unwrap(), "GET /items/4");
    let date = server.arrivals()[0].date_sent.unwrap();
    let delay = record.delays()[0];
    // The client read the date between `before` and `after`.
    assert!(delay <= date.duration_since(before).unwrap(), "{delay:?}");
    assert!(delay >= date.duration_since(after).unwrap(), "{delay:?}");
}

/// A 429 that says only that its quota is exhausted (`RateLimit`, `r=0`) is retried when the
/// quota resets, not on the loop's own schedule; the longest reset among exhausted quotas wins.
#[tokio::test]
async fn a_ratelimit_field_with_an_exhausted_quota_is_the_delay() {
    let server = Server::start().await;
    server.script(&[
        Fault::Throttle(Hint::RateLimit(r#""default";r=0;t=3"#)),
        Fault::Throttle(Hint::RateLimit(r#""second";r=0;t=1, "minute";r=0;t=15"#)),
        Fault::Throttle(Hint::RateLimit(r#""default";r=10;t=3"#)),
    ]);
    let url = server.url("/items/9");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/9");
    // The third has quota left: the loop's own backoff, its third (10 ms doubled twice).
    assert_eq!(
        record.delays(),
        [3000, 15_000, 40].map(Duration::from_millis)
    );
    assert_eq!(classes(&record), [ErrorClass::Throttling; 3]);
}

#[tokio::test]
async fn x_amz_retry_after_comes_before_retry_after() {
    let server = Server::start().await;
    server.script(&[Fault::Throttle(Hint::AmzMillis(1500))]);
    let url = server.url("/items/5");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/5");
    assert_eq!(record.delays(), [Duration::from_millis(1500)]);
}

#[tokio::test]
async fn a_malformed_retry_after_is_ignored() {
    let server = Server::start().await;
    server.script(&[
        Fault::Throttle(Hint::Raw("soon")),
        Fault::Throttle(Hint::Raw("-5")),
        Fault::Throttle(Hint::Raw("Sun, 06 Nov 1994 08:49:37 UTC")),
    ]);
    let url = server.url("/items/6");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/6");
    // The computed backoff: 10 ms doubling, no jitter.
    assert_eq!(record.delays(), [10, 20, 40].map(Duration::from_millis));
}

#[tokio::test]
async fn a_hint_longer_than_max_backoff_ends_the_retries() {
    let server = Server::start().await;
    server.script(&[Fault::Throttle(Hint::Seconds(120))]);
    let url = server.url("/items/7");
    let (out, record) = testing::record(instant(), get_item(&client(), &url)).await;
    assert_eq!(
        out.unwrap_err().status(),
        Some(http::StatusCode::TOO_MANY_REQUESTS)
    );
    assert_eq!(server.arrivals().len(), 1);
    let end = record.early_ends()[0];
    assert_eq!(end.reason, EarlyEnd::HintTooLong);
    assert_eq!(end.class, Some(ErrorClass::Throttling));
}

#[retry(
    behavior = "2026",
    max_attempts = 5,
    jitter = "none",
    partition = "http-aws-2026"
)]
async fn get_item_2026(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

/// `behavior = "2026"` against a real server's `x-amz-retry-after` (milliseconds): the AWS
/// SDKs keep the hint within [the backoff, the backoff + 5 s], where the backoff after a
/// throttling error starts at 1 s. 10 ms waits the 1 s backoff, 1.5 s waits the 2 s one, and
/// 60 s (which ends the classic behavior's retries) waits 4 s + 5 s; each retry costs 5 tokens,
/// the last one's given back when it succeeds.
#[tokio::test]
async fn under_the_2026_behavior_x_amz_retry_after_is_kept_near_the_backoff() {
    let server = Server::start().await;
    server.script(&[
        Fault::Throttle(Hint::AmzMillis(10)),
        Fault::Throttle(Hint::AmzMillis(1500)),
        Fault::Throttle(Hint::AmzMillis(60_000)),
    ]);
    let url = server.url("/items/2026");
    let (out, record) = testing::record(instant(), get_item_2026(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/2026");
    assert_eq!(
        record.delays(),
        [1000, 2000, 9000].map(Duration::from_millis)
    );
    assert_eq!(classes(&record), [ErrorClass::Throttling; 3]);
    assert_eq!(server.arrivals().len(), 4);
    let bucket = retry_runtime::Partition::named("http-aws-2026").bucket();
    assert_eq!(bucket.available(), 500 - 10);
}

/// Without the instant override the hint is slept: the server cannot see the retry sooner.
#[tokio::test]
async fn retry_after_is_slept() {
    let server = Server::start().await;
    server.script(&[Fault::Throttle(Hint::Seconds(1))]);
    let url = server.url("/items/8");
    assert_eq!(get_item(&client(), &url).await.unwrap(), "GET /items/8");
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1].at - arrivals[0].at;
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
}

/// An `anyhow::Error` is classified by its chain: the reqwest error under the context.
#[tokio::test]
async fn anyhow_errors_are_classified_through_their_chain() {
    use anyhow::Context;

    #[retry(max_attempts = 3, initial_backoff = "10ms")]
    async fn get(client: &reqwest::Client, url: &str) -> anyhow::Result<String> {
        let response = client.get(url).send().await.context("sending")?;
        let response = error_for_status(response).context("reading the item")?;
        Ok(response.text().await?)
    }

    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Throttle(Hint::Seconds(2))]);
    let (out, record) = testing::record(instant(), get(&client(), &server.url("/items/1"))).await;
    assert_eq!(out.unwrap(), "GET /items/1");
    assert_eq!(
        classes(&record),
        [ErrorClass::Transient, ErrorClass::Throttling]
    );
    assert_eq!(record.delays()[1], Duration::from_secs(2));

    let url = format!("http://{}/items/1", refused_addr());
    let (out, record) = testing::record(instant(), get(&client(), &url)).await;
    assert_eq!(out.unwrap_err().classify(), ErrorClass::NotSent);
    assert_eq!(classes(&record), [ErrorClass::NotSent; 2]);
}

/// The errors of hyper-util's legacy client, which reqwest is built on, classified directly.
#[tokio::test]
async fn hyper_client_errors() {
    use http_body_util::Empty;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();

    let refused = format!("http://{}/items/1", refused_addr());
    let err = client.get(refused.parse().unwrap()).await.unwrap_err();
    assert!(err.is_connect());
    assert_eq!(err.classify(), ErrorClass::NotSent);

    let server = Server::start().await;
    server.script(&[Fault::Reset, Fault::Throttle(Hint::AmzMillis(250))]);
    let err = client
        .get(server.url("/items/1").parse().unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.classify(), ErrorClass::Transient, "{err:?}");

    let response = client
        .get(server.url("/items/1").parse().unwrap())
        .await
        .unwrap();
    assert_eq!(response.classify(), ErrorClass::Throttling);
    assert_eq!(response.retry_after(), Some(Duration::from_millis(250)));
}

static WEB: retry_runtime::CircuitBreaker = retry_runtime::CircuitBreaker::new()
    .with_failure_ratio(0.5)
    .with_min_calls(4)
    .with_break(Duration::from_secs(600));

#[retry(max_attempts = 2, initial_backoff = "10ms", jitter = "none", breaker = WEB)]
async fn get_guarded(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn an_open_breaker_stops_calls_before_they_reach_the_server() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable; 20]);
    let (c, url) = (client(), server.url("/items/7"));
    // Two calls of two attempts: 4 failures of 4, the breaker opens on the last.
    for _ in 0..2 {
        let err = get_guarded(&c, &url).await.unwrap_err();
        assert_eq!(err.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
    }
    assert_eq!(WEB.state(), retry_runtime::BreakerState::Open);
    assert_eq!(server.arrivals().len(), 4);
    // Ten more calls: none reaches the server, each fails with the refusal.
    for _ in 0..10 {
        let (out, record) = testing::record(instant(), get_guarded(&c, &url)).await;
        let err = out.unwrap_err();
        assert!(
            matches!(err, Error::Refused(r) if r.by() == "CircuitBreaker"),
            "{err:?}"
        );
        assert_eq!(err.classify(), ErrorClass::Permanent);
        assert_eq!(record.early_ends()[0].reason, EarlyEnd::CircuitOpen);
    }
    assert_eq!(server.arrivals().len(), 4);
}

static PROBING: retry_runtime::CircuitBreaker = retry_runtime::CircuitBreaker::new()
    .with_failure_ratio(0.5)
    .with_min_calls(2)
    .with_break(Duration::from_millis(100));

#[retry(max_attempts = 1, breaker = PROBING)]
async fn get_probed(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn after_the_break_a_probe_reaches_the_recovered_server_and_closes_the_breaker() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let (c, url) = (client(), server.url("/items/8"));
    assert!(get_probed(&c, &url).await.is_err());
    assert!(get_probed(&c, &url).await.is_err());
    assert_ne!(PROBING.state(), retry_runtime::BreakerState::Closed);
    // Real time: at least the break has passed when the sleep ends, whatever the machine.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(PROBING.state(), retry_runtime::BreakerState::HalfOpen);
    // The server answers again: the probe gets through and closes the breaker.
    assert_eq!(get_probed(&c, &url).await.unwrap(), "GET /items/8");
    assert_eq!(PROBING.state(), retry_runtime::BreakerState::Closed);
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(get_probed(&c, &url).await.unwrap(), "GET /items/8");
}
