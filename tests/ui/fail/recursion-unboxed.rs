use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry]
async fn depth(n: u32) -> Result<u32, Error> {
    if n == 0 {
        return Ok(0);
    }
    Ok(depth(n - 1).await? + 1)
}

fn main() {}
