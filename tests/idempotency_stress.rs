//! Idempotency keys under faults: 10,000 keyed `POST`s of a function that is not idempotent
//! (`idempotent = false, idempotency_key = true`), 32 at a time with instant retries, against
//! a loopback server that deduplicates by key (`keyed_server`) and resets connections before
//! and after it commits. Every call that returns `Ok` got the answer of its request's one
//! execution; no request is executed twice; no call is lost. It prints how long the calls
//! took. And 10,000 more whose body forgets to write the key: none is sent twice.
//!
//! Its own binary: its calls keep both cores busy for seconds, which beside the `integration`
//! binary's real-time tests would eat their timing. `RETRY_DEDUP_CALLS` changes the number of
//! calls (10,000 by default).

mod keyed_server;
#[path = "util/resettable.rs"]
mod resettable;

use keyed_server::{Action, KeyedServer};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::testing::{self, Overrides};
use retry_runtime::wire::WithAttempt;
use retry_runtime::{attempt, retry};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A reqwest client that talks to loopback directly, whatever proxy the environment names.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The dedup test's function: a `POST` that is not idempotent, made safe by its key. No retry
/// bucket: a bucket ends retries under a long run of failures, which is its purpose, and this
/// test is about what the key guarantees.
#[retry(
    max_attempts = 16,
    initial_backoff = "1ms",
    jitter = "none",
    idempotent = false,
    idempotency_key = true,
    bucket = "none"
)]
async fn place(client: &reqwest::Client, url: &str, payload: &str) -> Result<String, Error> {
    let request = client.post(url).body(payload.to_owned()).with_attempt();
    let response = error_for_status(request.send().await?)?;
    let text = response.text().await?;
    let id = attempt().expect("inside the body").invocation_id();
    Ok(format!("{id} {text}"))
}

/// How many calls the dedup test makes: `RETRY_DEDUP_CALLS`, else 10,000.
fn dedup_calls() -> usize {
    std::env::var("RETRY_DEDUP_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// Runs `calls` orders, 32 at a time, each `order(client, url, payload, i)` for order `i` of
/// `server` (its own path and payload), and returns each order's index and outcome, within 10
/// minutes.
async fn each_order<F, Fut, T>(calls: usize, server: &Arc<KeyedServer>, order: F) -> Vec<(usize, T)>
where
    F: Fn(reqwest::Client, String, String, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = T> + Send,
    T: Send + 'static,
{
    let client = client();
    let limit = Arc::new(tokio::sync::Semaphore::new(32));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..calls {
        let (client, server, limit, order) =
            (client.clone(), server.clone(), limit.clone(), order.clone());
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await.unwrap();
            let url = server.url(&format!("/orders/{i}"));
            let payload = format!("{{\"order\":{i}}}");
            (i, order(client, url, payload, i).await)
        });
    }
    let mut outcomes = Vec::with_capacity(calls);
    let all = async {
        while let Some(done) = tasks.join_next().await {
            outcomes.push(done.unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(600), all)
        .await
        .expect("10,000 calls within 10 minutes");
    outcomes
}

/// 10,000 keyed `POST`s (32 at a time, instant retries) against a server that deduplicates by
/// key and, drawn from a seeded plan for each request (5% each): resets the connection before
/// executing; executes and stores the answer, then resets (the client never learns it ran);
/// starts executing and resets, then answers the next one or two requests with the key 409
/// while it finishes. Every call that returns `Ok` got the answer of its request's one
/// execution; no request is executed twice; no call is lost.
///
/// Losing a call takes all 16 of its attempts failing. An attempt fails when its draw is one of
/// the faults (probability 0.15), or when it is one of the at most two 409s of a reset while
/// processing (a key is new once per call): at least 14 of the call's 16 draws would have to be
/// faults, P(Binomial(16, 0.15) >= 14) = 2.6e-10 per call, 2.6e-6 for 10,000 calls. The draws
/// are seeded (by the call's path and the request's rank), so the run is the same every time
/// (save for a failure the plan does not draw, a pooled connection found closed as a request
/// is written, which is retried as any other): the test asserts that no call was lost, and
/// prints the counts and how long the calls took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_keyed_calls_through_resets_each_execute_once() {
    let calls = dedup_calls();
    let server = Arc::new(KeyedServer::start().await);
    server.stop_recording();
    server.plan(
        0x1de4_9073,
        &[
            (0.05, Action::ResetBefore),
            (0.05, Action::ResetAfter),
            (0.025, Action::ResetWhileProcessing(1)),
            (0.025, Action::ResetWhileProcessing(2)),
        ],
    );
    let started = Instant::now();
    let outcomes = each_order(calls, &server, |client, url, payload, _| async move {
        let (out, record) =
            testing::record(Overrides::new().instant(), place(&client, &url, &payload)).await;
        (out, record.attempts("place"))
    })
    .await;
    let elapsed = started.elapsed();

    let executed = server.executed_by_path();
    let by_key = server.executed_by_key();
    let mut lost = Vec::new();
    let mut attempts: BTreeMap<u32, usize> = BTreeMap::new();
    let mut ids = HashSet::new();
    for (i, (out, n)) in &outcomes {
        *attempts.entry(*n).or_default() += 1;
        let path = format!("/orders/{i}");
        let runs = executed.get(&path).copied().unwrap_or(0);
        match out {
            Ok(text) => {
                let (id, answer) = text.split_once(' ').unwrap();
                assert_eq!(runs, 1, "{path}: executed {runs} times");
                assert!(
                    answer.starts_with(&format!("{path} executed as #")),
                    "{text}"
                );
                assert_eq!(by_key.get(id), Some(&1), "{path}: its key {id}");
                assert!(ids.insert(id.to_owned()), "{id} twice");
            }
            Err(e) => {
                assert!(runs <= 1, "{path}: executed {runs} times");
                lost.push((path, e.to_string()));
            }
        }
    }
    assert_eq!(outcomes.len(), calls);
    assert!(by_key.values().all(|&n| n == 1), "a key executed twice");
    assert_eq!(
        by_key.len(),
        executed.len(),
        "every request came with its key"
    );

    let actions = server.actions();
    let (conflicts, mismatches) = server.conflicts();
    let retried = outcomes.iter().filter(|(_, (_, n))| *n > 1).count();
    let requests: u64 = server.seen().values().sum();
    println!(
        "{calls} keyed calls in {elapsed:.2?} ({:.1} us per call): {requests} requests, \
         attempts per call {attempts:?}, {retried} calls retried, {conflicts} answered 409, \
         actions {actions:?}, {} lost",
        elapsed.as_secs_f64() * 1e6 / calls as f64,
        lost.len(),
    );
    assert_eq!(mismatches, 0);
    assert!(lost.is_empty(), "{lost:?}");
    if calls >= 1000 {
        for action in [
            Action::ResetBefore,
            Action::ResetAfter,
            Action::ResetWhileProcessing(1),
            Action::ResetWhileProcessing(2),
        ] {
            assert!(actions.get(&action).is_some_and(|&n| n > 0), "{action:?}");
        }
        assert!(conflicts > 0 && retried > 0);
    }
}

/// The same `POST`, whose body forgets to write its key (no `with_attempt`): its requests carry
/// none, so they are retried only as a function that is not idempotent is (after failures that
/// prove the request was not acted on), never after one that may have reached the server.
#[retry(
    max_attempts = 16,
    initial_backoff = "1ms",
    jitter = "none",
    idempotent = false,
    idempotency_key = true,
    bucket = "none"
)]
async fn place_forgetting_the_key(
    client: &reqwest::Client,
    url: &str,
    payload: &str,
) -> Result<String, Error> {
    post_without_key(client, url, payload).await
}

/// One attempt of the functions around it: a `POST` with no `with_attempt`, so no key.
async fn post_without_key(
    client: &reqwest::Client,
    url: &str,
    payload: &str,
) -> Result<String, Error> {
    let request = client.post(url).body(payload.to_owned());
    Ok(error_for_status(request.send().await?)?.text().await?)
}

/// As above, without `idempotent = false`: a function that sends idempotency keys is not
/// idempotent without them unless it says so.
#[retry(
    max_attempts = 16,
    initial_backoff = "1ms",
    jitter = "none",
    idempotency_key = true,
    bucket = "none"
)]
async fn place_forgetting_the_key_by_default(
    client: &reqwest::Client,
    url: &str,
    payload: &str,
) -> Result<String, Error> {
    post_without_key(client, url, payload).await
}

/// 10,000 keyed `POST`s whose bodies forget the key (half through each function above), 32 at
/// a time with instant retries, against the same server failing 5 % of the requests after they
/// may have been acted on (2.5 % answered `503`, 2.5 % executed and then the connection reset):
/// every request is sent once. None is retried without its key, so none is executed twice,
/// and the calls that met a failure return it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_that_forget_the_key_are_each_sent_once() {
    let calls = dedup_calls();
    let server = Arc::new(KeyedServer::start().await);
    server.stop_recording();
    server.plan(
        0x0f0_4ea7,
        &[(0.025, Action::Status(503)), (0.025, Action::ResetAfter)],
    );
    let outcomes = each_order(calls, &server, |client, url, payload, i| async move {
        let call = async {
            if i % 2 == 0 {
                place_forgetting_the_key(&client, &url, &payload).await
            } else {
                place_forgetting_the_key_by_default(&client, &url, &payload).await
            }
        };
        let (out, record) = testing::record(Overrides::new().instant(), call).await;
        (out.is_ok(), record.retries().len() + 1)
    })
    .await;

    let seen = server.seen();
    let executed = server.executed_by_path();
    let failed = outcomes.iter().filter(|(_, (ok, _))| !ok).count();
    for (i, (ok, attempts)) in &outcomes {
        let path = format!("/orders/{i}");
        assert_eq!(seen.get(&path), Some(&1), "{path}: sent more than once");
        assert_eq!(*attempts, 1, "{path}");
        assert!(executed.get(&path).copied().unwrap_or(0) <= 1, "{path}");
        if *ok {
            assert_eq!(executed.get(&path), Some(&1), "{path}");
        }
    }
    assert_eq!(outcomes.len(), calls);
    let requests: u64 = seen.values().sum();
    println!(
        "{calls} calls forgetting their key: {requests} requests, {failed} calls returned the \
         failure they met"
    );
    assert_eq!(requests, calls as u64);
    if calls >= 1000 {
        // The plan's 5 %: the failures were met, and returned rather than retried.
        assert!(failed > calls / 40 && failed < calls / 10, "{failed}");
    }
}
