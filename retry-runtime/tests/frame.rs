//! The attempt's frame as the body sees it, on tokio's paused clock: the tests that `.ci/run`
//! runs under Miri, which checks every access through the crate's one `unsafe` block (the
//! thread-local slot of `src/engine/frame.rs` that publishes the frame of the attempt being
//! polled).
//!
//! ```text
//! cargo +nightly miri test -p retry-runtime --test frame
//! ```
//!
//! They use the slot as the workspace's `tests/engine/context.rs` and `tests/engine/hedging.rs`
//! do: `attempt()` read from the body (before and after an await, by each attempt of a retried
//! call, by each hedge), nothing published outside a body nor in a task it spawns, the hook and
//! a test scope's record given the id the body drew, calls nested inside an attempt (one without
//! timers, which takes the outer frame when first polled, and one with, which reads it at its
//! start; inside a hedge too), a frame per hedge, hedges dropped in flight (the call won by
//! another attempt, cut by its deadline, ended by a permanent failure, or dropped), and a
//! caller's deadline (`with_deadline`) published in the same slot, under calls and over an
//! attempt, and a request a server serves (the bound that points to it, which calls that give
//! up find through the attempts and deadlines above it). Only
//! retry-runtime and its dev-dependencies are built for it, a small fraction of the
//! workspace's dev tree; those two files keep the cases that need more (tracing events, the
//! guards, a percentile delay), where the slot is used in the same ways.
#![cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]

use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{
    Attempt, Classify, ErrorClass, Policy, RetryEvent, TimedOut, TimeoutKind, TokenBucket, attempt,
    retry, with_deadline,
};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::{Instant, sleep};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Debug, Clone, PartialEq)]
enum TestError {
    Fault(ErrorClass),
    TimedOut(TimedOut),
}

const TRANSIENT: TestError = TestError::Fault(ErrorClass::Transient);

impl Classify for TestError {
    fn classify(&self) -> ErrorClass {
        match self {
            TestError::Fault(class) => *class,
            TestError::TimedOut(_) => ErrorClass::Timeout,
        }
    }
}

impl From<TimedOut> for TestError {
    fn from(t: TimedOut) -> Self {
        TestError::TimedOut(t)
    }
}

/// What one attempt of a script does.
#[derive(Clone, Copy)]
enum Step {
    /// Never answers (only a timeout or a drop ends it).
    Hang,
    /// Takes this long, then succeeds with the value.
    LateOk(Duration, u32),
    /// Takes this long, then fails with the class.
    LateFail(Duration, ErrorClass),
}

use Step::{Hang, LateFail, LateOk};

/// Scripted attempts: each plays the next step (the last repeats), recording when it started
/// and how many run at once.
struct Script {
    steps: Mutex<VecDeque<Step>>,
    t0: Instant,
    starts: Mutex<Vec<u64>>,
    /// Attempts running now, and the most ever at once.
    running: Mutex<(usize, usize)>,
}

/// Counts an attempt as running until it ends or is dropped.
struct Running<'s>(&'s Mutex<(usize, usize)>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap().0 -= 1;
    }
}

impl Script {
    fn new(steps: impl IntoIterator<Item = Step>) -> Script {
        Script {
            steps: Mutex::new(steps.into_iter().collect()),
            t0: Instant::now(),
            starts: Mutex::new(Vec::new()),
            running: Mutex::new((0, 0)),
        }
    }

    async fn attempt(&self) -> Result<u32, TestError> {
        self.starts.lock().unwrap().push(self.now_ms());
        let _running = {
            let mut r = self.running.lock().unwrap();
            r.0 += 1;
            r.1 = r.1.max(r.0);
            Running(&self.running)
        };
        let step = {
            let mut steps = self.steps.lock().unwrap();
            if steps.len() > 1 {
                steps.pop_front().unwrap()
            } else {
                steps[0]
            }
        };
        match step {
            Hang => std::future::pending().await,
            LateOk(d, v) => {
                sleep(d).await;
                Ok(v)
            }
            LateFail(d, class) => {
                sleep(d).await;
                Err(TestError::Fault(class))
            }
        }
    }

    fn starts_ms(&self) -> Vec<u64> {
        self.starts.lock().unwrap().clone()
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_millis()).unwrap()
    }

    fn running(&self) -> usize {
        self.running.lock().unwrap().0
    }

    fn most_at_once(&self) -> usize {
        self.running.lock().unwrap().1
    }
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

// --- One call: what `attempt()` tells the body ------------------------------------------------

/// Fails until the third attempt.
#[retry(
    max_attempts = 3,
    initial_backoff = "10ms",
    jitter = "none",
    partition = "frame-orders"
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
        assert_eq!(a.partition(), Some("frame-orders"));
        assert_eq!(a.depth(), 1);
        assert_eq!(a.invocation_id(), first.invocation_id(), "one id per call");
        assert_eq!(
            (a.cutoff(), a.time_left(), a.deadline()),
            (None, None, None)
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
    let start = Instant::now().into_std();
    let seen = Seen::default();
    assert_eq!(against_the_deadline(&seen).await, Err(TRANSIENT));
    let s = |ms: u64| start + MS(ms);
    let all = seen.all();
    assert_eq!(seen.numbers(), [1, 2, 3, 4]);
    assert_eq!(
        all.iter().map(|a| a.cutoff().unwrap()).collect::<Vec<_>>(),
        [s(2000), s(3500), s(5000), s(5000)]
    );
    assert_eq!(
        seen.time_left(),
        [MS(2000), MS(2000), MS(2000), MS(500)].map(Some)
    );
    assert!(all.iter().all(|a| a.deadline() == Some(s(5000))));
}

#[tokio::test(start_paused = true)]
async fn time_left_counts_down_within_an_attempt() {
    // The frame is published again at each poll: the body reads it on both sides of an await.
    #[retry(attempt_timeout = "2s")]
    async fn slow() -> Result<(Duration, Duration), TestError> {
        let before = attempt().unwrap().time_left().unwrap();
        sleep(MS(500)).await;
        Ok((before, attempt().unwrap().time_left().unwrap()))
    }
    assert_eq!(slow().await, Ok((MS(2000), MS(1500))));
}

#[tokio::test(start_paused = true)]
async fn the_hook_and_the_record_carry_the_bodys_invocation_id() {
    static HOOKED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    fn hook(e: &RetryEvent<'_, TestError>) {
        HOOKED.lock().unwrap().push(e.invocation_id().to_string());
    }
    #[retry(max_attempts = 3, initial_backoff = "10ms", on_retry = hook)]
    async fn observed(seen: &Seen) -> Result<(), TestError> {
        seen.now();
        Err(TRANSIENT)
    }

    let seen = Seen::default();
    let (out, record) = testing::record(Overrides::new(), observed(&seen)).await;
    assert_eq!(out, Err(TRANSIENT));
    let id = seen.all()[0].invocation_id();
    assert_eq!(*HOOKED.lock().unwrap(), [id.to_string(), id.to_string()]);
    assert!(record.retries().iter().all(|r| r.invocation_id == id));
}

// --- Calls nested inside an attempt ------------------------------------------------------------

/// Fails every time, counting the requests it makes. No timer: it takes the outer attempt's
/// frame when its first attempt is polled.
#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none")]
async fn inner(seen: &Seen, requests: &AtomicU32) -> Result<(), TestError> {
    seen.now();
    requests.fetch_add(1, Ordering::Relaxed);
    Err(TRANSIENT)
}

/// Retries what `inner` returns, each attempt cut off after 2 s.
#[retry(
    max_attempts = 3,
    attempt_timeout = "2s",
    initial_backoff = "100ms",
    jitter = "none"
)]
async fn outer(seen: &Seen, inner_seen: &Seen, requests: &AtomicU32) -> Result<(), TestError> {
    seen.now();
    inner(inner_seen, requests).await
}

#[tokio::test(start_paused = true)]
async fn an_inner_call_takes_the_outer_attempts_cutoff_and_retrying_at_both_levels_multiplies() {
    let (seen, inner_seen, requests) = (Seen::default(), Seen::default(), AtomicU32::new(0));
    assert_eq!(outer(&seen, &inner_seen, &requests).await, Err(TRANSIENT));
    // 3 outer attempts, each a call of 3 inner attempts (each inner call that retried and
    // failed marks the outer attempt through the slot: the WARN of `tests/engine/context.rs`).
    assert_eq!(requests.load(Ordering::Relaxed), 9);
    let outer_attempts = seen.all();
    let inner_attempts = inner_seen.all();
    assert_eq!(inner_attempts.len(), 9);
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
async fn an_inner_call_gives_up_at_the_outer_cutoff_instead_of_being_cut_mid_sleep() {
    /// A deadline of its own (a timer): it reads the outer frame at its start.
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
    assert_eq!(out, Err(TRANSIENT));
    assert_eq!(seen.numbers(), [1, 2]);
    assert!(
        seen.all()
            .iter()
            .all(|a| a.deadline() == Some(start.into_std() + MS(2000)))
    );
    let ends = record.early_ends();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].function, "slow_inner");
    assert_eq!(ends[0].reason, EarlyEnd::Deadline);
    assert_eq!(Instant::now() - start, MS(1500));
}

// --- Hedged calls: a frame per attempt in flight -----------------------------------------------

static SLOW_FIRST: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "50ms", bucket = SLOW_FIRST)]
async fn slow_first(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_gets_a_hedge_and_the_first_answer_wins() {
    let s = Script::new([LateOk(MS(1000), 1), LateOk(MS(20), 2)]);
    let (out, record) = testing::record(Overrides::new(), slow_first(&s)).await;
    assert_eq!(out, Ok(2), "the hedge answered first");
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(s.now_ms(), 70);
    assert_eq!(s.running(), 0, "the slower attempt was dropped");
    assert_eq!(record.hedges().len(), 1);
    assert_eq!(SLOW_FIRST.available(), 500);
}

#[retry(hedge_after = "50ms", bucket = "none")]
async fn first_wins(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn when_the_first_attempt_wins_the_hedge_is_dropped() {
    let s = Script::new([LateOk(MS(80), 1), LateOk(MS(1000), 2)]);
    assert_eq!(first_wins(&s).await, Ok(1));
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(s.now_ms(), 80);
    assert_eq!(s.running(), 0, "the hedge was dropped");
}

#[retry(
    hedge_after = "10ms",
    max_attempts = 5,
    max_in_flight = 3,
    deadline = "100ms",
    bucket = "none"
)]
async fn three_at_once(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn hedges_stop_at_max_in_flight_and_the_deadline_cuts_them_all() {
    let s = Script::new([Hang]);
    let out = three_at_once(&s).await;
    assert_eq!(s.starts_ms(), [0, 10, 20], "three in flight at most");
    assert_eq!(s.most_at_once(), 3);
    assert_eq!(s.now_ms(), 100, "the deadline cut every attempt");
    assert_eq!(s.running(), 0);
    let Err(TestError::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(t.kind(), TimeoutKind::Deadline);
}

#[retry(
    hedge_after = "10ms",
    max_attempts = 4,
    attempt_timeout = "50ms",
    initial_backoff = "100ms",
    jitter = "none",
    bucket = "none"
)]
async fn replaced(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_failure_while_another_runs_starts_the_next_hedge_at_once() {
    // 1 hangs until its 50 ms timeout; 2 (at 10 ms) fails at 15 ms: 3 starts at once and
    // hangs; 1 times out at 50 ms: 4 starts; the last two time out at 65 and 100 ms.
    let s = Script::new([Hang, LateFail(MS(5), ErrorClass::Transient), Hang]);
    let out = replaced(&s).await;
    assert_eq!(s.starts_ms(), [0, 10, 15, 50]);
    assert_eq!(s.most_at_once(), 2);
    assert_eq!(s.now_ms(), 100);
    let Err(TestError::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!((t.kind(), t.attempt()), (TimeoutKind::Attempt, 4));
}

#[retry(
    hedge_after = "10ms",
    max_attempts = 3,
    initial_backoff = "100ms",
    jitter = "none"
)]
async fn then_retried(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn when_the_last_attempt_in_flight_fails_the_retry_follows_the_backoff() {
    let s = Script::new([LateFail(MS(5), ErrorClass::Transient), LateOk(MS(5), 9)]);
    let (out, record) = testing::record(Overrides::new(), then_retried(&s)).await;
    assert_eq!(out, Ok(9));
    assert_eq!(s.starts_ms(), [0, 105]);
    assert_eq!(record.delays(), [MS(100)]);
    assert!(record.hedges().is_empty());
}

#[retry(hedge_after = "10ms", max_attempts = 4)]
async fn permanent(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_permanent_failure_ends_the_call_and_drops_the_others() {
    let s = Script::new([Hang, LateFail(MS(5), ErrorClass::Permanent)]);
    assert_eq!(
        permanent(&s).await,
        Err(TestError::Fault(ErrorClass::Permanent))
    );
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(s.now_ms(), 15);
    assert_eq!(s.running(), 0, "the hanging attempt was dropped");
}

static DROPPED: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "10ms", max_attempts = 4, max_in_flight = 3, bucket = DROPPED)]
async fn dropped(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_drops_every_attempt() {
    let s = Script::new([Hang]);
    assert!(tokio::time::timeout(MS(25), dropped(&s)).await.is_err());
    assert_eq!(s.starts_ms(), [0, 10, 20]);
    assert_eq!(s.running(), 0, "every attempt was dropped with the call");
    assert_eq!(DROPPED.available(), 500, "no token is lost");
}

static IDS: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());
static HEDGES: Mutex<Vec<(u32, bool)>> = Mutex::new(Vec::new());

fn note(ev: &RetryEvent<'_, TestError>) {
    HEDGES.lock().unwrap().push((ev.attempt(), ev.is_hedge()));
}

#[retry(hedge_after = "10ms", max_attempts = 3, on_retry = note)]
async fn seen(script: &Script) -> Result<u32, TestError> {
    let a = attempt().expect("inside the body");
    IDS.lock()
        .unwrap()
        .push((a.number(), a.invocation_id().to_string()));
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn each_hedge_sees_its_own_number_and_the_calls_id() {
    let s = Script::new([
        Hang,
        LateFail(MS(5), ErrorClass::Transient),
        LateOk(MS(5), 3),
    ]);
    assert_eq!(seen(&s).await, Ok(3));
    let ids = IDS.lock().unwrap().clone();
    let numbers: Vec<u32> = ids.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert!(
        ids.iter().all(|(_, id)| *id == ids[0].1),
        "one invocation id for every attempt: {ids:?}"
    );
    assert_eq!(*HEDGES.lock().unwrap(), [(1, true), (2, true)]);
}

#[tokio::test(start_paused = true)]
async fn a_call_nested_in_a_hedge_sees_that_hedges_frame() {
    #[retry(max_attempts = 1)]
    async fn nested() -> Result<(u32, u32), TestError> {
        let a = attempt().unwrap();
        Ok((a.number(), a.depth()))
    }
    /// Attempt 1 hangs; its hedge (2) calls `nested` inside its own frame.
    #[retry(hedge_after = "10ms", max_attempts = 2, bucket = "none")]
    async fn hedged(script: &Script) -> Result<(u32, u32, u32), TestError> {
        let n = attempt().unwrap().number();
        if n == 1 {
            script.attempt().await?;
        }
        let (inner_number, inner_depth) = nested().await?;
        Ok((n, inner_number, inner_depth))
    }
    let s = Script::new([Hang]);
    assert_eq!(hedged(&s).await, Ok((2, 1, 2)));
    assert_eq!(s.running(), 0, "the hanging attempt was dropped");
}

#[tokio::test(start_paused = true)]
async fn a_policy_hedges_a_closure() {
    static BUCKET: TokenBucket = TokenBucket::standard();
    let policy = Policy::new()
        .hedge_after(MS(10))
        .max_in_flight(3)
        .max_attempts(3)
        .bucket(&BUCKET)
        .build()
        .unwrap();
    let s = Script::new([Hang, Hang, LateOk(MS(5), 3)]);
    let numbers = Mutex::new(Vec::new());
    let (out, record) = testing::record(
        Overrides::new(),
        policy.retry(|| async {
            numbers.lock().unwrap().push(attempt().unwrap().number());
            s.attempt().await
        }),
    )
    .await;
    assert_eq!(out, Ok(3));
    assert_eq!(s.starts_ms(), [0, 10, 20]);
    assert_eq!(s.running(), 0);
    assert_eq!(record.hedges().len(), 2);
    assert_eq!(BUCKET.available(), 495);
    assert_eq!(*numbers.lock().unwrap(), [1, 2, 3]);
}

// --- A caller's deadline in the slot ----------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn calls_read_a_callers_deadline_from_the_slot() {
    /// Timed: reads the deadline at its start.
    #[retry(
        max_attempts = 2,
        deadline = "10s",
        initial_backoff = "10ms",
        jitter = "none"
    )]
    async fn timed(seen: &Seen) -> Result<u32, TestError> {
        let a = seen.now();
        if a.number() < 2 {
            Err(TRANSIENT)
        } else {
            Ok(a.depth())
        }
    }
    /// Untimed: reads it at each poll of an attempt.
    #[retry(max_attempts = 2, initial_backoff = "10ms", jitter = "none")]
    async fn untimed(seen: &Seen) -> Result<u32, TestError> {
        let a = seen.now();
        if a.number() < 2 {
            Err(TRANSIENT)
        } else {
            Ok(a.depth())
        }
    }
    let seen = Seen::default();
    let out = with_deadline(MS(100), async {
        assert!(attempt().is_none(), "a deadline is no attempt");
        (timed(&seen).await, untimed(&seen).await)
    })
    .await;
    assert_eq!(out, Ok((Ok(1), Ok(1))));
    assert_eq!(
        seen.time_left(),
        [Some(MS(100)), Some(MS(90)), Some(MS(90)), Some(MS(80))]
    );
    assert!(attempt().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_callers_deadline_inside_an_attempt_shows_the_attempt_below_it() {
    /// Retries and fails: marks the outer attempt, through the deadline between them.
    #[retry(max_attempts = 2, initial_backoff = "10ms", jitter = "none")]
    async fn inner(seen: &Seen) -> Result<u32, TestError> {
        seen.now();
        Err(TRANSIENT)
    }
    #[retry(max_attempts = 2, attempt_timeout = "1s")]
    async fn outer(seen: &Seen) -> Result<u32, TestError> {
        let a = attempt().unwrap();
        if a.number() == 2 {
            return Ok(2);
        }
        with_deadline(MS(300), async {
            let b = attempt().unwrap();
            assert_eq!((b.number(), b.depth()), (1, 1));
            assert_eq!(b.invocation_id(), a.invocation_id());
            assert_eq!(b.time_left(), Some(MS(300)));
            // Two deadlines deep: the earlier holds.
            let c = with_deadline(MS(500), async { attempt().unwrap().time_left() }).await;
            assert_eq!(c, Ok(Some(MS(300))));
            inner(seen).await
        })
        .await
        .map_err(TestError::TimedOut)?
    }
    let seen = Seen::default();
    assert_eq!(outer(&seen).await, Ok(2));
    let depths: Vec<u32> = seen.all().iter().map(Attempt::depth).collect();
    assert_eq!(depths, [2, 2]);
    assert_eq!(seen.time_left(), [Some(MS(300)), Some(MS(290))]);
}

// --- A served request: the bound that points to it --------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_served_request_is_told_through_attempts_and_deadlines_above_it() {
    /// Retries and gives up: tells what it runs inside.
    #[retry(max_attempts = 2, initial_backoff = "10ms", jitter = "none")]
    async fn gives_up(seen: &Seen) -> Result<u32, TestError> {
        seen.now();
        Err(TRANSIENT)
    }
    /// One attempt allowed: fails without giving up, unless a call in its attempt gave up.
    #[retry(max_attempts = 1, attempt_timeout = "1s")]
    async fn once(seen: &Seen, nested: bool) -> Result<u32, TestError> {
        if nested {
            // Under a caller's deadline, inside this attempt: the walk goes through it.
            with_deadline(MS(500), gives_up(seen))
                .await
                .map_err(TestError::TimedOut)??;
        }
        Err(TRANSIENT)
    }
    let seen = Seen::default();
    // The request's deadline, and a single attempt per call: its calls see them.
    let (out, gave_up) = retry_runtime::__private::serve(Some(MS(800)), true, async {
        let a = async { gives_up(&seen).await };
        a.await
    })
    .await;
    assert_eq!(out, Ok(Err(TRANSIENT)));
    assert!(gave_up, "a single attempt that failed gave up");
    let first = seen.all()[0];
    assert_eq!((first.max_attempts(), first.depth()), (1, 1));
    assert_eq!(seen.time_left(), [Some(MS(800))]);
    // A call that fails after its one allowed attempt leaves the retry to the caller...
    let (_, gave_up) = retry_runtime::__private::serve(None, false, once(&seen, false)).await;
    assert!(!gave_up);
    // ...unless a call nested in its attempt (under a deadline of its own) gave up.
    let (_, gave_up) = retry_runtime::__private::serve(None, false, once(&seen, true)).await;
    assert!(gave_up);
    let depths: Vec<u32> = seen.all().iter().map(Attempt::depth).collect();
    assert_eq!(depths, [1, 2, 2]);
    // Outside a served request, the same calls tell nothing, and find nothing.
    assert_eq!(once(&seen, true).await, Err(TRANSIENT));
    assert!(attempt().is_none());
}
