use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

use std::fmt::Debug;

#[retry(max_attempts = 2)]
async fn find<'a, T: PartialEq + Debug, K, const N: usize>(items: &'a [T; N], key: K) -> Result<&'a T, Error>
where
    K: Into<T> + Clone,
    T: Sync,
{
    let key: T = key.clone().into();
    items.iter().find(|t| **t == key).ok_or(Error)
}

fn main() {
    drop(find(&[1u64, 2], 2u32));
}
