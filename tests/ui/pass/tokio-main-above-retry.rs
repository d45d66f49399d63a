use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// `#[tokio::main]` expands first; `#[retry]` finds the body in its `async` block.
#[tokio::main(flavor = "current_thread")]
#[retry(max_attempts = 2, initial_backoff = "1ms")]
async fn main() -> Result<(), Error> {
    Ok(())
}
