use retry_runtime::{Admit, Classify, ErrorClass, Guard, GuardContext, GuardOutcome, Policy};

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

async fn fetch() -> Result<u32, Error> {
    Err(Error)
}

async fn call() -> Result<u32, Error> {
    let policy = Policy::new().guard(&OPEN);
    policy.retry(|| fetch()).await
}

fn main() {}
