//! Timer fidelity on the real clock: how late a scheduled retry starts. A `#[retry]` function
//! fails once and is retried after a fixed 10 ms backoff (no jitter); the overshoot is the time
//! from the end of attempt 1 to the start of attempt 2, minus 10 ms. The floor is a plain
//! `tokio::time::sleep(10 ms)` timed the same way, since tokio's timer (1 ms ticks) and the
//! machine's scheduler set the floor for any tokio-based retry loop.
//!
//! ```text
//! cargo bench -p retry-benches --bench timer              # 300 samples of each
//! SAMPLES=1000 cargo bench -p retry-benches --bench timer
//! ```

use retry_runtime::{Classify, ErrorClass, retry};
use std::cell::Cell;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

thread_local! {
    static FAILED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
    static RETRIED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

#[retry(max_attempts = 2, initial_backoff = "10ms", jitter = "none")]
async fn once_flaky(tries: &Cell<u32>) -> Result<(), Error> {
    tries.set(tries.get() + 1);
    if tries.get() == 1 {
        FAILED_AT.with(|t| t.set(Some(Instant::now())));
        Err(Error)
    } else {
        RETRIED_AT.with(|t| t.set(Some(Instant::now())));
        Ok(())
    }
}

const DELAY: Duration = Duration::from_millis(10);

fn overshoots(samples: usize, mut one: impl FnMut() -> Duration) -> Vec<Duration> {
    let mut v: Vec<Duration> = (0..samples).map(|_| one().saturating_sub(DELAY)).collect();
    v.sort();
    v
}

fn line(name: &str, v: &[Duration]) {
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<14} median {:>9.3?}  p90 {:>9.3?}  p99 {:>9.3?}  max {:>9.3?}  ({} samples)",
        at(0.5),
        at(0.9),
        at(0.99),
        v[v.len() - 1],
        v.len()
    );
}

fn main() {
    let samples: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    // Interleave the two, so that load on the machine falls on both alike.
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        ours.extend(overshoots(1, || {
            rt.block_on(async {
                let tries = Cell::new(0);
                once_flaky(&tries).await.expect("the retry succeeds");
            });
            let failed = FAILED_AT.with(Cell::get).unwrap();
            let retried = RETRIED_AT.with(Cell::get).unwrap();
            retried - failed
        }));
        floor.extend(overshoots(1, || {
            rt.block_on(async {
                let start = Instant::now();
                tokio::time::sleep(DELAY).await;
                start.elapsed()
            })
        }));
    }
    ours.sort();
    floor.sort();
    println!("overshoot of a 10 ms delay on the real clock (current-thread runtime)");
    line("retry", &ours);
    line("tokio sleep", &floor);
}
