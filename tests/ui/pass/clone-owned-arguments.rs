use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[derive(Clone)]
struct Body(Vec<u8>);

fn send(body: Body, headers: Vec<String>) -> Result<usize, Error> {
    Ok(body.0.len() + headers.len())
}

/// Consumed arguments are cloned for each attempt; a `mut` one stays mutable.
#[retry(clone(body, headers))]
async fn post(body: Body, mut headers: Vec<String>) -> Result<usize, Error> {
    headers.push(String::new());
    send(body, headers)
}

fn main() {
    drop(post(Body(Vec::new()), Vec::new()));
}
