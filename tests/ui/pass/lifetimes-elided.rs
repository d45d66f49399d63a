use retry_runtime::{retry, Classify, ErrorClass};

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
    #[retry]
    async fn get(&self) -> Result<&str, Error> {
        Ok(&self.value)
    }
}

#[retry]
async fn first_word(text: &str) -> Result<&str, Error> {
    text.split(' ').next().ok_or(Error)
}

fn main() {
    let c = Cache { value: String::new() };
    drop(c.get());
    drop(first_word("a b"));
}
