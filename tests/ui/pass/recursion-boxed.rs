use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// Recursion in an `async fn` is boxed, with or without `#[retry]`.
#[retry]
async fn depth(n: u32) -> Result<u32, Error> {
    if n == 0 {
        return Ok(0);
    }
    Ok(Box::pin(depth(n - 1)).await? + 1)
}

fn main() {
    drop(depth(3));
}
