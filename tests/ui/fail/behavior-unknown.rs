use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(behavior = "2025")]
async fn misspelt() -> Result<(), Error> {
    Ok(())
}

#[retry(behavior = 2026)]
async fn not_a_string() -> Result<(), Error> {
    Ok(())
}

#[retry(long_polling = "yes")]
async fn long_polling_not_a_bool() -> Result<(), Error> {
    Ok(())
}

fn main() {}
