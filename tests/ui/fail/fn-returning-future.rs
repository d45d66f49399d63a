//! A `fn` that returns a future: `#[retry]` rewrites an `async fn`'s body, so it says to write one.
use retry_runtime::retry;
use std::future::Future;

#[retry(max_attempts = 3)]
fn fetch(id: u32) -> impl Future<Output = Result<Vec<u8>, std::io::Error>> {
    async move { Ok(vec![id as u8]) }
}

fn main() {}
