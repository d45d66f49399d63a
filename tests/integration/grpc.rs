//! `#[retry]` functions calling a real tonic gRPC server on 127.0.0.1 through injected faults:
//! `UNAVAILABLE`, `RESOURCE_EXHAUSTED` with and without `grpc-retry-pushback-ms`, calls slower
//! than the attempt timeout, a refused connection.
//!
//! As in `http.rs`, the assertions are the server's counters and what the retry
//! loop recorded (`testing::record`, instant retries), never elapsed time.

use crate::faults::refused_addr;
use crate::grpc_server::{Fault, GetItem, Item, PlaceOrder, Receipt, Server, channel_to, unary};
use crate::util::{classes, instant};
use retry_runtime::testing::{self, EarlyEnd};
use retry_runtime::{Classify, ErrorClass, retry};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Status};

#[retry(max_attempts = 5, initial_backoff = "10ms", jitter = "none")]
async fn get(channel: &Channel, id: u32) -> Result<Item, Status> {
    unary(channel, "/shop.Orders/Get", GetItem { id }).await
}

#[retry(
    max_attempts = 5,
    initial_backoff = "10ms",
    jitter = "none",
    idempotent = false
)]
async fn place(channel: &Channel, id: u32) -> Result<Receipt, Status> {
    unary(channel, "/shop.Orders/Place", PlaceOrder { id }).await
}

#[tokio::test]
async fn unavailable_is_retried() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let (out, record) = testing::record(instant(), get(&server.channel(), 1)).await;
    assert_eq!(out.unwrap().name, "item 1");
    assert_eq!(server.executed("Get", 1), 3);
    assert_eq!(classes(&record), [ErrorClass::Transient; 2]);
}

#[tokio::test]
async fn an_order_is_not_placed_again_after_unavailable() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable]);
    let (out, record) = testing::record(instant(), place(&server.channel(), 1)).await;
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(server.executed("Place", 1), 1);
    assert_eq!(server.arrivals().len(), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
}

#[tokio::test]
async fn resource_exhausted_waits_the_pushback_and_retries_even_an_order() {
    let server = Server::start().await;
    server.script(&[
        Fault::Exhausted(Some("250")),
        Fault::Exhausted(Some("1200")),
        Fault::Exhausted(None),
    ]);
    let (out, record) = testing::record(instant(), place(&server.channel(), 2)).await;
    assert_eq!(out.unwrap().id, 2);
    assert_eq!(server.arrivals().len(), 4);
    assert_eq!(server.executed("Place", 2), 1);
    assert_eq!(classes(&record), [ErrorClass::Throttling; 3]);
    // The pushbacks, then the computed backoff (10 ms doubling, third retry: 40 ms).
    assert_eq!(record.delays(), [250, 1200, 40].map(Duration::from_millis));
}

#[tokio::test]
async fn a_negative_pushback_means_do_not_retry() {
    let server = Server::start().await;
    server.script(&[Fault::Exhausted(Some("-1"))]);
    let (out, record) = testing::record(instant(), get(&server.channel(), 3)).await;
    let status = out.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(status.classify(), ErrorClass::Permanent);
    assert_eq!(server.arrivals().len(), 1);
    assert!(record.retries().is_empty());
}

#[tokio::test]
async fn a_malformed_pushback_is_ignored() {
    let server = Server::start().await;
    server.script(&[
        Fault::Exhausted(Some("soon")),
        Fault::Exhausted(Some("1.5")),
    ]);
    let (out, record) = testing::record(instant(), get(&server.channel(), 4)).await;
    assert_eq!(out.unwrap().id, 4);
    assert_eq!(record.delays(), [10, 20].map(Duration::from_millis));
    assert_eq!(classes(&record), [ErrorClass::Throttling; 2]);
}

#[tokio::test]
async fn gets_get_through_30_percent_faults_and_orders_execute_at_most_once() {
    let server = Server::start().await;
    let faults = [
        Fault::Unavailable,
        Fault::Exhausted(Some("10")),
        Fault::Exhausted(None),
    ];
    server.random_faults(5, 0.3, &faults);
    let channel = server.channel();
    let mut through = 0;
    for id in 0..200 {
        let (out, record) = testing::record(instant(), get(&channel, id)).await;
        // The server saw every attempt; all but a successful last one were faults.
        let seen: Vec<Fault> = server
            .arrivals()
            .iter()
            .filter(|a| a.method == "Get" && a.id == id)
            .map(|a| a.fault)
            .collect();
        assert_eq!(seen.len(), record.attempts("get") as usize);
        let (last, before) = seen.split_last().unwrap();
        assert!(before.iter().all(|f| *f != Fault::None));
        match out {
            Ok(item) => {
                assert_eq!((item.id, *last), (id, Fault::None));
                through += 1;
            }
            // Only a call whose five attempts all met a fault fails.
            Err(_) => assert_eq!((seen.len(), *last == Fault::None), (5, false)),
        }
    }
    assert!(through >= 195, "{through} of 200 got through");
    let (mut ok, mut failed) = (0, 0);
    for id in 0..200 {
        let (out, record) = testing::record(instant(), place(&channel, id)).await;
        let executed = server.executed("Place", id);
        assert!(executed <= 1, "order {id} placed {executed} times");
        match out {
            Ok(receipt) => {
                assert_eq!((receipt.id, executed), (id, 1));
                ok += 1;
            }
            Err(status) if status.code() == Code::Unavailable => {
                assert_eq!(executed, 1);
                assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
                failed += 1;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted);
                assert_eq!(executed, 0);
                failed += 1;
            }
        }
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
    server.assert_each_injected(&faults);
}

#[tokio::test]
async fn calls_slower_than_the_attempt_timeout() {
    // The first attempt (the one the server never answers) has 1 s, the second 5 s.
    #[retry(
        max_attempts = 3,
        initial_backoff = "10ms",
        attempt_timeout = "1s",
        attempt_timeout_multiplier = 5,
        max_attempt_timeout = "5s"
    )]
    async fn get(channel: &Channel, id: u32) -> Result<Item, Status> {
        unary(channel, "/shop.Orders/Get", GetItem { id }).await
    }
    #[retry(
        max_attempts = 3,
        initial_backoff = "10ms",
        attempt_timeout = "1s",
        attempt_timeout_multiplier = 5,
        max_attempt_timeout = "5s",
        idempotent = false
    )]
    async fn place(channel: &Channel, id: u32) -> Result<Receipt, Status> {
        unary(channel, "/shop.Orders/Place", PlaceOrder { id }).await
    }

    let server = Server::start().await;
    let channel = server.channel();
    server.script(&[Fault::Hang]);
    let (out, record) = testing::record(instant(), get(&channel, 5)).await;
    assert_eq!(out.unwrap().id, 5);
    assert_eq!(classes(&record), [ErrorClass::Timeout]);
    assert_eq!(server.executed("Get", 5), 2);

    server.script(&[Fault::Hang]);
    let (out, record) = testing::record(instant(), place(&channel, 5)).await;
    let status = out.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(status.classify(), ErrorClass::Timeout);
    assert_eq!(server.executed("Place", 5), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
}

/// A refused connection never carried the call: `NotSent`, retried even for an order.
#[tokio::test]
async fn a_refused_connection_is_not_sent() {
    let channel = channel_to(refused_addr());
    let (out, record) = testing::record(instant(), place(&channel, 6)).await;
    let status = out.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(status.classify(), ErrorClass::NotSent);
    assert_eq!(classes(&record), [ErrorClass::NotSent; 4]);
}
