use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(hedge_after = "50ms", idempotent = false)]
async fn create_order(id: u32) -> Result<u32, Error> {
    Ok(id)
}

struct Orders;

impl Orders {
    #[retry(hedge_after = "p95", idempotent_if = id > 0)]
    async fn put(&self, id: u32) -> Result<u32, Error> {
        Ok(id)
    }
}

fn main() {}
