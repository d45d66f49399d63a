use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// `#[retry]` expands first; `#[tokio::main]` then runs the retrying body.
#[retry(max_attempts = 2, initial_backoff = "1ms")]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    Ok(())
}
