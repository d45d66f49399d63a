use retry_runtime::Classify;

// A `delegate` over reqwest's own error is warned about where the type is written; one that
// holds the runtime's error, or that allows it, is not.
#[derive(Debug, Classify)]
enum ApiError {
    #[classify(delegate)]
    Http(reqwest::Error),
    #[classify(delegate)]
    Rooted { error: ::reqwest::Error },
    #[classify(delegate, allow(hint_lost))]
    Known(reqwest::Error),
    #[classify(delegate)]
    Kept(retry_runtime::reqwest::Error),
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Wrapped(reqwest::Error);

// Misspelt, the allowance is an error of its own, and silences nothing.
#[derive(Debug, Classify)]
enum Misspelt {
    #[classify(delegate, allow(hint_lots))]
    Http(reqwest::Error),
}

fn main() {}
