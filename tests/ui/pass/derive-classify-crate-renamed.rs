extern crate retry_runtime as resilience;

use resilience::{Classify, ErrorClass};

#[derive(Debug, resilience::Classify)]
#[classify(crate = ::resilience, default = permanent)]
enum Error {
    #[classify(transient)]
    Busy,
    #[classify(delegate)]
    Class(ErrorClass),
    Denied,
}

#[derive(Debug, Classify)]
#[classify(crate = ::resilience)]
#[classify(timeout)]
struct Slow;

#[resilience::retry(crate = ::resilience, max_attempts = 2)]
async fn call() -> Result<(), Error> {
    Err(Error::Busy)
}

fn main() {
    drop(call());
    assert_eq!(Error::Class(ErrorClass::NotSent).classify(), ErrorClass::NotSent);
    assert_eq!(Error::Denied.classify(), ErrorClass::Permanent);
    assert_eq!(Slow.classify(), ErrorClass::Timeout);
}
