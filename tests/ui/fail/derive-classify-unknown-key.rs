use retry_runtime::Classify;

#[derive(Classify)]
#[classify(defualt = permanent)]
enum Error {
    Unavailable,
}

fn main() {}
