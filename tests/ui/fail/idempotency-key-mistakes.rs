use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(idempotency_key = true, idempotent_if = safe)]
async fn keyed_and_conditional(safe: bool) -> Result<(), Error> {
    let _ = safe;
    Ok(())
}

#[retry(idempotency_key = "yes")]
async fn not_a_bool() -> Result<(), Error> {
    Ok(())
}

fn main() {}
