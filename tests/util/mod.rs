//! What the tests share: the error every test function returns (`TestError`), scripted
//! attempts (a `#[retry]` function takes a `&Script` and each attempt plays the script's next
//! step, recording when it started), a paused runtime, the instant overrides and retry
//! classes of the tests that record calls, and the check of an invocation id's form.
#![allow(dead_code, unused_imports)] // each test file uses part of it

use retry_runtime::testing::{Overrides, Record};
use retry_runtime::{CircuitOpen, Classify, ErrorClass, Refused, TimedOut};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The error of the tests' functions: a class (and optional server hint), or the timeout, the
/// circuit breaker's refusal or a guard's the retry loop hands over.
#[derive(Debug, Clone, PartialEq)]
pub enum TestError {
    Fault(ErrorClass, Option<Duration>),
    TimedOut(TimedOut),
    CircuitOpen(CircuitOpen),
    Refused(Refused),
}

impl TestError {
    /// The error of an attempt that failed with `class`, without a hint (what `Fail` plays).
    pub const fn fault(class: ErrorClass) -> TestError {
        TestError::Fault(class, None)
    }
}

impl Classify for TestError {
    fn classify(&self) -> ErrorClass {
        match self {
            TestError::Fault(class, _) => *class,
            TestError::TimedOut(_) => ErrorClass::Timeout,
            TestError::CircuitOpen(open) => open.classify(),
            TestError::Refused(refused) => refused.classify(),
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            TestError::Fault(_, hint) => *hint,
            TestError::TimedOut(_) | TestError::CircuitOpen(_) | TestError::Refused(_) => None,
        }
    }
}

/// A breaker's refusal (`CircuitOpen` is `Refused`, by `"CircuitBreaker"`) or a guard's.
impl From<Refused> for TestError {
    fn from(refused: Refused) -> Self {
        if refused.by() == "CircuitBreaker" {
            TestError::CircuitOpen(refused)
        } else {
            TestError::Refused(refused)
        }
    }
}

impl From<TimedOut> for TestError {
    fn from(t: TimedOut) -> Self {
        TestError::TimedOut(t)
    }
}

/// What one attempt does.
#[derive(Debug, Clone)]
pub enum Step {
    Ok(u32),
    Fail(ErrorClass),
    /// Fails with a server hint.
    Hint(ErrorClass, Duration),
    /// Never answers (only a timeout or a drop ends it).
    Hang,
    /// Takes this long, then succeeds with 0.
    Slow(Duration),
    /// Takes this long, then succeeds with the value.
    LateOk(Duration, u32),
    /// Takes this long, then fails with the class.
    LateFail(Duration, ErrorClass),
    Panic,
}

pub use Step::{Fail, Hang, Hint, LateFail, LateOk, Ok as Succeed, Panic, Slow};

/// A sequence of attempt outcomes; the last one repeats once the others are used up.
pub struct Script {
    steps: Mutex<VecDeque<Step>>,
    t0: Instant,
    starts: Mutex<Vec<Duration>>,
    /// How many starts `new_starts_ms` has returned.
    seen: Mutex<usize>,
    /// Attempts running now, and the most ever at once.
    running: Mutex<(usize, usize)>,
}

/// Counts an attempt as running until it ends or is dropped.
struct Running<'s>(&'s Mutex<(usize, usize)>);

impl<'s> Running<'s> {
    fn new(m: &'s Mutex<(usize, usize)>) -> Self {
        let mut r = m.lock().unwrap();
        r.0 += 1;
        r.1 = r.1.max(r.0);
        Running(m)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap().0 -= 1;
    }
}

impl Script {
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Script {
        let steps: VecDeque<Step> = steps.into_iter().collect();
        assert!(!steps.is_empty(), "a script needs at least one step");
        Script {
            steps: Mutex::new(steps),
            t0: Instant::now(),
            starts: Mutex::new(Vec::new()),
            seen: Mutex::new(0),
            running: Mutex::new((0, 0)),
        }
    }

    /// A script that fails with `class` on every attempt.
    pub fn always(class: ErrorClass) -> Script {
        Script::new([Fail(class)])
    }

    /// Plays the next step.
    pub async fn attempt(&self) -> Result<u32, TestError> {
        self.starts.lock().unwrap().push(self.t0.elapsed());
        let _running = Running::new(&self.running);
        let step = {
            let mut steps = self.steps.lock().unwrap();
            if steps.len() > 1 {
                steps.pop_front().unwrap()
            } else {
                steps[0].clone()
            }
        };
        match step {
            Step::Ok(v) => Ok(v),
            Step::Fail(class) => Err(TestError::fault(class)),
            Step::Hint(class, hint) => Err(TestError::Fault(class, Some(hint))),
            Step::Hang => std::future::pending().await,
            Step::Slow(d) => {
                tokio::time::sleep(d).await;
                Ok(0)
            }
            Step::LateOk(d, v) => {
                tokio::time::sleep(d).await;
                Ok(v)
            }
            Step::LateFail(d, class) => {
                tokio::time::sleep(d).await;
                Err(TestError::fault(class))
            }
            Step::Panic => panic!("scripted panic"),
        }
    }

    /// Attempts running now (started, not ended or dropped).
    pub fn running(&self) -> usize {
        self.running.lock().unwrap().0
    }

    /// The most attempts that ever ran at once.
    pub fn most_at_once(&self) -> usize {
        self.running.lock().unwrap().1
    }

    /// How many attempts ran.
    pub fn attempts(&self) -> usize {
        self.starts.lock().unwrap().len()
    }

    /// When each attempt started, in whole milliseconds since the script was made.
    pub fn starts_ms(&self) -> Vec<u64> {
        self.starts
            .lock()
            .unwrap()
            .iter()
            .map(|d| u64::try_from(d.as_millis()).unwrap())
            .collect()
    }

    /// The starts (as `starts_ms`) of the attempts that ran since the last call of this method.
    pub fn new_starts_ms(&self) -> Vec<u64> {
        let all = self.starts_ms();
        let mut seen = self.seen.lock().unwrap();
        let new = all[*seen..].to_vec();
        *seen = all.len();
        new
    }

    /// Milliseconds since the script was made.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_millis()).unwrap()
    }
}

/// A single-threaded runtime on tokio's paused clock, for tests that are not `async`.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Overrides that skip every wait: the loop decides as usual but sleeps for nothing.
pub fn instant() -> Overrides {
    Overrides::new().instant()
}

/// The class of each retry a recorded call made, in order.
pub fn classes(record: &Record) -> Vec<ErrorClass> {
    record.retries().iter().map(|r| r.class).collect()
}

/// Whether `id` is a lowercase version-4 UUID, as an invocation id is written: 8-4-4-4-12 hex
/// digits, version 4, variant 10xx.
pub fn is_uuid_v4(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && id
            .chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        && groups[2].starts_with('4')
        && "89ab".contains(&groups[3][..1])
}
