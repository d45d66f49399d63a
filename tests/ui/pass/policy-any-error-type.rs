//! The closure's own error type, with neither `Classify` nor `From<TimedOut>`: an untimed policy
//! asks for neither, and the call's classifier infers its argument.
use retry_runtime::Policy;
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
struct ApiError {
    status: u16,
}

static CALLS: AtomicU32 = AtomicU32::new(0);

async fn fetch() -> Result<u32, ApiError> {
    match CALLS.fetch_add(1, Ordering::Relaxed) {
        0 => Err(ApiError { status: 503 }),
        n => Ok(n),
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let out = Policy::new()
        .max_attempts(3)
        .retry(|| fetch())
        .classify(|e| e.status >= 500)
        .await;
    assert_eq!(out.unwrap(), 1);

    let refused = Policy::new()
        .retry(|| async { Err::<(), _>(ApiError { status: 404 }) })
        .classify(|e| e.status >= 500)
        .await;
    assert_eq!(refused.unwrap_err().status, 404);
}
