//! A task that awaits a `Policy::retry` can be spawned, and a generic function can box one as a
//! `Send` future.
use retry_runtime::{Classify, ErrorClass, Policy};
use std::future::Future;
use std::pin::Pin;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

#[derive(Debug)]
struct Busy;

impl Classify for Busy {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Throttling
    }
}

async fn fetch(id: u32) -> Result<u32, ApiError> {
    if id == 0 { Err(ApiError { status: 503 }) } else { Ok(id) }
}

fn boxed<T, E, F, Fut>(attempt: F) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send>>
where
    T: Send + 'static,
    E: Classify + Send + 'static,
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
{
    Box::pin(async move {
        let policy = Policy::new().max_attempts(2);
        policy.retry(attempt).await
    })
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let id = 7;
    let task = tokio::spawn(async move {
        let p = Policy::new();
        p.retry(|| fetch(id)).classify(|e| e.status >= 500).await
    });
    assert_eq!(task.await.unwrap().unwrap(), 7);

    let out = boxed(|| async { Err::<(), _>(Busy) }).await;
    assert!(out.is_err());
}
