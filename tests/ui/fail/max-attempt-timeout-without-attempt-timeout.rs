use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(max_attempt_timeout = "5s")]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
