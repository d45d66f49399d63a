//! `#[retry]` on a plain `fn`: the same loop, blocking the thread between attempts. Schedules
//! are checked exactly through `testing::record_sync` (instant retries); the one test that
//! really sleeps asserts only a lower bound, which no machine can break.

use crate::util::{self, TestError};
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{ErrorClass, Partition, attempt, retry};
use std::cell::Cell;
use std::time::{Duration, Instant};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn instant() -> Overrides {
    Overrides::new().instant()
}

/// Fails with `class` until `fails` attempts have failed.
#[retry(max_attempts = 4, initial_backoff = "100ms", jitter = "none")]
fn flaky(fails: u32, class: ErrorClass, seen: &Cell<u32>) -> Result<u32, TestError> {
    let n = seen.get() + 1;
    seen.set(n);
    let a = attempt().expect("a blocking body runs inside its attempt");
    assert_eq!(
        (a.number(), a.max_attempts(), a.function()),
        (n, 4, "flaky")
    );
    if n <= fails {
        Err(TestError::fault(class))
    } else {
        Ok(n)
    }
}

#[test]
fn a_blocking_function_retries_on_the_same_schedule() {
    let seen = Cell::new(0);
    let (out, record) = testing::record_sync(instant(), || flaky(2, ErrorClass::Transient, &seen));
    assert_eq!(out, Ok(3));
    assert_eq!(record.delays(), [MS(100), MS(200)]);
    assert!(record.early_ends().is_empty());
}

#[retry(
    max_attempts = 4,
    initial_backoff = "1ms",
    partition = "blocking-shared"
)]
fn blocking_reader() -> Result<(), TestError> {
    Err(TestError::fault(ErrorClass::Timeout))
}

#[retry(
    max_attempts = 2,
    initial_backoff = "1ms",
    partition = "blocking-shared"
)]
async fn async_reader() -> Result<(), TestError> {
    Err(TestError::fault(ErrorClass::Transient))
}

#[test]
fn a_blocking_function_shares_its_partitions_bucket_with_async_ones() {
    let bucket = || Partition::named("blocking-shared").bucket().available();
    let (out, _) = testing::record_sync(instant(), blocking_reader);
    assert!(out.is_err());
    // Three retries of a timeout, 10 tokens each.
    assert_eq!(bucket(), 500 - 30);
    let rt = util::paused_runtime();
    let _ = rt.block_on(testing::scope(instant(), async_reader()));
    // One retry of a transient failure, 5 more, from the same bucket.
    assert_eq!(bucket(), 500 - 35);
}

#[test]
fn waits_really_block_the_thread() {
    #[retry(max_attempts = 3, initial_backoff = "20ms", jitter = "none")]
    fn slow_to_recover(seen: &Cell<u32>) -> Result<(), TestError> {
        seen.set(seen.get() + 1);
        if seen.get() < 3 {
            Err(TestError::fault(ErrorClass::Transient))
        } else {
            Ok(())
        }
    }
    let seen = Cell::new(0);
    let start = Instant::now();
    slow_to_recover(&seen).unwrap();
    // 20 ms, then 40 ms, slept on this thread: at least 60 ms, however fast the machine.
    assert!(start.elapsed() >= MS(60), "{:?}", start.elapsed());
    assert_eq!(seen.get(), 3);
}

#[test]
fn the_deadline_is_checked_between_attempts() {
    #[retry(
        max_attempts = 5,
        initial_backoff = "40ms",
        jitter = "none",
        deadline = "50ms"
    )]
    fn slow(seen: &Cell<u32>) -> Result<(), TestError> {
        seen.set(seen.get() + 1);
        std::thread::sleep(MS(20));
        Err(TestError::fault(ErrorClass::Transient))
    }
    let seen = Cell::new(0);
    let (out, record) = testing::record_sync(Overrides::new(), || slow(&seen));
    // 20 ms of attempt and 40 ms of backoff would end after the 50 ms deadline: the call
    // ends with the attempt's error instead of sleeping past it.
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    assert_eq!(seen.get(), 1);
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!((end.attempt, end.reason), (1, EarlyEnd::Deadline));
}

#[test]
fn a_blocking_function_that_is_not_idempotent_is_not_repeated() {
    #[retry(max_attempts = 5, idempotent = false)]
    fn pay(seen: &Cell<u32>, class: ErrorClass) -> Result<(), TestError> {
        seen.set(seen.get() + 1);
        Err(TestError::fault(class))
    }
    let seen = Cell::new(0);
    let (_, record) = testing::record_sync(instant(), || pay(&seen, ErrorClass::Transient));
    assert_eq!(seen.get(), 1);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::NotIdempotent);
    // A connection that was never made is safe to retry.
    let seen = Cell::new(0);
    let _ = testing::record_sync(instant(), || pay(&seen, ErrorClass::NotSent));
    assert_eq!(seen.get(), 5);
}

struct Store {
    reads: u32,
}

impl Store {
    #[retry(max_attempts = 3, initial_backoff = "1ms", jitter = "none", clone(key))]
    fn read(&mut self, key: String) -> Result<String, TestError> {
        self.reads += 1;
        let owned: String = key;
        if self.reads < 2 {
            return Err(TestError::fault(ErrorClass::Transient));
        }
        Ok(owned)
    }
}

#[test]
fn methods_borrow_self_mutably_and_owned_arguments_are_cloned_per_attempt() {
    let mut store = Store { reads: 0 };
    let (out, _) = testing::record_sync(instant(), || store.read("k".into()));
    assert_eq!(out, Ok("k".to_string()));
    assert_eq!(store.reads, 2);
}

#[test]
fn a_blocking_call_inside_a_runtime_runs_on_a_blocking_thread() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(async {
        tokio::task::spawn_blocking(|| {
            let seen = Cell::new(0);
            testing::sync_scope(instant(), || flaky(1, ErrorClass::Throttling, &seen))
        })
        .await
        .unwrap()
    });
    assert_eq!(out, Ok(2));
}
