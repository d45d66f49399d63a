use retry_runtime::Classify;

#[derive(Classify)]
enum Error {
    Io(#[classify(delegate)] std::io::Error),
}

fn main() {}
