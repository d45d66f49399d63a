//! A policy with a classifier function, and a closure that fails with another error type.
use retry_runtime::Policy;
use std::time::Duration;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

impl From<retry_runtime::TimedOut> for ApiError {
    fn from(_: retry_runtime::TimedOut) -> Self {
        ApiError { status: 504 }
    }
}

#[derive(Debug)]
struct StoreError;

static API: Policy<fn(&ApiError) -> bool> =
    Policy::new().deadline(Duration::from_secs(1)).classify(|e| e.status >= 500);

async fn load() -> Result<u32, StoreError> {
    Err(StoreError)
}

async fn call() -> Result<u32, StoreError> {
    API.retry(|| load()).await
}

fn main() {}
