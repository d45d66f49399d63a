use retry_runtime::Classify;

#[derive(Debug, Classify)]
#[classify(from(TimedOut))]
enum OnTheEnum {
    #[classify(delegate)]
    Http(retry_runtime::reqwest::Error),
}

#[derive(Debug, Classify)]
enum Forms {
    #[classify(delegate, from)]
    Bare(retry_runtime::reqwest::Error),
    #[classify(delegate, from = TimedOut)]
    Valued(retry_runtime::reqwest::Error),
    #[classify(delegate, from[TimedOut])]
    Brackets(retry_runtime::reqwest::Error),
    #[classify(delegate, from())]
    Empty(retry_runtime::reqwest::Error),
    #[classify(delegate, from(1))]
    NotAType(retry_runtime::reqwest::Error),
    #[classify(delegate, from(reqwest::Error TimedOut))]
    NoComma(retry_runtime::reqwest::Error),
    #[classify(delegate, frm(TimedOut))]
    Misspelt(retry_runtime::reqwest::Error),
    #[classify(delegate, allow)]
    AllowBare(retry_runtime::reqwest::Error),
    #[classify(delegate, allow())]
    AllowEmpty(retry_runtime::reqwest::Error),
}

fn main() {}
