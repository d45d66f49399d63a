// With errors in the attribute, the function is emitted as written, after the errors.
#[retry(max_attempt = 3, jitter = "sometimes")]
async fn fetch(id: u32) -> std::io::Result<Vec<u8>> {
    download(id).await
}
