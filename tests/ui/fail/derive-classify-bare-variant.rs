use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    #[classify(transient)]
    Unavailable,
    NotFound(String),
}

fn main() {}
