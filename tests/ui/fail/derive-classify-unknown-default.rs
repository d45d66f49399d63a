use retry_runtime::Classify;

#[derive(Classify)]
#[classify(default = permanant)]
enum Error {
    Unavailable,
}

fn main() {}
