use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

trait Store {
    #[retry]
    async fn get(&self) -> Result<(), Error>;
}

fn main() {}
