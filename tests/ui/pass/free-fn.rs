use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry]
async fn fetch(id: u32) -> Result<u32, Error> {
    Ok(id)
}

fn main() {
    drop(fetch(1));
}
