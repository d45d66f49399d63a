//! The README's code, compiled and run against the loopback HTTP server: its first screen (a
//! `#[retry]` function and the same call through a `Policy` closure) and "Your error type" (an
//! error enum deriving `Classify`). Each README block is checked to be this file's lines, in
//! order, so the page shows what compiles here.
//!
//! The calls run in `testing::record` with instant retries: the README's backoffs are seconds
//! long, and what is asserted is what the loop decided and what the server executed.

use retry_runtime::testing::{Overrides, record};

const README: &str = include_str!("../../README.md");
const THIS_FILE: &str = include_str!("readme.rs");

/// The lines of the first Rust block after `after` in the README.
fn block_after(after: &str) -> Vec<&'static str> {
    let start = README.find(after).expect("the heading in README.md") + after.len();
    let open = start + README[start..].find("```rust\n").expect("a rust block") + 8;
    let close = open + README[open..].find("```").expect("the end of the block");
    README[open..close].lines().collect()
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
    assert_is_this_files_code(&error_type);
}

/// The README's first screen.
mod first_screen {
    use super::{Overrides, record};
    use crate::http_server::{Fault, Server, client};

    use retry_runtime::reqwest::{Error, error_for_status};
    use retry_runtime::{Policy, Timeouts, retry};
    use std::time::Duration;

    // The attribute: the body is one attempt; `?` and `return` end it, the loop decides what follows.
    #[retry(max_attempts = 4, attempt_timeout = "2s", deadline = "10s")]
    async fn get_page(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let response = error_for_status(client.get(url).send().await?)?;
        Ok(response.text().await?)
    }

    // The same call through a closure: the same keys on a `Policy` value, the same loop.
    static PAGES: Policy<Timeouts> = Policy::new()
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
        #[classify(delegate)] // the response's class and its `Retry-After`
        Http(#[from] retry_runtime::reqwest::Error),
        #[error("the queue is full")]
        #[classify(throttling)]
        QueueFull,
        #[error("the answer is not a count")]
        Parse(#[from] std::num::ParseIntError), // the default: permanent
    }

    // `?` on a plain `reqwest::Error`, and the loop's timeouts: once each, through the runtime's error.
    impl From<reqwest::Error> for ApiError {
        fn from(e: reqwest::Error) -> Self {
            ApiError::Http(e.into())
        }
    }
    impl From<TimedOut> for ApiError {
        fn from(t: TimedOut) -> Self {
            ApiError::Http(t.into())
        }
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
