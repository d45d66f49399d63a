use retry_runtime::{retry, Admit, Classify, ErrorClass, Guard, GuardContext, GuardOutcome};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
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

static OPEN: Open = Open;

#[retry(guard = OPEN)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
