use retry_runtime::Classify;

#[derive(Classify)]
#[classify(delegate)]
struct Error {
    io: std::io::Error,
    path: String,
}

fn main() {}
