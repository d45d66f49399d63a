//! A call's own classifier does not make a policy with a classifier function take another
//! error type: the conversions its builders kept are its own type's.
use retry_runtime::Policy;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

#[derive(Debug)]
struct StoreError {
    busy: bool,
}

static API: Policy<fn(&ApiError) -> bool> = Policy::new().classify(|e| e.status >= 500);

async fn load() -> Result<u32, StoreError> {
    Err(StoreError { busy: true })
}

async fn call() -> Result<u32, StoreError> {
    API.retry(|| load()).classify(|e| e.busy).await
}

fn main() {}
