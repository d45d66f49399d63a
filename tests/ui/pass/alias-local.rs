use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

type Res<T> = std::result::Result<T, Error>;

mod shadow {
    /// A user type called `Result` does not confuse the macro: the type system decides.
    pub type Result<T> = std::result::Result<T, super::Error>;
}

#[retry]
async fn one() -> Res<u32> {
    Ok(1)
}

#[retry]
async fn two() -> shadow::Result<u32> {
    Ok(2)
}

fn main() {
    drop(one());
    drop(two());
}
