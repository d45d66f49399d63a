// A plain `fn` is retried with the same loop, blocking its thread between attempts.
use retry_runtime::{retry, Classify, ErrorClass, TimedOut};

#[derive(Debug)]
enum Error {
    Busy,
    TimedOut,
}

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

struct Store {
    reads: u32,
}

impl Store {
    #[retry(max_attempts = 3, initial_backoff = "1ms", deadline = "1s")]
    fn read(&mut self, key: &str) -> Result<usize, Error> {
        self.reads += 1;
        if key.is_empty() {
            return Err(Error::Busy);
        }
        Ok(key.len())
    }
}

#[retry(clone(name), idempotent = false, partition = "blocking")]
fn create(name: String) -> std::io::Result<String> {
    let owned: String = name;
    Ok(owned)
}

fn main() {
    let mut s = Store { reads: 0 };
    assert_eq!(s.read("abc").unwrap(), 3);
    assert!(matches!(s.read(""), Err(Error::Busy) | Err(Error::TimedOut)));
    assert_eq!(create("x".into()).unwrap(), "x");
}
