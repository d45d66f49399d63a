use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(hedge_after = "p42")]
async fn a() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "0ms")]
async fn b() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = 50)]
async fn c() -> Result<(), Error> {
    Ok(())
}

fn main() {}
