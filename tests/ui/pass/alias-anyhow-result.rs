use retry_runtime::retry;

fn transient(e: &anyhow::Error) -> bool {
    e.is::<std::io::Error>()
}

/// `anyhow::Result<T>`, classified by a predicate.
#[retry(retry_on = transient)]
async fn load(n: u32) -> anyhow::Result<u32> {
    anyhow::ensure!(n > 0, "zero");
    Ok(n)
}

fn main() {
    drop(load(1));
}
