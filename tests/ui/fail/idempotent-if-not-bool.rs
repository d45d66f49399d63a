use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(idempotent_if = safe)]
async fn call(safe: u8) -> Result<(), Error> {
    Ok(())
}

fn main() {}
