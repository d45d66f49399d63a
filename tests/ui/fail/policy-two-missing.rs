use retry_runtime::Policy;
use std::time::Duration;

#[derive(Debug)]
struct Error;

async fn fetch() -> Result<u32, Error> {
    Err(Error)
}

async fn call() -> Result<u32, Error> {
    let policy = Policy::new().deadline(Duration::from_secs(5));
    policy.retry(|| fetch()).await
}

fn main() {}
