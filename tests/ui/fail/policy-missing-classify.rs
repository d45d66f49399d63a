use retry_runtime::Policy;

#[derive(Debug)]
struct Error;

async fn fetch() -> Result<u32, Error> {
    Err(Error)
}

async fn call() -> Result<u32, Error> {
    Policy::new().max_attempts(3).retry(|| fetch()).await
}

fn main() {}
