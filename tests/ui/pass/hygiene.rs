use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// Every name the expansion uses, as the user's own: nothing clashes or shadows.
#[retry(idempotent_if = __retry_idempotent, clone(__retry_out))]
async fn names(
    __retry_call: u32,
    __retry_out: String,
    __retry_e: &str,
    __retry_idempotent: bool,
    __retry_ret: u8,
) -> Result<String, Error> {
    static __RETRY_SITE: u32 = 7;
    let __retry_call = __retry_call + __RETRY_SITE;
    Ok(format!("{__retry_call}{__retry_out}{__retry_e}{__retry_ret}"))
}

fn main() {
    drop(names(1, String::new(), "", true, 0));
}
