use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use std::fmt::Display;

#[retry]
async fn render(n: u32) -> Result<impl Display, Error> {
    Ok(format!("#{n}"))
}

#[retry]
async fn digits(n: u32) -> Result<(impl Iterator<Item = u32>, Vec<impl Display>), Error> {
    Ok((0..n, vec![n]))
}

fn main() {
    drop(render(1));
    drop(digits(3));
}
