// `impl Trait` in the return type becomes `_` where the loop names the type; not idempotent.
#[retry(idempotent = false, max_attempts = 2)]
async fn lines<'a>(path: &'a Path) -> Result<impl Iterator<Item = String> + 'a, io::Error> {
    let text = tokio::fs::read_to_string(path).await?;
    Ok(text.lines().map(str::to_owned).collect::<Vec<_>>().into_iter())
}
