use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

fn code(e: &Error) -> u16 {
    let _ = e;
    503
}

#[retry(retry_on = code)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
