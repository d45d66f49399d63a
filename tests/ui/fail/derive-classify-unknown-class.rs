use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    #[classify(transent)]
    Unavailable,
}

fn main() {}
