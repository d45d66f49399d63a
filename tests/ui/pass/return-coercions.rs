use retry_runtime::{retry, Classify, ErrorClass};
use std::fmt::Display;

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Cache {
    value: String,
}

impl Cache {
    /// `return` and the tail coerce to the declared type, as without the macro: `&String` to
    /// `&str`, `Box<String>` to `Box<dyn Display>`.
    #[retry]
    async fn get(&self, early: bool) -> Result<&str, Error> {
        if early {
            return Ok(&self.value);
        }
        Ok(&self.value)
    }

    #[retry]
    async fn shown(&self) -> Result<Box<dyn Display + Send>, Error> {
        Ok(Box::new(self.value.clone()))
    }
}

fn main() {
    let c = Cache { value: String::new() };
    drop(c.get(true));
    drop(c.shown());
}
