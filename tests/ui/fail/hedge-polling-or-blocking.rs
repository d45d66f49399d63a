use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

fn pending(n: &u32) -> bool {
    *n == 0
}

#[retry(hedge_after = "50ms", retry_if_ok = pending)]
async fn poll() -> Result<u32, Error> {
    Ok(1)
}

#[retry(hedge_after = "50ms")]
fn read() -> Result<u32, Error> {
    Ok(1)
}

fn main() {}
