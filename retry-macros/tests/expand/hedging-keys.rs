// Every hedging key, on a `&self` method with an owned argument cloned per attempt: the body
// becomes a closure whose attempts may run side by side, and a percentile gets a latency
// estimate of its own in a `static`.
#[retry(
    hedge_after = "p95",
    max_in_flight = 3,
    min_hedge_after = "2ms",
    max_hedge_after = "500ms",
    max_attempts = 4,
    deadline = "2s",
    clone(request)
)]
pub async fn get(&self, request: Request) -> Result<Item, StoreError> {
    self.client.send(request).await
}
