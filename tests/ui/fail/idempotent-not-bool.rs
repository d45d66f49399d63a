use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(idempotent = "yes")]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
