use retry_runtime::{retry, Refused, TokenBucket};

#[derive(Debug)]
struct Error;

impl retry_runtime::Classify for Error {
    fn classify(&self) -> retry_runtime::ErrorClass {
        retry_runtime::ErrorClass::Transient
    }
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

static BUCKET: TokenBucket = TokenBucket::standard();

#[retry(guard = BUCKET)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
