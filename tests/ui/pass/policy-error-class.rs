//! `ErrorClass` as the closure's error type: it classifies itself and represents a timeout, so
//! a policy with a deadline takes it as it is.
use retry_runtime::{ErrorClass, Policy, TimedOut};
use std::time::Duration;

static DEADLINED: Policy<TimedOut> = Policy::new()
    .max_attempts(3)
    .deadline(Duration::from_secs(5));

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut calls = 0;
    let out = DEADLINED
        .retry(|| {
            calls += 1;
            let n = calls;
            async move {
                if n < 2 {
                    Err(ErrorClass::Transient)
                } else {
                    Ok(n)
                }
            }
        })
        .await;
    assert_eq!(out.unwrap(), 2);

    let local = Policy::new().attempt_timeout(Duration::from_millis(100));
    let out = local
        .retry(|| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<(), ErrorClass>(())
        })
        .await;
    assert!(out.is_err());
}
