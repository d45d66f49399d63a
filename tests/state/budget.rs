//! Retry budgets (`budget = STATIC` or `budget = "20%"`), on tokio's paused clock: a ratio budget lets retries
//! reach a share of the window's first attempts plus its floor and then ends calls early with
//! `BudgetExhausted`; gRPC throttling stops retries at half its tokens and lets them again as
//! successes give tokens back; the bucket still applies under a budget unless
//! `bucket = "none"`; functions of one partition writing `"20%"` share one budget.

use crate::util::TestError;
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{ErrorClass, Partition, RetryBudget, TokenBucket, retry};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const TRANSIENT: TestError = TestError::fault(ErrorClass::Transient);

/// Whether the next attempts fail.
static FAILING: AtomicBool = AtomicBool::new(false);

fn outcome() -> Result<(), TestError> {
    if FAILING.load(Ordering::Relaxed) {
        Err(TRANSIENT)
    } else {
        Ok(())
    }
}

/// 20 % of the window's first attempts, no floor.
static TWENTY: RetryBudget = RetryBudget::ratio(0.2)
    .with_floor_per_sec(0)
    .with_window(Duration::from_secs(10));

#[retry(max_attempts = 2, initial_backoff = "1ms", budget = TWENTY)]
async fn twenty() -> Result<(), TestError> {
    outcome()
}

#[tokio::test(start_paused = true)]
async fn a_ratio_budget_lets_a_share_of_the_requests_retry() {
    // 50 calls that succeed: 50 first attempts in the window.
    for _ in 0..50 {
        twenty().await.unwrap();
    }
    assert_eq!(TWENTY.window_counts(), (50, 0));

    // Then every attempt fails: each call is a first attempt more (51, 52, ...), and a retry
    // is allowed while retries + 1 <= 20 % of them.
    FAILING.store(true, Ordering::Relaxed);
    let (mut retried, mut refused) = (0, 0);
    for _ in 0..20 {
        let (out, record) = testing::record(Overrides::new(), twenty()).await;
        assert_eq!(out, Err(TRANSIENT));
        match record.early_ends() {
            [] => retried += 1,
            [end] => {
                assert_eq!(end.reason, EarlyEnd::BudgetExhausted);
                refused += 1;
            }
            ends => panic!("{ends:?}"),
        }
    }
    // After 20 failed calls the window holds 70 first attempts: 14 retries allowed.
    assert_eq!((retried, refused), (14, 6));
    assert_eq!(TWENTY.window_counts(), (70, 14));
    assert!(!TWENTY.allows_retry());

    // Ten seconds on the window is empty; with neither traffic nor a floor, no retry.
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(TWENTY.window_counts(), (0, 0));
    let (_, record) = testing::record(Overrides::new(), twenty()).await;
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
}

/// gRPC throttling: 10 tokens, 0.5 back per success.
static GRPC: RetryBudget = RetryBudget::grpc_throttling(10, 0.5);

#[retry(max_attempts = 3, initial_backoff = "1ms", budget = GRPC)]
async fn throttled(fail: bool) -> Result<(), TestError> {
    if fail { Err(TRANSIENT) } else { Ok(()) }
}

#[tokio::test(start_paused = true)]
async fn grpc_throttling_stops_retries_at_half_its_tokens() {
    // A failing call: attempt 1 (10 -> 9), retry, attempt 2 (-> 8), retry, attempt 3 (-> 7).
    let (_, record) = testing::record(Overrides::new(), throttled(true)).await;
    assert_eq!(record.retries().len(), 2);
    assert_eq!(GRPC.tokens(), Some(7.0));
    // The next: 7 -> 6, retry, 6 -> 5; 5 is not above half: it ends there.
    let (_, record) = testing::record(Overrides::new(), throttled(true)).await;
    assert_eq!(record.retries().len(), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
    assert_eq!(GRPC.tokens(), Some(5.0));
    // Successes give tokens back; above 5 retries come back.
    throttled(false).await.unwrap();
    assert_eq!(GRPC.tokens(), Some(5.5));
    let (_, record) = testing::record(Overrides::new(), throttled(true)).await;
    // 5.5 -> 4.5 at the first failure: no retry.
    assert!(record.retries().is_empty());
    assert_eq!(GRPC.tokens(), Some(4.5));
}

/// A budget with room to spare, over a bucket that holds one retry.
static ROOMY: RetryBudget = RetryBudget::ratio(1.0).with_floor_per_sec(100);
static ONE_RETRY: TokenBucket = TokenBucket::standard()
    .with_capacity(5)
    .with_success_reward(0);

#[retry(max_attempts = 3, initial_backoff = "1ms", budget = ROOMY, bucket = ONE_RETRY)]
async fn both() -> Result<(), TestError> {
    Err(TRANSIENT)
}

#[tokio::test(start_paused = true)]
async fn the_bucket_still_applies_under_a_budget() {
    let (_, record) = testing::record(Overrides::new(), both()).await;
    assert_eq!(record.retries().len(), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::BucketEmpty);
    // The budget counted the one retry that ran, not the one the bucket refused.
    assert_eq!(ROOMY.window_counts(), (1, 1));
}

/// No bucket: the budget alone bounds the retries (the function's own bucket, 500 tokens at 5
/// a retry, would stop them after 100).
#[retry(
    max_attempts = 2,
    initial_backoff = "1ms",
    budget = "20%",
    bucket = "none"
)]
async fn share() -> Result<(), TestError> {
    Err(TRANSIENT)
}

#[tokio::test(start_paused = true)]
async fn a_share_written_in_the_attribute_has_a_floor_of_10_per_second_over_10_seconds() {
    // Every call fails: call n is the n-th request, and it retries while
    // retries + 1 <= 20 % of n + 10/s x 10 s: the first 125 calls all retry; after that each
    // refused call is one more request, and one call in five gets its retry.
    let mut retried = Vec::new();
    for n in 1..=140 {
        let (_, record) = testing::record(Overrides::new(), share()).await;
        if record.early_ends().is_empty() {
            retried.push(n);
        } else {
            assert_eq!(record.early_ends()[0].reason, EarlyEnd::BudgetExhausted);
        }
    }
    assert_eq!(retried.len(), 128);
    assert_eq!(retried[124..], [125, 130, 135, 140]);
}

#[retry(partition = "budget-shared", budget = "20%")]
async fn shared_a(fail: bool) -> Result<(), TestError> {
    if fail { Err(TRANSIENT) } else { Ok(()) }
}

#[retry(partition = "budget-shared", budget = "20%", initial_backoff = "1ms")]
async fn shared_b(fail: bool) -> Result<(), TestError> {
    if fail { Err(TRANSIENT) } else { Ok(()) }
}

#[tokio::test(start_paused = true)]
async fn a_share_is_the_partitions_budget_readable_for_metrics() {
    for _ in 0..5 {
        shared_a(false).await.unwrap();
        shared_b(false).await.unwrap();
    }
    let _ = shared_b(true).await;
    let p = Partition::all()
        .into_iter()
        .find(|p| p.name() == "budget-shared")
        .expect("the partition");
    let budget = p.retry_budget().expect("its functions share one budget");
    // Both functions' first attempts, and the failing call's two retries (3 attempts), in one
    // window.
    assert_eq!(budget.window_counts(), (11, 2));
}
