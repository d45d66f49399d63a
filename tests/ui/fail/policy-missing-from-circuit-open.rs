use retry_runtime::{Classify, ErrorClass, Policy};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

async fn fetch() -> Result<u32, Error> {
    Err(Error)
}

async fn call() -> Result<u32, Error> {
    let policy = Policy::new().breaker("50%");
    policy.retry(|| fetch()).await
}

fn main() {}
