use retry_runtime::{retry, CircuitOpen, Classify, ErrorClass};

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

#[retry(breaker = "0%")]
async fn never_opens() -> Result<(), Error> {
    Ok(())
}

#[retry(breaker = "150%")]
async fn more_than_all() -> Result<(), Error> {
    Ok(())
}

#[retry(breaker = 0.5)]
async fn a_bare_number() -> Result<(), Error> {
    Ok(())
}

fn main() {}
