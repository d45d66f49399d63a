use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Conn {
    sent: u32,
}

impl Conn {
    #[retry]
    async fn send(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        self.sent += 1;
        if bytes.is_empty() {
            return Err(Error);
        }
        Ok(bytes.len())
    }
}

fn main() {
    let mut c = Conn { sent: 0 };
    drop(c.send(b"x"));
}
