use retry_runtime::retry;
use std::io;

/// `io::Result<T>`: the loop finds `T` and `io::Error` through the type system.
#[retry(attempt_timeout = "2s")]
async fn read(path: &str) -> io::Result<Vec<u8>> {
    if path.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    Ok(Vec::new())
}

fn main() {
    drop(read("x"));
}
