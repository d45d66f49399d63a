use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

fn is_transient(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

#[retry(retry_on = is_transient)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
