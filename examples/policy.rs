//! The engine without the attribute: a `retry_runtime::Policy` read from a configuration file
//! (the `serde` feature), retrying a closure that calls a loopback HTTP server which answers 503
//! twice, then 200. The closure reads its attempt, and the policy's hook prints each retry.
//!
//! ```text
//! cargo run -p retry-workspace --example policy
//! ```
//!
//! It is an example of the root package, which builds a TOML parser and serde, unlike the
//! examples `cargo run --example NAME` finds.

mod support;

use http::StatusCode;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::{Policy, RetryEvent, TimedOut, attempt};
use std::sync::atomic::{AtomicU32, Ordering};
use support::{reply, serve};

/// What an operator would keep in a file; `toml::from_str` reads it into a policy.
const CONFIG: &str = r#"
max_attempts = 4
initial_backoff = "50ms"
jitter = "none"
deadline = "5s"
partition = "inventory"
"#;

static SERVED: AtomicU32 = AtomicU32::new(0);

fn log(e: &RetryEvent<'_, Error>) {
    println!(
        "attempt {} failed ({}), next in {:?}",
        e.attempt(),
        e.class().as_str(),
        e.delay()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = serve(|_req| async {
        let n = SERVED.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= 2 {
            reply(StatusCode::SERVICE_UNAVAILABLE, "busy")
        } else {
            reply(StatusCode::OK, "12 in stock")
        }
    })
    .await;
    let client = support::client();
    let url = format!("http://{addr}/stock/42");

    let policy: Policy<TimedOut> = toml::from_str(CONFIG).expect("a valid policy");
    let policy = policy.name("stock").on_retry(log);
    let body = policy
        .retry(|| async {
            let a = attempt().expect("inside the policy's attempt");
            println!(
                "attempt {} of {} ({})",
                a.number(),
                a.max_attempts(),
                a.function()
            );
            let response = error_for_status(client.get(&url).send().await?)?;
            Ok::<_, Error>(response.text().await?)
        })
        .await
        .expect("the third attempt succeeds");
    println!("-> {body} after {} requests", SERVED.load(Ordering::SeqCst));
}
