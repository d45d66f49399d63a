use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use std::sync::Arc;

struct Client;

impl Client {
    #[retry(attempt_timeout = "1s", deadline = "3s", retry_on = always)]
    async fn get(self: Arc<Self>, key: String) -> std::io::Result<usize> {
        tokio::task::yield_now().await;
        Ok(key.len())
    }
}

fn always(_: &std::io::Error) -> bool {
    true
}

fn assert_send<F: std::future::Future + Send + 'static>(f: F) -> F {
    f
}

fn main() {
    drop(assert_send(Arc::new(Client).get(String::new())));
}
