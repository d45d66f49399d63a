//! The caller's deadline (`with_deadline`) on tokio's paused clock: the calls inside it, timed
//! or not, async or blocking, `#[retry]` or `Policy`, take it as they take an outer attempt's
//! cutoff, nested deadlines take the earlier, and what still runs at the deadline is dropped
//! there, at exact instants.
#![cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]

use retry_runtime::{
    Attempt, Classify, ErrorClass, Policy, TimedOut, TimeoutKind, attempt, retry, with_deadline,
};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::{Instant, sleep};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Debug, Clone, PartialEq)]
enum TestError {
    Transient,
    TimedOut(TimedOut),
}

impl Classify for TestError {
    fn classify(&self) -> ErrorClass {
        match self {
            TestError::Transient => ErrorClass::Transient,
            TestError::TimedOut(_) => ErrorClass::Timeout,
        }
    }
}

impl From<TimedOut> for TestError {
    fn from(t: TimedOut) -> Self {
        TestError::TimedOut(t)
    }
}

/// What each attempt saw of itself: when it started (ms after `t0`), and the attempt.
struct Seen {
    t0: Instant,
    seen: Mutex<Vec<(u64, Attempt, Option<Duration>)>>,
}

impl Seen {
    fn new() -> Seen {
        Seen {
            t0: Instant::now(),
            seen: Mutex::new(Vec::new()),
        }
    }

    fn now(&self) -> Attempt {
        let a = attempt().expect("inside a #[retry] body");
        let at = u64::try_from(self.t0.elapsed().as_millis()).unwrap();
        self.seen.lock().unwrap().push((at, a, a.time_left()));
        a
    }

    /// (start in ms, number, time left) of each attempt.
    fn starts(&self) -> Vec<(u64, u32, Option<Duration>)> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|(t, a, left)| (*t, a.number(), *left))
            .collect()
    }

    fn deadlines(&self) -> Vec<Option<std::time::Instant>> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|(_, a, _)| a.deadline()).collect()
    }

    /// `ms` after `t0`, as `Attempt::deadline` gives it.
    fn at(&self, ms: u64) -> Option<std::time::Instant> {
        Some(self.t0.into_std() + MS(ms))
    }
}

/// Whether `t` is what `with_deadline` returns when its deadline of `limit` passes: the
/// deadline, the time it had, and no attempt of a call.
fn caller_cut(t: &TimedOut, limit: Duration) -> bool {
    t.kind() == TimeoutKind::Deadline && t.limit() == limit && t.attempt() == 0
}

// --- A timed call inside a deadline --------------------------------------------------------

/// Attempts of 300 ms that fail, under a 400 ms attempt timeout and a deadline of its own
/// (10 s) far past the caller's.
#[retry(
    max_attempts = 10,
    attempt_timeout = "400ms",
    deadline = "10s",
    initial_backoff = "100ms",
    max_backoff = "100ms",
    jitter = "none"
)]
async fn timed(seen: &Seen) -> Result<(), TestError> {
    seen.now();
    sleep(MS(300)).await;
    Err(TestError::Transient)
}

#[tokio::test(start_paused = true)]
async fn a_timed_call_with_a_longer_deadline_is_cut_at_the_callers() {
    let seen = Seen::new();
    let out = with_deadline(Duration::from_secs(1), timed(&seen)).await;
    // Attempts at 0, 400 and 800 ms (300 ms each, 100 ms backoff); the third has the 200 ms
    // left of the caller's second, not its 400 ms timeout, and is cut at 1 s exactly.
    assert_eq!(
        seen.starts(),
        [
            (0, 1, Some(MS(400))),
            (400, 2, Some(MS(400))),
            (800, 3, Some(MS(200))),
        ]
    );
    assert_eq!(seen.t0.elapsed(), MS(1000));
    assert!(caller_cut(&out.unwrap_err(), MS(1000)));
    // The call's own deadline is the caller's, not its 10 s.
    assert!(seen.deadlines().iter().all(|d| *d == seen.at(1000)));
}

/// Fails at once; a backoff of 300 ms.
#[retry(
    max_attempts = 10,
    deadline = "10s",
    initial_backoff = "300ms",
    max_backoff = "300ms",
    jitter = "none"
)]
async fn fails_fast(seen: &Seen) -> Result<(), TestError> {
    seen.now();
    Err(TestError::Transient)
}

#[tokio::test(start_paused = true)]
async fn a_timed_call_sleeps_no_backoff_past_the_callers_deadline() {
    let seen = Seen::new();
    let out = with_deadline(MS(700), fails_fast(&seen)).await;
    // Attempts at 0, 300 and 600 ms: a backoff to 900 ms would pass the deadline, so the call
    // returns its last error at 600 ms, before the deadline, without sleeping.
    let starts: Vec<u64> = seen.starts().iter().map(|s| s.0).collect();
    assert_eq!(starts, [0, 300, 600]);
    assert_eq!(seen.t0.elapsed(), MS(600));
    assert_eq!(out, Ok(Err(TestError::Transient)));
}

// --- A call without timers inside a deadline -----------------------------------------------

/// No `attempt_timeout`, no `deadline`: no timer of its own. Attempts of 150 ms that fail.
#[retry(
    max_attempts = 10,
    initial_backoff = "100ms",
    max_backoff = "100ms",
    jitter = "none"
)]
async fn untimed(seen: &Seen) -> Result<(), TestError> {
    seen.now();
    sleep(MS(150)).await;
    Err(TestError::Transient)
}

#[tokio::test(start_paused = true)]
async fn an_untimed_call_sees_the_deadline_and_is_dropped_at_it() {
    let seen = Seen::new();
    let out = with_deadline(MS(600), untimed(&seen)).await;
    // Attempts at 0, 250 and 500 ms, each told what the caller has left; the third, still
    // running at 600 ms, is dropped there with the whole future.
    assert_eq!(
        seen.starts(),
        [
            (0, 1, Some(MS(600))),
            (250, 2, Some(MS(350))),
            (500, 3, Some(MS(100))),
        ]
    );
    assert!(seen.deadlines().iter().all(|d| *d == seen.at(600)));
    assert_eq!(seen.t0.elapsed(), MS(600));
    assert!(caller_cut(&out.unwrap_err(), MS(600)));
}

/// No timers; fails at once, with a backoff of 250 ms.
#[retry(
    max_attempts = 10,
    initial_backoff = "250ms",
    max_backoff = "250ms",
    jitter = "none"
)]
async fn untimed_fast(seen: &Seen) -> Result<(), TestError> {
    seen.now();
    Err(TestError::Transient)
}

#[tokio::test(start_paused = true)]
async fn an_untimed_call_sleeps_no_backoff_past_the_deadline() {
    let seen = Seen::new();
    let out = with_deadline(MS(600), untimed_fast(&seen)).await;
    // A backoff to 750 ms would pass 600 ms: the call returns its error at 500 ms.
    let starts: Vec<u64> = seen.starts().iter().map(|s| s.0).collect();
    assert_eq!(starts, [0, 250, 500]);
    assert_eq!(seen.t0.elapsed(), MS(500));
    assert_eq!(out, Ok(Err(TestError::Transient)));
}

// --- Nesting ------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn nested_deadlines_take_the_earlier() {
    // The outer one is earlier: the call inside has 1 s, and the outer cuts at 1 s.
    let seen = Seen::new();
    let out = with_deadline(MS(1000), with_deadline(MS(5000), timed(&seen))).await;
    assert_eq!(seen.t0.elapsed(), MS(1000));
    assert!(caller_cut(&out.unwrap_err(), MS(1000)));
    assert!(seen.deadlines().iter().all(|d| *d == seen.at(1000)));

    // The inner one is earlier: it cuts at 1 s, and the outer gets its error.
    let seen = Seen::new();
    let out = with_deadline(MS(5000), with_deadline(MS(1000), timed(&seen))).await;
    assert_eq!(seen.t0.elapsed(), MS(1000));
    assert!(caller_cut(&out.unwrap().unwrap_err(), MS(1000)));
    assert!(seen.deadlines().iter().all(|d| *d == seen.at(1000)));

    // An inner one set later, and longer than what is left of the outer: clamped to it (its
    // limit is the time it had).
    let seen = Seen::new();
    let t0 = Instant::now();
    let out = with_deadline(MS(1000), async {
        sleep(MS(400)).await;
        with_deadline(MS(1000), timed(&seen)).await
    })
    .await;
    assert_eq!(t0.elapsed(), MS(1000));
    assert!(caller_cut(&out.unwrap_err(), MS(1000)));
    assert_eq!(seen.starts()[0], (400, 1, Some(MS(400))));
    assert_eq!(seen.deadlines()[0], Some(t0.into_std() + MS(1000)));
}

/// Runs the body of `inner` under a deadline of 1 s, inside its own attempt of 300 ms.
#[retry(attempt_timeout = "300ms")]
async fn outer_attempt(seen: &Seen) -> Result<(Option<Duration>, u32), TestError> {
    let outer = attempt().unwrap();
    with_deadline(MS(1000), async {
        // Outside any call inside the deadline, the attempt is still the outer one, cut off
        // at the earlier of its own cutoff and the deadline.
        let a = attempt().unwrap();
        assert_eq!((a.number(), a.depth()), (1, 1));
        assert_eq!(a.invocation_id(), outer.invocation_id());
        assert_eq!(a.time_left(), Some(MS(300)));
        let inner = untimed_once(seen).await?;
        Ok::<_, TestError>((a.time_left(), inner))
    })
    .await
    .map_err(TestError::from)?
}

#[retry(max_attempts = 1)]
async fn untimed_once(seen: &Seen) -> Result<u32, TestError> {
    Ok(seen.now().depth())
}

#[tokio::test(start_paused = true)]
async fn a_deadline_inside_an_attempt_is_clamped_to_its_cutoff() {
    let seen = Seen::new();
    assert_eq!(outer_attempt(&seen).await, Ok((Some(MS(300)), 2)));
    // The call nested in the outer attempt (through the deadline) is at depth 2, with the
    // outer attempt's 300 ms.
    assert_eq!(seen.starts(), [(0, 1, Some(MS(300)))]);
}

// --- Policy, blocking functions, the edges -------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_policy_call_takes_the_deadline() {
    let policy = Policy::new()
        .max_attempts(5)
        .attempt_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(10));
    let t0 = Instant::now();
    let out = with_deadline(MS(500), async {
        policy
            .retry(|| async {
                let a = attempt().unwrap();
                assert_eq!(a.time_left(), Some(MS(500)));
                assert_eq!(a.deadline(), Some(t0.into_std() + MS(500)));
                Ok::<_, TestError>(a.number())
            })
            .await
    })
    .await;
    assert_eq!(out, Ok(Ok(1)));
}

static BLOCKING_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Blocking, without timers; a backoff of 2 s.
#[retry(max_attempts = 5, initial_backoff = "2s", jitter = "none")]
fn blocking() -> Result<Option<Duration>, std::io::Error> {
    BLOCKING_ATTEMPTS.fetch_add(1, Ordering::SeqCst);
    let left = attempt().unwrap().time_left();
    Err(std::io::Error::other(format!("{left:?}")))
}

/// Blocking, with a deadline of its own.
#[retry(deadline = "10s")]
fn blocking_timed() -> Result<Option<std::time::Instant>, std::io::Error> {
    Ok(attempt().unwrap().deadline())
}

#[tokio::test(start_paused = true)]
async fn a_blocking_call_takes_the_deadline_and_sleeps_nothing_past_it() {
    let real = std::time::Instant::now();
    let t0 = Instant::now();
    let out = with_deadline(MS(1000), async { blocking() }).await.unwrap();
    // Its backoff of 2 s would pass the deadline: one attempt, no sleep (the paused clock does
    // not move while a thread sleeps, so a sleep would show on the real one).
    assert_eq!(BLOCKING_ATTEMPTS.load(Ordering::SeqCst), 1);
    assert_eq!(out.unwrap_err().to_string(), "Some(1s)");
    assert!(real.elapsed() < MS(1000), "{:?}", real.elapsed());
    let deadline = with_deadline(MS(1000), async { blocking_timed() }).await;
    assert_eq!(deadline.unwrap().unwrap(), Some(t0.into_std() + MS(1000)));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_already_past_never_polls_the_future() {
    let polled = AtomicU32::new(0);
    let t0 = Instant::now();
    let out = with_deadline(Duration::ZERO, async {
        polled.fetch_add(1, Ordering::SeqCst);
    })
    .await;
    assert!(caller_cut(&out.unwrap_err(), Duration::ZERO));
    assert_eq!(polled.load(Ordering::SeqCst), 0);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn outside_any_call_there_is_no_attempt_and_a_finished_future_is_ok() {
    let out = with_deadline(MS(100), async {
        assert!(attempt().is_none());
        sleep(MS(99)).await;
        assert!(attempt().is_none());
        7
    })
    .await;
    assert_eq!(out, Ok(7));
    // A deadline too far to represent is none.
    assert_eq!(with_deadline(Duration::MAX, async { 8 }).await, Ok(8));
    assert!(attempt().is_none());
}

#[tokio::test(start_paused = true)]
async fn the_callers_timeout_says_what_it_had() {
    let cut = with_deadline(MS(300), std::future::pending::<()>()).await;
    assert_eq!(cut.unwrap_err().to_string(), "deadline of 300ms exceeded");
}
