use retry_runtime::retry;

#[retry(max_attempts = 3, deadline = "5s")]
async fn get(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    client.get(url).send().await?.text().await
}

#[retry(attempt_timeout = "1s")]
async fn head(client: &reqwest::Client, url: &str) -> reqwest::Result<u16> {
    Ok(client.head(url).send().await?.status().as_u16())
}

// Through the runtime: its error represents a timeout.
#[retry(deadline = "5s")]
async fn ok(client: &reqwest::Client, url: &str) -> Result<String, retry_runtime::reqwest::Error> {
    Ok(client.get(url).send().await?.text().await?)
}

fn main() {}
