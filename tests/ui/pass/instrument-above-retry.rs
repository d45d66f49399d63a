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
    /// `#[instrument]` expands first: one span for the whole call, the retry loop inside it.
    #[tracing::instrument(skip(self), err(Debug), ret)]
    #[retry(clone(query))]
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
