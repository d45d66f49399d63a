//! What `#[retry]` reports through the `metrics` facade: a recorder (here `metrics-util`'s
//! debugging recorder; in production a Prometheus or OpenTelemetry exporter) installed before
//! the first call, a function that fails twice and then succeeds, and every counter and gauge
//! it left, printed.
//!
//! ```text
//! cargo run -p retry-runtime --example metrics --features metrics
//! ```

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::{ErrorClass, retry};
use std::sync::atomic::{AtomicU32, Ordering};

static CALLS: AtomicU32 = AtomicU32::new(0);

#[retry(max_attempts = 3, initial_backoff = "10ms", partition = "inventory")]
async fn reserve(item: u32) -> Result<u32, ErrorClass> {
    if CALLS.fetch_add(1, Ordering::Relaxed) < 2 {
        Err(ErrorClass::Transient)
    } else {
        Ok(item)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the first recorder of the process");

    let item = reserve(7).await.expect("the third attempt succeeds");
    println!(
        "reserved item {item} after {} attempts",
        CALLS.load(Ordering::Relaxed)
    );

    let mut lines: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={:?}", l.key(), l.value()))
                .collect();
            let value = match value {
                DebugValue::Counter(n) => n.to_string(),
                DebugValue::Gauge(g) => g.into_inner().to_string(),
                DebugValue::Histogram(h) => format!("{} samples", h.len()),
            };
            format!("{} {{{}}} {value}", key.key().name(), labels.join(", "))
        })
        .filter(|line| !line.ends_with(" 0"))
        .collect();
    lines.sort();
    for line in lines {
        println!("{line}");
    }
}
