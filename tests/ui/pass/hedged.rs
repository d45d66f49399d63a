use retry_runtime::{retry, Classify, ErrorClass, TimedOut};
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error
    }
}

struct Store {
    reads: AtomicU32,
}

impl Store {
    // Shared borrows of `self` and of the arguments: attempts run side by side.
    #[retry(hedge_after = "p95", min_hedge_after = "2ms", max_hedge_after = "200ms", deadline = "2s")]
    async fn get(&self, key: &str) -> Result<usize, Error> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(key.len())
    }

    // An owned argument the body consumes: each attempt clones its own.
    #[retry(hedge_after = "20ms", max_in_flight = 3, max_attempts = 4, hedge_budget = "2%", clone(body))]
    async fn put(&self, body: String) -> Result<usize, Error> {
        let body: String = body;
        Ok(body.len())
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let store = Store {
        reads: AtomicU32::new(0),
    };
    assert_eq!(rt.block_on(store.get("key")).unwrap(), 3);
    assert_eq!(rt.block_on(store.put("body".to_owned())).unwrap(), 4);
}
