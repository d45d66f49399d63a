use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[derive(Clone, Copy)]
struct Id(u32);

struct Request {
    path: String,
}

impl Id {
    /// A `Copy` receiver: every attempt uses it.
    #[retry]
    async fn fetch(self) -> Result<u32, Error> {
        Ok(self.0)
    }
}

impl Request {
    /// An owned receiver that each attempt only borrows.
    #[retry]
    async fn send(self) -> Result<usize, Error> {
        Ok(self.path.len())
    }
}

fn main() {
    drop(Id(1).fetch());
    drop(Request { path: String::new() }.send());
}
