use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

trait Store {
    fn raw(&self, key: &str) -> Option<Vec<u8>>;

    /// Every implementor shares this method's retry site.
    #[retry(partition = "store")]
    async fn get(&self, key: &str) -> Result<Vec<u8>, Error> {
        self.raw(key).ok_or(Error)
    }
}

struct Memory;

impl Store for Memory {
    fn raw(&self, _: &str) -> Option<Vec<u8>> {
        None
    }
}

fn main() {
    drop(Memory.get("k"));
}
