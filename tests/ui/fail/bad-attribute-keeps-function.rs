use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(max_attempts = 0)]
async fn fetch(id: u32) -> Result<Vec<u8>, Error> {
    Ok(vec![id as u8])
}

// The function is still there, with its signature: this call type-checks, so the attribute's
// error is the only one.
async fn caller() -> Result<usize, Error> {
    let bytes: Vec<u8> = fetch(7).await?;
    Ok(bytes.len())
}

fn main() {
    drop(caller());
}
