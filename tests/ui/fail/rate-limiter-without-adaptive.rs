use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use retry_runtime::RateLimiter;

static LIMITER: RateLimiter = RateLimiter::adaptive();

#[retry(rate_limiter = LIMITER)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
