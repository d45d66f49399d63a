use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry(jitter = "ful")]
async fn jitter() -> Result<(), Error> {
    Ok(())
}

#[retry(mode = "standrd")]
async fn mode() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "p955")]
async fn percentile_typo() -> Result<(), Error> {
    Ok(())
}

#[retry(hedge_after = "95th")]
async fn percentile_written_another_way() -> Result<(), Error> {
    Ok(())
}

fn main() {}
