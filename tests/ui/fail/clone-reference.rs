use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(clone(body))]
async fn call(body: &str) -> Result<usize, Error> {
    Ok(body.len())
}

fn main() {}
