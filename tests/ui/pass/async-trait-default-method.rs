use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use async_trait::async_trait;

#[async_trait]
trait Remote: Sync {
    fn base(&self) -> &str;

    #[retry(max_attempts = 2)]
    async fn ping(&self) -> Result<usize, Error> {
        Ok(self.base().len())
    }
}

struct Http;

#[async_trait]
impl Remote for Http {
    fn base(&self) -> &str {
        ""
    }
}

fn main() {
    drop(Http.ping());
}
