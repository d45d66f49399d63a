use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Cache {
    hits: u32,
}

impl Cache {
    #[retry(hedge_after = "50ms")]
    async fn fetch(&mut self, key: &str) -> Result<usize, Error> {
        self.hits += 1;
        Ok(key.len())
    }
}

#[retry(hedge_after = "50ms")]
async fn fill(buf: &mut Vec<u8>) -> Result<usize, Error> {
    buf.push(1);
    Ok(buf.len())
}

fn main() {}
