use retry_runtime::Classify;

#[derive(Classify)]
#[classify(default = delegate)]
enum Error {
    Io(std::io::Error),
}

fn main() {}
