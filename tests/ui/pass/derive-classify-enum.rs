use retry_runtime::{Classify, ErrorClass, TimedOut, retry};
use std::time::Duration;

// Every class, every shape of variant, a delegated tuple field and a delegated named field, the
// default for the bare variants, and the derive named by its path.
#[derive(Debug, retry_runtime::Classify)]
#[classify(default = permanent)]
enum Error {
    #[classify(transient)]
    Unavailable,
    #[classify(throttling)]
    Busy(u32, u32),
    #[classify(timeout)]
    Slow { after: Duration },
    #[classify(not_sent)]
    Refused { addr: String, port: u16 },
    #[classify(permanent)]
    Denied,
    #[classify(delegate)]
    Io(std::io::Error),
    #[classify(delegate)]
    TimedOut { cause: TimedOut },
    NotFound(String),
    Invalid,
}

impl From<TimedOut> for Error {
    fn from(cause: TimedOut) -> Self {
        Error::TimedOut { cause }
    }
}

#[retry(max_attempts = 2, attempt_timeout = "1s")]
async fn call() -> Result<(), Error> {
    Err(Error::Unavailable)
}

// `use retry_runtime::Classify` brings the trait and the derive.
#[derive(Classify)]
enum Bare {
    #[classify(transient)]
    Only,
}

// No variant, nothing to classify.
#[derive(Classify)]
enum Never {}

fn takes(_: &impl Classify) {}

fn main() {
    drop(call());
    assert_eq!(Error::Busy(1, 2).classify(), ErrorClass::Throttling);
    assert_eq!(Error::Invalid.retry_after(), None);
    takes(&Bare::Only);
    let _ = |never: Never| never.classify();
}
