use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(budget = "0%")]
async fn none_at_all() -> Result<(), Error> {
    Ok(())
}

#[retry(budget = "lots")]
async fn not_a_share() -> Result<(), Error> {
    Ok(())
}

#[retry(budget = 0.2)]
async fn a_bare_number() -> Result<(), Error> {
    Ok(())
}

fn main() {}
