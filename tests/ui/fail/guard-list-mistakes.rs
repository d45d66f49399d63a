use retry_runtime::{retry, Admit, Guard, GuardContext, GuardOutcome, Refused};

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

/// Lets every attempt through.
struct Open;

impl Guard for Open {
    fn admit(&self, _: &GuardContext<'_>) -> Admit {
        Admit::Go
    }
    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
}

static A: Open = Open;

#[retry(guard = [])]
async fn empty() -> Result<(), Error> {
    Ok(())
}

#[retry(guard = [A, A])]
async fn twice() -> Result<(), Error> {
    Ok(())
}

#[retry(guard = [A, "b"])]
async fn not_a_path() -> Result<(), Error> {
    Ok(())
}

#[retry(guard = "A")]
async fn a_string() -> Result<(), Error> {
    Ok(())
}

fn main() {}
