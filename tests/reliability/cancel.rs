//! Cancellation: every scenario below is run once per possible cut, dropping the call after
//! exactly 0, 1, 2, ... polls until a run completes uncut. After each run the shared bucket
//! must hold exactly what the retries that ran are owed: a retry whose attempt failed keeps
//! its cost; the cost held for the retry in flight when the call was dropped (sleeping before
//! it, or running it) comes back.
//!
//! The buckets give no success reward, so that the expected level is exact: with `k` retries
//! (`k` hooks), the first `k - 1` retries failed and keep their cost; the last one's cost comes
//! back if the call was dropped or its attempt succeeded, and stays out if the call returned
//! its error.
//!
//! A hedged call (`hedge_after`) runs several attempts at once: each hedge or retry that ran
//! and did not win keeps its cost (a loser cancelled when another attempt won included); what
//! the attempts still running held when the caller dropped the call comes back.
//!
//! With a guard (which makes each attempt wait once, so cuts land in its waits too), every
//! attempt it admitted is settled exactly once, whichever poll the call is dropped after; and
//! with that guard and a bulkhead whose line the call waits in, both are, and the bulkhead
//! ends with no place held and nobody in line.

use crate::util::TestError;
use retry_runtime::{
    Admit, AttemptKind, Bulkhead, ErrorClass, Guard, GuardContext, GuardOutcome, RateLimiter,
    RetryEvent, TokenBucket, retry,
};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// What one attempt does: yield to the scheduler `yields` times, wait `sleep_ms`, answer.
#[derive(Debug, Clone, Copy)]
struct Step {
    yields: u32,
    sleep_ms: u64,
    answer: Answer,
}

#[derive(Debug, Clone, Copy)]
enum Answer {
    Ok,
    Fail(ErrorClass),
    Hang,
}

const fn step(yields: u32, sleep_ms: u64, answer: Answer) -> Step {
    Step {
        yields,
        sleep_ms,
        answer,
    }
}

use Answer::{Fail, Hang, Ok as Succeed};
use ErrorClass::{NotSent, Permanent, Throttling, Timeout, Transient};

struct Script {
    steps: Vec<Step>,
    next: RefCell<usize>,
    /// Per attempt: it answered; its future was dropped by the call's caller.
    ends: RefCell<Vec<(bool, bool)>>,
}

thread_local! {
    /// The caller is dropping the call (set just before it is dropped).
    static DROPPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes how attempt `n` ended when its future goes.
struct End<'s> {
    script: &'s Script,
    n: usize,
    answered: bool,
}

impl Drop for End<'_> {
    fn drop(&mut self) {
        let by_caller = !self.answered && DROPPING.with(std::cell::Cell::get);
        self.script.ends.borrow_mut()[self.n - 1] = (self.answered, by_caller);
    }
}

impl Script {
    fn new(steps: &[Step]) -> Script {
        Script {
            steps: steps.to_vec(),
            next: RefCell::new(0),
            ends: RefCell::new(Vec::new()),
        }
    }

    async fn attempt(&self) -> Result<u32, TestError> {
        let n = {
            let mut next = self.next.borrow_mut();
            *next += 1;
            *next
        };
        let s = self.steps[(n - 1).min(self.steps.len() - 1)];
        self.ends.borrow_mut().push((false, false));
        let mut end = End {
            script: self,
            n,
            answered: false,
        };
        for _ in 0..s.yields {
            tokio::task::yield_now().await;
        }
        if s.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(s.sleep_ms)).await;
        }
        let out = match s.answer {
            Answer::Ok => Ok(u32::try_from(n).unwrap()),
            Answer::Fail(class) => Err(TestError::fault(class)),
            Answer::Hang => std::future::pending().await,
        };
        end.answered = true;
        out
    }
}

thread_local! {
    /// The class of each retry's failure, in order, as `on_retry` saw them.
    static HOOKS: RefCell<Vec<ErrorClass>> = const { RefCell::new(Vec::new()) };
}

fn note(e: &RetryEvent<'_, TestError>) {
    // A hedge after the delay (no failure) pays the retry cost of a transient failure.
    let class = if e.is_hedge() && e.error().is_none() {
        ErrorClass::Transient
    } else {
        e.class()
    };
    HOOKS.with(|h| h.borrow_mut().push(class));
}

// Large buckets without reward: no run can drain them, and the level moves only by the costs
// that retries keep.
static UNTIMED: TokenBucket = TokenBucket::standard()
    .with_capacity(1_000_000)
    .with_success_reward(0);
static TIMED: TokenBucket = TokenBucket::standard()
    .with_capacity(1_000_000)
    .with_success_reward(0);

#[retry(bucket = UNTIMED, max_attempts = 4, initial_backoff = "3ms", jitter = "equal", on_retry = note)]
async fn untimed(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(
    bucket = TIMED,
    max_attempts = 5,
    initial_backoff = "2ms",
    attempt_timeout = "10ms",
    attempt_timeout_multiplier = 2,
    max_attempt_timeout = "30ms",
    deadline = "80ms",
    on_retry = note
)]
async fn timed(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

static ADAPTIVE: TokenBucket = TokenBucket::standard()
    .with_capacity(1_000_000)
    .with_success_reward(0);
// A fast limiter (at least 200 send tokens a second), so its waits after a throttle are a few
// milliseconds of paused time and every cut point inside them is tried.
static LIMITER: RateLimiter = RateLimiter::adaptive().with_min_fill_rate(200.0);

#[retry(
    mode = "adaptive",
    bucket = ADAPTIVE,
    rate_limiter = LIMITER,
    max_attempts = 4,
    initial_backoff = "3ms",
    jitter = "equal",
    on_retry = note
)]
async fn adaptive(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

static HEDGED: TokenBucket = TokenBucket::standard()
    .with_capacity(1_000_000)
    .with_success_reward(0);

#[retry(
    bucket = HEDGED,
    hedge_after = "2ms",
    max_in_flight = 3,
    max_attempts = 4,
    initial_backoff = "3ms",
    attempt_timeout = "10ms",
    deadline = "60ms",
    on_retry = note
)]
async fn hedged(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// Polls `inner` at most `polls` times; `None` if it had not finished by then (it is dropped).
struct CutAfter<F: Future> {
    inner: Pin<Box<F>>,
    left: usize,
}

impl<F: Future> Future for CutAfter<F> {
    type Output = Option<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        self.inner.as_mut().poll(cx).map(Some)
    }
}

fn cost(class: ErrorClass) -> u32 {
    TokenBucket::standard().cost(class)
}

/// Runs `call` cut after every possible number of polls; returns how many runs it took.
async fn every_cut<'s, F, Fut>(bucket: &TokenBucket, steps: &'s [Step], call: F) -> usize
where
    F: Fn(&'s Script) -> Fut,
    Fut: Future<Output = Result<u32, TestError>> + 's,
{
    for polls in 0.. {
        HOOKS.with(|h| h.borrow_mut().clear());
        let before = bucket.available();
        let script: &'s Script = Box::leak(Box::new(Script::new(steps)));
        let out = CutAfter {
            inner: Box::pin(call(script)),
            left: polls,
        }
        .await;
        let hooks = HOOKS.with(|h| h.borrow().clone());
        let taken: Vec<u32> = hooks.iter().copied().map(cost).collect();
        let kept: u32 = match (&out, taken.split_last()) {
            (_, None) => 0,
            // The last retry failed and the call returned its error: every cost stays out.
            (Some(Err(_)), Some(_)) => taken.iter().sum(),
            // Dropped while holding the last retry's cost, or that retry succeeded.
            (None | Some(Ok(_)), Some((_, earlier))) => earlier.iter().sum(),
        };
        assert_eq!(
            bucket.available(),
            before - kept,
            "{steps:?} cut after {polls} polls ({out:?}, retries {hooks:?})"
        );
        if out.is_some() {
            return polls + 1;
        }
    }
    unreachable!()
}

/// Runs the hedged `call` cut after every possible number of polls; returns how many runs it
/// took.
async fn every_cut_hedged<'s, F, Fut>(bucket: &TokenBucket, steps: &'s [Step], call: F) -> usize
where
    F: Fn(&'s Script) -> Fut,
    Fut: Future<Output = Result<u32, TestError>> + 's,
{
    for polls in 0.. {
        HOOKS.with(|h| h.borrow_mut().clear());
        DROPPING.with(|d| d.set(false));
        let before = bucket.available();
        let script: &'s Script = Box::leak(Box::new(Script::new(steps)));
        let mut cut = CutAfter {
            inner: Box::pin(call(script)),
            left: polls,
        };
        let out = (&mut cut).await;
        DROPPING.with(|d| d.set(true));
        drop(cut);
        DROPPING.with(|d| d.set(false));
        let hooks = HOOKS.with(|h| h.borrow().clone());
        let ends = script.ends.borrow().clone();
        let winner = match &out {
            Some(Ok(n)) => Some(*n as usize),
            _ => None,
        };
        // Attempt k > 1 was started by hook k - 1 and holds its cost.
        let kept: u32 = ends
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(i, (_, by_caller))| Some(i + 1) != winner && !by_caller)
            .map(|(i, _)| cost(hooks[i - 1]))
            .sum();
        assert_eq!(
            bucket.available(),
            before - kept,
            "{steps:?} cut after {polls} polls ({out:?}, hooks {hooks:?}, ends {ends:?})"
        );
        if out.is_some() {
            return polls + 1;
        }
    }
    unreachable!()
}

const SCENARIOS: &[&[Step]] = &[
    &[step(0, 0, Succeed)],
    &[step(3, 0, Succeed)],
    &[step(1, 2, Fail(Transient)), step(2, 1, Succeed)],
    &[
        step(1, 0, Fail(Transient)),
        step(0, 1, Fail(Timeout)),
        step(2, 0, Fail(Throttling)),
        step(1, 1, Succeed),
    ],
    &[step(2, 1, Fail(NotSent))],
    &[step(0, 1, Fail(Throttling)), step(1, 0, Fail(Permanent))],
    &[
        step(1, 0, Fail(Transient)),
        step(1, 0, Fail(Transient)),
        step(1, 0, Fail(Transient)),
        step(1, 0, Succeed),
    ],
];

/// Throttles turn the limiter on, so later attempts wait for send tokens (1, then 5 for a
/// retry, 10 after a throttle) and the cuts land inside those waits too.
const ADAPTIVE_SCENARIOS: &[&[Step]] = &[
    &[step(0, 0, Fail(Throttling)), step(1, 0, Succeed)],
    &[
        step(1, 1, Fail(Throttling)),
        step(0, 0, Fail(Throttling)),
        step(1, 0, Fail(Transient)),
        step(0, 1, Succeed),
    ],
    &[step(2, 0, Succeed)],
    &[step(0, 0, Fail(Throttling)), step(1, 2, Fail(Permanent))],
    &[
        step(0, 1, Fail(Timeout)),
        step(1, 0, Fail(Throttling)),
        step(2, 1, Fail(Throttling)),
    ],
];

const TIMED_SCENARIOS: &[&[Step]] = &[
    &[step(1, 0, Hang)],
    &[step(0, 0, Hang), step(2, 5, Succeed)],
    &[
        step(1, 3, Fail(Transient)),
        step(0, 0, Hang),
        step(1, 25, Succeed),
    ],
    &[step(2, 12, Succeed), step(1, 1, Succeed)],
    &[step(0, 9, Fail(Throttling)), step(0, 0, Hang)],
];

#[tokio::test(start_paused = true)]
async fn dropping_an_untimed_call_after_any_poll_leaves_the_bucket_exact() {
    let mut runs = 0;
    for steps in SCENARIOS {
        runs += every_cut(&UNTIMED, steps, untimed).await;
    }
    eprintln!(
        "untimed: {} scenarios, {runs} runs (one per cut point)",
        SCENARIOS.len()
    );
    assert!(runs > 50, "the scenarios have many poll points: {runs}");
}

#[tokio::test(start_paused = true)]
async fn dropping_a_timed_call_after_any_poll_leaves_the_bucket_exact() {
    let mut runs = 0;
    for steps in TIMED_SCENARIOS {
        runs += every_cut(&TIMED, steps, timed).await;
    }
    eprintln!(
        "timed: {} scenarios, {runs} runs (one per cut point)",
        TIMED_SCENARIOS.len()
    );
    assert!(runs > 30, "the scenarios have many poll points: {runs}");
}

#[tokio::test(start_paused = true)]
async fn dropping_an_adaptive_call_after_any_poll_leaves_bucket_and_limiter_consistent() {
    let mut runs = 0;
    // Twice over: the second pass meets a limiter already turned on by the first.
    for steps in ADAPTIVE_SCENARIOS.iter().chain(ADAPTIVE_SCENARIOS) {
        runs += every_cut(&ADAPTIVE, steps, adaptive).await;
        assert!(LIMITER.is_enabled(), "every scenario has throttled once");
        assert!(LIMITER.fill_rate() >= 200.0, "{}", LIMITER.fill_rate());
        assert!(
            LIMITER.capacity() <= LIMITER.max_capacity(),
            "{} > {}",
            LIMITER.capacity(),
            LIMITER.max_capacity()
        );
    }
    eprintln!(
        "adaptive: {} scenarios twice, {runs} runs (one per cut point)",
        ADAPTIVE_SCENARIOS.len()
    );
    assert!(runs > 50, "the scenarios have many poll points: {runs}");
}

/// Attempts that answer late, fail while others run, hang until their timeout, and win or
/// lose: cut at every poll, hedges in flight included.
const HEDGED_SCENARIOS: &[&[Step]] = &[
    &[step(0, 0, Succeed)],
    &[step(1, 5, Succeed), step(0, 1, Succeed)],
    &[step(0, 0, Hang), step(1, 3, Succeed)],
    &[step(0, 4, Succeed), step(0, 9, Succeed)],
    &[
        step(0, 0, Hang),
        step(1, 1, Fail(Transient)),
        step(0, 2, Fail(Timeout)),
        step(1, 1, Succeed),
    ],
    &[
        step(1, 3, Fail(Transient)),
        step(0, 0, Hang),
        step(2, 4, Succeed),
    ],
    &[step(0, 0, Hang), step(0, 1, Fail(Permanent))],
    &[step(0, 0, Hang)],
];

#[tokio::test(start_paused = true)]
async fn dropping_a_hedged_call_after_any_poll_leaves_the_bucket_exact() {
    let mut runs = 0;
    for steps in HEDGED_SCENARIOS {
        runs += every_cut_hedged(&HEDGED, steps, hedged).await;
    }
    eprintln!(
        "hedged: {} scenarios, {runs} runs (one per cut point)",
        HEDGED_SCENARIOS.len()
    );
    assert!(runs > 40, "the scenarios have many poll points: {runs}");
}

/// A guard that makes every attempt wait 1 ms at its first ask (so cuts land in its waits
/// too), and keeps a ledger of the attempts it admitted and has not been told the end of.
struct Ledger {
    asks: std::sync::atomic::AtomicU32,
    held: std::sync::Mutex<Vec<u32>>,
    wrong: std::sync::Mutex<Vec<String>>,
}

impl Ledger {
    const fn new() -> Ledger {
        Ledger {
            asks: std::sync::atomic::AtomicU32::new(0),
            held: std::sync::Mutex::new(Vec::new()),
            wrong: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Asserts that every attempt it admitted was told its end, once, in the run `run` names;
    /// and starts afresh for the next run.
    fn assert_settled(&self, run: &str) {
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        let wrong = std::mem::take(&mut *self.wrong.lock().unwrap());
        assert!(
            held.is_empty() && wrong.is_empty(),
            "{run}: never settled {held:?}, {wrong:?}"
        );
    }
}

impl Guard for Ledger {
    fn admit(&self, cx: &GuardContext<'_>) -> Admit {
        let ask = self.asks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if cx.waited().is_zero() && ask % 2 == 0 {
            return Admit::Wait(Duration::from_millis(1));
        }
        let mut held = self.held.lock().unwrap();
        if held.contains(&cx.number()) {
            self.wrong
                .lock()
                .unwrap()
                .push(format!("{} admitted twice", cx.number()));
        }
        held.push(cx.number());
        Admit::Go
    }

    fn settle(&self, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        let mut held = self.held.lock().unwrap();
        match held.iter().position(|n| *n == cx.number()) {
            Some(i) => {
                held.remove(i);
            }
            None => self.wrong.lock().unwrap().push(format!(
                "{} settled ({outcome:?}) without an admission",
                cx.number()
            )),
        }
    }
}

static LEDGER: Ledger = Ledger::new();
static LEDGER_HEDGED: Ledger = Ledger::new();

#[retry(
    max_attempts = 4,
    initial_backoff = "3ms",
    jitter = "equal",
    attempt_timeout = "10ms",
    deadline = "80ms",
    guard = LEDGER
)]
async fn guarded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(
    hedge_after = "2ms",
    max_in_flight = 3,
    max_attempts = 4,
    initial_backoff = "3ms",
    attempt_timeout = "10ms",
    deadline = "60ms",
    guard = LEDGER_HEDGED
)]
async fn guarded_hedged(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// Runs `call` cut after every possible number of polls; after each run (cut or not) `ledger`
/// was told the end of every attempt it admitted, once. Returns how many runs it took.
async fn every_cut_settles<'s, F, Fut>(ledger: &Ledger, steps: &'s [Step], call: F) -> usize
where
    F: Fn(&'s Script) -> Fut,
    Fut: Future<Output = Result<u32, TestError>> + 's,
{
    for polls in 0.. {
        let script: &'s Script = Box::leak(Box::new(Script::new(steps)));
        let out = CutAfter {
            inner: Box::pin(call(script)),
            left: polls,
        }
        .await;
        ledger.assert_settled(&format!("{steps:?} cut after {polls} polls ({out:?})"));
        if out.is_some() {
            return polls + 1;
        }
    }
    unreachable!()
}

#[tokio::test(start_paused = true)]
async fn dropping_a_guarded_call_after_any_poll_settles_every_admitted_attempt_once() {
    let mut runs = 0;
    for steps in SCENARIOS.iter().chain(TIMED_SCENARIOS) {
        runs += every_cut_settles(&LEDGER, steps, guarded).await;
    }
    for steps in HEDGED_SCENARIOS {
        runs += every_cut_settles(&LEDGER_HEDGED, steps, guarded_hedged).await;
    }
    eprintln!("guarded: {runs} runs (one per cut point)");
    assert!(runs > 100, "the scenarios have many poll points: {runs}");
}

static LEDGER_LINE: Ledger = Ledger::new();
/// One place, and 30 ms to wait for it in line.
static ONE_PLACE: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_millis(30));

#[retry(
    max_attempts = 4,
    initial_backoff = "3ms",
    jitter = "equal",
    attempt_timeout = "10ms",
    deadline = "80ms",
    guard = [LEDGER_LINE, ONE_PLACE]
)]
async fn in_line(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

/// Another caller of the bulkhead, which holds its place for 4 ms.
#[retry(max_attempts = 1, guard = ONE_PLACE)]
async fn other_caller() -> Result<u32, TestError> {
    tokio::time::sleep(Duration::from_millis(4)).await;
    Ok(0)
}

/// Runs `in_line` cut after every possible number of polls, its first attempt waiting in
/// the bulkhead's line behind a holder that frees the place at 4 ms, with another caller
/// joining the line at 2 ms (so the call's retries wait behind it too): after each run, the
/// ledger was told the end of every attempt it admitted, once, and once the others are done,
/// the bulkhead holds no place and nobody stands in its line.
async fn every_cut_in_line(steps: &'static [Step]) -> usize {
    for polls in 0.. {
        let holder = GuardContext::new(AttemptKind::First, 1);
        assert_eq!(ONE_PLACE.admit(&holder), Admit::Go);
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(4)).await;
            let holder = GuardContext::new(AttemptKind::First, 1);
            ONE_PLACE.settle(&holder, GuardOutcome::Success);
        });
        let other = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let _ = other_caller().await;
        });
        let script: &'static Script = Box::leak(Box::new(Script::new(steps)));
        let out = CutAfter {
            inner: Box::pin(in_line(script)),
            left: polls,
        }
        .await;
        LEDGER_LINE.assert_settled(&format!("{steps:?} cut after {polls} polls ({out:?})"));
        release.await.unwrap();
        other.await.unwrap();
        assert_eq!(
            (ONE_PLACE.in_flight(), ONE_PLACE.line().map(|l| l.waiting())),
            (0, Some(0)),
            "{steps:?} cut after {polls} polls ({out:?})"
        );
        if out.is_some() {
            return polls + 1;
        }
    }
    unreachable!()
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_waiting_in_line_after_any_poll_settles_both_guards_once() {
    let mut runs = 0;
    for steps in SCENARIOS.iter().chain(TIMED_SCENARIOS) {
        runs += every_cut_in_line(steps).await;
    }
    eprintln!("in line: {runs} runs (one per cut point)");
    assert!(runs > 100, "the scenarios have many poll points: {runs}");
}
