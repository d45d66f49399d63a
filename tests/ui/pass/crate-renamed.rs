extern crate retry_runtime as resilience;

use resilience::{Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[resilience::retry(crate = ::resilience, max_attempts = 2)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {
    drop(call());
}
