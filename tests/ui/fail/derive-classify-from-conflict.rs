use retry_runtime::{Classify, ErrorClass, TimedOut};

/// The wrapped error: it converts from `TimedOut`, not from `ParseIntError`.
#[derive(Debug)]
struct Wire;

impl Classify for Wire {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Wire {
    fn from(_: TimedOut) -> Self {
        Wire
    }
}

#[derive(Debug, Classify)]
enum ApiError {
    // `Wire` has no `From<ParseIntError>`; and a `From<TimedOut>` is written by hand below, which the
    // derive does not see: rustc reports both on the type listed.
    #[classify(delegate, from(std::num::ParseIntError, retry_runtime::TimedOut))]
    Wire(Wire),
}

impl From<TimedOut> for ApiError {
    fn from(t: TimedOut) -> Self {
        Self::Wire(t.into())
    }
}

fn main() {}
