use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Client {
    base: String,
}

impl Client {
    #[retry(max_attempts = 4)]
    async fn get(&self, path: &str) -> Result<String, Error> {
        Ok(format!("{}{path}", self.base))
    }
}

fn main() {
    let c = Client { base: String::new() };
    drop(c.get("/"));
}
