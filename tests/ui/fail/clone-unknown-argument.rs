use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(clone(bdy))]
async fn call(body: String) -> Result<String, Error> {
    Ok(body)
}

fn main() {}
