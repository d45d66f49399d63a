use retry_runtime::{Classify, TimedOut};

#[derive(Debug, Classify)]
#[classify(default = permanent)]
enum ApiError {
    #[classify(timeout, from(TimedOut))]
    Late(TimedOut),
    #[classify(from(std::num::ParseIntError))]
    Parse(std::num::ParseIntError),
    #[classify(transient, allow(hint_lost))]
    Http(reqwest::Error),
}

#[derive(Debug, Classify)]
#[classify(permanent, from(std::io::Error))]
struct Wrapped(std::io::Error);

fn main() {}
