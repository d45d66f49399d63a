use retry_runtime::{Classify, retry};

#[derive(Debug, Classify)]
enum Error {
    #[classify(transent)]
    Unavailable,
    #[classify(delegate)]
    Pair(u8, u8),
    Bare,
    #[classify(timeout, throttling)]
    Twice,
}

// The derive still implements `Classify`: the function's use of it is not an error of its own.
#[retry(max_attempts = 2)]
async fn call() -> Result<(), Error> {
    Err(Error::Bare)
}

fn main() {
    drop(call());
}
