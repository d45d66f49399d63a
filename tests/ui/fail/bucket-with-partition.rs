use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use retry_runtime::TokenBucket;

static BUCKET: TokenBucket = TokenBucket::standard();

#[retry(partition = "billing", bucket = BUCKET)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
