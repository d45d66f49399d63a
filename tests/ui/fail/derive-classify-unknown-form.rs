use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    #[classify = "transient"]
    Unavailable,
}

fn main() {}
