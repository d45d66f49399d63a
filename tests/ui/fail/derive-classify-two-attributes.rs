use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    #[classify(transient)]
    #[classify(permanent)]
    Unavailable,
}

fn main() {}
