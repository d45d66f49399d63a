use retry_runtime::{Admit, Guard, GuardContext, GuardOutcome, Policy};

#[derive(Debug)]
struct ApiError {
    status: u16,
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

static API: Policy<fn(&ApiError) -> bool> = Policy::new()
    .guard(&OPEN)
    .classify(|e| e.status >= 500);

fn main() {
    let _ = &API;
}
