use retry_runtime::retry;

#[retry]
async fn call() -> (u32, bool) {
    (3, true)
}

fn main() {}
