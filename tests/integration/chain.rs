//! A call graph on 127.0.0.1: a user's `#[retry]` client calls service A, whose handler calls
//! B, whose handler calls the leaf C; A and B are axum services behind `ServerLayer`, and each
//! hop is the README's code: a `#[retry(max_attempts = 3)]` reqwest call that writes its attempt
//! into the request (`with_attempt`) and checks the answer with `error_for_status`, in a
//! handler that answers 503 when its call fails. No header is written by hand.
//!
//! What is checked, each against real sockets and the real clock:
//! - the leaf down: it receives 3 requests per user call (the hop next to it retries; the hops
//!   above are told not to), where the same code without the layer sends 27;
//! - the leaf flaky: every user call succeeds, recovered by the hop next to the leaf, once;
//! - a 400 ms deadline at the user reaches C as at most what is left of it, and nothing reaches
//!   C after it.
//!
//! Counts of requests do not depend on the machine's speed; the deadline's checks have slack
//! for a loaded machine, far below what a wrong answer would give.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::retry;
use retry_runtime::tower::ServerLayer;
use retry_runtime::wire::WithAttempt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// What the leaf does with each request.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Leaf {
    /// 503, always.
    Down,
    /// 503 for every other request (the first, the third, ...), else 200.
    Flaky,
    /// Answers after a second.
    Slow,
}

/// The leaf C: what it does, and what it saw of each request (when, and the time its caller
/// gave it).
struct C {
    leaf: Leaf,
    requests: AtomicU32,
    seen: Mutex<Vec<(Instant, Option<u64>)>>,
}

async fn leaf(State(c): State<Arc<C>>, headers: HeaderMap) -> Response {
    let n = c.requests.fetch_add(1, Ordering::SeqCst);
    let given = headers
        .get("x-envoy-expected-rq-timeout-ms")
        .map(|v| v.to_str().unwrap().parse().unwrap());
    c.seen.lock().unwrap().push((Instant::now(), given));
    match c.leaf {
        Leaf::Down => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Leaf::Flaky if n % 2 == 0 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Leaf::Flaky => "leaf".into_response(),
        Leaf::Slow => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            "leaf".into_response()
        }
    }
}

/// Starts a server on 127.0.0.1 for `router`; returns its URL.
async fn start(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, router).into_future());
    url
}

/// A service's own state: its HTTP client, the next hop's URL, and the requests it received.
struct Service {
    client: reqwest::Client,
    next: String,
    requests: AtomicU32,
}

/// Defines a hop: a `#[retry]` function calling the next service, as a service's code calls
/// it, and the axum handler that uses it. One per service (each service is a process of its
/// own, with its own bucket).
macro_rules! hop {
    ($call:ident, $handler:ident) => {
        #[retry(max_attempts = 3, initial_backoff = "10ms")]
        async fn $call(client: &reqwest::Client, url: &str) -> Result<String, Error> {
            let response = error_for_status(client.get(url).with_attempt().send().await?)?;
            Ok(response.text().await?)
        }

        async fn $handler(State(s): State<Arc<Service>>) -> Response {
            s.requests.fetch_add(1, Ordering::SeqCst);
            match $call(&s.client, &s.next).await {
                Ok(text) => text.into_response(),
                Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
            }
        }
    };
}

/// The user's client (shared by the tests: its calls cost its bucket at most 20 tokens).
#[retry(max_attempts = 3, initial_backoff = "10ms")]
async fn user(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

/// The user's client with a deadline.
#[retry(max_attempts = 3, initial_backoff = "10ms", deadline = "400ms")]
async fn user_in_time(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).with_attempt().send().await?)?;
    Ok(response.text().await?)
}

/// A chain of three services, each with its hops' functions, its leaf, and whether its
/// services run behind the layer.
macro_rules! chain {
    ($name:ident) => {
        mod $name {
            use super::*;

            hop!(a_calls_b, a);
            hop!(b_calls_c, b);

            /// Starts C, then B and A (behind the layer if `layered`); returns A's URL and
            /// the three's state.
            pub async fn start_chain(
                leaf_does: Leaf,
                layered: bool,
            ) -> (String, Arc<Service>, Arc<Service>, Arc<C>) {
                let c = Arc::new(C {
                    leaf: leaf_does,
                    requests: AtomicU32::new(0),
                    seen: Mutex::new(Vec::new()),
                });
                let c_url = start(Router::new().route("/", get(leaf)).with_state(c.clone())).await;
                let service = |next: String| {
                    Arc::new(Service {
                        client: crate::http_server::client(),
                        next,
                        requests: AtomicU32::new(0),
                    })
                };
                let layer = |router: Router| {
                    if layered {
                        router.layer(ServerLayer::new())
                    } else {
                        router
                    }
                };
                let b_state = service(c_url);
                let b_url = start(layer(
                    Router::new().route("/", get(b)).with_state(b_state.clone()),
                ))
                .await;
                let a_state = service(b_url);
                let a_url = start(layer(
                    Router::new().route("/", get(a)).with_state(a_state.clone()),
                ))
                .await;
                (a_url, a_state, b_state, c)
            }
        }
    };
}

chain!(down_layered);
chain!(down_bare);
chain!(flaky_layered);
chain!(in_time);

/// User calls made in each of the counting tests.
const CALLS: u32 = 10;

#[tokio::test]
async fn with_the_leaf_down_it_receives_three_requests_per_user_call() {
    let (a, a_state, b_state, c) = down_layered::start_chain(Leaf::Down, true).await;
    let client = crate::http_server::client();
    for _ in 0..CALLS {
        let out = user(&client, &a).await;
        let Err(Error::Status(r)) = out else {
            panic!("the leaf is down: {out:?}")
        };
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers["x-should-retry"], "false");
    }
    // B retried its call to C; A and the user were told not to retry.
    assert_eq!(c.requests.load(Ordering::SeqCst), 3 * CALLS);
    assert_eq!(b_state.requests.load(Ordering::SeqCst), CALLS);
    assert_eq!(a_state.requests.load(Ordering::SeqCst), CALLS);
}

#[tokio::test]
async fn without_the_layer_the_same_chain_sends_27_requests_per_user_call() {
    let (a, a_state, b_state, c) = down_bare::start_chain(Leaf::Down, false).await;
    let client = crate::http_server::client();
    // Two calls: each takes 90 tokens of B's bucket, which holds 500.
    for _ in 0..2 {
        assert!(user(&client, &a).await.is_err());
    }
    assert_eq!(c.requests.load(Ordering::SeqCst), 27 * 2);
    assert_eq!(b_state.requests.load(Ordering::SeqCst), 9 * 2);
    assert_eq!(a_state.requests.load(Ordering::SeqCst), 3 * 2);
}

#[tokio::test]
async fn with_the_leaf_flaky_the_hop_next_to_it_recovers_every_call() {
    let (a, a_state, b_state, c) = flaky_layered::start_chain(Leaf::Flaky, true).await;
    let client = crate::http_server::client();
    for _ in 0..CALLS {
        assert_eq!(user(&client, &a).await.unwrap(), "leaf");
    }
    // Every other request to C fails: B's call retries it once, and nobody above retries.
    assert_eq!(c.requests.load(Ordering::SeqCst), 2 * CALLS);
    assert_eq!(b_state.requests.load(Ordering::SeqCst), CALLS);
    assert_eq!(a_state.requests.load(Ordering::SeqCst), CALLS);
}

/// How late after the user's deadline a request may still reach C: a hop's header carries a
/// duration, read when the request arrives, after its sender wrote it.
const LATE: Duration = Duration::from_millis(50);

#[tokio::test]
async fn a_deadline_at_the_user_reaches_the_leaf_with_no_header_written_by_hand() {
    let (a, _, _, c) = in_time::start_chain(Leaf::Slow, true).await;
    let client = crate::http_server::client();
    let t0 = Instant::now();
    let out = user_in_time(&client, &a).await;
    let ended = t0.elapsed();
    assert!(out.is_err(), "the leaf answers after a second: {out:?}");
    assert!(
        ended <= MS(400) + LATE,
        "the user's call ended at {ended:?}"
    );
    // Time for anything still running to show.
    tokio::time::sleep(MS(600)).await;
    let seen = c.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for (at, given) in &seen {
        let spent = at.duration_since(t0);
        assert!(spent <= MS(400) + LATE, "C got a request at {spent:?}");
        // What C was given is what the user had left, less the time the hops took: at most
        // 400 ms less the time spent before C read it, give or take the last hop's transit.
        let given = MS(given.expect("every hop writes its attempt's time left"));
        assert!(
            given <= MS(400).saturating_sub(spent) + MS(25),
            "C was given {given:?} at {spent:?}"
        );
    }
}

/// The same over gRPC: a tonic server behind `ServerLayer` (`Server::builder().layer(...)`)
/// whose `Get` calls a leaf that fails with `UNAVAILABLE`, through a `#[retry]` tonic call that
/// gives up; the user's `#[retry]` tonic call is told not to retry by the negative
/// `grpc-retry-pushback-ms` the layer adds, and makes one attempt.
mod grpc {
    use crate::grpc_server::{self, Fault, GetItem, Item, unary, unary_request};
    use retry_runtime::tower::ServerLayer;
    use retry_runtime::wire::WithAttempt;
    use retry_runtime::{Classify, ErrorClass, retry};
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll};
    use tokio::net::TcpListener;
    use tokio_stream::wrappers::TcpListenerStream;
    use tonic::body::Body;
    use tonic::codegen::{BoxFuture, Service};
    use tonic::transport::Channel;
    use tonic::{Code, Request, Response, Status};
    use tonic_prost::ProstCodec;

    /// The middle service's call to the leaf.
    #[retry(max_attempts = 3, initial_backoff = "10ms")]
    async fn get_from_leaf(leaf: &Channel, id: u32) -> Result<Item, Status> {
        let request = Request::new(GetItem { id }).with_attempt();
        unary_request(leaf, "/shop.Orders/Get", request).await
    }

    /// The user's call to the middle service.
    #[retry(max_attempts = 3, initial_backoff = "10ms")]
    async fn get(middle: &Channel, id: u32) -> Result<Item, Status> {
        unary(middle, "/shop.Orders/Get", GetItem { id }).await
    }

    /// The middle service: `shop.Orders/Get` asks the leaf.
    #[derive(Clone)]
    struct Middle {
        leaf: Channel,
        calls: Arc<AtomicU32>,
    }

    impl Service<http::Request<Body>> for Middle {
        type Response = http::Response<Body>;
        type Error = Infallible;
        type Future = BoxFuture<Self::Response, Infallible>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: http::Request<Body>) -> Self::Future {
            let this = self.clone();
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(ProstCodec::<Item, GetItem>::default());
                Ok(grpc.unary(Get(this), req).await)
            })
        }
    }

    struct Get(Middle);

    impl Service<Request<GetItem>> for Get {
        type Response = Response<Item>;
        type Error = Status;
        type Future = BoxFuture<Response<Item>, Status>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request<GetItem>) -> Self::Future {
            let middle = self.0.clone();
            Box::pin(async move {
                middle.calls.fetch_add(1, Ordering::SeqCst);
                match get_from_leaf(&middle.leaf, req.get_ref().id).await {
                    Ok(item) => Ok(Response::new(item)),
                    Err(status) => Err(Status::unavailable(format!("leaf: {}", status.message()))),
                }
            })
        }
    }

    #[tokio::test]
    async fn a_negative_pushback_through_tonic_stops_the_callers_retries() {
        let leaf = grpc_server::Server::start().await;
        leaf.random_faults(3, 1.0, &[Fault::Unavailable]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(AtomicU32::new(0));
        let middle = Middle {
            leaf: leaf.channel(),
            calls: calls.clone(),
        };
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .layer(ServerLayer::new())
                .serve_with_incoming(middle, TcpListenerStream::new(listener))
                .await;
        });
        let status = get(&grpc_server::channel_to(addr), 5).await.unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "-1"
        );
        assert_eq!(status.classify(), ErrorClass::Permanent);
        // The middle retried the leaf; the user did not retry the middle.
        assert_eq!(leaf.arrivals().len(), 3);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        server.abort();
    }
}
