//! `idempotency_key = true` makes a function that says `idempotent = false` idempotent, so it
//! may be hedged; `idempotency_key = false` beside `idempotent_if` decides nothing either way.
use retry_runtime::{retry, Classify, ErrorClass, Policy};
use std::time::Duration;

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(idempotent = false, idempotency_key = true, hedge_after = "50ms")]
async fn create_order(id: u32) -> Result<u32, Error> {
    Ok(id)
}

#[retry(idempotency_key = false, idempotent_if = id > 0)]
async fn update(id: u32) -> Result<u32, Error> {
    Ok(id)
}

static CREATE: Policy = Policy::new().idempotent(false).idempotency_key(true);

fn main() {
    drop(create_order(1));
    drop(update(1));
    let hedged = Policy::new()
        .idempotent(false)
        .idempotency_key(true)
        .hedge_after(Duration::from_millis(50));
    assert!(hedged.build().is_ok());
    let _ = &CREATE;
}
