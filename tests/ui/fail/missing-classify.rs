use retry_runtime::retry;

#[derive(Debug)]
struct Error;

#[retry(max_attempts = 3)]
async fn call() -> Result<(), Error> {
    Err(Error)
}

fn main() {}
