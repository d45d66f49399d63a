use retry_runtime::Classify;

#[derive(Debug)]
struct Plain;

#[derive(Classify)]
enum Error {
    #[classify(delegate)]
    Inner(Plain),
}

fn main() {}
