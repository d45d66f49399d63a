// No arguments: the policy is the runtime's default, the error's `Classify` impl classifies.
#[retry]
async fn fetch(id: u32) -> std::io::Result<Vec<u8>> {
    let bytes = download(id).await?;
    Ok(bytes)
}
