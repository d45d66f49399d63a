//! What the server sees of the retry loop: `retry_runtime::wire::WithAttempt` writes the
//! current attempt into reqwest, `http` (hyper) and tonic requests, and the loopback servers
//! record what arrived. One invocation id per call (a UUID v4), the attempt counting up, the
//! `max`, the AWS `ttl`, gRPC's `grpc-previous-rpc-attempts`, and a timeout that never exceeds
//! the time the attempt really has left.
//!
//! Real sockets need real time, so the clock is not paused: the timing checks are inequalities
//! that hold however fast the machine is (the timeout written is at most what the attempt had
//! left just before it was written), never lower bounds on elapsed time.

use crate::grpc_server::{self, GetItem, Item, unary_request};
use crate::http_server::{Fault, Server, client};
use crate::util::is_uuid_v4;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::wire::{
    AMZ_SDK_INVOCATION_ID, AMZ_SDK_REQUEST, GRPC_PREVIOUS_RPC_ATTEMPTS, WithAttempt,
};
use retry_runtime::{TimeoutKind, attempt, retry};
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// A header's value as text (empty if absent).
fn header(headers: &http::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[retry(max_attempts = 3, initial_backoff = "10ms", jitter = "none")]
async fn get_item(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn every_attempt_carries_the_calls_id_and_its_number() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let c = client();
    assert_eq!(
        get_item(&c, &server.url("/items/1")).await.unwrap(),
        "GET /items/1"
    );
    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 3);
    let ids: Vec<String> = arrived
        .iter()
        .map(|a| header(&a.headers, AMZ_SDK_INVOCATION_ID))
        .collect();
    assert!(is_uuid_v4(&ids[0]), "{ids:?}");
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one id per call: {ids:?}"
    );
    // Nothing cuts these attempts off: no ttl.
    let requests: Vec<String> = arrived
        .iter()
        .map(|a| header(&a.headers, AMZ_SDK_REQUEST))
        .collect();
    assert_eq!(
        requests,
        ["attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3"]
    );

    // The next call has an id of its own.
    get_item(&c, &server.url("/items/2")).await.unwrap();
    let next = header(&server.arrivals()[3].headers, AMZ_SDK_INVOCATION_ID);
    assert!(
        is_uuid_v4(&next) && next != ids[0],
        "{next} after {}",
        ids[0]
    );
}

/// The timeout each attempt's request was built with, and what the attempt had left just
/// before.
static TIMEOUTS: Mutex<Vec<(Duration, Duration)>> = Mutex::new(Vec::new());

#[retry(
    max_attempts = 3,
    attempt_timeout = "2s",
    deadline = "5s",
    initial_backoff = "10ms",
    jitter = "none"
)]
async fn get_timed(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let cutoff = attempt().unwrap().cutoff().unwrap();
    let left = cutoff - Instant::now();
    let request = client.get(url).with_attempt().build()?;
    let timeout = *request.timeout().expect("with_attempt sets the timeout");
    TIMEOUTS.lock().unwrap().push((timeout, left));
    let response = error_for_status(client.execute(request).await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn a_timed_attempt_sends_its_ttl_and_a_timeout_of_the_time_it_has_left() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable]);
    get_timed(&client(), &server.url("/items/3")).await.unwrap();

    let requests: Vec<String> = server
        .arrivals()
        .iter()
        .map(|a| header(&a.headers, AMZ_SDK_REQUEST))
        .collect();
    assert_eq!(requests.len(), 2);
    for (n, value) in requests.iter().enumerate() {
        // `ttl=YYYYMMDDTHHMMSSZ; attempt=N; max=3`, the AWS SDKs' order.
        let (ttl, rest) = value.split_once("; ").unwrap();
        let stamp = ttl.strip_prefix("ttl=").unwrap();
        assert_eq!(stamp.len(), 16, "{value}");
        assert!(stamp[..8].chars().all(|c| c.is_ascii_digit()), "{value}");
        assert_eq!(&stamp[8..9], "T");
        assert!(stamp[9..15].chars().all(|c| c.is_ascii_digit()), "{value}");
        assert_eq!(&stamp[15..], "Z");
        assert_eq!(rest, format!("attempt={}; max=3", n + 1));
    }

    // The request's own timeout is the time the attempt had left, never more.
    let timeouts = TIMEOUTS.lock().unwrap().clone();
    assert_eq!(timeouts.len(), 2);
    for (timeout, left) in timeouts {
        assert!(timeout <= left, "{timeout:?} > {left:?} left");
        assert!(timeout <= Duration::from_secs(2));
    }
}

// A request that hangs: reqwest's own timeout, which `with_attempt` sets to the attempt's time
// left, runs out with the loop's timer, at the attempt's cutoff.
#[retry(
    max_attempts = 2,
    attempt_timeout = "200ms",
    initial_backoff = "10ms",
    jitter = "none"
)]
async fn get_hanging(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

#[retry(max_attempts = 1, deadline = "200ms")]
async fn get_hanging_by_deadline(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

#[retry(max_attempts = 2, attempt_timeout = "200ms", hedge_after = "50ms")]
async fn get_hanging_hedged(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

// A timeout of the user's own, shorter than the attempt's, set after `with_attempt`.
#[retry(max_attempts = 1, attempt_timeout = "5s")]
async fn get_hanging_own_timeout(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let request = client
        .get(url)
        .with_attempt()
        .timeout(Duration::from_millis(50));
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

#[tokio::test]
async fn a_request_that_gives_up_at_the_attempts_cutoff_ends_with_the_loops_timed_out() {
    let server = Server::start().await;
    let c = client();

    // Whichever of the two is polled first, the call ends with the loop's `TimedOut`, as
    // `Error::TimedOut` promises, not with reqwest's "operation timed out".
    server.script(&[Fault::Hang, Fault::Hang]);
    match get_hanging(&c, &server.url("/items/6")).await {
        Err(Error::TimedOut(t)) => {
            assert_eq!(t.kind(), TimeoutKind::Attempt);
            assert_eq!(t.to_string(), "attempt 2 timed out after 200ms");
        }
        other => panic!("the loop's TimedOut, not {other:?}"),
    }
    assert_eq!(server.arrivals().len(), 2);

    server.script(&[Fault::Hang]);
    match get_hanging_by_deadline(&c, &server.url("/items/7")).await {
        Err(Error::TimedOut(t)) => {
            assert!(t.is_deadline(), "{t}");
            assert_eq!(t.to_string(), "deadline of 200ms exceeded during attempt 1");
        }
        other => panic!("the loop's TimedOut, not {other:?}"),
    }

    // Each attempt of a hedged call has its own cutoff and its own request's timeout.
    server.script(&[Fault::Hang, Fault::Hang]);
    match get_hanging_hedged(&c, &server.url("/items/9")).await {
        Err(Error::TimedOut(t)) => assert_eq!(t.kind(), TimeoutKind::Attempt, "{t}"),
        other => panic!("the loop's TimedOut, not {other:?}"),
    }

    // A shorter timeout of the user's own gives up long before the cutoff: reqwest's error.
    server.script(&[Fault::Hang]);
    match get_hanging_own_timeout(&c, &server.url("/items/8")).await {
        Err(Error::Request(e)) => assert!(e.is_timeout(), "{e:?}"),
        other => panic!("reqwest's own timeout, not {other:?}"),
    }
}

#[tokio::test]
async fn the_http_builder_carries_the_same_headers_for_hyper() {
    use http_body_util::Empty;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    #[retry(max_attempts = 2, initial_backoff = "10ms")]
    async fn get(url: &str) -> Result<http::StatusCode, std::io::Error> {
        let client: Client<_, Empty<bytes::Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let request = http::Request::get(url)
            .with_attempt()
            .body(Empty::new())
            .unwrap();
        let response = client
            .request(request)
            .await
            .map_err(std::io::Error::other)?;
        let status = response.status();
        if status.is_server_error() {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        }
        Ok(status)
    }

    let server = Server::start().await;
    server.script(&[Fault::Unavailable]);
    assert_eq!(
        get(&server.url("/items/4")).await.unwrap(),
        http::StatusCode::OK
    );
    let arrived = server.arrivals();
    let ids: Vec<String> = arrived
        .iter()
        .map(|a| header(&a.headers, AMZ_SDK_INVOCATION_ID))
        .collect();
    assert!(is_uuid_v4(&ids[0]) && ids[1] == ids[0], "{ids:?}");
    assert_eq!(
        header(&arrived[1].headers, AMZ_SDK_REQUEST),
        "attempt=2; max=2"
    );
}

#[tokio::test]
async fn the_headers_are_replaced_never_repeated() {
    #[retry(max_attempts = 1)]
    async fn twice(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let request = client
            .get(url)
            .header(AMZ_SDK_REQUEST, "attempt=0; max=0")
            .with_attempt()
            .with_attempt();
        let response = error_for_status(request.send().await?)?;
        Ok(response.text().await?)
    }

    let server = Server::start().await;
    twice(&client(), &server.url("/items/6")).await.unwrap();
    let headers = &server.arrivals()[0].headers;
    assert_eq!(headers.get_all(AMZ_SDK_INVOCATION_ID).iter().count(), 1);
    let requests: Vec<_> = headers.get_all(AMZ_SDK_REQUEST).iter().collect();
    assert_eq!(requests, ["attempt=1; max=1"]);
}

#[tokio::test]
async fn outside_a_retry_body_nothing_is_added() {
    let server = Server::start().await;
    let c = client();
    let response = c
        .get(server.url("/items/5"))
        .with_attempt()
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());

    let channel = server_grpc().await;
    let _ = unary_request::<GetItem, Item>(
        &channel.1,
        "/shop.Orders/Get",
        Request::new(GetItem { id: 5 }).with_attempt(),
    )
    .await
    .unwrap();

    let http_headers = &server.arrivals()[0].headers;
    assert!(!http_headers.contains_key(AMZ_SDK_INVOCATION_ID));
    assert!(!http_headers.contains_key(AMZ_SDK_REQUEST));
    let grpc_headers = &channel.0.arrivals()[0].headers;
    assert!(!grpc_headers.contains_key(GRPC_PREVIOUS_RPC_ATTEMPTS));
    assert!(!grpc_headers.contains_key("grpc-timeout"));
}

/// A gRPC server and a channel to it.
async fn server_grpc() -> (grpc_server::Server, Channel) {
    let server = grpc_server::Server::start().await;
    let channel = server.channel();
    (server, channel)
}

/// What each gRPC attempt had left just before its request was written.
static GRPC_LEFT: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

/// 3 s per attempt, 4 s in all, 1 s between attempts: the third attempt starts 2 s or more
/// into the deadline, so its time left is at most 2 s, not its 3 s attempt timeout. (The
/// deadline leaves the first two attempts almost 2 s to fail in, however slow the machine.)
#[retry(
    max_attempts = 3,
    attempt_timeout = "3s",
    deadline = "4s",
    initial_backoff = "1s",
    max_backoff = "1s",
    jitter = "none"
)]
async fn get_grpc(channel: &Channel, id: u32) -> Result<Item, Status> {
    let left = attempt().unwrap().cutoff().unwrap() - Instant::now();
    GRPC_LEFT.lock().unwrap().push(left);
    let request = Request::new(GetItem { id }).with_attempt();
    unary_request(channel, "/shop.Orders/Get", request).await
}

/// A `grpc-timeout` value (digits, then a unit: H, M, S, m, u or n) as a duration.
fn grpc_timeout(value: &str) -> Duration {
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().unwrap();
    match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => panic!("not a grpc-timeout: {value}"),
    }
}

#[tokio::test]
async fn a_grpc_retry_says_how_many_went_before_and_sends_the_time_really_left() {
    let (server, channel) = server_grpc().await;
    server.script(&[
        grpc_server::Fault::Unavailable,
        grpc_server::Fault::Unavailable,
    ]);
    assert_eq!(get_grpc(&channel, 7).await.unwrap().id, 7);

    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 3);
    let previous: Vec<String> = arrived
        .iter()
        .map(|a| header(&a.headers, GRPC_PREVIOUS_RPC_ATTEMPTS))
        .collect();
    assert_eq!(previous, ["", "1", "2"], "gRFC A6: sent on retries only");

    let left = GRPC_LEFT.lock().unwrap().clone();
    assert_eq!(left.len(), 3, "one body run per attempt");
    // Every attempt carries a `grpc-timeout`.
    let sent: Vec<Duration> = arrived
        .iter()
        .map(|a| header(&a.headers, "grpc-timeout"))
        .inspect(|value| assert!(!value.is_empty(), "an attempt without grpc-timeout"))
        .map(|value| grpc_timeout(&value))
        .collect();
    for (sent, left) in sent.iter().zip(&left) {
        assert!(sent <= left, "sent {sent:?}, {left:?} left");
    }
    assert!(sent[0] <= Duration::from_secs(3) && sent[1] <= Duration::from_secs(3));
    // The third attempt starts after two 1 s sleeps: the deadline, 2 s or less away, bounds
    // its timeout, not the stale 3 s of its attempt timeout.
    assert!(sent[2] <= Duration::from_secs(2), "{:?}", sent[2]);
}
