use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[derive(Default)]
struct Page {
    next: Option<u32>,
}

impl Page {
    fn empty() -> Self {
        Self::default()
    }

    #[retry]
    async fn fetch(&self, n: u32) -> Result<Self, Error> {
        if n == 0 {
            return Ok(Self::empty());
        }
        let next = self.next.ok_or(Error)?;
        Ok(Self { next: Some(next + n) })
    }
}

fn main() {
    drop(Page::empty().fetch(1));
}
