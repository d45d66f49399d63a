//! A `static` policy whose classifier is a function pointer: its type names the error, so the
//! closure given to `Policy::classify` infers its argument.
use retry_runtime::Policy;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

static P: Policy<fn(&ApiError) -> bool> =
    Policy::new().max_attempts(4).classify(|e| e.status >= 500);

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut calls = 0;
    let out = P
        .retry(|| {
            calls += 1;
            let n = calls;
            async move {
                if n < 3 {
                    Err(ApiError { status: 503 })
                } else {
                    Ok(n)
                }
            }
        })
        .await;
    assert_eq!(out.unwrap(), 3);

    let out = P.retry(|| async { Err::<(), _>(ApiError { status: 400 }) }).await;
    assert_eq!(out.unwrap_err().status, 400);
}
