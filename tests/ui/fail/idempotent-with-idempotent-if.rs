use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(idempotent = true, idempotent_if = safe)]
async fn call(safe: bool) -> Result<(), Error> {
    let _ = safe;
    Ok(())
}

fn main() {}
