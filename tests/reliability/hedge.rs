//! Property tests of hedged calls over random policies and random attempts, on tokio's paused
//! clock, through the loop `#[retry(hedge_after = ...)]` runs (`Call::run_hedged`).
//!
//! For every case, whether the call ends or its caller drops it at a random moment:
//! - attempts never exceed `max_attempts`, and attempts in flight never exceed `max_in_flight`;
//! - the call never outlives its deadline;
//! - no attempt is left running once the call has returned or been dropped;
//! - the bucket balances: its level is its capacity less the cost of every hedge or retry that
//!   ran and did not win (a call dropped by its caller gives back what its running attempts
//!   held).
//!
//! Cases: 256, or `RETRY_PROPTEST_CASES`.

use crate::util::{TestError, paused_runtime};
use proptest::prelude::*;
use retry_runtime::__private::{
    Call, Fns, HedgeSpec, Jitter, Keys, RetryEvent, Site, Timed, never_repeat,
};
use retry_runtime::{Classify, ErrorClass, TimedOut, TokenBucket};
use std::cell::RefCell;
use std::time::Duration;
use tokio::time::Instant;

fn cases() -> u32 {
    std::env::var("RETRY_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

const RETRY_COST: u32 = 5;
const TIMEOUT_COST: u32 = 10;

fn cost(class: ErrorClass) -> u32 {
    match class {
        ErrorClass::Timeout => TIMEOUT_COST,
        ErrorClass::Permanent => 0,
        _ => RETRY_COST,
    }
}

/// What one attempt does: take `ms` milliseconds, then answer; or never answer.
#[derive(Debug, Clone, Copy)]
enum Step {
    Ok(u64),
    Err(u64, ErrorClass, Option<u64>),
    Hang,
}

#[derive(Debug, Clone)]
struct Case {
    max_attempts: u32,
    max_in_flight: u32,
    hedge_ms: u64,
    attempt_timeout_ms: Option<u64>,
    deadline_ms: Option<u64>,
    capacity: u32,
    steps: Vec<Step>,
    /// The caller drops the call this long after it starts.
    drop_after_ms: Option<u64>,
}

/// One attempt as the body and the call saw it.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    /// The attempt returned (a timer or the call's end dropped it otherwise).
    answered: bool,
    /// Its future was dropped with the call, by the call's caller.
    dropped_by_caller: bool,
    /// What it cost: a hedge's or a retry's, from the hook.
    cost: u32,
}

#[derive(Default)]
struct Log {
    seen: RefCell<Vec<Seen>>,
    running: RefCell<(usize, usize)>,
    /// Costs of the next attempts, as the hook announced them.
    next_cost: RefCell<Vec<u32>>,
    /// The caller is dropping the call.
    dropping: std::cell::Cell<bool>,
}

/// The call as its caller holds it: dropping it marks what it drops.
struct Caller<'l, F> {
    log: &'l Log,
    call: std::pin::Pin<Box<F>>,
}

impl<F: Future> Future for Caller<'_, F> {
    type Output = F::Output;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        self.call.as_mut().poll(cx)
    }
}

impl<F> Drop for Caller<'_, F> {
    fn drop(&mut self) {
        // Runs before the call itself is dropped.
        self.log.dropping.set(true);
    }
}

struct Running<'l> {
    log: &'l Log,
    n: usize,
    done: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.log.running.borrow_mut().0 -= 1;
        if !self.done && self.log.dropping.get() {
            self.log.seen.borrow_mut()[self.n].dropped_by_caller = true;
        }
    }
}

impl Log {
    async fn play(&self, steps: &[Step]) -> Result<u32, TestError> {
        let n = self.seen.borrow().len();
        let cost = self.next_cost.borrow_mut().pop().unwrap_or(0);
        self.seen.borrow_mut().push(Seen {
            cost,
            ..Seen::default()
        });
        {
            let mut r = self.running.borrow_mut();
            r.0 += 1;
            r.1 = r.1.max(r.0);
        }
        let mut guard = Running {
            log: self,
            n,
            done: false,
        };
        let out = match steps[n.min(steps.len() - 1)] {
            Step::Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(u32::try_from(n).unwrap())
            }
            Step::Err(ms, class, hint) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Err(TestError::Fault(class, hint.map(Duration::from_millis)))
            }
            Step::Hang => std::future::pending().await,
        };
        guard.done = true;
        self.seen.borrow_mut()[n].answered = true;
        out
    }

    /// The hook: a hedge or a retry announces the cost of the attempt it starts.
    fn hook(&self) -> impl Fn(&RetryEvent<'_, TestError>) + '_ {
        move |e| {
            let class = if e.is_hedge() && e.error().is_none() {
                ErrorClass::Transient
            } else {
                e.class()
            };
            self.next_cost.borrow_mut().insert(0, cost(class));
        }
    }
}

fn class() -> impl Strategy<Value = ErrorClass> {
    prop_oneof![
        4 => Just(ErrorClass::Transient),
        1 => Just(ErrorClass::Throttling),
        1 => Just(ErrorClass::Timeout),
        1 => Just(ErrorClass::Permanent),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..=120u64).prop_map(Step::Ok),
        3 => (0..=120u64, class(), prop_oneof![5 => Just(None), 1 => (0..=50u64).prop_map(Some)])
            .prop_map(|(ms, c, h)| Step::Err(ms, c, h)),
        2 => Just(Step::Hang),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=6u32,
        2..=4u32,
        1..=60u64,
        prop::option::of(10..=200u64),
        prop::option::of(30..=600u64),
        0..=40u32,
        prop::collection::vec(step(), 1..=8),
        prop::option::of(0..=700u64),
    )
        .prop_map(
            |(max_attempts, max_in_flight, hedge_ms, timeout, deadline, capacity, steps, drop)| {
                Case {
                    max_attempts,
                    max_in_flight,
                    hedge_ms,
                    attempt_timeout_ms: timeout,
                    deadline_ms: deadline,
                    capacity,
                    steps,
                    drop_after_ms: drop,
                }
            },
        )
}

fn classify(e: &TestError) -> ErrorClass {
    e.classify()
}

fn hint(e: &TestError) -> Option<Duration> {
    e.retry_after()
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let mut policy = Keys::new()
        .max_attempts(case.max_attempts)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(80))
        .jitter(Jitter::Full);
    if let Some(t) = case.attempt_timeout_ms {
        policy = policy.attempt_timeout(Duration::from_millis(t));
    }
    if let Some(d) = case.deadline_ms {
        policy = policy.deadline(Duration::from_millis(d));
        if case.attempt_timeout_ms.is_some_and(|t| t > d) {
            policy = policy.attempt_timeout(Duration::from_millis(d));
        }
    }
    let bucket: &'static TokenBucket = Box::leak(Box::new(
        TokenBucket::standard()
            .with_capacity(case.capacity)
            .with_success_reward(0),
    ));
    let policy = policy
        .hedge_after(HedgeSpec::Fixed(Duration::from_millis(case.hedge_ms)))
        .max_in_flight(case.max_in_flight);
    let site: &'static Site = Box::leak(Box::new(Site::new("hedged", policy).bucket(bucket)));
    let log = Log::default();
    let rt = paused_runtime();
    let (elapsed, ended) = rt.block_on(async {
        let t0 = Instant::now();
        let timed_out: fn(TimedOut) -> TestError = TestError::from;
        let call = Call::new(
            site,
            true,
            Timed(timed_out),
            Fns(classify, hint),
            never_repeat::<u32>,
            log.hook(),
        );
        let run = Caller {
            log: &log,
            call: Box::pin(call.run_hedged(|| log.play(&case.steps))),
        };
        // A call without limits whose attempts hang would wait forever: its caller gives up
        // after a minute.
        let ms = case.drop_after_ms.unwrap_or(60_000);
        let out = tokio::time::timeout(Duration::from_millis(ms), run)
            .await
            .ok();
        (t0.elapsed(), out)
    });
    let seen = log.seen.borrow().clone();
    let (running, most) = *log.running.borrow();

    prop_assert!(
        seen.len() <= case.max_attempts as usize,
        "{} attempts",
        seen.len()
    );
    prop_assert!(most <= case.max_in_flight as usize, "{most} at once");
    prop_assert_eq!(running, 0, "an attempt outlived its call");
    if let (Some(_), None) = (case.deadline_ms, case.drop_after_ms) {
        prop_assert!(ended.is_some(), "a call with a deadline ended");
    }
    if let (Some(d), Some(_)) = (case.deadline_ms, &ended) {
        prop_assert!(
            elapsed <= Duration::from_millis(d),
            "{elapsed:?} past a {d} ms deadline"
        );
    }

    // The bucket: every hedge or retry that ran and did not win keeps its cost out; a call
    // its caller dropped gave back what its running attempts held.
    let winner = match &ended {
        Some(Ok(n)) => Some(*n as usize),
        _ => None,
    };
    let spent: u32 = seen
        .iter()
        .enumerate()
        .filter(|(i, s)| Some(*i) != winner && !s.dropped_by_caller)
        .map(|(_, s)| s.cost)
        .sum();
    prop_assert_eq!(
        bucket.available(),
        case.capacity - spent,
        "{:?} ended {:?}",
        seen,
        ended
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn hedged_calls_keep_their_invariants(case in case()) {
        check(&case)?;
    }
}
