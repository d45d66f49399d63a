//! The README's code, compiled and run: its first screen (a `#[retry]` function and the same
//! call through a `Policy` closure) and "Your error type" (an error enum deriving `Classify`)
//! against the loopback HTTP server, and "Without the attribute" (a `Policy` over an error type
//! of one's own) against a local async fn. Each README block is checked to be this file's
//! lines, in order, so the page shows what compiles here.
//!
//! The calls against the server run in `testing::record` with instant retries: the README's
//! backoffs are seconds long, and what is asserted is what the loop decided and what the server
//! executed. The others run on tokio's paused clock, whose backoffs and timeouts pass at once.

use retry_runtime::testing::{Overrides, record};

const README: &str = include_str!("../../README.md");
const THIS_FILE: &str = include_str!("readme.rs");

/// The lines of the first Rust block after `after` in the README.
fn block_after(after: &str) -> Vec<&'static str> {
    let start = README.find(after).expect("the text in README.md") + after.len();
    blocks(&README[start..]).swap_remove(0)
}

/// The lines of each Rust block of the README's section under `heading` (up to the next
/// heading).
fn blocks_in_section(heading: &str) -> Vec<Vec<&'static str>> {
    let start = README.find(heading).expect("the heading in README.md") + heading.len();
    let section = &README[start..];
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|next| section.find(next))
        .min()
        .unwrap_or(section.len());
    blocks(&section[..end])
}

/// The lines of each Rust block in `text`, in order.
fn blocks(mut text: &'static str) -> Vec<Vec<&'static str>> {
    let mut found = Vec::new();
    while let Some(open) = text.find("```rust\n") {
        let body = &text[open + 8..];
        let close = body.find("```").expect("the end of the block");
        found.push(body[..close].lines().collect());
        text = &body[close + 3..];
    }
    found
}

/// Whether every non-blank line of `block` is a line of this file (leading spaces aside), in
/// the block's order.
fn assert_is_this_files_code(block: &[&str]) {
    let mut ours = THIS_FILE.lines().map(str::trim);
    for line in block.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        assert!(
            ours.any(|l| l == line),
            "README.md's line {line:?} is not in tests/integration/readme.rs (in this order)"
        );
    }
}

#[test]
fn the_readme_shows_this_files_code() {
    let first_screen = block_after("# retry\n");
    assert!(first_screen.iter().any(|l| l.contains("#[retry(")));
    assert!(first_screen.iter().any(|l| l.contains("Policy::new()")));
    assert_is_this_files_code(&first_screen);
    let error_type = block_after("\n## Your error type\n");
    assert!(error_type.iter().any(|l| l.contains("derive(")));
    assert!(
        error_type
            .iter()
            .any(|l| l.contains("from(reqwest::Error, TimedOut)"))
    );
    assert!(!error_type.iter().any(|l| l.contains("impl From")));
    assert_is_this_files_code(&error_type);
    let guards = blocks_in_section("\n### Guards: protections of your own\n");
    assert_eq!(guards.len(), 1);
    assert!(guards[0].iter().any(|l| l.contains("guard = [")));
    assert_is_this_files_code(&guards[0]);
    let without = blocks_in_section("\n### Without the attribute\n");
    assert_eq!(without.len(), 3, "a call's classifier, timeouts, a static");
    assert!(without[0].iter().any(|l| l.contains(".classify(|e|")));
    assert!(without[1].iter().any(|l| l.contains("impl From<TimedOut>")));
    assert!(without[2].iter().any(|l| l.starts_with("static ")));
    for block in &without {
        assert_is_this_files_code(block);
    }
    let graph = blocks_in_section("\n### A call graph\n");
    assert_eq!(graph.len(), 1);
    assert!(graph[0].iter().any(|l| l.contains("ServerLayer::new()")));
    assert_is_this_files_code(&graph[0]);
}

/// The README's call graph: two services built as it shows, in front of a leaf that is down.
mod call_graph {
    use axum::Router;
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;
    use retry_runtime::reqwest::{Error, error_for_status};
    use retry_runtime::retry;
    use retry_runtime::tower::ServerLayer;
    use retry_runtime::wire::WithAttempt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Where a service's calls go.
    struct Next {
        client: reqwest::Client,
        url: String,
    }

    // A service's handler calls the next service, and answers 503 if that fails.
    async fn handler(State(next): State<Arc<Next>>) -> Response {
        match call_next(&next.client, &next.url).await {
            Ok(text) => text.into_response(),
            Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
        }
    }

    // Its call writes the attempt into the request: which attempt, and the time it has left.
    #[retry(max_attempts = 3)]
    async fn call_next(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.get(url).with_attempt().send().await?)?;
        Ok(response.text().await?)
    }

    /// A service as the README builds it, calling `url`; returns its own URL.
    async fn service(url: String) -> String {
        let next = Arc::new(Next {
            client: crate::http_server::client(),
            url,
        });
        let app = Router::new()
            .route("/", get(handler))
            .with_state(next)
            .layer(ServerLayer::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let own = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(axum::serve(listener, app).into_future());
        own
    }

    static LEAF: AtomicU32 = AtomicU32::new(0);

    /// A leaf that is down.
    async fn down() -> StatusCode {
        LEAF.fetch_add(1, Ordering::SeqCst);
        StatusCode::SERVICE_UNAVAILABLE
    }

    #[tokio::test]
    async fn a_dead_leaf_gets_three_requests_per_user_call() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let leaf = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(axum::serve(listener, Router::new().route("/", get(down))).into_future());
        // The user calls A, which calls B, which calls the leaf; each hop `call_next`.
        let a = service(service(leaf).await).await;
        let out = call_next(&crate::http_server::client(), &a).await;
        let Err(Error::Status(r)) = out else {
            panic!("the leaf is down: {out:?}")
        };
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        // B retried (its backoff, 1 s doubling with full jitter); A and the user did not.
        assert_eq!(LEAF.load(Ordering::SeqCst), 3);
    }
}

/// The README's first screen.
mod first_screen {
    use super::{Overrides, record};
    use crate::http_server::{Fault, Server, client};
    use retry_runtime::reqwest::{Error, error_for_status};
    use retry_runtime::{Policy, TimedOut, retry};
    use std::time::Duration;

    // The attribute: the body is one attempt; `?` and `return` end it, the loop decides what follows.
    #[retry(max_attempts = 4, attempt_timeout = "2s", deadline = "10s")]
    async fn get_page(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.get(url).send().await?)?;
        Ok(response.text().await?)
    }

    // The same call through a closure: the same keys on a `Policy` value, the same loop.
    static PAGES: Policy<TimedOut> = Policy::new()
        .max_attempts(4)
        .attempt_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(10));

    async fn get_page_through_a_closure(
        client: &reqwest::Client,
        url: &str,
    ) -> Result<String, Error> {
        let page = PAGES
            .retry(|| async {
                let response = error_for_status(client.get(url).send().await?)?;
                Ok::<_, Error>(response.text().await?)
            })
            .await?;
        Ok(page)
    }

    #[tokio::test]
    async fn the_attribute_and_the_closure_get_through_the_same_503s() {
        let server = Server::start().await;
        let client = client();

        server.script(&[Fault::Unavailable, Fault::UnavailableFor(1)]);
        let url = server.url("/items/1");
        let (page, decided) = record(Overrides::new().instant(), get_page(&client, &url)).await;
        assert_eq!(page.unwrap(), "GET /items/1");
        assert_eq!(server.executed("/items/1"), 3);
        assert_eq!(decided.retries().len(), 2);
        assert_eq!(decided.delays()[1], Duration::from_secs(1)); // the Retry-After

        server.script(&[Fault::Unavailable, Fault::UnavailableFor(1)]);
        let url = server.url("/items/2");
        let (page, decided) = record(
            Overrides::new().instant(),
            get_page_through_a_closure(&client, &url),
        )
        .await;
        assert_eq!(page.unwrap(), "GET /items/2");
        assert_eq!(server.executed("/items/2"), 3);
        assert_eq!(decided.retries().len(), 2);
        assert_eq!(decided.delays()[1], Duration::from_secs(1)); // the Retry-After
    }
}

/// The README's "Your error type".
mod error_type {
    use super::{Overrides, record};
    use crate::http_server::{Fault, Server, client};
    use retry_runtime::ErrorClass;
    use std::time::Duration;

    use retry_runtime::reqwest::error_for_status;
    use retry_runtime::{Classify, TimedOut, retry};

    #[derive(Debug, thiserror::Error, Classify)]
    #[classify(default = permanent)]
    enum ApiError {
        #[error(transparent)]
        // The response's class and its `Retry-After`; `?` on a plain `reqwest::Error`, and the
        // loop's timeouts, converted through the runtime's error.
        #[classify(delegate, from(reqwest::Error, TimedOut))]
        Http(#[from] retry_runtime::reqwest::Error),
        #[error("the queue is full")]
        #[classify(throttling)]
        QueueFull,
        #[error("the answer is not a count")]
        Parse(#[from] std::num::ParseIntError), // the default: permanent
    }

    #[retry(max_attempts = 4, attempt_timeout = "2s")]
    async fn count(client: &reqwest::Client, url: &str) -> Result<u64, ApiError> {
        let response = error_for_status(client.get(url).send().await?)?;
        Ok(response.text().await?.trim().parse()?)
    }

    #[tokio::test]
    async fn a_503s_hint_is_waited_and_an_answer_that_is_not_a_count_is_not_retried() {
        assert_eq!(ApiError::QueueFull.classify(), ErrorClass::Throttling);

        // The test server answers 200 with "GET /items/N", which is not a count.
        let server = Server::start().await;
        server.script(&[Fault::UnavailableFor(1)]);
        let url = server.url("/items/3");
        let (error, decided) = record(Overrides::new().instant(), count(&client(), &url)).await;
        let error = error.unwrap_err();
        assert!(matches!(error, ApiError::Parse(_)), "{error:?}");
        assert_eq!(error.classify(), ErrorClass::Permanent);
        assert_eq!(decided.delays(), [Duration::from_secs(1)]); // the Retry-After
        assert_eq!(server.executed("/items/3"), 2);
    }
}

/// The README's "Without the attribute": a `Policy` over an error type of one's own (a call's
/// classifier; then timeouts, which need `From<TimedOut>`; then a `static` policy with a
/// classifier of its own), each against a local async fn that answers what the test scripted.
/// On the paused clock, backoffs and timeouts pass at once, in order.
mod without_the_attribute {
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;

    thread_local! {
        /// What the local service answers next: a status (200 is a success), or `None` for an
        /// answer that never comes. (Each `#[tokio::test]` runs on a thread of its own.)
        static ANSWERS: RefCell<VecDeque<Option<u16>>> = const { RefCell::new(VecDeque::new()) };
        static CALLS: Cell<u32> = const { Cell::new(0) };
    }

    fn script(answers: &[Option<u16>]) {
        ANSWERS.with(|a| *a.borrow_mut() = answers.iter().copied().collect());
        CALLS.with(|c| c.set(0));
    }

    fn calls() -> u32 {
        CALLS.with(Cell::get)
    }

    /// The service behind each module's `fetch`: item `id`, or a failed status.
    async fn answer(id: u32) -> Result<String, u16> {
        CALLS.with(|c| c.set(c.get() + 1));
        let next = ANSWERS.with(|a| a.borrow_mut().pop_front().expect("a scripted answer"));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        match next {
            Some(200) => Ok(format!("item {id}")),
            Some(status) => Err(status),
            None => std::future::pending().await,
        }
    }

    /// The error type of one's own, with neither `Classify` nor `From<TimedOut>`.
    mod own_error_type {
        use super::{answer, calls, script};

        use retry_runtime::Policy;

        #[derive(Debug)]
        struct ApiError {
            status: u16,
        }

        async fn fetch(id: u32) -> Result<String, ApiError> {
            answer(id).await.map_err(|status| ApiError { status })
        }

        async fn get(id: u32) -> Result<String, ApiError> {
            let item = Policy::new()
                .max_attempts(4)
                .retry(|| fetch(id))
                .classify(|e| e.status >= 500) // `e: &ApiError`; `true` retries, as `Transient`
                .await?;
            Ok(item)
        }

        #[tokio::test(start_paused = true)]
        async fn the_calls_classifier_retries_5xx_and_returns_a_404() {
            script(&[Some(503), Some(502), Some(200)]);
            assert_eq!(get(7).await.unwrap(), "item 7");
            assert_eq!(calls(), 3);

            script(&[Some(404), Some(200)]);
            assert_eq!(get(7).await.unwrap_err().status, 404);
            assert_eq!(calls(), 1);
        }
    }

    /// The same with timeouts: the error type represents a timeout, which `deadline` asks of
    /// it where it is called, after `classify`, or where `classify` is called, after it.
    mod with_timeouts {
        use super::{answer, calls, script};
        use tokio::time::Instant;

        #[derive(Debug)]
        struct ApiError {
            status: u16,
        }

        async fn fetch(id: u32) -> Result<String, ApiError> {
            answer(id).await.map_err(|status| ApiError { status })
        }

        use retry_runtime::{Policy, TimedOut};
        use std::time::Duration;

        impl From<TimedOut> for ApiError {
            fn from(_: TimedOut) -> Self {
                ApiError { status: 504 }
            }
        }

        async fn get(id: u32) -> Result<String, ApiError> {
            let item = Policy::new()
                .max_attempts(4)
                .attempt_timeout(Duration::from_secs(2))
                .deadline(Duration::from_secs(10))
                .retry(|| fetch(id))
                .classify(|e| e.status >= 500)
                .await?;
            Ok(item)
        }

        #[tokio::test(start_paused = true)]
        async fn an_attempt_that_hangs_is_cut_off_and_retried_within_the_deadline() {
            script(&[None, Some(200)]);
            let start = Instant::now();
            assert_eq!(get(7).await.unwrap(), "item 7");
            assert_eq!(calls(), 2);
            // The attempt timeout, a backoff of at most a second, the second attempt.
            let took = start.elapsed();
            assert!(took >= Duration::from_secs(2), "{took:?}");
            assert!(took < Duration::from_secs(4), "{took:?}");

            script(&[None, None, None, None]);
            // Every attempt hangs: the deadline ends the call with its own error.
            let start = Instant::now();
            assert_eq!(get(7).await.unwrap_err().status, 504);
            assert!(calls() >= 2, "{}", calls());
            let took = start.elapsed();
            assert!(took <= Duration::from_secs(10), "{took:?}");
        }
    }

    /// A `static` policy, with timeouts and a classifier of its own.
    mod a_static {
        use super::{answer, calls, script};
        use retry_runtime::TimedOut;

        #[derive(Debug)]
        struct ApiError {
            status: u16,
        }

        impl From<TimedOut> for ApiError {
            fn from(_: TimedOut) -> Self {
                ApiError { status: 504 }
            }
        }

        async fn fetch(id: u32) -> Result<String, ApiError> {
            answer(id).await.map_err(|status| ApiError { status })
        }

        use retry_runtime::Policy;
        use std::time::Duration;

        static STOCK: Policy<fn(&ApiError) -> bool> = Policy::new()
            .max_attempts(4)
            .initial_backoff(Duration::from_millis(50))
            .deadline(Duration::from_secs(5))
            .partition("inventory")
            .classify(|e| e.status >= 500);

        async fn get(id: u32) -> Result<String, ApiError> {
            let item = STOCK.retry(|| fetch(id)).await?;
            Ok(item)
        }

        #[tokio::test(start_paused = true)]
        async fn the_static_policys_classifier_retries_5xx_and_returns_a_404() {
            script(&[Some(503), Some(200)]);
            assert_eq!(get(42).await.unwrap(), "item 42");
            assert_eq!(calls(), 2);

            script(&[Some(404), Some(200)]);
            assert_eq!(get(42).await.unwrap_err().status, 404);
            assert_eq!(calls(), 1);
        }
    }
}

/// The README's "Guards: protections of your own".
mod guards {
    mod store {
        use std::sync::atomic::{AtomicU32, Ordering};

        pub static CALLS: AtomicU32 = AtomicU32::new(0);

        /// Fails its second call with a reset connection, and answers the others.
        pub async fn get(key: &str) -> Result<String, std::io::Error> {
            if CALLS.fetch_add(1, Ordering::Relaxed) == 1 {
                return Err(std::io::ErrorKind::ConnectionReset.into());
            }
            Ok(format!("object {key}"))
        }
    }

    use retry_runtime::{AdaptiveThrottle, Bulkhead, ConcurrencyBudget, Quota, retry};
    use std::time::Duration;

    // At most 64 attempts in flight; one more waits up to 50 ms for a place.
    static POOL: Bulkhead = Bulkhead::new(64).with_max_wait(Duration::from_millis(50));
    // Envoy's retry budget: retries in flight (sleeping ones too) at most 20 % of the attempts in
    // flight, or 3.
    static RETRIES: ConcurrencyBudget = ConcurrencyBudget::ratio(0.2).with_min_concurrency(3);
    // The SRE book's client-side throttling: retries refused as the backend accepts less than 1
    // request in 2 (over 2 minutes).
    static THROTTLE: AdaptiveThrottle = AdaptiveThrottle::new(2.0);
    // The store's rate limit, retries included: 100 attempts a second (100 at once after a quiet
    // spell, then one every 10 ms); one over it waits up to 200 ms for its turn.
    static STORE_QUOTA: Quota = Quota::per_second(100).with_max_wait(Duration::from_millis(200));

    #[retry(guard = [POOL, RETRIES, THROTTLE, STORE_QUOTA])]
    async fn get_object(key: &str) -> Result<String, std::io::Error> {
        store::get(key).await
    }

    #[tokio::test(start_paused = true)]
    async fn the_guards_let_a_retry_through_and_are_settled() {
        // A success first: with one request accepted of one, the throttle refuses nothing (with
        // none accepted yet, the SRE formula refuses a retry with probability 1/2).
        assert_eq!(get_object("a").await.unwrap(), "object a");
        assert_eq!(THROTTLE.rejection_probability(), 0.0);
        assert_eq!(
            STORE_QUOTA.available(),
            99,
            "its turn taken (one comes back every 10 ms)"
        );
        assert_eq!(get_object("k").await.unwrap(), "object k");
        assert_eq!(store::CALLS.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(POOL.in_flight(), 0);
        assert_eq!((RETRIES.in_flight(), RETRIES.retries_in_flight()), (0, 0));
        assert_eq!(
            THROTTLE.window_counts(),
            (3, 2),
            "a success, a failure, a success"
        );
    }
}
