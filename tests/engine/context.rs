//! The attempt as the body sees it (`retry_runtime::attempt()`), on tokio's paused clock: its
//! number and limits, the time it has left, the call's invocation id (also in `on_retry`, the
//! tracing events and a test scope's record), and what happens when a `#[retry]` function is
//! called inside another's attempt: the inner call's deadline is clamped to the outer
//! attempt's cutoff, it reports depth 2, and retrying the same failure at both levels
//! multiplies the requests (one WARN per function says so).

use crate::capture::Capture;
use crate::util::{self, TestError};
use retry_runtime::testing::{self, Overrides};
use retry_runtime::{Attempt, ErrorClass, RetryEvent, attempt, retry};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::{Instant, sleep};
use tracing::Level;

const TRANSIENT: TestError = TestError::fault(ErrorClass::Transient);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What each attempt saw of itself, in order, with the time it had left when it looked.
#[derive(Default)]
struct Seen(Mutex<Vec<(Attempt, Option<Duration>)>>);

impl Seen {
    /// Records the current attempt (panics outside a `#[retry]` body).
    fn now(&self) -> Attempt {
        let a = attempt().expect("inside a #[retry] body");
        self.0.lock().unwrap().push((a, a.time_left()));
        a
    }

    fn all(&self) -> Vec<Attempt> {
        self.0.lock().unwrap().iter().map(|(a, _)| *a).collect()
    }

    fn time_left(&self) -> Vec<Option<Duration>> {
        self.0.lock().unwrap().iter().map(|(_, t)| *t).collect()
    }

    fn numbers(&self) -> Vec<u32> {
        self.all().iter().map(Attempt::number).collect()
    }
}

/// Fails until the third attempt.
#[retry(
    max_attempts = 3,
    initial_backoff = "10ms",
    jitter = "none",
    partition = "context-orders"
)]
async fn third_time_lucky(seen: &Seen) -> Result<u32, TestError> {
    let a = seen.now();
    if a.number() < 3 {
        Err(TRANSIENT)
    } else {
        Ok(a.number())
    }
}

#[tokio::test(start_paused = true)]
async fn each_attempt_sees_its_number_and_the_calls_identity() {
    let seen = Seen::default();
    assert_eq!(third_time_lucky(&seen).await, Ok(3));
    assert_eq!(seen.numbers(), [1, 2, 3]);
    let first = seen.all()[0];
    for a in seen.all() {
        assert_eq!(a.max_attempts(), 3);
        assert_eq!(a.function(), "third_time_lucky");
        assert_eq!(a.partition(), Some("context-orders"));
        assert_eq!(a.depth(), 1);
        assert_eq!(a.invocation_id(), first.invocation_id(), "one id per call");
        // Nothing cuts these attempts off.
        assert_eq!(
            (a.cutoff(), a.time_left(), a.deadline()),
            (None, None, None)
        );
        assert_eq!(
            a.amz_sdk_request(),
            format!("attempt={}; max=3", a.number())
        );
    }
    assert!(!first.is_retry() && seen.all()[2].is_retry());

    let again = Seen::default();
    assert_eq!(third_time_lucky(&again).await, Ok(3));
    assert_ne!(
        again.all()[0].invocation_id(),
        first.invocation_id(),
        "a new id for each call"
    );

    let id = first.invocation_id().to_string();
    assert!(util::is_uuid_v4(&id), "{id}");
}

#[tokio::test(start_paused = true)]
async fn outside_an_attempt_there_is_none() {
    assert!(attempt().is_none(), "not inside any #[retry] body");

    #[retry(max_attempts = 2, initial_backoff = "10ms", on_retry = hook)]
    async fn spawns() -> Result<(bool, bool), TestError> {
        let inside = attempt().is_some();
        // A task spawned from the body is not the attempt: it sees nothing.
        let spawned = tokio::spawn(async { attempt().is_some() }).await.unwrap();
        Ok((inside, spawned))
    }
    fn hook(_: &RetryEvent<'_, TestError>) {}

    assert_eq!(spawns().await, Ok((true, false)));
    assert!(
        attempt().is_none(),
        "nothing is left published after the call"
    );
}

#[tokio::test(start_paused = true)]
async fn max_attempts_is_what_this_call_resolved() {
    let seen = Seen::default();
    let out = testing::scope(Overrides::new().max_attempts(2), third_time_lucky(&seen)).await;
    assert_eq!(out, Err(TRANSIENT));
    assert_eq!(seen.numbers(), [1, 2]);
    assert!(seen.all().iter().all(|a| a.max_attempts() == 2));
}

/// Attempts that fail at once, 1.5 s apart, under a 2 s attempt timeout and a 5 s deadline.
#[retry(
    max_attempts = 4,
    attempt_timeout = "2s",
    deadline = "5s",
    initial_backoff = "1500ms",
    max_backoff = "1500ms",
    jitter = "none"
)]
async fn against_the_deadline(seen: &Seen) -> Result<(), TestError> {
    seen.now();
    Err(TRANSIENT)
}

#[tokio::test(start_paused = true)]
async fn time_left_is_the_attempt_timeout_until_the_deadline_is_closer() {
    // `Attempt`'s instants are on `std`'s clock, where tokio's paused one places them.
    let start = Instant::now().into_std();
    let seen = Seen::default();
    assert_eq!(against_the_deadline(&seen).await, Err(TRANSIENT));
    let s = |ms: u64| start + Duration::from_millis(ms);
    let all = seen.all();
    assert_eq!(seen.numbers(), [1, 2, 3, 4]);
    assert_eq!(
        all.iter().map(|a| a.cutoff().unwrap()).collect::<Vec<_>>(),
        // Each attempt's own 2 s, until the deadline at 5 s comes first.
        [s(2000), s(3500), s(5000), s(5000)]
    );
    assert_eq!(
        seen.time_left(),
        // Read at the start of attempts starting at 0, 1.5, 3 and 4.5 s.
        [ms(2000), ms(2000), ms(2000), ms(500)].map(Some)
    );
    // A snapshot's time left is counted from whenever it is asked: now, all spent.
    assert_eq!(all[0].time_left(), Some(Duration::ZERO));
    assert!(all.iter().all(|a| a.deadline() == Some(s(5000))));
    // The header's `ttl` is a wall-clock time, which Miri's isolation does not give.
    if cfg!(not(miri)) {
        assert!(all[3].amz_sdk_request().starts_with("ttl="));
        assert!(all[3].amz_sdk_request().ends_with("; attempt=4; max=4"));
    }
}

#[tokio::test(start_paused = true)]
async fn time_left_counts_down_within_an_attempt() {
    #[retry(attempt_timeout = "2s")]
    async fn slow() -> Result<(Duration, Duration), TestError> {
        let before = attempt().unwrap().time_left().unwrap();
        sleep(ms(500)).await;
        Ok((before, attempt().unwrap().time_left().unwrap()))
    }
    assert_eq!(slow().await, Ok((ms(2000), ms(1500))));
}

#[tokio::test(start_paused = true)]
async fn the_hook_the_events_and_the_record_carry_the_bodys_invocation_id() {
    static HOOKED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    fn hook(e: &RetryEvent<'_, TestError>) {
        HOOKED.lock().unwrap().push(e.invocation_id().to_string());
    }
    #[retry(max_attempts = 3, initial_backoff = "10ms", on_retry = hook)]
    async fn observed(seen: &Seen) -> Result<(), TestError> {
        seen.now();
        Err(TRANSIENT)
    }

    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let seen = Seen::default();
    let (out, record) = testing::record(Overrides::new(), observed(&seen)).await;
    assert_eq!(out, Err(TRANSIENT));
    let id = seen.all()[0].invocation_id();
    assert_eq!(*HOOKED.lock().unwrap(), [id.to_string(), id.to_string()]);
    let events = capture.of("retry", Level::DEBUG);
    assert_eq!(events.len(), 2);
    assert!(
        events
            .iter()
            .all(|e| e.field("invocation_id") == id.to_string())
    );
    assert!(record.retries().iter().all(|r| r.invocation_id == id));
}

/// Fails every time, counting the requests it makes.
#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none")]
async fn inner(seen: &Seen, requests: &AtomicU32) -> Result<(), TestError> {
    seen.now();
    requests.fetch_add(1, Ordering::Relaxed);
    Err(TRANSIENT)
}

/// The same, under one attempt.
#[retry(max_attempts = 1)]
async fn inner_once(requests: &AtomicU32) -> Result<(), TestError> {
    requests.fetch_add(1, Ordering::Relaxed);
    Err(TRANSIENT)
}

/// Defines `$name`: retries what `inner` (or `inner_once`) returns, each attempt cut off
/// after 2 s. A macro, so that the test of the WARN (once per function, for the process) has a
/// function of its own.
macro_rules! outer_fn {
    ($name:ident) => {
        #[retry(
            max_attempts = 3,
            attempt_timeout = "2s",
            initial_backoff = "100ms",
            jitter = "none"
        )]
        async fn $name(
            seen: &Seen,
            inner_seen: &Seen,
            requests: &AtomicU32,
            retry_inside: bool,
        ) -> Result<(), TestError> {
            seen.now();
            if retry_inside {
                inner(inner_seen, requests).await
            } else {
                inner_once(requests).await
            }
        }
    };
}

outer_fn!(outer);

#[tokio::test(start_paused = true)]
async fn an_inner_call_takes_the_outer_attempts_cutoff_as_its_deadline() {
    let (seen, inner_seen, requests) = (Seen::default(), Seen::default(), AtomicU32::new(0));
    assert_eq!(
        outer(&seen, &inner_seen, &requests, true).await,
        Err(TRANSIENT)
    );
    let outer_attempts = seen.all();
    let inner_attempts = inner_seen.all();
    assert!(outer_attempts.iter().all(|a| a.depth() == 1));
    assert!(inner_attempts.iter().all(|a| a.depth() == 2));
    for (i, a) in inner_attempts.iter().enumerate() {
        // The inner function has no deadline of its own: it has the outer attempt's.
        let cut = outer_attempts[i / 3].cutoff();
        assert_eq!(a.deadline(), cut, "inner attempt {i}");
        assert_eq!(a.cutoff(), cut, "inner attempt {i}");
        assert_ne!(
            a.invocation_id(),
            outer_attempts[i / 3].invocation_id(),
            "the inner call is a call of its own"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retrying_at_both_levels_multiplies_requests_and_warns_once() {
    // A function of this test's own: the WARN is once per function for the whole process.
    outer_fn!(outer);

    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let nested = |capture: &Capture| {
        capture
            .of("retry", Level::WARN)
            .into_iter()
            .filter(|e| e.field("message").contains("nested #[retry]"))
            .collect::<Vec<_>>()
    };

    // Both levels retry: 3 outer attempts, each a call of 3 inner attempts.
    let (seen, inner_seen, requests) = (Seen::default(), Seen::default(), AtomicU32::new(0));
    let _ = outer(&seen, &inner_seen, &requests, true).await;
    assert_eq!(requests.load(Ordering::Relaxed), 9);
    let warned = nested(&capture);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0].field("function"), "outer");
    assert_eq!(warned[0].field("attempt"), "1");
    assert_eq!(warned[0].field("depth"), "1");

    // Once per function: a second call that does the same does not warn again.
    let _ = outer(&Seen::default(), &Seen::default(), &requests, true).await;
    assert_eq!(nested(&capture).len(), 1);

    // Retried at one layer only: 3 requests for the same failure, and nothing to warn about.
    let requests = AtomicU32::new(0);
    let _ = outer(&Seen::default(), &Seen::default(), &requests, false).await;
    assert_eq!(requests.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn an_inner_call_gives_up_at_the_outer_cutoff_instead_of_being_cut_mid_sleep() {
    /// Fails at once, then waits 1.5 s before retrying: the second retry would start after
    /// the outer attempt's 2 s are up.
    #[retry(
        max_attempts = 5,
        deadline = "10s",
        initial_backoff = "1500ms",
        max_backoff = "1500ms",
        jitter = "none"
    )]
    async fn slow_inner(seen: &Seen) -> Result<(), TestError> {
        seen.now();
        Err(TRANSIENT)
    }
    #[retry(max_attempts = 1, attempt_timeout = "2s")]
    async fn caller(seen: &Seen) -> Result<(), TestError> {
        slow_inner(seen).await
    }

    let start = Instant::now();
    let seen = Seen::default();
    let (out, record) = testing::record(Overrides::new(), caller(&seen)).await;
    // The inner call returns its own last error (not the outer attempt's timeout) at 1.5 s.
    assert_eq!(out, Err(TRANSIENT));
    assert_eq!(seen.numbers(), [1, 2]);
    assert!(
        seen.all()
            .iter()
            .all(|a| a.deadline() == Some(start.into_std() + ms(2000)))
    );
    let ends = record.early_ends();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].function, "slow_inner");
    assert_eq!(ends[0].reason, retry_runtime::testing::EarlyEnd::Deadline);
    assert_eq!(Instant::now() - start, ms(1500));
}
