use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use std::sync::Arc;

struct Service {
    name: String,
}

impl Service {
    #[retry(deadline = "5s", retry_on = always)]
    async fn call(self: Arc<Self>, n: u32) -> std::io::Result<String> {
        let me = Arc::clone(&self);
        Ok(format!("{} {n}", me.name))
    }
}

fn always(_: &std::io::Error) -> bool {
    true
}

fn main() {
    let s = Arc::new(Service { name: String::new() });
    drop(s.call(1));
}
