use retry_runtime::{Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

pub mod api {
    use super::Error;
    use retry_runtime::retry;

    /// Documented.
    ///
    /// # Errors
    /// When the server keeps failing.
    #[must_use = "check the result"]
    #[retry(max_attempts = 2)]
    #[inline]
    #[allow(clippy::needless_pass_by_value)]
    #[cfg_attr(test, allow(dead_code))]
    pub async fn call(input: String) -> Result<usize, Error> {
        Ok(input.len())
    }

    #[retry]
    pub(crate) async fn internal() -> Result<(), Error> {
        Ok(())
    }
}

fn main() {
    let _ = api::call(String::new());
    let _ = api::internal();
}
