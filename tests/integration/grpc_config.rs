//! Calls under a gRPC service config (`retry_runtime::grpc`, gRFC A6) against a real tonic
//! server on 127.0.0.1, made by `GrpcPolicy::retry` and through the tower layer
//! (`RetryLayer::grpc`) over a tonic `Channel`: retryable codes and the others, a method
//! without an entry, the server's pushback (obeyed whatever its length, the backoff starting
//! again after it, a negative one ending the call), the method's timeout, hedging a slow first
//! attempt, and retry throttling shared by the config's methods (and by the clones of a
//! layer). The assertions are the server's counters and what the loop recorded
//! (`testing::record`, instant retries), except for the tests that need the clock to run (the
//! timeouts, the hedges: real sockets need real time, so the clock is not paused), which
//! assert no elapsed time either.

use crate::grpc_server::{Fault, GetItem, Item, PlaceOrder, Receipt, Server, unary, unary_over};
use crate::util::{classes, instant};
use retry_runtime::ErrorClass;
use retry_runtime::grpc::{GrpcPolicy, ServiceConfig};
use retry_runtime::testing::{self, EarlyEnd};
use retry_runtime::tower::{GrpcRetry, RetryLayer};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tower::{Layer, ServiceBuilder};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn config(json: &str) -> ServiceConfig {
    ServiceConfig::from_json(json).unwrap()
}

async fn get(policy: &GrpcPolicy, channel: &Channel, id: u32) -> Result<Item, tonic::Status> {
    policy
        .retry(|| unary(channel, "/shop.Orders/Get", GetItem { id }))
        .await
}

const RETRY_UNAVAILABLE: &str = r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[tokio::test]
async fn a_retry_policy_retries_its_codes_and_no_others() {
    let config = config(RETRY_UNAVAILABLE);
    let policy = config.policy("shop.Orders", "Get");
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let (out, record) = testing::record(instant(), get(&policy, &server.channel(), 1)).await;
    assert_eq!(out.unwrap().name, "item 1");
    assert_eq!(server.executed("Get", 1), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
    // Full jitter below each ceiling: 10 ms, then 20 ms.
    let delays = record.delays();
    assert!(delays[0] <= MS(10) && delays[1] <= MS(20), "{delays:?}");

    // RESOURCE_EXHAUSTED is not in the list: one attempt.
    server.script(&[Fault::Exhausted(None)]);
    let (out, record) = testing::record(instant(), get(&policy, &server.channel(), 2)).await;
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 4);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn the_pushback_is_the_delay_and_the_backoff_starts_again_after_it() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders", "method": "Get"}],
          "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
                          "backoffMultiplier": 10,
                          "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}"#,
    );
    let policy = config.policy("shop.Orders", "Get");
    let server = Server::start().await;
    server.script(&[
        Fault::Exhausted(None),
        Fault::Exhausted(Some("3000")),
        Fault::Exhausted(None),
    ]);
    let (out, record) = testing::record(instant(), get(&policy, &server.channel(), 3)).await;
    assert_eq!(out.unwrap().name, "item 3");
    assert_eq!(server.arrivals().len(), 4);
    let delays = record.delays();
    // The first backoff is at most 0.1 s; the pushback's 3 s is obeyed though above
    // maxBackoff; after it the backoff starts again at 0.1 s (not 0.1 s * 10^2, capped at 1 s).
    assert!(delays[0] <= MS(100), "{delays:?}");
    assert_eq!(delays[1], MS(3000));
    assert!(delays[2] <= MS(100), "{delays:?}");

    // A negative pushback: no retry.
    server.script(&[Fault::Exhausted(Some("-1"))]);
    let (out, record) = testing::record(instant(), get(&policy, &server.channel(), 4)).await;
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 5);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn the_method_timeout_is_the_deadline_of_the_call() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}], "timeout": "0.2s",
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let policy = config.policy("shop.Orders", "Get");
    let server = Server::start().await;
    server.script(&[Fault::Hang]);
    let out = get(&policy, &server.channel(), 5).await;
    assert_eq!(out.unwrap_err().code(), Code::DeadlineExceeded);
    assert_eq!(server.arrivals().len(), 1);
}

#[tokio::test]
async fn a_hedging_policy_sends_another_attempt_beside_a_slow_one() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}],
          "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s",
                            "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let policy = config.policy("shop.Orders", "Get");
    let server = Server::start().await;
    server.script(&[Fault::Hang, Fault::None]);
    let out = get(&policy, &server.channel(), 6).await;
    assert_eq!(out.unwrap().name, "item 6");
    // The first never answers: the hedge, sent 50 ms later, did.
    assert_eq!(server.arrivals().len(), 2);
    assert_eq!(server.executed("Get", 6), 2);
}

#[tokio::test]
async fn retry_throttling_stops_retries_for_every_method_of_the_config() {
    let config = config(
        r#"{"methodConfig": [
          {"name": [{"service": "shop.Orders", "method": "Get"}],
           "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}},
          {"name": [{}],
           "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
          "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.1}}"#,
    );
    let get_policy = config.policy("shop.Orders", "Get");
    // Another method config (the default entry), the same throttle.
    let other = config.policy("shop.Other", "List");
    assert_eq!(other.max_attempts(), 3);
    let server = Server::start().await;
    server.script(&[Fault::Unavailable; 4]);
    // 4 tokens: the first attempt fails (3 left, more than half: retry), the retry fails (2).
    let (out, record) = testing::record(instant(), get(&get_policy, &server.channel(), 7)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(record.retries().len(), 1);
    // Another method of the same config: its failure leaves 1 token, half or less: no retry.
    let (out, record) = testing::record(instant(), get(&other, &server.channel(), 8)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert!(record.retries().is_empty());
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
    assert_eq!(server.arrivals().len(), 3);
}

// Through the tower layer: `RetryLayer::grpc(config)` over a tonic `Channel`, each call under
// the entry of the method its path names, as a generated client makes it.

/// A channel to `server` through the layer of `config`.
fn layered(config: ServiceConfig, server: &Server) -> GrpcRetry<Channel> {
    ServiceBuilder::new()
        .layer(RetryLayer::grpc(config))
        .service(server.channel())
}

async fn get_via(channel: &GrpcRetry<Channel>, id: u32) -> Result<Item, Status> {
    unary_over(channel.clone(), "/shop.Orders/Get", GetItem { id }).await
}

async fn place_via(channel: &GrpcRetry<Channel>, id: u32) -> Result<Receipt, Status> {
    unary_over(channel.clone(), "/shop.Orders/Place", PlaceOrder { id }).await
}

/// An entry for `shop.Orders/Get` alone.
const GET_RETRIES_UNAVAILABLE: &str = r#"{"methodConfig": [
  {"name": [{"service": "shop.Orders", "method": "Get"}],
   "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "1s",
                   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[tokio::test]
async fn through_the_layer_a_methods_entry_retries_its_codes_and_no_others() {
    let server = Server::start().await;
    let channel = layered(config(GET_RETRIES_UNAVAILABLE), &server);
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let (out, record) = testing::record(instant(), get_via(&channel, 21)).await;
    assert_eq!(out.unwrap().name, "item 21");
    assert_eq!(server.arrivals().len(), 3);
    assert_eq!(server.executed("Get", 21), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
    // Full jitter below each ceiling: 10 ms, then 20 ms.
    let delays = record.delays();
    assert!(delays[0] <= MS(10) && delays[1] <= MS(20), "{delays:?}");
    // Each retry says how many attempts came before it.
    let previous: Vec<_> = server
        .arrivals()
        .iter()
        .map(|a| a.headers.get("grpc-previous-rpc-attempts").cloned())
        .collect();
    assert_eq!(
        previous,
        [None, Some("1".parse().unwrap()), Some("2".parse().unwrap())]
    );

    // RESOURCE_EXHAUSTED is not in the list: one attempt, its status the client's.
    server.script(&[Fault::Exhausted(None)]);
    let (out, record) = testing::record(instant(), get_via(&channel, 22)).await;
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 4);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn through_the_layer_a_method_without_an_entry_is_attempted_once() {
    let server = Server::start().await;
    let channel = layered(config(GET_RETRIES_UNAVAILABLE), &server);
    // shop.Orders/Place: no entry names it, nor its service, and there is no default one.
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let (out, record) = testing::record(instant(), place_via(&channel, 23)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(server.arrivals().len(), 1);
    assert_eq!(server.executed("Place", 23), 1);
    assert!(record.retries().is_empty());
    // The same channel's Get, on the next fault of the script, retries through it.
    let (out, _) = testing::record(instant(), get_via(&channel, 24)).await;
    assert_eq!(out.unwrap().name, "item 24");
    assert_eq!(server.arrivals().len(), 3);
}

#[tokio::test]
async fn through_the_layer_the_pushback_is_the_delay_and_a_negative_one_stops() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders", "method": "Get"}],
          "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
                          "backoffMultiplier": 10,
                          "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}"#,
    );
    let server = Server::start().await;
    let channel = layered(config, &server);
    server.script(&[
        Fault::Exhausted(None),
        Fault::Exhausted(Some("3000")),
        Fault::Exhausted(None),
    ]);
    let (out, record) = testing::record(instant(), get_via(&channel, 25)).await;
    assert_eq!(out.unwrap().name, "item 25");
    assert_eq!(server.arrivals().len(), 4);
    let delays = record.delays();
    // The pushback's 3 s is obeyed though above maxBackoff, and the backoff after it starts
    // again at 0.1 s.
    assert!(delays[0] <= MS(100), "{delays:?}");
    assert_eq!(delays[1], MS(3000));
    assert!(delays[2] <= MS(100), "{delays:?}");

    // A negative pushback: no retry, though the code is retryable.
    server.script(&[Fault::Exhausted(Some("-1"))]);
    let (out, record) = testing::record(instant(), get_via(&channel, 26)).await;
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 5);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn through_the_layer_the_method_timeout_is_the_deadline_of_the_call() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}], "timeout": "0.2s",
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let server = Server::start().await;
    let channel = layered(config, &server);
    server.script(&[Fault::Hang]);
    let status = get_via(&channel, 27).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(server.arrivals().len(), 1);
}

#[tokio::test]
async fn through_the_layer_retry_throttling_is_shared_by_methods_and_clones() {
    let config = config(
        r#"{"methodConfig": [
          {"name": [{"service": "shop.Orders", "method": "Get"}],
           "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}},
          {"name": [{}],
           "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
          "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.1}}"#,
    );
    let server = Server::start().await;
    let layer = RetryLayer::grpc(config);
    let gets = layer.layer(server.channel());
    // A clone of the layer, over a channel of its own.
    let places = ServiceBuilder::new()
        .layer(layer.clone())
        .service(server.channel());
    server.script(&[Fault::Unavailable; 4]);
    // 4 tokens: the first attempt fails (3 left, more than half: retry), the retry fails (2).
    let (out, record) = testing::record(instant(), get_via(&gets, 28)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(record.retries().len(), 1);
    // Place, under the default entry: its failure leaves 1 token, half or less: no retry.
    let (out, record) = testing::record(instant(), place_via(&places, 29)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert!(record.retries().is_empty());
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
    assert_eq!(server.arrivals().len(), 3);
    // A policy of the layer's config draws from the same throttle.
    let policy = layer.config().policy("shop.Orders", "Get");
    let (out, record) = testing::record(instant(), get(&policy, &server.channel(), 30)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
    assert_eq!(server.arrivals().len(), 4);
}

#[tokio::test]
async fn through_the_layer_a_hedging_policy_sends_another_attempt_beside_a_slow_one() {
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}],
          "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s",
                            "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let server = Server::start().await;
    let channel = layered(config, &server);
    server.script(&[Fault::Hang, Fault::None]);
    let item = get_via(&channel, 31).await.unwrap();
    assert_eq!(item.name, "item 31");
    // The first never answers: the hedge, sent 50 ms later beside it, did.
    assert_eq!(server.arrivals().len(), 2);
    assert_eq!(server.executed("Get", 31), 2);
}

#[tokio::test]
async fn through_the_layer_a_non_fatal_status_sends_the_next_hedge_at_once() {
    // A hedging delay no call of this test waits for.
    let config = config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}],
          "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "10s",
                            "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let server = Server::start().await;
    let channel = layered(config, &server);
    server.script(&[Fault::Unavailable, Fault::None]);
    let item = get_via(&channel, 32).await.unwrap();
    assert_eq!(item.name, "item 32");
    assert_eq!(server.arrivals().len(), 2);
    // A fatal status ends the call.
    server.script(&[Fault::Exhausted(None)]);
    let status = get_via(&channel, 33).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(server.arrivals().len(), 3);
}
