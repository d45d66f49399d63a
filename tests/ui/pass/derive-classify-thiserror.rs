use retry_runtime::{Classify, ErrorClass, TimedOut, retry};

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("the store is unavailable")]
    #[classify(transient)]
    Unavailable,
    #[error("I/O")]
    #[classify(delegate)]
    Io(#[from] std::io::Error),
    #[error("parse")]
    #[classify(permanent)]
    Parse(#[from] std::num::ParseIntError),
    #[error("timed out")]
    #[classify(delegate)]
    TimedOut {
        #[from]
        source: TimedOut,
    },
    #[error("lost")]
    #[classify(delegate)]
    Lost {
        #[source]
        cause: std::io::Error,
    },
    #[error("at {at}")]
    #[classify(transient)]
    Context {
        #[source]
        cause: std::io::Error,
        at: &'static str,
    },
    #[error(transparent)]
    #[classify(delegate)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

#[retry(max_attempts = 3, deadline = "1s")]
async fn read(text: &str) -> Result<u32, Error> {
    let n: u32 = text.trim().parse()?;
    if n == 0 {
        Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))?;
    }
    Ok(n)
}

fn main() {
    drop(read("1"));
    assert_eq!(Error::Unavailable.classify(), ErrorClass::Transient);
}
