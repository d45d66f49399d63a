//! Idempotency keys (`idempotency_key = true`, `Policy::idempotency_key(true)`) against a real
//! loopback server that deduplicates by key as the IETF httpapi draft "The Idempotency-Key
//! HTTP Header Field" asks (`keyed_server`): every attempt and every hedge of a call carries
//! the call's invocation id as its `Idempotency-Key`, written by `with_attempt` on a reqwest
//! request and by the tower layer; a `POST` that is not idempotent is retried after a 503; a
//! keyed request's `409 Conflict` is retried as throttling and its `422 Unprocessable
//! Content` is not retried. (10,000 calls through resets before and after the server commits
//! are `idempotency_stress.rs`.)
//!
//! Real sockets need real time, so only the hedging tests sleep (a slow first answer); the
//! others retry at once in an instant scope (`testing::record`).

use crate::keyed_server::{Action, Arrival, KeyedServer};
use crate::util::{classes, instant, is_uuid_v4};
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::policy::NoRepeat;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::tower::{Failure, RetryLayer};
use retry_runtime::wire::{IDEMPOTENCY_KEY, WithAttempt};
use retry_runtime::{Classify, ErrorClass, Jitter, Policy, RetryEvent, attempt, retry, testing};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::{ServiceBuilder, ServiceExt};

/// A reqwest client that talks to loopback directly, whatever proxy the environment names.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The keys the arrivals carried in `wire::IDEMPOTENCY_KEY` (`""` for none).
fn keys(arrivals: &[Arrival]) -> Vec<String> {
    arrivals
        .iter()
        .map(|a| {
            let key = a.headers.get(IDEMPOTENCY_KEY);
            key.map_or("", |v| v.to_str().unwrap()).to_owned()
        })
        .collect()
}

/// The invocation ids the bodies saw, in order.
static IDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note_id() {
    let id = attempt().expect("inside a body").invocation_id();
    IDS.lock().unwrap().push(id.to_string());
}

fn take_ids() -> Vec<String> {
    std::mem::take(&mut *IDS.lock().unwrap())
}

/// Serializes the tests that read `IDS`.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[retry(
    max_attempts = 4,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false,
    idempotency_key = true
)]
async fn create_order(client: &reqwest::Client, url: &str, body: &str) -> Result<String, Error> {
    note_id();
    let request = client.post(url).body(body.to_owned()).with_attempt();
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

/// The same `POST` without keys.
#[retry(
    max_attempts = 4,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn create_unkeyed(client: &reqwest::Client, url: &str, body: &str) -> Result<String, Error> {
    let request = client.post(url).body(body.to_owned()).with_attempt();
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

/// A function that sends keys, whose body forgets to write its key into the request.
#[retry(max_attempts = 4, initial_backoff = "10ms", idempotency_key = true)]
async fn create_forgetful(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.post(url).body("{}").send().await?)?;
    Ok(response.text().await?)
}

/// Every attempt of a call carries the call's invocation id as its key; a `POST` of a function
/// that is not idempotent is retried after 503s because it carries one; the next call has a
/// key of its own; without the key the same `POST` is not retried and carries no key.
#[tokio::test]
async fn every_attempt_carries_the_calls_id_and_a_post_is_retried_after_503s() {
    let _serial = SERIAL.lock().await;
    let server = KeyedServer::start().await;
    let c = client();
    server.script(&[Action::Status(503), Action::Status(503)]);
    let (out, record) =
        testing::record(instant(), create_order(&c, &server.url("/orders/1"), "a")).await;
    assert_eq!(out.unwrap(), "/orders/1 executed as #1");
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
    let arrived = server.arrivals();
    let sent = keys(&arrived);
    let ids = take_ids();
    assert_eq!(ids.len(), 3);
    assert!(is_uuid_v4(&ids[0]), "{ids:?}");
    assert_eq!(sent, [ids[0].clone(), ids[0].clone(), ids[0].clone()]);
    assert!(arrived.iter().all(|a| a.method == http::Method::POST));
    assert_eq!(server.executed("/orders/1"), 1);

    // The next call: a key of its own.
    create_order(&c, &server.url("/orders/2"), "b")
        .await
        .unwrap();
    let next = take_ids();
    assert_eq!(server.arrivals()[3].key(), Some(next[0].as_str()));
    assert_ne!(next[0], ids[0]);

    // Without keys: a 503 ends the call that is not idempotent, and no key is sent.
    server.script(&[Action::Status(503)]);
    let err = create_unkeyed(&c, &server.url("/orders/3"), "c")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 5);
    assert_eq!(arrived[4].key(), None);
}

/// A keyed request's 409 (its key still being processed) is retried as throttling; the same
/// 409 to a request without a key, or to an attempt that did not write its key, is the
/// caller's (`Permanent`). A keyed request's 422 (the key used with another payload) is not
/// retried.
#[tokio::test]
async fn a_keyed_409_is_retried_as_throttling_and_a_422_is_not_retried() {
    let _serial = SERIAL.lock().await;
    let server = KeyedServer::start().await;
    let c = client();

    server.script(&[Action::Status(409)]);
    let (out, record) =
        testing::record(instant(), create_order(&c, &server.url("/orders/1"), "a")).await;
    assert_eq!(out.unwrap(), "/orders/1 executed as #1");
    assert_eq!(classes(&record), [ErrorClass::Throttling]);
    assert_eq!(server.arrivals().len(), 2);

    server.script(&[Action::Status(422)]);
    let (out, record) =
        testing::record(instant(), create_order(&c, &server.url("/orders/2"), "b")).await;
    let err = out.unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::UNPROCESSABLE_ENTITY));
    assert_eq!(err.classify(), ErrorClass::Permanent);
    assert!(record.retries().is_empty());
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(server.executed("/orders/2"), 0);
    take_ids();

    server.script(&[Action::Status(409)]);
    let (out, record) =
        testing::record(instant(), create_unkeyed(&c, &server.url("/orders/3"), "c")).await;
    let err = out.unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::CONFLICT));
    assert_eq!(err.classify(), ErrorClass::Permanent);
    assert!(record.retries().is_empty());

    server.script(&[Action::Status(409)]);
    let (out, record) =
        testing::record(instant(), create_forgetful(&c, &server.url("/orders/4"))).await;
    assert_eq!(out.unwrap_err().classify(), ErrorClass::Permanent);
    assert!(record.retries().is_empty());
    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 5);
    assert_eq!(arrived[4].key(), None);
}

/// The server answers its own 409 while the first request with the key is being processed: the
/// keyed call asks again and gets the first request's answer, executed once.
#[tokio::test]
async fn the_servers_409_while_processing_is_waited_out() {
    let _serial = SERIAL.lock().await;
    let server = KeyedServer::start().await;
    let c = client();
    server.script(&[Action::ResetWhileProcessing(2)]);
    let (out, record) =
        testing::record(instant(), create_order(&c, &server.url("/orders/7"), "x")).await;
    assert_eq!(out.unwrap(), "/orders/7 executed as #1");
    assert_eq!(record.retries().len(), 3);
    assert_eq!(
        classes(&record)[1..],
        [ErrorClass::Throttling, ErrorClass::Throttling]
    );
    let statuses: Vec<Option<u16>> = server.arrivals().iter().map(|a| a.status).collect();
    assert_eq!(statuses, [None, Some(409), Some(409), Some(200)]);
    assert_eq!(server.executed("/orders/7"), 1);
    take_ids();
}

#[retry(
    max_attempts = 3,
    hedge_after = "50ms",
    initial_backoff = "20ms",
    jitter = "none",
    idempotent = false,
    idempotency_key = true
)]
async fn create_hedged(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    note_id();
    let request = client.post(url).body("{}").with_attempt();
    let response = error_for_status(request.send().await?)?;
    Ok(response.text().await?)
}

/// A function that is not idempotent is hedged because it sends keys: the hedges carry the
/// call's key too, the server answers them 409 while the first is being processed, and the
/// request is executed once.
#[tokio::test]
async fn every_hedge_carries_the_calls_key() {
    let _serial = SERIAL.lock().await;
    let server = KeyedServer::start().await;
    server.script(&[Action::Slow(Duration::from_millis(400))]);
    let (out, record) = testing::record(
        testing::Overrides::new(),
        create_hedged(&client(), &server.url("/orders/9")),
    )
    .await;
    assert_eq!(out.unwrap(), "/orders/9 executed as #1");
    assert!(!record.hedges().is_empty(), "{record:?}");
    let arrived = server.arrivals();
    assert!(arrived.len() >= 2, "{arrived:?}");
    let ids = take_ids();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert!(
        keys(&arrived).iter().all(|k| *k == ids[0]),
        "{arrived:?} {ids:?}"
    );
    // The hedges came while the first was being processed (recorded when answered, the
    // first last).
    let statuses: Vec<Option<u16>> = arrived.iter().map(|a| a.status).collect();
    assert_eq!(statuses.last(), Some(&Some(200)), "{statuses:?}");
    assert!(statuses.contains(&Some(409)), "{statuses:?}");
    assert_eq!(server.executed("/orders/9"), 1);
}

type Body = Full<Bytes>;

fn post(url: &str) -> Request<Body> {
    Request::post(url)
        .body(Full::new(Bytes::from_static(b"{\"item\":1}")))
        .unwrap()
}

/// The invocation ids the tower policy's hook saw.
type Seen = Arc<Mutex<Vec<String>>>;

/// What the tower policy's hook sees of a failed attempt.
type Event<'a> = RetryEvent<'a, Failure<http::Response<hyper::body::Incoming>>>;

fn keyed_policy(seen: &Seen) -> Policy<(), NoRepeat, impl Fn(&Event<'_>) + use<>> {
    let seen = seen.clone();
    Policy::new()
        .max_attempts(4)
        .initial_backoff(Duration::from_millis(10))
        .jitter(Jitter::None)
        .idempotent(false)
        .idempotency_key(true)
        .on_retry(move |e: &Event<'_>| {
            seen.lock().unwrap().push(e.invocation_id().to_string());
        })
}

/// The tower layer under a policy that sends keys: every attempt's request carries the call's
/// invocation id, so a `POST` is retried after a 503 and a 409; a 422 comes back to the
/// caller at once; under a policy without keys the `POST` is sent once, without a key.
#[tokio::test]
async fn the_tower_layer_writes_the_calls_key_into_every_attempt() {
    let server = KeyedServer::start().await;
    let seen = Seen::default();
    let keyed = ServiceBuilder::new()
        .layer(RetryLayer::new(keyed_policy(&seen)))
        .service(Client::builder(TokioExecutor::new()).build_http::<Body>());

    server.script(&[Action::Status(503), Action::Status(409)]);
    let (out, record) = testing::record(
        instant(),
        keyed.clone().oneshot(post(&server.url("/orders/1"))),
    )
    .await;
    let response = out.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "/orders/1 executed as #1");
    assert_eq!(
        classes(&record),
        [ErrorClass::Transient, ErrorClass::Throttling]
    );
    let ids = std::mem::take(&mut *seen.lock().unwrap());
    assert!(is_uuid_v4(&ids[0]) && ids[1] == ids[0], "{ids:?}");
    assert_eq!(
        keys(&server.arrivals()),
        [ids[0].clone(), ids[0].clone(), ids[0].clone()]
    );

    server.script(&[Action::Status(422)]);
    let (out, record) = testing::record(
        instant(),
        keyed.clone().oneshot(post(&server.url("/orders/2"))),
    )
    .await;
    assert_eq!(out.unwrap().status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(record.retries().is_empty());
    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 4);
    assert!(
        arrived[3]
            .key()
            .is_some_and(|k| is_uuid_v4(k) && k != ids[0])
    );

    let unkeyed = ServiceBuilder::new()
        .layer(RetryLayer::new(
            Policy::new().max_attempts(4).jitter(Jitter::None),
        ))
        .service(Client::builder(TokioExecutor::new()).build_http::<Body>());
    server.script(&[Action::Status(503)]);
    let (out, _) =
        testing::record(instant(), unkeyed.oneshot(post(&server.url("/orders/3")))).await;
    assert_eq!(out.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    let arrived = server.arrivals();
    assert_eq!(arrived.len(), 5);
    assert_eq!(arrived[4].key(), None);
}

/// A hedged policy that sends keys, through the tower layer: the hedges of a `POST` carry the
/// call's key, and the request is executed once.
#[tokio::test]
async fn the_tower_layers_hedges_carry_the_calls_key() {
    let server = KeyedServer::start().await;
    let seen = Seen::default();
    let policy = keyed_policy(&seen)
        .hedge_after(Duration::from_millis(50))
        .build()
        .unwrap();
    let hedged = ServiceBuilder::new()
        .layer(RetryLayer::new(policy))
        .service(Client::builder(TokioExecutor::new()).build_http::<Body>());
    server.script(&[Action::Slow(Duration::from_millis(400))]);
    let (out, record) = testing::record(
        testing::Overrides::new(),
        hedged.oneshot(post(&server.url("/orders/5"))),
    )
    .await;
    let response = out.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!record.hedges().is_empty(), "{record:?}");
    let arrived = server.arrivals();
    assert!(arrived.len() >= 2, "{arrived:?}");
    let ids = seen.lock().unwrap().clone();
    assert!(
        keys(&arrived).iter().all(|k| *k == ids[0]),
        "{arrived:?} {ids:?}"
    );
    assert_eq!(server.executed("/orders/5"), 1);
}
