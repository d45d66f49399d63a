use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// Below the default `initial_backoff` (1s): the default yields, the backoff starts at 500ms.
#[retry(max_backoff = "500ms")]
async fn short() -> Result<(), Error> {
    Ok(())
}

/// Above the default `max_backoff` (20s): the default yields, the backoff stays at 30s.
#[retry(initial_backoff = "30s")]
async fn long() -> Result<(), Error> {
    Ok(())
}

fn main() {
    drop(short());
    drop(long());
}
