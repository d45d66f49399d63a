use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(attempt_timeout = "1s", attempt_timeout_multiplier = 0.9)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
