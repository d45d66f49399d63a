use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

fn send(body: String) -> Result<usize, Error> {
    Ok(body.len())
}

#[retry(hedge_after = "50ms")]
async fn post(body: String) -> Result<usize, Error> {
    send(body)
}

fn main() {}
