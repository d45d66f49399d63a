use retry_runtime::{retry, CircuitOpen, Classify, ErrorClass, TokenBucket};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error
    }
}

static BUCKET: TokenBucket = TokenBucket::standard();

#[retry(breaker = BUCKET)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
