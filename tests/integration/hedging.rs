//! Hedged GETs against a real HTTP server on 127.0.0.1 whose answers, for one request in ten,
//! never come: without hedging such a call waits out its attempt timeout; with
//! `hedge_after = "20ms"` a copy of the request answers instead. The server's counters show
//! the price: one extra request per hedge. (Up to three attempts run at once, so a hedge
//! that hangs too gets a hedge of its own.)
//!
//! Real sockets need real time, so the assertions hold whatever the machine's speed: the
//! unhedged tail is at least the attempt timeout (the server never answers those requests);
//! the hedged calls end far below it; the extra requests are exactly the hedges recorded.

use crate::http_server::{Fault, Server, client};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::{retry, testing};
use std::time::Duration;
use tokio::time::Instant;

#[retry(attempt_timeout = "1s", max_attempts = 3, initial_backoff = "10ms")]
async fn get(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

#[retry(
    hedge_after = "20ms",
    max_in_flight = 3,
    attempt_timeout = "1s",
    max_attempts = 4,
    initial_backoff = "10ms",
    bucket = "none"
)]
async fn hedged_get(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

/// The nearest-rank percentile `p` of `samples`.
fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

const CALLS: usize = 30;

#[tokio::test]
async fn hedged_gets_cut_the_tail_that_slow_answers_make() {
    let c = client();

    // Without hedging.
    let server = Server::start().await;
    server.random_faults(7, 0.1, &[Fault::Hang]);
    let mut plain = Vec::new();
    for i in 0..CALLS {
        let start = Instant::now();
        let out = get(&c, &server.url(&format!("/items/{i}"))).await;
        assert_eq!(out.unwrap(), format!("GET /items/{i}"));
        plain.push(start.elapsed());
    }
    let hung = server
        .arrivals()
        .iter()
        .filter(|a| a.fault == Fault::Hang)
        .count();
    assert!(hung > 0, "the seeded plan hangs some requests");
    assert_eq!(
        server.arrivals().len(),
        CALLS + hung,
        "each hang cost a retry"
    );

    // With hedging, over the same plan of faults.
    let server = Server::start().await;
    server.random_faults(7, 0.1, &[Fault::Hang]);
    let mut hedged = Vec::new();
    let mut hedges = 0;
    for i in 0..CALLS {
        let start = Instant::now();
        let (out, record) = testing::record(
            testing::Overrides::new(),
            hedged_get(&c, &server.url(&format!("/items/{i}"))),
        )
        .await;
        assert_eq!(out.unwrap(), format!("GET /items/{i}"));
        hedged.push(start.elapsed());
        hedges += record.hedges().len();
        assert!(
            record.retries().is_empty(),
            "hedges answered, nothing was retried"
        );
    }
    let arrivals = server.arrivals();
    let hung_hedged = arrivals.iter().filter(|a| a.fault == Fault::Hang).count();
    assert_eq!(
        arrivals.len(),
        CALLS + hedges,
        "the extra load is one request per hedge"
    );
    assert!(
        hedges >= hung_hedged,
        "every request that hung got a hedge: {hedges} hedges, {hung_hedged} hung"
    );

    let (p50_plain, p99_plain) = (percentile(&mut plain, 50.0), percentile(&mut plain, 99.0));
    let (p50_hedged, p99_hedged) = (percentile(&mut hedged, 50.0), percentile(&mut hedged, 99.0));
    println!(
        "{CALLS} calls, 10% of requests never answered: p50 {p50_plain:?} / p99 {p99_plain:?} \
         without hedging ({hung} hung, {hung} retries); p50 {p50_hedged:?} / p99 \
         {p99_hedged:?} with hedge_after = 20ms ({hedges} hedges, {hung_hedged} hung, \
         {:.0}% extra requests)",
        100.0 * hedges as f64 / CALLS as f64
    );
    assert!(
        p99_plain >= Duration::from_secs(1),
        "a hung request holds its call for the attempt timeout"
    );
    assert!(
        p99_hedged < Duration::from_millis(500),
        "the hedge answers instead: {p99_hedged:?}"
    );
}
