use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(max_in_flight = 3, max_hedge_after = "1s")]
async fn a() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "50ms", max_in_flight = 1, min_hedge_after = "5ms")]
async fn b() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "p95", max_attempts = 2, max_in_flight = 3, min_hedge_after = "1s", max_hedge_after = "10ms")]
async fn c() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_budget = "2%")]
async fn d() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "p95", hedge_budget = 2)]
async fn e() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "p95", hedge_budget = "0%")]
async fn f() -> Result<(), Error> {
    Ok(())
}

fn main() {}
