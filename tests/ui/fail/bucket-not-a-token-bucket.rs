use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

static BUCKET: u32 = 500;

#[retry(bucket = BUCKET)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
