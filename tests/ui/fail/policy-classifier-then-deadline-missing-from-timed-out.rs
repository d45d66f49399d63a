use retry_runtime::Policy;
use std::time::Duration;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

static API: Policy<fn(&ApiError) -> bool> = Policy::new()
    .classify(|e: &ApiError| e.status >= 500)
    .deadline(Duration::from_secs(5));

fn main() {
    let _ = &API;
}
