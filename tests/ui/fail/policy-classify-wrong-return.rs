use retry_runtime::Policy;

#[derive(Debug)]
struct Error {
    status: u16,
}

async fn fetch() -> Result<u32, Error> {
    Err(Error { status: 503 })
}

async fn call() -> Result<u32, Error> {
    Policy::new()
        .retry(|| fetch())
        .classify(|e| u32::from(e.status))
        .await
}

fn main() {}
