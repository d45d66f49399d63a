use retry_runtime::{retry, CircuitBreaker, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

static STORE: CircuitBreaker = CircuitBreaker::new();

#[retry(breaker = STORE)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
