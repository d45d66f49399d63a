use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[retry]
async fn join(parts: impl IntoIterator<Item = u8> + Clone, sep: impl AsRef<str>) -> Result<String, Error> {
    let joined: Vec<String> = parts.clone().into_iter().map(|p| p.to_string()).collect();
    Ok(joined.join(sep.as_ref()))
}

fn main() {
    drop(join([1, 2], ","));
}
