use retry_runtime::Policy;

#[derive(Debug)]
struct ApiError {
    status: u16,
}

fn main() {
    let api = Policy::new()
        .classify(|e: &ApiError| e.status >= 500)
        .breaker("50%");
    let _ = api;
}
