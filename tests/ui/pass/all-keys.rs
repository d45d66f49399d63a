use retry_runtime::{
    retry, CircuitBreaker, CircuitOpen, ErrorClass, RateLimiter, RetryBudget, RetryEvent, TimedOut,
    TokenBucket,
};
use std::time::Duration;

#[derive(Debug)]
enum Error {
    Busy,
    TimedOut,
    Refused,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Refused
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

fn class(e: &Error) -> ErrorClass {
    match e {
        Error::Busy => ErrorClass::Throttling,
        Error::TimedOut => ErrorClass::Timeout,
        Error::Refused => ErrorClass::Permanent,
    }
}

fn hint(_: &Error) -> Option<Duration> {
    None
}

fn pending(n: &u32) -> bool {
    *n == 0
}

fn log(e: &RetryEvent<'_, Error>) {
    let _ = (e.attempt(), e.delay(), e.class(), e.error());
}

static BUCKET: TokenBucket = TokenBucket::standard().with_capacity(100);
static LIMITER: RateLimiter = RateLimiter::adaptive();
static BUDGET: RetryBudget = RetryBudget::ratio(0.2);
static BREAKER: CircuitBreaker = CircuitBreaker::new();

#[retry(
    mode = "adaptive",
    max_attempts = 5,
    initial_backoff = "50ms",
    multiplier = 1.5,
    max_backoff = "2s",
    jitter = "decorrelated",
    attempt_timeout = "1s",
    attempt_timeout_multiplier = 2,
    max_attempt_timeout = "3s",
    deadline = "10s",
    retry_on = class,
    retry_after = hint,
    retry_if_ok = pending,
    idempotent_if = token.is_some(),
    bucket = BUCKET,
    rate_limiter = LIMITER,
    budget = BUDGET,
    breaker = BREAKER,
    on_retry = log,
    profile = "jobs",
    clone(name),
    crate = ::retry_runtime
)]
async fn poll(name: String, token: Option<u32>) -> Result<u32, Error> {
    let _owned: String = name;
    Ok(token.unwrap_or(0))
}

fn main() {
    drop(poll(String::new(), None));
}
