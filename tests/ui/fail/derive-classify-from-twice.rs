use retry_runtime::{Classify, TimedOut};

#[derive(Debug, thiserror::Error, Classify)]
enum ApiError {
    #[error(transparent)]
    #[classify(delegate, from(reqwest::Error, TimedOut, reqwest::Error))]
    Http(retry_runtime::reqwest::Error),
    #[error(transparent)]
    #[classify(delegate, from(TimedOut))]
    Late(retry_runtime::reqwest::Error),
    #[error(transparent)]
    #[classify(delegate, from(std::io::Error))]
    Other(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    #[classify(delegate)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    #[classify(delegate, from(retry_runtime::reqwest::Error))]
    Runtime(#[from] retry_runtime::reqwest::Error),
    #[error("itself")]
    #[classify(delegate, from(Self, ApiError))]
    Boxed(Box<ApiError>),
}

// The impls of the types listed once are still written.
fn converts<E: From<reqwest::Error> + From<TimedOut>>() {}

fn main() {
    converts::<ApiError>();
}
