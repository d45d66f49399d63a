//! A plain `fn` (the blocking form) that does not return a `Result`.
use retry_runtime::retry;

#[retry(max_attempts = 3)]
fn first_free(slots: &[u8]) -> Option<std::num::NonZeroUsize> {
    std::num::NonZeroUsize::new(slots.len())
}

fn main() {}
