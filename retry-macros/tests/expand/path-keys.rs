// Functions and statics named by path, a renamed runtime crate, a config profile.
#[retry(
    mode = "adaptive",
    retry_on = is_transient,
    retry_after = server_hint,
    retry_if_ok = still_pending,
    on_retry = log_retry,
    bucket = BILLING_BUCKET,
    rate_limiter = limits::BILLING,
    profile = "billing",
    crate = ::my_retry
)]
async fn poll(job: JobId) -> Result<Status, ApiError> {
    api::status(job).await
}
