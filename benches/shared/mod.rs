//! The functions the peer benchmarks compare, shared by `peers.rs` (criterion) and
//! `instructions.rs` (instruction counts under callgrind): the same body under a plain call,
//! `#[retry]`, a `retry_runtime::Policy` closure, backon and tokio-retry2, 3 attempts each, and
//! `#[retry]` on a blocking `fn`.

use backon::{ExponentialBuilder, Retryable};
use retry_runtime::{Classify, ErrorClass, Jitter, Policy, TimedOut, retry};
use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;
use tokio_retry2::strategy::ExponentialBackoff;
use tokio_retry2::{Retry, RetryError};

#[derive(Debug)]
pub struct Error;

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("transient")
    }
}

impl std::error::Error for Error {}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error
    }
}

impl From<retry_runtime::Refused> for Error {
    fn from(_: retry_runtime::Refused) -> Self {
        Error
    }
}

fn retryable(e: &Error) -> bool {
    matches!(
        e.classify(),
        ErrorClass::Transient | ErrorClass::Throttling | ErrorClass::NotSent | ErrorClass::Timeout
    )
}

// ---------------------------------------------------------------------------------------------
// The success path: `Ok(x + 1)`.

async fn body(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

pub async fn plain(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// [`plain`] in a span of its own, as `#[tracing::instrument]` makes it.
#[allow(dead_code)] // measured by the instructions benchmark only
#[tracing::instrument(level = "info", skip_all)]
pub async fn instrumented(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// A guard of the user's own that admits everything and keeps nothing: what the seam itself
/// costs. `TIMED` is what it says of `timed`: `false` reads no attempt's time; `true`, the
/// trait's default, has every attempt's send stamped so that `settle` could read how long it
/// ran (it does not), which is what the stamp costs.
#[allow(dead_code)] // measured by the instructions benchmark only
pub struct Open<const TIMED: bool>;

impl<const TIMED: bool> retry_runtime::Guard for Open<TIMED> {
    fn admit(&self, _: &retry_runtime::GuardContext<'_>) -> retry_runtime::Admit {
        retry_runtime::Admit::Go
    }
    fn settle(&self, _: &retry_runtime::GuardContext<'_>, _: retry_runtime::GuardOutcome) {}
    fn timed(&self) -> bool {
        TIMED
    }
}

#[allow(dead_code)] // measured by the instructions benchmark only
static OPEN: Open<false> = Open;
#[allow(dead_code)] // measured by the instructions benchmark only
static OPEN_TIMED: Open<true> = Open;
#[allow(dead_code)] // measured by the instructions benchmark only
static BULKHEAD: retry_runtime::Bulkhead = retry_runtime::Bulkhead::new(64);
#[allow(dead_code)] // measured by the instructions benchmark only
static CONCURRENCY: retry_runtime::ConcurrencyBudget = retry_runtime::ConcurrencyBudget::ratio(0.2);
#[allow(dead_code)] // measured by the instructions benchmark only
static THROTTLE: retry_runtime::AdaptiveThrottle = retry_runtime::AdaptiveThrottle::new(2.0);

#[allow(dead_code)] // measured by the instructions benchmark only
static QUOTA: retry_runtime::Quota = retry_runtime::Quota::per_second(1_000_000);

#[allow(dead_code)] // measured by the instructions benchmark only
static LIMIT: retry_runtime::AdaptiveConcurrency = retry_runtime::AdaptiveConcurrency::new();

/// `#[retry]` under an adaptive concurrency limit.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = LIMIT)]
pub async fn ours_limit(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` with a user's guard that admits everything.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = OPEN)]
pub async fn ours_guard_open(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` with a user's guard that admits everything and keeps `timed`'s default.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = OPEN_TIMED)]
pub async fn ours_guard_timed(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` behind a bulkhead.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = BULKHEAD)]
pub async fn ours_bulkhead(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` under a send quota (a million a second: the benchmark's calls never wait).
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = QUOTA)]
pub async fn ours_quota(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` under a concurrency budget.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = CONCURRENCY)]
pub async fn ours_concurrency(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` under adaptive throttling.
#[allow(dead_code)] // measured by the instructions benchmark only
#[retry(max_attempts = 3, guard = THROTTLE)]
pub async fn ours_throttle(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

#[retry(max_attempts = 3)]
pub async fn ours(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// `#[retry]` with hedging (a fixed delay, and a percentile of the function's own latency),
/// answering at once: the cost of being ready to hedge.
#[allow(dead_code)] // measured by the instructions and memory benchmarks only
#[retry(max_attempts = 3, hedge_after = "50ms")]
pub async fn ours_hedged(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

#[allow(dead_code)] // measured by the instructions and memory benchmarks only
#[retry(max_attempts = 3, hedge_after = "p95")]
pub async fn ours_hedged_p95(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

static POLICY: Policy = Policy::new().max_attempts(3);

pub async fn with_policy(x: u64) -> Result<u64, Error> {
    POLICY.retry(|| body(x)).await
}

#[retry(max_attempts = 3)]
fn ours_blocking_inner(x: u64) -> Result<u64, Error> {
    Ok(black_box(x).wrapping_add(1))
}

/// A blocking `#[retry]` function, called from the async harness.
pub async fn ours_blocking(x: u64) -> Result<u64, Error> {
    ours_blocking_inner(x)
}

/// The same body as a tower service.
#[derive(Clone, Copy)]
pub struct AddOne;

impl tower::Service<u64> for AddOne {
    type Response = u64;
    type Error = Error;
    type Future = std::future::Ready<Result<u64, Error>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, x: u64) -> Self::Future {
        std::future::ready(Ok(black_box(x).wrapping_add(1)))
    }
}

type Layered = retry_runtime::tower::Retry<AddOne, retry_runtime::tower::Cloning>;

/// `AddOne` under `RetryLayer` (3 attempts), built once; each call clones the service, as a
/// tower client does.
pub async fn with_tower(x: u64) -> Result<u64, Error> {
    use tower::{Layer, Service, ServiceExt};
    static SERVICE: std::sync::OnceLock<Layered> = std::sync::OnceLock::new();
    let service = SERVICE.get_or_init(|| {
        retry_runtime::tower::RetryLayer::new(Policy::new().max_attempts(3))
            .exchange(retry_runtime::tower::Cloning)
            .layer(AddOne)
    });
    let mut service = service.clone();
    let ready = service.ready().await.map_err(|_| Error)?;
    ready.call(x).await.map_err(|_| Error)
}

pub async fn with_backon(x: u64) -> Result<u64, Error> {
    (|| body(x))
        .retry(
            ExponentialBuilder::default()
                .with_jitter()
                .with_max_times(2),
        )
        .when(retryable)
        .await
}

pub async fn with_tokio_retry2(x: u64) -> Result<u64, Error> {
    let strategy = ExponentialBackoff::from_millis(10).factor(100).take(2);
    Retry::spawn(strategy, || async move {
        body(x).await.map_err(|e| {
            if retryable(&e) {
                RetryError::transient(e)
            } else {
                RetryError::permanent(e)
            }
        })
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// The retry path: attempt 1 fails (transient), attempt 2 succeeds, zero delay between them.

/// Fails on the first attempt of a call, succeeds on the next.
async fn flaky(x: u64, tries: &Cell<u32>) -> Result<u64, Error> {
    tries.set(tries.get() + 1);
    if tries.get() == 1 {
        Err(Error)
    } else {
        Ok(black_box(x).wrapping_add(1))
    }
}

pub async fn hand_loop(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    let mut left = 2;
    loop {
        match flaky(x, &tries).await {
            Err(e) if left > 0 && retryable(&e) => {
                left -= 1;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            out => return out,
        }
    }
}

#[retry(max_attempts = 3, initial_backoff = "1ms", jitter = "none")]
async fn ours_flaky_inner(x: u64, tries: &Cell<u32>) -> Result<u64, Error> {
    flaky(x, tries).await
}

pub async fn ours_flaky(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    ours_flaky_inner(x, &tries).await
}

static POLICY_FLAKY: Policy = Policy::new()
    .max_attempts(3)
    .initial_backoff(Duration::from_millis(1))
    .jitter(Jitter::None);

pub async fn policy_flaky(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    POLICY_FLAKY.retry(|| flaky(x, &tries)).await
}

/// Fails on the first attempt of a call, succeeds on the next (blocking).
fn flaky_blocking(x: u64, tries: &Cell<u32>) -> Result<u64, Error> {
    tries.set(tries.get() + 1);
    if tries.get() == 1 {
        Err(Error)
    } else {
        Ok(black_box(x).wrapping_add(1))
    }
}

// No backoff: a blocking wait sleeps the thread for real, which a count of instructions over
// 100,000 calls cannot afford; the retry is decided and taken all the same.
#[retry(max_attempts = 3, initial_backoff = "0ms", jitter = "none")]
fn ours_blocking_flaky_inner(x: u64, tries: &Cell<u32>) -> Result<u64, Error> {
    flaky_blocking(x, tries)
}

/// A blocking `#[retry]` function's retry, called from the async harness.
pub async fn ours_blocking_flaky(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    ours_blocking_flaky_inner(x, &tries)
}

pub async fn backon_flaky(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    (|| flaky(x, &tries))
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(1))
                .with_max_times(2),
        )
        .when(retryable)
        .await
}

pub async fn tokio_retry2_flaky(x: u64) -> Result<u64, Error> {
    let tries = Cell::new(0);
    let tries = &tries;
    let strategy = ExponentialBackoff::from_millis(1).take(2);
    Retry::spawn(strategy, || async move {
        flaky(x, tries).await.map_err(|e| {
            if retryable(&e) {
                RetryError::transient(e)
            } else {
                RetryError::permanent(e)
            }
        })
    })
    .await
}
