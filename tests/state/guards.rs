//! Guards (`guard = G`, `guard = [G1, G2]`, `Policy::guard`), written here as a user writes
//! one, with the public API only, on tokio's paused clock: what each is asked and told, in
//! order, for a call that retries, one that is refused at its first attempt or at a retry, a
//! guard that asks to wait (bounded by the deadline), a call dropped mid-attempt or mid-backoff,
//! and a hedged call, whose losing attempt is settled as cancelled. Every admitted attempt is
//! settled exactly once.

use crate::util::{Fail, Hang, LateOk, Script, Succeed, TestError};
use retry_runtime::testing::{self, EarlyEnd, Overrides};
use retry_runtime::{
    Admit, CircuitBreaker, Classify, ErrorClass, Guard, GuardContext, GuardOutcome, Policy, retry,
};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::{Instant, advance};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A guard that answers from a script (then `Go`) and writes down each question and each
/// settlement, with the time since it was first asked.
struct Log {
    name: &'static str,
    answers: Mutex<VecDeque<Admit>>,
    lines: Mutex<Vec<String>>,
    t0: Mutex<Option<Instant>>,
}

impl Log {
    const fn new(name: &'static str) -> Log {
        Log {
            name,
            answers: Mutex::new(VecDeque::new()),
            lines: Mutex::new(Vec::new()),
            t0: Mutex::new(None),
        }
    }

    fn answers(&self, answers: impl IntoIterator<Item = Admit>) {
        self.answers.lock().unwrap().extend(answers);
    }

    fn ms(&self) -> u128 {
        let t0 = *self.t0.lock().unwrap().get_or_insert_with(Instant::now);
        t0.elapsed().as_millis()
    }

    fn lines(&self) -> Vec<String> {
        std::mem::take(&mut self.lines.lock().unwrap())
    }
}

impl Guard for Log {
    fn admit(&self, cx: &GuardContext<'_>) -> Admit {
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Admit::Go);
        let line = format!(
            "{}ms admit {} {:?} after {:?} waited {:?}: {answer:?}",
            self.ms(),
            cx.number(),
            cx.kind(),
            cx.last_class(),
            cx.waited(),
        );
        self.lines.lock().unwrap().push(line);
        answer
    }

    fn settle(&self, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        let line = format!(
            "{}ms settle {} {:?}: {outcome:?}",
            self.ms(),
            cx.number(),
            cx.kind()
        );
        self.lines.lock().unwrap().push(line);
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

static RETRIES: Log = Log::new("retries");

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", guard = RETRIES)]
async fn retries(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn each_attempt_is_admitted_before_it_runs_and_settled_once_after() {
    let script = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Timeout),
        Succeed(7),
    ]);
    assert_eq!(retries(&script).await, Ok(7));
    assert_eq!(
        RETRIES.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Transient)",
            // A retry is admitted before its backoff is slept.
            "0ms admit 2 Retry after Some(Transient) waited 0ns: Go",
            "100ms settle 2 Retry: Failure(Timeout)",
            "100ms admit 3 Retry after Some(Timeout) waited 0ns: Go",
            "300ms settle 3 Retry: Success",
        ]
    );
    assert_eq!(script.starts_ms(), [0, 100, 300]);
}

static EX_A: Log = Log::new("ex_a");
static EX_B: Log = Log::new("ex_b");

#[retry(max_attempts = 2, guard = [EX_B, EX_A])]
async fn explained(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn explain_lists_a_functions_guards_in_order() {
    let script = Script::new([Succeed(1)]);
    explained(&script).await.unwrap();
    let all = retry_runtime::config::explain();
    let e = all.iter().find(|e| e.function == "explained").unwrap();
    assert_eq!(e.guards, ["ex_b", "ex_a"]);
    assert!(
        e.to_string()
            .ends_with("\n  guard                       ex_b, ex_a")
    );
    assert_eq!(EX_A.lines().len(), 2, "admitted and settled");
}

static SHUT: Log = Log::new("shut");

#[retry(max_attempts = 3, guard = SHUT)]
async fn shut(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_refused_first_attempt_ends_the_call_with_refused_without_running_the_body() {
    SHUT.answers([Admit::Refuse]);
    let script = Script::new([Succeed(7)]);
    let (out, record) = testing::record(Overrides::new(), shut(&script)).await;
    let Err(TestError::Refused(refused)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(refused.by(), "shut");
    assert_eq!(refused.classify(), ErrorClass::Permanent);
    assert_eq!(script.attempts(), 0, "the body did not run");
    assert_eq!(
        SHUT.lines(),
        ["0ms admit 1 First after None waited 0ns: Refuse"]
    );
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(
        (end.attempt, end.class, end.reason),
        (0, None, EarlyEnd::Refused("shut"))
    );
    assert_eq!(end.reason.label(), "refused");
    assert_eq!(end.reason.guard(), Some("shut"));
}

static FIRST: Log = Log::new("first");
static SECOND: Log = Log::new("second");

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", guard = [FIRST, SECOND])]
async fn two(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_refused_retry_ends_with_the_last_error_and_cancels_the_guards_before_the_refusal() {
    // The second guard refuses the retry: the first, which admitted it, hears it cancelled.
    SECOND.answers([Admit::Go, Admit::Refuse]);
    let script = Script::new([Fail(ErrorClass::Throttling)]);
    let (out, record) = testing::record(Overrides::new(), two(&script)).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Throttling)));
    assert_eq!(script.attempts(), 1);
    assert_eq!(
        FIRST.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Throttling)",
            "0ms admit 2 Retry after Some(Throttling) waited 0ns: Go",
            "0ms settle 2 Retry: Cancelled",
        ]
    );
    assert_eq!(
        SECOND.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Throttling)",
            "0ms admit 2 Retry after Some(Throttling) waited 0ns: Refuse",
        ]
    );
    assert!(record.retries().is_empty(), "no retry was scheduled");
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(
        (end.attempt, end.class, end.reason),
        (1, Some(ErrorClass::Throttling), EarlyEnd::Refused("second"))
    );
}

static WAITS: Log = Log::new("waits");

#[retry(max_attempts = 2, initial_backoff = "100ms", jitter = "none", guard = WAITS)]
async fn waits(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_wait_is_slept_and_the_guard_asked_again_for_the_first_attempt_and_a_retry() {
    WAITS.answers([
        Admit::Wait(MS(30)),
        Admit::Wait(MS(20)),
        Admit::Go,
        Admit::Wait(MS(50)),
        Admit::Go,
    ]);
    let script = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    assert_eq!(waits(&script).await, Ok(1));
    assert_eq!(
        WAITS.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Wait(30ms)",
            "30ms admit 1 First after None waited 30ms: Wait(20ms)",
            "50ms admit 1 First after None waited 50ms: Go",
            "50ms settle 1 First: Failure(Transient)",
            "50ms admit 2 Retry after Some(Transient) waited 0ns: Wait(50ms)",
            "100ms admit 2 Retry after Some(Transient) waited 50ms: Go",
            // The retry's backoff follows its admission.
            "200ms settle 2 Retry: Success",
        ]
    );
    assert_eq!(script.starts_ms(), [50, 200]);
}

static STALLS: Log = Log::new("stalls");

#[retry(max_attempts = 3, deadline = "250ms", guard = STALLS)]
async fn stalls(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_would_reach_the_deadline_ends_the_call_with_the_deadline_error() {
    STALLS.answers([
        Admit::Wait(MS(100)),
        Admit::Wait(MS(100)),
        Admit::Wait(MS(100)),
    ]);
    let script = Script::new([Succeed(1)]);
    let (out, record) = testing::record(Overrides::new(), stalls(&script)).await;
    let Err(TestError::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(t.limit(), MS(250));
    assert_eq!(script.attempts(), 0);
    // Asked at 0 and 100 ms; at 200 ms a third wait would pass the deadline. Nothing was
    // admitted, so nothing is settled.
    assert_eq!(
        STALLS.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Wait(100ms)",
            "100ms admit 1 First after None waited 100ms: Wait(100ms)",
            "200ms admit 1 First after None waited 200ms: Wait(100ms)",
        ]
    );
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(end.reason, EarlyEnd::Deadline);
}

static DROPPED: Log = Log::new("dropped");

#[retry(max_attempts = 3, initial_backoff = "1s", jitter = "none", guard = DROPPED)]
async fn dropped(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_attempt_or_mid_backoff_settles_what_it_holds_as_cancelled() {
    // Dropped while its first attempt hangs.
    let script = Script::new([Hang]);
    let call = tokio::spawn(async move { dropped(&script).await });
    tokio::task::yield_now().await;
    advance(MS(10)).await;
    call.abort();
    let _ = call.await;
    assert_eq!(
        DROPPED.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "10ms settle 1 First: Cancelled",
        ]
    );

    // Dropped while sleeping towards a retry it was admitted for.
    let script = Script::new([Fail(ErrorClass::Transient)]);
    let call = tokio::spawn(async move { dropped(&script).await });
    tokio::task::yield_now().await;
    advance(MS(500)).await;
    call.abort();
    let _ = call.await;
    assert_eq!(
        DROPPED.lines(),
        [
            "10ms admit 1 First after None waited 0ns: Go",
            "10ms settle 1 First: Failure(Transient)",
            "10ms admit 2 Retry after Some(Transient) waited 0ns: Go",
            "510ms settle 2 Retry: Cancelled",
        ]
    );
}

static LATE: Log = Log::new("late");

#[retry(max_attempts = 3, initial_backoff = "200ms", jitter = "none", deadline = "150ms", guard = LATE)]
async fn late(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_retry_admitted_but_never_sent_is_settled_as_cancelled() {
    // The backoff (200 ms) would pass the deadline: the retry, admitted, is not sent.
    let script = Script::new([Fail(ErrorClass::Transient)]);
    assert_eq!(
        late(&script).await,
        Err(TestError::fault(ErrorClass::Transient))
    );
    assert_eq!(
        LATE.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Transient)",
            "0ms admit 2 Retry after Some(Transient) waited 0ns: Go",
            "0ms settle 2 Retry: Cancelled",
        ]
    );
}

static HEDGED: Log = Log::new("hedged");

#[retry(hedge_after = "10ms", max_attempts = 3, guard = HEDGED)]
async fn hedged(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_hedge_is_admitted_as_a_hedge_and_the_loser_is_settled_as_cancelled() {
    // The first attempt is slow; the hedge, 10 ms later, answers first.
    let script = Script::new([LateOk(MS(100), 1), LateOk(MS(20), 2)]);
    assert_eq!(hedged(&script).await, Ok(2));
    assert_eq!(
        HEDGED.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "10ms admit 2 Hedge after None waited 0ns: Go",
            "30ms settle 2 Hedge: Success",
            "30ms settle 1 First: Cancelled",
        ]
    );
}

static BOTH_CB: CircuitBreaker = CircuitBreaker::new()
    .with_min_calls(1)
    .with_failure_ratio(0.5);
static BOTH: Log = Log::new("both");

#[retry(max_attempts = 1, breaker = BOTH_CB, guard = BOTH)]
async fn both(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_breaker_and_a_guard_each_refuse_with_their_own_error() {
    BOTH.answers([Admit::Refuse]);
    let script = Script::new([Fail(ErrorClass::Transient)]);
    assert!(matches!(both(&script).await, Err(TestError::Refused(r)) if r.by() == "both"));
    // The guard's refusal ran nothing, so the breaker counted nothing; a failure opens it.
    assert!(matches!(both(&script).await, Err(TestError::Fault(..))));
    assert!(matches!(
        both(&script).await,
        Err(TestError::CircuitOpen(_))
    ));
    assert_eq!(script.attempts(), 1);
    assert_eq!(
        BOTH.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Refuse",
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Transient)",
        ],
        "the breaker refuses before the guard is asked"
    );
}

static POLICY: Log = Log::new("policy");

#[tokio::test(start_paused = true)]
async fn a_policy_asks_its_guards_in_order_and_converts_a_refusal() {
    static TOO: Log = Log::new("too");
    static GUARDED: Policy<retry_runtime::Refused> = Policy::new()
        .initial_backoff(Duration::from_millis(100))
        .jitter(retry_runtime::Jitter::None)
        .guard(&POLICY)
        .guard(&TOO);
    let script = Script::new([Fail(ErrorClass::Transient), Succeed(3)]);
    assert_eq!(GUARDED.retry(|| script.attempt()).await, Ok(3));
    assert_eq!(
        POLICY.lines(),
        [
            "0ms admit 1 First after None waited 0ns: Go",
            "0ms settle 1 First: Failure(Transient)",
            "0ms admit 2 Retry after Some(Transient) waited 0ns: Go",
            "100ms settle 2 Retry: Success",
        ]
    );
    assert_eq!(TOO.lines().len(), 4);

    TOO.answers([Admit::Refuse]);
    let out = GUARDED.retry(|| script.attempt()).await;
    assert!(
        matches!(out, Err(TestError::Refused(r)) if r.by() == "too"),
        "{out:?}"
    );
    assert_eq!(
        POLICY.lines(),
        [
            "100ms admit 1 First after None waited 0ns: Go",
            "100ms settle 1 First: Cancelled",
        ]
    );

    // An error type that is only a message takes the refusal as its text.
    TOO.answers([Admit::Refuse]);
    let out = GUARDED
        .retry(|| async { Ok::<u32, String>(1) })
        .classify(|_| false)
        .await;
    assert_eq!(
        out,
        Err("refused by guard `too`: the call was not made".to_owned())
    );
    POLICY.lines();
}

// --- Bulkhead ------------------------------------------------------------------------------

use retry_runtime::Bulkhead;

static ONE: Bulkhead = Bulkhead::new(1);

#[retry(max_attempts = 2, initial_backoff = "100ms", jitter = "none", guard = ONE)]
async fn one_at_a_time(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_refuses_an_attempt_beyond_its_places_and_a_retry_holds_its_place_through_its_backoff()
 {
    let slow = Script::new([LateOk(MS(50), 1)]);
    let first = tokio::spawn(async move { one_at_a_time(&slow).await });
    tokio::task::yield_now().await;
    assert_eq!(ONE.in_flight(), 1);
    advance(MS(10)).await;
    let refused = Script::new([Succeed(2)]);
    let (out, record) = testing::record(Overrides::new(), one_at_a_time(&refused)).await;
    assert!(
        matches!(out, Err(TestError::Refused(r)) if r.by() == "bulkhead"),
        "{out:?}"
    );
    assert_eq!(refused.attempts(), 0);
    assert_eq!(record.early_ends()[0].reason, EarlyEnd::Refused("bulkhead"));
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(ONE.in_flight(), 0, "the place is free again");

    // A call sleeping towards its retry holds its place: another is refused meanwhile.
    let retrying = Script::new([Fail(ErrorClass::Transient), Succeed(3)]);
    let call = tokio::spawn(async move { one_at_a_time(&retrying).await });
    tokio::task::yield_now().await;
    advance(MS(50)).await;
    assert_eq!(ONE.in_flight(), 1, "held through the backoff");
    let other = Script::new([Succeed(4)]);
    assert!(matches!(
        one_at_a_time(&other).await,
        Err(TestError::Refused(_))
    ));
    assert_eq!(call.await.unwrap(), Ok(3));
    assert_eq!(ONE.in_flight(), 0);
}

static QUEUE: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_millis(100));

#[retry(max_attempts = 1, guard = QUEUE)]
async fn queued(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_with_a_wait_lets_an_attempt_wait_for_a_place_up_to_max_wait() {
    let t0 = tokio::time::Instant::now();
    let first = Script::new([LateOk(MS(30), 1)]);
    let second = Script::new([LateOk(MS(200), 2)]);
    let third = Script::new([Succeed(3)]);
    let (a, b) = tokio::join!(queued(&first), async {
        // Starts once the first ends (at 30 ms), polling every 10 ms.
        tokio::task::yield_now().await;
        let b = queued(&second).await;
        (b, t0.elapsed())
    });
    assert_eq!(a, Ok(1));
    assert_eq!(b, (Ok(2), MS(230)), "second started at 30 ms");
    assert_eq!(second.starts_ms(), [30]);

    // A place that stays taken longer than max_wait: refused after 100 ms of waiting.
    let long = Script::new([LateOk(MS(500), 4)]);
    let (_, c) = tokio::join!(queued(&long), async {
        tokio::task::yield_now().await;
        let t = tokio::time::Instant::now();
        (queued(&third).await, t.elapsed())
    });
    assert!(
        matches!(c.0, Err(TestError::Refused(r)) if r.by() == "bulkhead"),
        "{c:?}"
    );
    assert_eq!(c.1, MS(100));
    assert_eq!(third.attempts(), 0);
}

static LINE: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_secs(120));

#[retry(max_attempts = 1, guard = LINE)]
async fn lined(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(max_attempts = 1, deadline = "50ms", guard = LINE)]
async fn lined_briefly(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_hands_a_freed_place_to_its_first_waiter_at_once_within_the_deadline() {
    // The holder frees its place at 23 ms: the waiter that came first starts then, the next
    // when that one ends, with a wait (two minutes) longer than any poll would allow.
    let holder = Script::new([LateOk(MS(23), 1)]);
    let first = Script::new([LateOk(MS(10), 2)]);
    let second = Script::new([Succeed(3)]);
    let after = |ms, script| async move {
        tokio::time::sleep(MS(ms)).await;
        lined(script).await
    };
    let (a, b, c) = tokio::join!(lined(&holder), after(1, &first), after(2, &second));
    assert_eq!((a, b, c), (Ok(1), Ok(2), Ok(3)));
    assert_eq!(first.starts_ms(), [23], "at once, not at the next poll");
    assert_eq!(second.starts_ms(), [33], "after the one that came first");
    assert_eq!(LINE.in_flight(), 0);

    // A waiter whose deadline comes first ends with the deadline's error at its deadline and
    // leaves the line.
    let long = Script::new([LateOk(MS(500), 4)]);
    let brief = Script::new([Succeed(5)]);
    let (_, d) = tokio::join!(lined(&long), async {
        tokio::task::yield_now().await;
        let t = tokio::time::Instant::now();
        (lined_briefly(&brief).await, t.elapsed())
    });
    assert!(matches!(d.0, Err(TestError::TimedOut(_))), "{d:?}");
    assert_eq!(d.1, MS(50));
    assert_eq!(brief.attempts(), 0);
    assert_eq!(LINE.line().map(|l| l.waiting()), Some(0));
}

static BLOCKING_LINE: Bulkhead = Bulkhead::new(1).with_max_wait(Duration::from_secs(60));

#[retry(max_attempts = 1, guard = BLOCKING_LINE)]
fn blocking_lined(hold: Duration, started: &std::sync::mpsc::Sender<()>) -> Result<u32, TestError> {
    let _ = started.send(());
    std::thread::sleep(hold);
    Ok(1)
}

#[test]
fn a_blocking_waiter_is_woken_when_the_place_frees() {
    // Real threads: the holder keeps the place 50 ms; the waiter, with a minute to wait,
    // parks in line and runs as soon as the holder ends, long before its wait would.
    let (tx, rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || blocking_lined(Duration::from_millis(50), &tx));
    rx.recv().unwrap();
    let t = std::time::Instant::now();
    let (tx, _rx) = std::sync::mpsc::channel();
    assert_eq!(blocking_lined(Duration::ZERO, &tx), Ok(1));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(holder.join().unwrap(), Ok(1));
    assert_eq!(BLOCKING_LINE.in_flight(), 0);
}

// --- ConcurrencyBudget ---------------------------------------------------------------------

use retry_runtime::ConcurrencyBudget;

static ONE_RETRY: ConcurrencyBudget = ConcurrencyBudget::ratio(0.0).with_min_concurrency(1);

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", guard = ONE_RETRY)]
async fn budgeted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_budget_counts_a_retry_sleeping_its_backoff_and_refuses_the_next_one() {
    // The first call's retry sleeps its backoff: it is the one retry the budget allows.
    let a = Script::new([Fail(ErrorClass::Transient), Succeed(1)]);
    let first = tokio::spawn(async move { budgeted(&a).await });
    tokio::task::yield_now().await;
    advance(MS(10)).await;
    assert_eq!(
        (ONE_RETRY.in_flight(), ONE_RETRY.retries_in_flight()),
        (1, 1)
    );

    // Another call fails: its retry is refused, and it ends with its error.
    let b = Script::new([Fail(ErrorClass::Throttling)]);
    let (out, record) = testing::record(Overrides::new(), budgeted(&b)).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Throttling)));
    assert_eq!(b.attempts(), 1);
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(
        (end.attempt, end.reason),
        (1, EarlyEnd::Refused("concurrency_budget"))
    );

    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(
        (ONE_RETRY.in_flight(), ONE_RETRY.retries_in_flight()),
        (0, 0)
    );
}

// --- AdaptiveThrottle ----------------------------------------------------------------------

use retry_runtime::AdaptiveThrottle;

static THROTTLE: AdaptiveThrottle = AdaptiveThrottle::new(2.0);

#[retry(max_attempts = 2, initial_backoff = "1ms", jitter = "none", guard = THROTTLE)]
async fn throttled(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_adaptive_throttle_refuses_more_retries_as_the_backend_accepts_less() {
    // A backend that throttles everything: each call's first attempt is sent (only retries are
    // gated), and its retry is refused with probability requests / (requests + 1).
    let down = Script::always(ErrorClass::Throttling);
    let mut refused = 0;
    for _ in 0..20 {
        let (out, record) = testing::record(Overrides::new().seed(7), throttled(&down)).await;
        assert_eq!(out, Err(TestError::fault(ErrorClass::Throttling)));
        refused += record
            .early_ends()
            .iter()
            .filter(|e| e.reason == EarlyEnd::Refused("adaptive_throttle"))
            .count();
    }
    let sent = down.attempts();
    assert_eq!(sent + refused, 40, "each call's retry was sent or refused");
    assert!(refused >= 10, "{refused} of 20 retries refused");
    let (requests, accepts) = THROTTLE.window_counts();
    assert_eq!(
        (requests, accepts),
        (sent as u64, 0),
        "a refused retry counts nothing"
    );
    assert!(THROTTLE.rejection_probability() > 0.9);

    // The backend recovers: successes bring the probability back to 0 (k = 2: once accepts
    // are half the requests).
    let up = Script::new([Succeed(1)]);
    while THROTTLE.rejection_probability() > 0.0 {
        assert_eq!(throttled(&up).await, Ok(1));
    }
    let (requests, accepts) = THROTTLE.window_counts();
    assert!(
        2 * accepts >= requests,
        "{requests} requests, {accepts} accepts"
    );
    // And after its window (2 minutes) the failures are forgotten altogether.
    advance(Duration::from_secs(121)).await;
    assert_eq!(THROTTLE.window_counts(), (0, 0));
}

// --- Quota ---------------------------------------------------------------------------------

use retry_runtime::Quota;

/// 2 a second (a turn every 500 ms, 2 at once); an attempt waits up to 600 ms for its turn.
static TWO_A_SECOND: Quota = Quota::per_second(2).with_max_wait(Duration::from_millis(600));

#[retry(max_attempts = 1, guard = TWO_A_SECOND)]
async fn quota_limited(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_quota_sends_its_burst_then_one_attempt_a_turn_and_refuses_one_whose_turn_is_too_late() {
    let t0 = tokio::time::Instant::now();
    let scripts: Vec<Script> = (1..=4).map(|n| Script::new([Succeed(n)])).collect();
    async fn ended(
        script: &Script,
        t0: tokio::time::Instant,
    ) -> (Result<u32, TestError>, Duration) {
        (quota_limited(script).await, t0.elapsed())
    }
    let (a, b, c, d) = tokio::join!(
        ended(&scripts[0], t0),
        ended(&scripts[1], t0),
        ended(&scripts[2], t0),
        ended(&scripts[3], t0),
    );
    // Two at once; the third and fourth wait for the turn at 500 ms, which the first to ask
    // again takes; the other's next turn (1 s) is past its 600 ms of waiting: refused then.
    let mut outs = [a, b, c, d];
    outs.sort_by_key(|(out, at)| (*at, out.is_err()));
    assert_eq!(outs[0], (Ok(1), MS(0)));
    assert_eq!(outs[1], (Ok(2), MS(0)));
    assert!(
        matches!(outs[2], (Ok(3 | 4), at) if at == MS(500)),
        "{outs:?}"
    );
    assert!(
        matches!(outs[3], (Err(TestError::Refused(r)), at) if r.by() == "quota" && at == MS(500)),
        "{outs:?}"
    );
    let starts: Vec<Vec<u64>> = scripts.iter().map(Script::starts_ms).collect();
    assert_eq!(
        starts.iter().filter(|s| s.is_empty()).count(),
        1,
        "{starts:?}"
    );
    assert_eq!(
        starts.concat().iter().filter(|&&ms| ms == 500).count(),
        1,
        "{starts:?}"
    );
}

/// One a second, one at a time; an attempt waits up to 2 s for its turn.
static ONE_A_SECOND: Quota = Quota::per_second(1)
    .with_burst(1)
    .with_max_wait(Duration::from_secs(2));

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", guard = ONE_A_SECOND)]
async fn quota_retried(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_quota_gives_a_retry_its_turn_before_its_backoff() {
    // The first attempt takes the turn at 0 and fails; its retry waits for the turn at 1 s,
    // then sleeps its backoff (100 ms) and goes at 1.1 s; the second retry, admitted at
    // 1.1 s, waits for the turn at 2 s and sleeps 200 ms.
    let script = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Succeed(5),
    ]);
    assert_eq!(quota_retried(&script).await, Ok(5));
    assert_eq!(script.starts_ms(), [0, 1_100, 2_200]);
    assert_eq!(ONE_A_SECOND.available(), 0, "the turn at 2 s was taken");
    advance(Duration::from_secs(1)).await;
    assert_eq!(ONE_A_SECOND.available(), 1);
}

// --- The built-in protections as guards -----------------------------------------------------

use retry_runtime::{RateLimiter, RetryBudget, TokenBucket};

/// A bucket of one retry after a transient failure (cost 5), as the call's only guard.
static SMALL_BUCKET: TokenBucket = TokenBucket::standard().with_capacity(5);

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", bucket = "none", guard = SMALL_BUCKET)]
async fn bucket_guarded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_token_bucket_as_a_guard_takes_a_retrys_cost_refuses_when_empty_and_refunds_a_success() {
    // The first retry takes the bucket's 5 tokens; the second finds it empty and the call ends
    // with the last error, as the `token_bucket` key's bucket ends it.
    let script = Script::new([Fail(ErrorClass::Transient), Fail(ErrorClass::Transient)]);
    let (out, record) = testing::record(Overrides::new(), bucket_guarded(&script)).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    assert_eq!(script.attempts(), 2);
    assert_eq!(SMALL_BUCKET.available(), 0);
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(end.reason, EarlyEnd::Refused("TokenBucket"));

    // A first attempt passes an empty bucket; its success earns the reward (1).
    let script = Script::new([Succeed(1)]);
    assert_eq!(bucket_guarded(&script).await, Ok(1));
    assert_eq!(SMALL_BUCKET.available(), 1);
    // Refilled, a retry that succeeds gives its cost back.
    let cx = GuardContext::new(retry_runtime::AttemptKind::First, 1);
    for _ in 0..4 {
        SMALL_BUCKET.settle(&cx, GuardOutcome::Success);
    }
    let script = Script::new([Fail(ErrorClass::Transient), Succeed(2)]);
    assert_eq!(bucket_guarded(&script).await, Ok(2));
    assert_eq!(SMALL_BUCKET.available(), 5);
}

/// gRPC's retry throttling as a guard: 3 tokens, a failure takes 1 and a success gives 0.5
/// back, and a retry needs more than 1.5 left.
static THROTTLING: RetryBudget = RetryBudget::grpc_throttling(3, 0.5);

#[tokio::test(start_paused = true)]
async fn a_retry_budget_as_a_guard_counts_each_end_and_refuses_a_retry_without_room() {
    static BUDGETED: Policy<retry_runtime::Refused> = Policy::new()
        .max_attempts(5)
        .initial_backoff(Duration::from_millis(10))
        .jitter(retry_runtime::Jitter::None)
        .bucket(TokenBucket::none())
        .guard(&THROTTLING);
    // 3 -> 2 after the first failure: a retry; 2 -> 1 after the second: no more.
    let script = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Succeed(1),
    ]);
    let (out, record) =
        testing::record(Overrides::new(), BUDGETED.retry(|| script.attempt())).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    assert_eq!(script.attempts(), 2);
    assert_eq!(THROTTLING.tokens(), Some(1.0));
    let [end] = record.early_ends() else {
        panic!("{:?}", record.early_ends())
    };
    assert_eq!(end.reason, EarlyEnd::Refused("RetryBudget"));
    // Four successes give the tokens back; a failure then leaves room for a retry.
    let script = Script::new([Succeed(1), Succeed(1), Succeed(1), Succeed(1)]);
    for _ in 0..4 {
        BUDGETED.retry(|| script.attempt()).await.unwrap();
    }
    assert_eq!(THROTTLING.tokens(), Some(3.0));
    let script = Script::new([Fail(ErrorClass::Throttling), Succeed(4)]);
    assert_eq!(BUDGETED.retry(|| script.attempt()).await, Ok(4));
    assert_eq!(script.attempts(), 2);
}

static GUARD_BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_min_calls(2)
    .with_failure_ratio(0.5)
    .with_break(Duration::from_secs(5));

#[retry(max_attempts = 1, guard = GUARD_BREAKER)]
async fn breaker_guarded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_circuit_breaker_as_a_guard_opens_refuses_with_refused_and_closes_on_a_probe() {
    let script = Script::new([
        Fail(ErrorClass::Transient),
        Fail(ErrorClass::Transient),
        Succeed(3),
    ]);
    for _ in 0..2 {
        assert!(matches!(
            breaker_guarded(&script).await,
            Err(TestError::Fault(..))
        ));
    }
    // Open: refused as any guard refuses, without running the body.
    let out = breaker_guarded(&script).await;
    assert!(
        matches!(out, Err(TestError::CircuitOpen(r)) if r.by() == "CircuitBreaker"),
        "{out:?}"
    );
    assert_eq!(script.attempts(), 2);
    // After its break, one probe goes through; its success closes the breaker.
    advance(Duration::from_secs(5)).await;
    assert_eq!(breaker_guarded(&script).await, Ok(3));
    assert_eq!(GUARD_BREAKER.state(), retry_runtime::BreakerState::Closed);
}

static GUARD_LIMITER: RateLimiter = RateLimiter::adaptive();

#[retry(max_attempts = 4, initial_backoff = "1ms", jitter = "none", guard = GUARD_LIMITER)]
async fn paced(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_rate_limiter_as_a_guard_paces_attempts_after_throttling() {
    assert!(!GUARD_LIMITER.is_enabled());
    let script = Script::new([
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Throttling),
        Fail(ErrorClass::Throttling),
        Succeed(9),
    ]);
    assert_eq!(paced(&script).await, Ok(9));
    assert!(
        GUARD_LIMITER.is_enabled(),
        "a throttling response enables it"
    );
    // The backoffs are 1, 2 and 4 ms; the limiter, enabled and cut by each throttling
    // response, makes each retry wait for its send token far longer.
    let starts = script.starts_ms();
    assert_eq!(starts[0], 0);
    assert!(starts.windows(2).all(|w| w[1] - w[0] > 500), "{starts:?}");
}

/// A guard that writes down what `elapsed` says when it is asked and when it is told.
struct Timing {
    lines: Mutex<Vec<String>>,
}

impl Guard for Timing {
    fn admit(&self, cx: &GuardContext<'_>) -> Admit {
        let line = format!("admit {} elapsed {:?}", cx.number(), cx.elapsed());
        self.lines.lock().unwrap().push(line);
        Admit::Go
    }

    fn settle(&self, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        let line = format!(
            "settle {} {outcome:?} elapsed {:?}",
            cx.number(),
            cx.elapsed()
        );
        self.lines.lock().unwrap().push(line);
    }
}

static TIMING: Timing = Timing {
    lines: Mutex::new(Vec::new()),
};

#[retry(max_attempts = 3, initial_backoff = "100ms", jitter = "none", guard = TIMING)]
async fn timed_attempts(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn settle_is_told_how_long_the_attempt_ran_and_admit_nothing() {
    use crate::util::LateFail;
    let script = Script::new([LateFail(MS(30), ErrorClass::Transient), LateOk(MS(45), 7)]);
    assert_eq!(timed_attempts(&script).await, Ok(7));
    assert_eq!(
        std::mem::take(&mut *TIMING.lines.lock().unwrap()),
        [
            "admit 1 elapsed 0ns",
            "settle 1 Failure(Transient) elapsed 30ms",
            // Admitted before its 100 ms backoff: what it ran is counted from its start.
            "admit 2 elapsed 0ns",
            "settle 2 Success elapsed 45ms",
        ]
    );
    // A retry admitted and never sent (the call is dropped in its backoff) ran for nothing.
    let script = Script::new([LateFail(MS(30), ErrorClass::Transient), Succeed(1)]);
    let dropped = tokio::time::timeout(MS(80), timed_attempts(&script)).await;
    assert!(dropped.is_err());
    assert_eq!(
        std::mem::take(&mut *TIMING.lines.lock().unwrap()),
        [
            "admit 1 elapsed 0ns",
            "settle 1 Failure(Transient) elapsed 30ms",
            "admit 2 elapsed 0ns",
            "settle 2 Cancelled elapsed 0ns",
        ]
    );
}

/// The same guard, saying it does not read the time.
struct Untimed(Timing);

impl Guard for Untimed {
    fn admit(&self, cx: &GuardContext<'_>) -> Admit {
        self.0.admit(cx)
    }

    fn settle(&self, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        self.0.settle(cx, outcome);
    }

    fn timed(&self) -> bool {
        false
    }
}

static UNTIMED: Untimed = Untimed(Timing {
    lines: Mutex::new(Vec::new()),
});
static TIMED_BESIDE: Timing = Timing {
    lines: Mutex::new(Vec::new()),
};

#[retry(max_attempts = 1, guard = UNTIMED)]
async fn untimed_attempt(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(max_attempts = 1, guard = [UNTIMED, TIMED_BESIDE])]
async fn beside_a_timed_guard(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_call_of_untimed_guards_reads_no_time_and_one_timed_guard_times_it_for_all() {
    let script = Script::new([LateOk(MS(45), 7)]);
    assert_eq!(untimed_attempt(&script).await, Ok(7));
    assert_eq!(
        std::mem::take(&mut *UNTIMED.0.lines.lock().unwrap()),
        ["admit 1 elapsed 0ns", "settle 1 Success elapsed 0ns"]
    );
    let script = Script::new([LateOk(MS(45), 7)]);
    assert_eq!(beside_a_timed_guard(&script).await, Ok(7));
    let settled = "settle 1 Success elapsed 45ms";
    assert_eq!(UNTIMED.0.lines.lock().unwrap()[1], settled);
    assert_eq!(TIMED_BESIDE.lines.lock().unwrap()[1], settled);
}
