use retry_runtime::{retry, Classify, ErrorClass, TimedOut};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error
    }
}

#[retry(attempt_timeout = "2s")]
fn read_file() -> Result<(), Error> {
    Ok(())
}

fn main() {}
