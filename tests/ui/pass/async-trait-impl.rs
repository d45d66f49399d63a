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
trait Remote {
    async fn fetch(&self, id: u32, body: String) -> Result<String, Error>;
    async fn ping(&self) -> Result<(), Error>;
}

struct Http {
    safe: bool,
}

#[async_trait]
impl Remote for Http {
    #[retry(clone(body), idempotent_if = self.safe, attempt_timeout = "1s", retry_on = retryable)]
    async fn fetch(&self, id: u32, body: String) -> Result<String, Error> {
        Ok(body + &id.to_string())
    }

    // `self` is the receiver, renamed as async-trait renames it; `self::` is this module.
    #[retry(idempotent_if = self.safe && self::REPLAYABLE)]
    async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }
}

const REPLAYABLE: bool = true;

fn retryable(_: &Error) -> bool {
    true
}

impl From<retry_runtime::TimedOut> for Error {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Error
    }
}

fn main() {
    let h: Box<dyn Remote + Send + Sync> = Box::new(Http { safe: true });
    drop(h.fetch(1, String::new()));
}
