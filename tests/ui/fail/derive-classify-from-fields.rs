use retry_runtime::Classify;

// `from(...)` converts into the one field `delegate` classifies by: without exactly one, the
// `delegate` is the mistake, reported once, and no conversion is written.
#[derive(Debug, Classify)]
enum ApiError {
    #[classify(delegate, from(retry_runtime::TimedOut))]
    Pair(retry_runtime::reqwest::Error, u16),
    #[classify(delegate, from(reqwest::Error))]
    Nothing,
}

fn main() {}
