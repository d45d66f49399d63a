//! An error type without `Classify` behind a return type the loop infers (`impl Trait` in it):
//! the same one error at the return type.
use retry_runtime::retry;

#[derive(Debug)]
struct Error;

#[retry]
async fn call() -> Result<impl std::fmt::Display, Error> {
    Ok(3)
}

fn main() {}
