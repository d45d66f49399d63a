use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(max_attempts = 2)]
#[tokio::test]
async fn retry_above() -> Result<(), Error> {
    Ok(())
}

#[tokio::test(start_paused = true)]
#[retry(max_attempts = 2)]
async fn retry_below() -> Result<(), Error> {
    Ok(())
}

fn main() {}
