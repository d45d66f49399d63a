// Every key that shapes the schedule, on a `&self` method; `attempt_timeout` arms the timer,
// so the error type converts `TimedOut`.
#[retry(
    mode = "adaptive",
    max_attempts = 5,
    initial_backoff = "50ms",
    multiplier = 1.5,
    max_backoff = "2s",
    jitter = 0.25,
    attempt_timeout = "1s",
    attempt_timeout_multiplier = 2,
    max_attempt_timeout = "4s",
    deadline = "10s"
)]
pub async fn get(&self, key: &str) -> Result<Item, StoreError> {
    self.client.get(key).await
}
