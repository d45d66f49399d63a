use retry_runtime::{retry, Refused};

#[derive(Debug)]
struct Error;

impl retry_runtime::Classify for Error {
    fn classify(&self) -> retry_runtime::ErrorClass {
        retry_runtime::ErrorClass::Transient
    }
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

/// A limit, not a guard: `guard` takes a protection.
static MAX_IN_FLIGHT: u32 = 8;

#[retry(guard = MAX_IN_FLIGHT)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
