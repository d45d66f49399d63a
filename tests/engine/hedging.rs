//! Hedged calls (`hedge_after`) on the paused clock: when a hedge starts, which attempt wins,
//! what is cancelled, what the bucket is charged, and the limits (attempts, attempts in flight,
//! the deadline, hints, an empty bucket, a dropped call).

use crate::util::{Fail, Hang, Hint, LateFail, LateOk, Script, Succeed, TestError};
use retry_runtime::{ErrorClass, RetryEvent, TimeoutKind, TokenBucket, attempt, retry, testing};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Runs `f` in a recording scope.
async fn recorded<T>(f: impl Future<Output = T>) -> (T, testing::Record) {
    testing::record(testing::Overrides::new(), f).await
}

// --- When a hedge starts, and who wins ------------------------------------------------------

static FAST: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "50ms", bucket = FAST)]
async fn fast(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_answers_before_the_delay_is_not_hedged() {
    let s = Script::new([LateOk(MS(30), 7)]);
    let (out, record) = recorded(fast(&s)).await;
    assert_eq!(out, Ok(7));
    assert_eq!(s.starts_ms(), [0]);
    assert_eq!(s.now_ms(), 30);
    assert!(record.hedges().is_empty());
    assert_eq!(FAST.available(), 500);
}

static SLOW_FIRST: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "50ms", bucket = SLOW_FIRST)]
async fn slow_first(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_gets_a_hedge_and_the_first_answer_wins() {
    // The first attempt would take 1 s; the hedge at 50 ms answers in 20 ms.
    let s = Script::new([LateOk(MS(1000), 1), LateOk(MS(20), 2)]);
    let (out, record) = recorded(slow_first(&s)).await;
    assert_eq!(out, Ok(2), "the hedge answered first");
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(s.now_ms(), 70, "the call returns with the first answer");
    assert_eq!(
        s.running(),
        0,
        "the slower attempt was dropped when the hedge won"
    );
    let hedges = record.hedges();
    assert_eq!(hedges.len(), 1);
    assert_eq!(
        (hedges[0].attempt, hedges[0].in_flight, hedges[0].class),
        (2, 2, None)
    );
    assert_eq!(hedges[0].delay, MS(50));
    assert!(record.retries().is_empty(), "a hedge is not a retry");
    assert_eq!(record.attempts("slow_first"), 2);
    assert_eq!(
        SLOW_FIRST.available(),
        500,
        "the hedge won: its cost came back"
    );
}

static FIRST_WINS: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "50ms", bucket = FIRST_WINS)]
async fn first_wins(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn when_the_first_attempt_wins_the_hedge_is_cancelled_and_its_cost_stays_out() {
    let s = Script::new([LateOk(MS(80), 1), LateOk(MS(1000), 2)]);
    let (out, _) = recorded(first_wins(&s)).await;
    assert_eq!(out, Ok(1));
    assert_eq!(s.starts_ms(), [0, 50]);
    assert_eq!(s.now_ms(), 80);
    assert_eq!(s.running(), 0, "the hedge was dropped");
    // The hedge took 5 and lost (spent); the winner, which cost nothing, earns the reward.
    assert_eq!(FIRST_WINS.available(), 496);
}

// --- Limits ----------------------------------------------------------------------------------

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
async fn hedges_stop_at_max_in_flight_and_max_attempts_and_the_deadline_cuts_them_all() {
    let s = Script::new([Hang]);
    let (out, record) = recorded(three_at_once(&s)).await;
    assert_eq!(s.starts_ms(), [0, 10, 20], "three in flight at most");
    assert_eq!(s.most_at_once(), 3);
    assert_eq!(s.now_ms(), 100, "the deadline cut every attempt");
    assert_eq!(s.running(), 0);
    let Err(TestError::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(t.kind(), TimeoutKind::Deadline);
    assert_eq!(record.hedges().len(), 2);
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
    // 1 hangs until its 50 ms timeout; 2 (at 10 ms) fails at 15 ms: a hedge starts at once
    // (3, at 15 ms), which hangs too; 1 times out at 50 ms: 4 starts at once; the last two
    // time out at 65 and 100 ms, and nothing is left to try.
    let s = Script::new([Hang, LateFail(MS(5), ErrorClass::Transient), Hang]);
    let (out, record) = recorded(replaced(&s)).await;
    assert_eq!(s.starts_ms(), [0, 10, 15, 50]);
    assert_eq!(s.most_at_once(), 2, "max_in_flight defaults to 2");
    assert_eq!(s.now_ms(), 100);
    let Err(TestError::TimedOut(t)) = out else {
        panic!("{out:?}")
    };
    assert_eq!((t.kind(), t.attempt()), (TimeoutKind::Attempt, 4));
    let classes: Vec<_> = record.hedges().iter().map(|h| h.class).collect();
    assert_eq!(
        classes,
        [None, Some(ErrorClass::Transient), Some(ErrorClass::Timeout)]
    );
    assert!(record.retries().is_empty());
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
    // 1 fails at 5 ms, before the hedge delay: nothing else runs, so the call backs off
    // 100 ms as the sequential loop does; the retry at 105 ms answers.
    let s = Script::new([LateFail(MS(5), ErrorClass::Transient), LateOk(MS(5), 9)]);
    let (out, record) = recorded(then_retried(&s)).await;
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
async fn a_permanent_failure_ends_the_call_and_cancels_the_others() {
    let s = Script::new([Hang, LateFail(MS(5), ErrorClass::Permanent)]);
    let out = permanent(&s).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Permanent)));
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(s.now_ms(), 15);
    assert_eq!(s.running(), 0, "the hanging attempt was dropped");
}

#[retry(
    hedge_after = "10ms",
    max_attempts = 5,
    max_in_flight = 3,
    max_backoff = "1s",
    deadline = "2s"
)]
async fn hinted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_server_hint_stops_further_hedges() {
    // 1 answers at 300 ms; 2 (at 10 ms) gets a 500 ms hint at 12 ms: no hedge starts after
    // it, not at once and not after the delay.
    let s = Script::new([
        LateOk(MS(300), 1),
        Hint(ErrorClass::Throttling, MS(500)),
        Succeed(3),
    ]);
    let (out, record) = recorded(hinted(&s)).await;
    assert_eq!(out, Ok(1));
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(record.hedges().len(), 1);
}

static SMALL: TokenBucket = TokenBucket::standard().with_capacity(7);

#[retry(hedge_after = "10ms", max_attempts = 4, max_in_flight = 4, bucket = SMALL)]
async fn short_of_tokens(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn an_empty_bucket_stops_hedging_but_cancels_nothing_in_flight() {
    // 7 tokens pay for one hedge of 5; the second cannot be paid for, and nothing in flight
    // is dropped: the first attempt still answers.
    let s = Script::new([LateOk(MS(100), 1), Hang]);
    let (out, record) = recorded(short_of_tokens(&s)).await;
    assert_eq!(out, Ok(1));
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(record.hedges().len(), 1);
    // The hedge lost (5 spent); the winner earned the reward.
    assert_eq!(SMALL.available(), 3);
}

static DROPPED: TokenBucket = TokenBucket::standard();

#[retry(hedge_after = "10ms", max_attempts = 4, max_in_flight = 3, bucket = DROPPED)]
async fn dropped(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_drops_every_attempt_and_gives_back_every_cost() {
    let s = Script::new([Hang]);
    let timed = tokio::time::timeout(MS(25), dropped(&s)).await;
    assert!(timed.is_err());
    assert_eq!(s.starts_ms(), [0, 10, 20]);
    assert_eq!(s.running(), 0, "every attempt was dropped with the call");
    assert_eq!(DROPPED.available(), 500, "no token is lost");
}

// --- What the body and the hook see ----------------------------------------------------------

static SEEN: Mutex<Vec<(u32, bool, Option<ErrorClass>)>> = Mutex::new(Vec::new());

fn note(ev: &RetryEvent<'_, TestError>) {
    SEEN.lock()
        .unwrap()
        .push((ev.attempt(), ev.is_hedge(), ev.error().map(|_| ev.class())));
}

static IDS: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

#[retry(hedge_after = "10ms", max_attempts = 3, on_retry = note)]
async fn seen(script: &Script) -> Result<u32, TestError> {
    let a = attempt().expect("inside the body");
    IDS.lock()
        .unwrap()
        .push((a.number(), a.invocation_id().to_string()));
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn each_attempt_sees_its_own_number_and_the_call_s_id_and_the_hook_sees_hedges() {
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
    assert_eq!(
        *SEEN.lock().unwrap(),
        [(1, true, None), (2, true, Some(ErrorClass::Transient))]
    );
}

// --- The latency percentile --------------------------------------------------------------------

#[retry(hedge_after = "p90", max_hedge_after = "500ms", bucket = "none")]
async fn adaptive_delay(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_percentile_delay_hedges_late_until_it_knows_the_latency_then_follows_it() {
    // No samples yet: the delay is max_hedge_after.
    let s = Script::new([Hang, Succeed(1)]);
    let (_, record) = recorded(adaptive_delay(&s)).await;
    assert_eq!(s.starts_ms(), [0, 500]);
    assert_eq!(record.hedges()[0].delay, MS(500));
    // A hundred calls answering in 20 ms teach it the latency.
    for _ in 0..100 {
        let s = Script::new([LateOk(MS(20), 1)]);
        adaptive_delay(&s).await.unwrap();
    }
    let s = Script::new([Hang, Succeed(2)]);
    let (out, record) = recorded(adaptive_delay(&s)).await;
    assert_eq!(out, Ok(2));
    let delay = record.hedges()[0].delay;
    assert!(
        (MS(20)..=MS(25)).contains(&delay),
        "the p90 of 20 ms answers, within the estimate's resolution: {delay:?}"
    );
    // tokio's timer fires on its next millisecond tick.
    let tick = u64::try_from(delay.as_nanos().div_ceil(1_000_000)).unwrap();
    assert_eq!(s.starts_ms()[1], tick);
}

// --- The hedge budget ----------------------------------------------------------------------------

/// `$calls` calls through `$call` (given a `&Script`) of which one in five takes 100 ms and
/// the others 10 ms, in a pattern, each hedged when its first attempt outlives the delay (the
/// hedge answers in 1 ms): the hedges sent.
macro_rules! hedges_of {
    ($calls:expr, |$s:ident| $call:expr) => {{
        let mut hedges = 0;
        for i in 0..$calls {
            let first = if i % 5 == 0 { MS(100) } else { MS(10) };
            let $s = &Script::new([LateOk(first, 1), LateOk(MS(1), 2)]);
            let (out, record) = recorded($call).await;
            assert!(out.is_ok());
            hedges += record.hedges().len();
        }
        hedges
    }};
}

#[retry(hedge_after = "p50", hedge_budget = "5%", bucket = "none")]
async fn within_budget(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[retry(hedge_after = "p50", bucket = "none")]
async fn without_budget(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_hedge_budget_raises_the_delay_until_about_its_share_of_the_calls_hedge() {
    // At the p50 a fifth of the calls (the slow ones) hedge; a budget of 5 % raises the delay
    // past the slow ones' 100 ms for most calls, so that about 5 % of them hedge. 2,000 calls
    // learn the delay; the next 2,000 are counted.
    let unbudgeted = hedges_of!(4000, |s| without_budget(s));
    assert_eq!(
        unbudgeted,
        800 - 4,
        "a fifth, after the 20 calls that teach the p50"
    );
    hedges_of!(2000, |s| within_budget(s));
    let budgeted = hedges_of!(2000, |s| within_budget(s));
    assert!(
        (60..=100).contains(&budgeted),
        "about 5 % of 2,000 calls hedge, at most 100: {budgeted}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_policy_takes_a_hedge_budget_built_or_read_from_configuration() {
    let built = retry_runtime::Policy::new()
        .hedge_after("p50")
        .hedge_budget(0.05)
        .bucket(TokenBucket::none())
        .build()
        .unwrap();
    hedges_of!(2000, |s| built.retry(|| s.attempt()));
    let budgeted = hedges_of!(2000, |s| built.retry(|| s.attempt()));
    assert!((60..=100).contains(&budgeted), "{budgeted}");

    let read: retry_runtime::Policy = toml::from_str(
        r#"
        hedge_after = "p50"
        hedge_budget = "5%"
        bucket = "none"
        "#,
    )
    .unwrap();
    hedges_of!(2000, |s| read.retry(|| s.attempt()));
    let budgeted = hedges_of!(2000, |s| read.retry(|| s.attempt()));
    assert!((60..=100).contains(&budgeted), "{budgeted}");

    // A share out of range is a problem `build` reports, and a budget needs `hedge_after`.
    let err = retry_runtime::Policy::new()
        .hedge_after("p50")
        .hedge_budget(0.0)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("hedge_budget"), "{err}");
    let err = retry_runtime::Policy::new()
        .hedge_budget(0.02)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("hedge_after"), "{err}");
}

// --- Counting: attempts through the hook ------------------------------------------------------

static HOOKED: AtomicU32 = AtomicU32::new(0);

fn count(_: &RetryEvent<'_, TestError>) {
    HOOKED.fetch_add(1, Ordering::Relaxed);
}

#[retry(hedge_after = "10ms", max_attempts = 2, on_retry = count, bucket = "none")]
async fn two_attempts(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn hedges_and_retries_share_max_attempts() {
    // 1 hangs, the hedge (2) at 10 ms fails: no third attempt, not as a hedge, not as a retry;
    // the call waits for 1, which never answers, so the test bounds it.
    let s = Script::new([Hang, Fail(ErrorClass::Transient)]);
    let out = tokio::time::timeout(MS(1000), two_attempts(&s)).await;
    assert!(out.is_err(), "the first attempt is still awaited");
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(HOOKED.load(Ordering::Relaxed), 1, "one hedge, no retry");
}

// --- With a budget, a breaker, adaptive mode -----------------------------------------------

/// A budget without a floor has no room before its window has seen requests: no hedge.
static NO_ROOM: retry_runtime::RetryBudget =
    retry_runtime::RetryBudget::ratio(0.1).with_floor_per_sec(0);

#[retry(hedge_after = "10ms", budget = NO_ROOM)]
async fn budgeted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_budget_without_room_stops_hedges() {
    let s = Script::new([LateOk(MS(50), 1)]);
    let (out, record) = recorded(budgeted(&s)).await;
    assert_eq!(out, Ok(1));
    assert_eq!(s.starts_ms(), [0], "no room in the budget: no hedge");
    assert!(record.hedges().is_empty());
}

static CB: retry_runtime::CircuitBreaker = retry_runtime::CircuitBreaker::new()
    .with_min_calls(2)
    .with_failure_ratio(0.5)
    .with_break(Duration::from_secs(5));

#[retry(hedge_after = "10ms", max_attempts = 2, breaker = CB, bucket = "none")]
async fn guarded(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_breaker_counts_hedges_and_once_open_refuses_the_call() {
    // The attempt and its hedge both fail: two failed attempts open the breaker.
    let s = Script::new([
        LateFail(MS(20), ErrorClass::Transient),
        LateFail(MS(5), ErrorClass::Transient),
    ]);
    let out = guarded(&s).await;
    assert_eq!(out, Err(TestError::fault(ErrorClass::Transient)));
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(CB.state(), retry_runtime::BreakerState::Open);
    let s = Script::new([Succeed(1)]);
    let out = guarded(&s).await;
    assert!(matches!(out, Err(TestError::CircuitOpen(_))), "{out:?}");
    assert_eq!(
        s.attempts(),
        0,
        "the open breaker kept the body from running"
    );
}

static LIMITED: TokenBucket = TokenBucket::standard();

#[retry(mode = "adaptive", hedge_after = "10ms", bucket = LIMITED)]
async fn adaptive(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn in_adaptive_mode_a_hedge_waits_for_nothing_before_the_first_throttle() {
    // The limiter is off until a throttling response: the hedge starts on time and pays the
    // bucket's cost only.
    let s = Script::new([Hang, LateOk(MS(5), 2)]);
    let (out, record) = recorded(adaptive(&s)).await;
    assert_eq!(out, Ok(2));
    assert_eq!(s.starts_ms(), [0, 10]);
    assert_eq!(record.hedges().len(), 1);
    assert_eq!(
        LIMITED.available(),
        500,
        "the hedge won: its cost came back"
    );
}

// --- Send, and without the attribute ---------------------------------------------------------

#[test]
fn a_hedged_call_is_send_when_its_arguments_are() {
    fn send<T: Send>(_: &T) {}
    let s = Script::new([Succeed(1)]);
    send(&fast(&s));
}

#[tokio::test(start_paused = true)]
async fn a_policy_hedges_a_closure() {
    let policy = retry_runtime::Policy::new()
        .hedge_after(MS(10))
        .max_in_flight(3)
        .max_attempts(3)
        .bucket(&POLICY_BUCKET)
        .build()
        .unwrap();
    let s = Script::new([Hang, Hang, LateOk(MS(5), 3)]);
    let (out, record) = recorded(policy.retry(|| s.attempt())).await;
    assert_eq!(out, Ok(3));
    assert_eq!(s.starts_ms(), [0, 10, 20]);
    assert_eq!(s.running(), 0);
    assert_eq!(record.hedges().len(), 2);
    // Two hedges took 5 each; the winner's came back, the other's (cancelled) stays out.
    assert_eq!(POLICY_BUCKET.available(), 495);

    // Not idempotent: hedging is refused when the policy is built.
    let err = retry_runtime::Policy::new()
        .hedge_after(MS(10))
        .idempotent(false)
        .build()
        .err()
        .unwrap();
    assert!(err.to_string().contains("idempotent"), "{err}");
}

static POLICY_BUCKET: TokenBucket = TokenBucket::standard();

static COUNTED: retry_runtime::RetryBudget = retry_runtime::RetryBudget::ratio(1.0);

#[retry(
    hedge_after = "50ms",
    budget = COUNTED,
    initial_backoff = "10ms",
    jitter = "none",
    bucket = "none"
)]
async fn counted(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn a_budget_counts_one_request_per_call_however_its_attempts_ran() {
    // A failure before the hedge delay, a retry after the backoff that is hedged, and the
    // hedge wins: one request, two retries (the retry and the hedge).
    let s = Script::new([
        LateFail(MS(5), ErrorClass::Transient),
        Hang,
        LateOk(MS(5), 3),
    ]);
    assert_eq!(counted(&s).await, Ok(3));
    assert_eq!(s.starts_ms(), [0, 15, 65]);
    assert_eq!(COUNTED.window_counts(), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn a_policy_read_from_configuration_hedges_by_a_percentile() {
    let policy: retry_runtime::Policy = toml::from_str(
        r#"
        hedge_after = "p90"
        max_hedge_after = "30ms"
        max_in_flight = 2
        "#,
    )
    .unwrap();
    // No samples yet: the delay is max_hedge_after.
    let s = Script::new([Hang, LateOk(MS(5), 2)]);
    let (out, record) = recorded(policy.retry(|| s.attempt())).await;
    assert_eq!(out, Ok(2));
    assert_eq!(s.starts_ms(), [0, 30]);
    assert_eq!(record.hedges()[0].delay, MS(30));
}

/// A slow limiter (at least 2 send tokens a second), so that a hedge after a throttle must
/// wait for its send token.
static SLOW_LIMITER: retry_runtime::RateLimiter =
    retry_runtime::RateLimiter::adaptive().with_min_fill_rate(2.0);

#[retry(
    mode = "adaptive",
    rate_limiter = SLOW_LIMITER,
    hedge_after = "10ms",
    max_attempts = 3,
    initial_backoff = "1ms",
    jitter = "none",
    bucket = "none"
)]
async fn paced(script: &Script) -> Result<u32, TestError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn once_throttled_a_hedge_waits_for_its_send_token() {
    // A throttle turns the limiter on; the retry then waits for its send token, and the
    // hedge of that retry, due 10 ms after it, starts only when the limiter has a token for it.
    let s = Script::new([
        LateFail(MS(1), ErrorClass::Throttling),
        Hang,
        LateOk(MS(5), 3),
    ]);
    let (out, record) = recorded(paced(&s)).await;
    assert_eq!(out, Ok(3));
    assert!(SLOW_LIMITER.is_enabled());
    let starts = s.starts_ms();
    assert_eq!(starts.len(), 3, "{starts:?}");
    assert!(
        starts[2] > starts[1] + 10,
        "the hedge waited for a send token beyond its 10 ms delay: {starts:?}"
    );
    assert_eq!(record.hedges().len(), 1);
    assert_eq!(s.running(), 0);
}
