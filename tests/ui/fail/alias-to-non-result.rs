use retry_runtime::retry;

/// Through an alias, only the type system can tell that the return type is not a `Result`.
type Count = u32;

#[retry]
async fn call() -> Count {
    3
}

fn main() {}
