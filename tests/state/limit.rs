//! `AdaptiveConcurrency` against a queueing server on tokio's paused clock, through `#[retry]`
//! and a `Policy`: 64 callers that each call again as soon as their call ends (or 5 ms after a
//! refusal), against a server that serves 8 requests at once in 10 ms each and queues the rest
//! first come first served. Without a limit 56 wait in its queue and each call takes 80 ms; the
//! limit holds the attempts in flight near the 8 the server serves, and the server busy.

use crate::util::TestError;
use retry_runtime::{AdaptiveConcurrency, Policy, retry};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::{Instant, sleep};

const SERVED_AT_ONCE: usize = 8;
const SERVICE: Duration = Duration::from_millis(10);
const CALLERS: usize = 64;
const RUN: Duration = Duration::from_secs(20);

/// A server of `SERVED_AT_ONCE` workers and a FIFO queue (or as many workers as callers: a
/// latency that stays flat), counting what it served.
struct Server {
    workers: Semaphore,
    served: AtomicU64,
}

impl Server {
    fn new(workers: usize) -> Arc<Server> {
        Arc::new(Server {
            workers: Semaphore::new(workers),
            served: AtomicU64::new(0),
        })
    }

    async fn serve(&self) -> Result<u32, TestError> {
        let _worker = self.workers.acquire().await.expect("never closed");
        sleep(SERVICE).await;
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(1)
    }
}

/// What the callers saw over the last half of the run.
#[derive(Debug, Default)]
struct Seen {
    served: u64,
    refused: u64,
    /// Latency of calls, total and count, in the last half.
    latency_ms: u64,
    calls: u64,
    /// The limit, sampled every 10 ms in the last half: its lowest and highest.
    limits: (u32, u32),
}

/// Runs `CALLERS` callers of `call` for `RUN`, with `limit` the guard the call names.
async fn drive<F, Fut>(server: Arc<Server>, limit: &'static AdaptiveConcurrency, call: F) -> Seen
where
    F: Fn(Arc<Server>) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Result<u32, TestError>> + 'static,
{
    let t0 = Instant::now();
    let half = t0 + RUN / 2;
    let refused = Arc::new(AtomicU64::new(0));
    let latency = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let local = tokio::task::LocalSet::new();
    for _ in 0..CALLERS {
        let (server, call, refused, latency) = (
            server.clone(),
            call.clone(),
            refused.clone(),
            latency.clone(),
        );
        local.spawn_local(async move {
            while t0.elapsed() < RUN {
                let started = Instant::now();
                match call(server.clone()).await {
                    Ok(_) if started >= half => {
                        latency
                            .0
                            .fetch_add(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                        latency.1.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(TestError::Refused(r)) => {
                        assert_eq!(r.by(), "adaptive_concurrency");
                        if started >= half {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        sleep(Duration::from_millis(5)).await;
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
        });
    }
    let sampler = local.spawn_local(async move {
        let mut limits = (u32::MAX, 0);
        sleep(RUN / 2).await;
        while t0.elapsed() < RUN {
            let l = limit.limit();
            limits = (limits.0.min(l), limits.1.max(l));
            sleep(Duration::from_millis(10)).await;
        }
        limits
    });
    let served_at_half = {
        let server = server.clone();
        local.spawn_local(async move {
            sleep(RUN / 2).await;
            server.served.load(Ordering::Relaxed)
        })
    };
    local.await;
    let limits = sampler.await.unwrap();
    let at_half = served_at_half.await.unwrap();
    assert_eq!(limit.in_flight(), 0, "every admission settled");
    Seen {
        served: server.served.load(Ordering::Relaxed) - at_half,
        refused: refused.load(Ordering::Relaxed),
        latency_ms: latency.0.load(Ordering::Relaxed),
        calls: latency.1.load(Ordering::Relaxed),
        limits,
    }
}

/// Near capacity: the server busy (at least 90 % of what 8 workers serve in the last 10 s),
/// the mean call at most twice the service time, the limit near the 8 served at once.
fn assert_held_near_capacity(seen: &Seen) {
    let capacity =
        (RUN / 2).as_millis() as u64 / SERVICE.as_millis() as u64 * SERVED_AT_ONCE as u64;
    assert!(
        seen.served * 10 >= capacity * 9,
        "{seen:?}: capacity {capacity}"
    );
    let mean = seen.latency_ms / seen.calls.max(1);
    assert!(
        mean <= 2 * SERVICE.as_millis() as u64,
        "{seen:?}: mean {mean} ms"
    );
    assert!(seen.limits.0 >= 2 && seen.limits.1 <= 24, "{seen:?}");
    assert!(
        seen.refused > 0,
        "the callers beyond the limit are refused: {seen:?}"
    );
}

static QUEUED: AdaptiveConcurrency = AdaptiveConcurrency::new();

#[retry(max_attempts = 1, guard = QUEUED)]
async fn queued(server: Arc<Server>) -> Result<u32, TestError> {
    server.serve().await
}

#[tokio::test(start_paused = true)]
async fn a_queueing_server_is_held_near_its_capacity_through_the_attribute() {
    let seen = drive(Server::new(SERVED_AT_ONCE), &QUEUED, queued).await;
    assert_held_near_capacity(&seen);
}

static BY_POLICY: AdaptiveConcurrency = AdaptiveConcurrency::new();
static POLICY: Policy<retry_runtime::Refused> = Policy::new().max_attempts(1).guard(&BY_POLICY);

#[tokio::test(start_paused = true)]
async fn a_queueing_server_is_held_near_its_capacity_through_a_policy() {
    let seen = drive(
        Server::new(SERVED_AT_ONCE),
        &BY_POLICY,
        |s: Arc<Server>| async move { POLICY.retry(|| s.serve()).await },
    )
    .await;
    assert_held_near_capacity(&seen);
}

static FLAT: AdaptiveConcurrency = AdaptiveConcurrency::new();

#[retry(max_attempts = 1, guard = FLAT)]
async fn flat(server: Arc<Server>) -> Result<u32, TestError> {
    server.serve().await
}

#[tokio::test(start_paused = true)]
async fn nothing_is_refused_while_latency_stays_flat() {
    let seen = drive(Server::new(CALLERS), &FLAT, flat).await;
    assert_eq!(seen.refused, 0, "{seen:?}");
    assert_eq!(
        seen.latency_ms,
        seen.calls * SERVICE.as_millis() as u64,
        "{seen:?}"
    );
    assert!(seen.limits.0 >= CALLERS as u32, "{seen:?}");
}
