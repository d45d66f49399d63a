use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

trait Store {
    async fn get(&self, key: &str) -> Result<Vec<u8>, Error>;
}

struct Memory;

impl Store for Memory {
    #[retry(max_attempts = 5)]
    async fn get(&self, key: &str) -> Result<Vec<u8>, Error> {
        Ok(key.as_bytes().to_vec())
    }
}

fn main() {
    drop(Memory.get("k"));
}
