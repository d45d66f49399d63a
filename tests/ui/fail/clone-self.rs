use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct S;

impl S {
    #[retry(clone(self))]
    async fn call(self) -> Result<(), Error> {
        Ok(())
    }
}

fn main() {}
