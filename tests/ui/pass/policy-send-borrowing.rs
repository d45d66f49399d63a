//! A future that awaits a `Policy::retry` whose closure borrows from its caller is `Send` when
//! what it borrows is: an axum handler's state, a spawned task's locals. Every kind of policy
//! and every per-call plug, and a policy that hedges.
use retry_runtime::{Policy, TimedOut};
use std::time::Duration;

static P: Policy = Policy::new().max_attempts(3).initial_backoff(Duration::from_millis(1));
static T: Policy<TimedOut> = Policy::new().deadline(Duration::from_secs(1));
static C: Policy<fn(&std::io::Error) -> bool> = Policy::new().classify(|_| true);

async fn io_op(x: &str) -> Result<u32, std::io::Error> {
    Ok(x.len() as u32)
}

async fn borrowed(s: &str) -> Result<u32, std::io::Error> {
    P.retry(|| async { io_op(s).await }).await
}

async fn borrowed_move(s: &str) -> Result<u32, std::io::Error> {
    P.retry(move || async move { io_op(s).await }).await
}

async fn local(s: &str) -> Result<u32, std::io::Error> {
    let p = Policy::new();
    p.retry(|| async { io_op(s).await }).await
}

async fn timed(s: &str) -> Result<u32, std::io::Error> {
    T.retry(|| async { io_op(s).await }).await
}

async fn classified(s: &str) -> Result<u32, std::io::Error> {
    C.retry(|| async { io_op(s).await }).await
}

async fn per_call(s: &str) -> Result<u32, std::io::Error> {
    P.retry(|| async { io_op(s).await })
        .classify(|_| true)
        .retry_if_ok(|v| *v == 0)
        .on_retry(|_| {})
        .await
}

async fn hedged(s: &str) -> Result<u32, std::io::Error> {
    let p = Policy::new().hedge_after(Duration::from_millis(5));
    p.retry(|| async { io_op(s).await }).await
}

fn assert_send<T: Send>(_: T) {}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_send(borrowed("x"));
    assert_send(borrowed_move("x"));
    assert_send(local("x"));
    assert_send(timed("x"));
    assert_send(classified("x"));
    assert_send(per_call("x"));
    assert_send(hedged("x"));
    let task = tokio::spawn(async move {
        let s = String::from("abc");
        let a = borrowed(&s).await.unwrap();
        let b = per_call(&s).await.unwrap();
        let c = hedged(&s).await.unwrap();
        a + b + c
    });
    assert_eq!(task.await.unwrap(), 9);
}
