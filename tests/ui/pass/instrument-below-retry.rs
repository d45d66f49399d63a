use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Db {
    calls: u32,
}

impl Db {
    /// `#[retry]` expands first: the span is entered by each call, around the loop.
    #[retry(clone(query))]
    #[tracing::instrument(skip(self))]
    async fn run(&mut self, query: String) -> Result<usize, Error> {
        self.calls += 1;
        let q = query;
        Ok(q.len())
    }
}

fn main() {
    let mut db = Db { calls: 0 };
    drop(db.run(String::new()));
}
