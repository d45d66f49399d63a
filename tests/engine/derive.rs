//! `#[derive(Classify)]` as the loop sees it: each variant's class, the default of the bare ones,
//! a wrapped error's class and server hint through `delegate` (a `retry_runtime::reqwest::Error`
//! made from a response with `Retry-After`), and a `#[retry]` function whose error enum derives
//! `Classify` beside `thiserror::Error`, on the paused clock.

use crate::util::TestError;
use retry_runtime::reqwest::{Error as HttpError, error_for_status};
use retry_runtime::{Classify, ErrorClass, TimedOut, TimeoutKind, retry};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Debug, thiserror::Error, Classify)]
#[classify(default = permanent)]
enum StoreError {
    #[error("the store is unavailable")]
    #[classify(transient)]
    Unavailable,
    #[error("{queue} requests ahead")]
    #[classify(throttling)]
    Busy { queue: usize },
    #[error("no answer in {0:?}")]
    #[classify(timeout)]
    Slow(Duration),
    #[error("connection refused")]
    #[classify(not_sent)]
    Refused,
    #[error("access denied")]
    #[classify(permanent)]
    Denied,
    #[error(transparent)]
    #[classify(delegate)]
    Http(#[from] HttpError),
    #[error(transparent)]
    #[classify(delegate)]
    TimedOut(#[from] TimedOut),
    #[error("no such key: {0}")]
    NotFound(String),
    #[error("the key {key:?} is not valid")]
    Invalid { key: String },
}

/// The error an error response becomes, headers (and so the server's hint) kept.
fn http(status: u16, retry_after: Option<&str>) -> StoreError {
    let mut response = http::Response::builder().status(status);
    if let Some(value) = retry_after {
        response = response.header("retry-after", value);
    }
    let response = reqwest::Response::from(response.body(Vec::<u8>::new()).unwrap());
    error_for_status(response).unwrap_err().into()
}

#[test]
fn each_variant_has_its_class_and_no_hint() {
    let table = [
        (StoreError::Unavailable, ErrorClass::Transient),
        (StoreError::Busy { queue: 9 }, ErrorClass::Throttling),
        (StoreError::Slow(MS(300)), ErrorClass::Timeout),
        (StoreError::Refused, ErrorClass::NotSent),
        (StoreError::Denied, ErrorClass::Permanent),
    ];
    for (error, class) in table {
        assert_eq!(error.classify(), class, "{error:?}");
        assert_eq!(error.retry_after(), None, "{error:?}");
    }
}

#[test]
fn the_default_covers_the_bare_variants() {
    for error in [
        StoreError::NotFound("a".into()),
        StoreError::Invalid { key: "b".into() },
    ] {
        assert_eq!(error.classify(), ErrorClass::Permanent, "{error:?}");
        assert_eq!(error.retry_after(), None, "{error:?}");
    }
}

#[test]
fn a_delegated_variant_has_the_class_and_the_hint_of_what_it_wraps() {
    let unavailable = http(503, Some("2"));
    assert_eq!(unavailable.classify(), ErrorClass::Transient);
    assert_eq!(unavailable.retry_after(), Some(Duration::from_secs(2)));

    let throttled = http(429, Some("7"));
    assert_eq!(throttled.classify(), ErrorClass::Throttling);
    assert_eq!(throttled.retry_after(), Some(Duration::from_secs(7)));

    let missing = http(404, None);
    assert_eq!(missing.classify(), ErrorClass::Permanent);
    assert_eq!(missing.retry_after(), None);

    // The same as the wrapped error's own, which is what the loop would see without the enum.
    let StoreError::Http(inner) = &unavailable else {
        panic!("{unavailable:?}")
    };
    assert_eq!(inner.retry_after(), unavailable.retry_after());
}

/// A struct classified by its one field, and a generic one: the field's hint is theirs.
#[test]
fn structs_delegate_too() {
    #[derive(Debug, Classify)]
    #[classify(delegate)]
    struct Wrapped<E> {
        inner: E,
    }

    #[derive(Debug, Classify)]
    #[classify(throttling)]
    struct SlowDown;

    let hinted = Wrapped {
        inner: TestError::Fault(ErrorClass::Throttling, Some(MS(1500))),
    };
    assert_eq!(hinted.classify(), ErrorClass::Throttling);
    assert_eq!(hinted.retry_after(), Some(MS(1500)));
    let nested = Wrapped { inner: hinted };
    assert_eq!(nested.retry_after(), Some(MS(1500)));
    assert_eq!(SlowDown.classify(), ErrorClass::Throttling);
    assert_eq!(SlowDown.retry_after(), None);
}

/// The outcomes of a function's attempts, in order, and when each attempt started.
struct Plan {
    outcomes: Mutex<VecDeque<Option<StoreError>>>,
    t0: Instant,
    starts: Mutex<Vec<u64>>,
}

impl Plan {
    /// `None` is an attempt that never answers.
    fn new(outcomes: impl IntoIterator<Item = Option<StoreError>>) -> Plan {
        Plan {
            outcomes: Mutex::new(outcomes.into_iter().collect()),
            t0: Instant::now(),
            starts: Mutex::new(Vec::new()),
        }
    }

    /// Plays the next outcome; once they are used up, succeeds with the attempt's number.
    async fn attempt(&self) -> Result<usize, StoreError> {
        let n = {
            let mut starts = self.starts.lock().unwrap();
            starts.push(u64::try_from(self.t0.elapsed().as_millis()).unwrap());
            starts.len()
        };
        let next = self.outcomes.lock().unwrap().pop_front();
        match next {
            None => Ok(n),
            Some(Some(error)) => Err(error),
            Some(None) => std::future::pending().await,
        }
    }

    fn starts_ms(&self) -> Vec<u64> {
        self.starts.lock().unwrap().clone()
    }
}

#[retry(
    max_attempts = 5,
    initial_backoff = "100ms",
    jitter = "none",
    max_backoff = "5s",
    attempt_timeout = "1s"
)]
async fn get(plan: &Plan) -> Result<usize, StoreError> {
    plan.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_delegated_hint_is_the_delay_and_the_other_variants_back_off() {
    let plan = Plan::new([
        Some(http(503, Some("3"))),          // attempt 1: the server's 3 s
        Some(StoreError::Busy { queue: 4 }), // attempt 2: backoff 100 ms x 2
        Some(http(429, Some("1"))),          // attempt 3: the server's 1 s
        None,                                // attempt 4: cut off after 1 s, backoff 800 ms
    ]);
    assert_eq!(get(&plan).await.unwrap(), 5);
    assert_eq!(plan.starts_ms(), [0, 3000, 3200, 4200, 6000]);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_converted_by_thiserror_is_classified_through_delegate() {
    let plan = Plan::new([None, None, None, None, None]);
    let error = get(&plan).await.unwrap_err();
    // Each attempt cut off after 1 s, then 100, 200, 400, 800 ms of backoff.
    assert_eq!(plan.starts_ms(), [0, 1100, 2300, 3700, 5500]);
    let StoreError::TimedOut(t) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(t.kind(), TimeoutKind::Attempt);
    assert_eq!(t.attempt(), 5);
    assert_eq!(error.classify(), ErrorClass::Timeout);
}

#[tokio::test(start_paused = true)]
async fn the_default_class_is_not_retried_and_a_long_delegated_hint_ends_the_retries() {
    let plan = Plan::new([Some(StoreError::NotFound("k".into()))]);
    assert!(matches!(get(&plan).await, Err(StoreError::NotFound(_))));
    assert_eq!(plan.starts_ms(), [0]);

    let plan = Plan::new([Some(http(503, Some("6")))]);
    let error = get(&plan).await.unwrap_err();
    assert_eq!(plan.starts_ms(), [0], "a 6 s hint is over max_backoff");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(6)));
}
