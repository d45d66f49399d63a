use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    #[classify(delegate)]
    Unavailable,
}

fn main() {}
