//! Property tests of the engine over random policies and random fault sequences, on tokio's
//! paused clock.
//!
//! Policies are drawn at run time, so these tests build each function's `Site` (the `static`
//! the macro writes) themselves and drive `Call` with the loop the macro generates (see
//! `retry-macros/tests/expand/snapshots/`); the fixed-policy tests elsewhere go through the
//! attribute.
//!
//! - `untimed_calls_match_the_reference_model`: without timers, an independent model of the
//!   AWS standard loop predicts every call's attempts and outcome, every delay's jitter bounds
//!   (or the exact server hint), when each attempt starts, and the bucket's level after each
//!   call, to the token.
//! - `timed_calls_keep_their_invariants`: with attempt timeouts and deadlines, attempts never
//!   exceed `max_attempts`, no call runs past its deadline, every delay is within its bounds,
//!   the bucket stays within `[0, capacity]`, and replaying the takes, refunds and rewards the
//!   calls made through a bucket that clips at capacity gives its level exactly.
//!
//! Cases per property: 256, or `RETRY_PROPTEST_CASES` (RELIABILITY.md gives the long run).

use proptest::prelude::*;
use retry_runtime::__private::{
    Call, Fns, Jitter, Keys, RetryEvent, Site, Timed, Timer, Untimed, never_repeat,
};
use retry_runtime::{Classify, ErrorClass, TokenBucket};
use std::cell::RefCell;
use std::time::Duration;
use tokio::time::Instant;

const MS: u64 = 1_000_000;

fn cases() -> u32 {
    std::env::var("RETRY_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

use crate::util::{TestError, paused_runtime};

fn classify(e: &TestError) -> ErrorClass {
    e.classify()
}

fn hint(e: &TestError) -> Option<Duration> {
    e.retry_after()
}

/// What one attempt does: take `ms` milliseconds, then answer (or never answer).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Ok {
        ms: u64,
    },
    Err {
        ms: u64,
        class: ErrorClass,
        hint_ms: Option<u64>,
    },
    Hang,
}

/// One attempt as the body saw it.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    start: Instant,
    /// The body returned (an attempt cut by a timer never does).
    answered: bool,
    /// The body returned `Ok`.
    ok: bool,
}

/// One retry as the `on_retry` hook saw it.
#[derive(Debug, Clone, Copy)]
struct Retried {
    attempt: u32,
    delay: Duration,
    class: ErrorClass,
    at: Instant,
}

#[derive(Default)]
struct Log {
    attempts: RefCell<Vec<Attempt>>,
    retries: RefCell<Vec<Retried>>,
}

impl Log {
    async fn play(&self, steps: &[Step]) -> Result<u32, TestError> {
        let n = self.attempts.borrow().len();
        let step = steps[n.min(steps.len() - 1)];
        self.attempts.borrow_mut().push(Attempt {
            start: Instant::now(),
            answered: false,
            ok: false,
        });
        match step {
            Step::Ok { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let mut attempts = self.attempts.borrow_mut();
                attempts[n].answered = true;
                attempts[n].ok = true;
                Ok(u32::try_from(n).unwrap())
            }
            Step::Err { ms, class, hint_ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.attempts.borrow_mut()[n].answered = true;
                Err(TestError::Fault(class, hint_ms.map(Duration::from_millis)))
            }
            Step::Hang => std::future::pending().await,
        }
    }

    fn hook(&self) -> impl Fn(&RetryEvent<'_, TestError>) + '_ {
        move |e| {
            self.retries.borrow_mut().push(Retried {
                attempt: e.attempt(),
                delay: e.delay(),
                class: e.class(),
                at: Instant::now(),
            });
        }
    }
}

/// One call through the loop `#[retry]` writes (`Call::run`): `Untimed` for a function without
/// timers, `Timed` for one with `attempt_timeout` or `deadline`.
async fn call<K>(
    site: &'static Site,
    idempotent: bool,
    timer: K,
    log: &Log,
    steps: &[Step],
) -> Result<u32, TestError>
where
    K: Timer<Result<u32, TestError>>,
{
    let hook = log.hook();
    let call = Call::new(
        site,
        idempotent,
        timer,
        Fns(classify, hint),
        never_repeat::<u32>,
        hook,
    );
    call.run(|| log.play(steps)).await
}

// ---------------------------------------------------------------------------------------------
// Random policies.

#[derive(Debug, Clone, Copy)]
struct Backoff {
    max_attempts: u32,
    initial_ns: u64,
    multiplier: f64,
    max_ns: u64,
    jitter: Jitter,
}

#[derive(Debug, Clone, Copy)]
struct Costs {
    capacity: u32,
    retry: u32,
    timeout: u32,
    throttling: u32,
    reward: u32,
}

impl Costs {
    fn cost(&self, class: ErrorClass) -> u32 {
        match class {
            ErrorClass::Permanent => 0,
            ErrorClass::Transient | ErrorClass::NotSent => self.retry,
            ErrorClass::Timeout => self.timeout,
            ErrorClass::Throttling => self.throttling,
        }
    }

    /// A function's `Site` with `policy` and a bucket of these costs, alive for the process
    /// (as the `static`s of a real function: one per case), and the model of that bucket.
    fn site(
        &self,
        name: &'static str,
        policy: Keys,
    ) -> (&'static Site, &'static TokenBucket, ModelBucket) {
        let bucket: &'static TokenBucket = Box::leak(Box::new(
            TokenBucket::standard()
                .with_capacity(self.capacity)
                .with_costs(self.retry, self.timeout, self.throttling)
                .with_success_reward(self.reward),
        ));
        let site = Box::leak(Box::new(Site::new(name, policy).bucket(bucket)));
        let model = ModelBucket {
            level: self.capacity,
            capacity: self.capacity,
        };
        (site, bucket, model)
    }
}

fn jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::None),
        Just(Jitter::Decorrelated),
        (0.0..=1.0f64).prop_map(Jitter::Fraction),
    ]
}

fn backoff() -> impl Strategy<Value = Backoff> {
    (
        1..=6u32,
        0..=40 * MS,
        prop_oneof![Just(1.0), Just(1.5), Just(2.0), Just(3.0)],
        0..=80 * MS,
        jitter(),
    )
        .prop_map(
            |(max_attempts, initial_ns, multiplier, extra, jitter)| Backoff {
                max_attempts,
                initial_ns,
                multiplier,
                max_ns: initial_ns + extra,
                jitter,
            },
        )
}

fn costs() -> impl Strategy<Value = Costs> {
    (0..=40u32, 1..=10u32, 1..=15u32, 1..=10u32, 0..=3u32).prop_map(
        |(capacity, retry, timeout, throttling, reward)| Costs {
            capacity,
            retry,
            timeout,
            throttling,
            reward,
        },
    )
}

fn class() -> impl Strategy<Value = ErrorClass> {
    prop_oneof![
        3 => Just(ErrorClass::Transient),
        1 => Just(ErrorClass::Throttling),
        1 => Just(ErrorClass::Timeout),
        1 => Just(ErrorClass::NotSent),
        1 => Just(ErrorClass::Permanent),
    ]
}

fn step(max_ms: u64, hang: bool) -> impl Strategy<Value = Step> {
    let err = (
        0..=max_ms,
        class(),
        prop_oneof![3 => Just(None), 1 => (0..=120u64).prop_map(Some)],
    )
        .prop_map(|(ms, class, hint_ms)| Step::Err { ms, class, hint_ms });
    let ok = (0..=max_ms).prop_map(|ms| Step::Ok { ms });
    let hang_weight = u32::from(hang);
    prop_oneof![2 => ok, 5 => err, hang_weight => Just(Step::Hang)]
}

fn policy(b: &Backoff) -> Keys {
    Keys::new()
        .max_attempts(b.max_attempts)
        .initial_backoff(Duration::from_nanos(b.initial_ns))
        .multiplier(b.multiplier)
        .max_backoff(Duration::from_nanos(b.max_ns))
        .jitter(b.jitter)
}

// ---------------------------------------------------------------------------------------------
// The reference: backoff and jitter bounds, computed independently of the engine.

/// `min(initial * multiplier^(n-1), max)` in nanoseconds.
fn nominal(b: &Backoff, n: u32) -> u64 {
    let v = b.initial_ns as f64 * b.multiplier.powi(i32::try_from(n - 1).unwrap());
    if v >= b.max_ns as f64 {
        b.max_ns
    } else {
        v.round() as u64
    }
}

/// The bounds of the jittered delay after attempt `n`; `previous` is the last backoff slept.
fn bounds(b: &Backoff, n: u32, previous: u64) -> (u64, u64) {
    let d = nominal(b, n);
    match b.jitter {
        Jitter::Full => (0, d),
        Jitter::Equal => (d / 2, d),
        Jitter::None => (d, d),
        Jitter::Fraction(j) => (d - ((d as f64 * j).ceil() as u64).min(d), d),
        Jitter::Decorrelated => {
            let hi = previous.saturating_mul(3).max(b.initial_ns);
            (b.initial_ns.min(b.max_ns), hi.min(b.max_ns))
        }
    }
}

/// Whether `got` is within `[lo, hi]`, give or take 2 ns of float rounding in the nominal
/// backoff of a fractional multiplier.
fn within(got: Duration, (lo, hi): (u64, u64)) -> bool {
    let ns = u64::try_from(got.as_nanos()).unwrap();
    ns + 2 >= lo && ns <= hi + 2
}

/// A sleep of `d` from a whole millisecond, on tokio's millisecond timer.
fn slept(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_nanos().div_ceil(u128::from(MS))).unwrap())
}

/// A bucket that clips at capacity, as the AWS SDKs describe it.
struct ModelBucket {
    level: u32,
    capacity: u32,
}

impl ModelBucket {
    fn deposit(&mut self, n: u32) {
        self.level = (self.level + n).min(self.capacity);
    }
}

/// What the reference predicts for one untimed call.
struct Predicted {
    attempts: usize,
    outcome: Result<(), ErrorClass>,
    /// Per retry: the attempt that failed, and the delay's bounds (equal for a hint).
    delays: Vec<(u32, (u64, u64))>,
}

/// The AWS standard loop, step by step, for one call without timers.
fn predict(
    b: &Backoff,
    c: &Costs,
    idempotent: bool,
    bucket: &mut ModelBucket,
    steps: &[Step],
    delays_seen: &[Duration],
) -> Predicted {
    let mut delays = Vec::new();
    let mut previous = b.initial_ns;
    let mut held = 0;
    let mut n = 0u32;
    loop {
        n += 1;
        let step = steps[(n as usize - 1).min(steps.len() - 1)];
        let (class, hint) = match step {
            Step::Ok { .. } => {
                if held > 0 {
                    bucket.deposit(held);
                } else {
                    bucket.deposit(c.reward);
                }
                return Predicted {
                    attempts: n as usize,
                    outcome: Ok(()),
                    delays,
                };
            }
            Step::Err { class, hint_ms, .. } => (class, hint_ms),
            Step::Hang => unreachable!("untimed scripts never hang"),
        };
        let end = Predicted {
            attempts: n as usize,
            outcome: Err(class),
            delays: Vec::new(),
        };
        let end = |delays| Predicted { delays, ..end };
        if class == ErrorClass::Permanent
            || (!idempotent && matches!(class, ErrorClass::Transient | ErrorClass::Timeout))
            || n >= b.max_attempts
        {
            return end(delays);
        }
        let cost = c.cost(class);
        if bucket.level < cost {
            return end(delays);
        }
        bucket.level -= cost;
        held = cost;
        match hint.map(|ms| ms * MS) {
            Some(h) if h > b.max_ns => {
                bucket.deposit(held);
                return end(delays);
            }
            Some(h) => delays.push((n, (h, h))),
            None => {
                delays.push((n, bounds(b, n, previous)));
                // Decorrelated jitter grows from the delay the engine drew (checked above).
                if let Some(d) = delays_seen.get(delays.len() - 1) {
                    previous = u64::try_from(d.as_nanos()).unwrap();
                }
            }
        }
    }
}

fn runner() -> proptest::test_runner::TestRunner {
    proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

/// What a property tried, for RELIABILITY.md (printed with `--nocapture`).
#[derive(Default)]
struct Tally {
    cases: std::cell::Cell<u64>,
    calls: std::cell::Cell<u64>,
    attempts: std::cell::Cell<u64>,
    retries: std::cell::Cell<u64>,
    ok: std::cell::Cell<u64>,
    timed_out: std::cell::Cell<u64>,
}

impl Tally {
    fn case(&self) {
        self.cases.set(self.cases.get() + 1);
    }

    fn call(&self, attempts: usize, retries: usize, ok: bool) {
        self.calls.set(self.calls.get() + 1);
        self.attempts.set(self.attempts.get() + attempts as u64);
        self.retries.set(self.retries.get() + retries as u64);
        self.ok.set(self.ok.get() + u64::from(ok));
    }

    fn report(&self, name: &str) {
        eprintln!(
            "{name}: {} cases (shrinking included), {} calls, {} attempts, {} retries, {} calls \
             succeeded, {} ended by a timer",
            self.cases.get(),
            self.calls.get(),
            self.attempts.get(),
            self.retries.get(),
            self.ok.get(),
            self.timed_out.get(),
        );
    }
}

fn untimed_steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(5, false), 1..=8)
}

#[test]
fn untimed_calls_match_the_reference_model() {
    let tally = Tally::default();
    let strategy = (
        backoff(),
        costs(),
        prop::bool::weighted(0.8),
        prop::collection::vec(untimed_steps(), 1..=6),
    );
    runner()
        .run(&strategy, |(b, c, idempotent, calls)| {
            let (site, bucket, mut model) = c.site("prop", policy(&b));
            paused_runtime().block_on(async {
                for steps in &calls {
                    let log = Log::default();
                    let t0 = Instant::now();
                    let out = call(site, idempotent, Untimed, &log, steps).await;
                    let retries = log.retries.borrow().clone();
                    let seen: Vec<Duration> = retries.iter().map(|r| r.delay).collect();
                    let want = predict(&b, &c, idempotent, &mut model, steps, &seen);
                    let attempts = log.attempts.borrow().clone();

                    prop_assert_eq!(attempts.len(), want.attempts, "attempts");
                    prop_assert!(attempts.len() <= b.max_attempts as usize);
                    prop_assert_eq!(
                        out.as_ref().map(|_| ()).map_err(Classify::classify),
                        want.outcome
                    );
                    prop_assert_eq!(retries.len(), want.delays.len(), "retries");
                    for (r, (n, range)) in retries.iter().zip(&want.delays) {
                        prop_assert_eq!(r.attempt, *n);
                        prop_assert!(
                            within(r.delay, *range),
                            "delay {:?} after attempt {} outside {:?}",
                            r.delay,
                            n,
                            range
                        );
                    }
                    // Each retry starts when its attempt ended plus the delay (on tokio's
                    // millisecond timer), and nothing else passes time.
                    let mut t = t0;
                    for (i, a) in attempts.iter().enumerate() {
                        prop_assert_eq!(a.start, t, "attempt {} starts", i + 1);
                        let ms = match steps[i.min(steps.len() - 1)] {
                            Step::Ok { ms } | Step::Err { ms, .. } => ms,
                            Step::Hang => unreachable!(),
                        };
                        t += Duration::from_millis(ms);
                        if let Some(r) = retries.get(i) {
                            prop_assert_eq!(r.at, t, "the hook runs before the sleep");
                            t += slept(r.delay);
                        }
                    }
                    prop_assert_eq!(
                        Instant::now(),
                        t,
                        "the call returns when its last attempt ends"
                    );
                    prop_assert_eq!(bucket.available(), model.level, "bucket level");
                    tally.call(attempts.len(), retries.len(), out.is_ok());
                }
                Ok(())
            })?;
            tally.case();
            Ok(())
        })
        .unwrap();
    tally.report("untimed_calls_match_the_reference_model");
}

// ---------------------------------------------------------------------------------------------
// With timers.

#[derive(Debug, Clone, Copy)]
struct Timers {
    attempt_timeout_ms: Option<u64>,
    timeout_multiplier: f64,
    max_attempt_timeout_ms: u64,
    deadline_ms: Option<u64>,
}

fn timers() -> impl Strategy<Value = Timers> {
    (
        prop::option::weighted(0.7, 1..=30u64),
        prop_oneof![Just(1.0), Just(1.5), Just(2.0)],
        0..=30u64,
        prop::option::weighted(0.7, 1..=150u64),
    )
        .prop_map(|(attempt, multiplier, extra, deadline)| {
            // The macro's coherence rules: attempt_timeout <= deadline; at least one timer.
            let deadline = match (attempt, deadline) {
                (None, None) => Some(60),
                (Some(a), Some(d)) => Some(d.max(a)),
                (_, d) => d,
            };
            Timers {
                attempt_timeout_ms: attempt,
                timeout_multiplier: multiplier,
                max_attempt_timeout_ms: attempt.unwrap_or(0) + extra,
                deadline_ms: deadline,
            }
        })
}

fn timed_policy(b: &Backoff, t: &Timers) -> Keys {
    let mut p = policy(b);
    if let Some(a) = t.attempt_timeout_ms {
        p = p
            .attempt_timeout(Duration::from_millis(a))
            .attempt_timeout_multiplier(t.timeout_multiplier)
            .max_attempt_timeout(Duration::from_millis(t.max_attempt_timeout_ms));
    }
    if let Some(d) = t.deadline_ms {
        p = p.deadline(Duration::from_millis(d));
    }
    p
}

#[test]
fn timed_calls_keep_their_invariants() {
    let tally = Tally::default();
    let strategy = (
        backoff(),
        costs(),
        timers(),
        prop::bool::weighted(0.8),
        prop::collection::vec(prop::collection::vec(step(40, true), 1..=8), 1..=6),
    );
    runner()
        .run(&strategy, |(b, c, t, idempotent, calls)| {
            let (site, bucket, mut model) = c.site("prop-timed", timed_policy(&b, &t));
            paused_runtime().block_on(async {
                for steps in &calls {
                    let log = Log::default();
                    let t0 = Instant::now();
                    let out = call(site, idempotent, Timed(TestError::from), &log, steps).await;
                    let elapsed = t0.elapsed();
                    let attempts = log.attempts.borrow().clone();
                    let retries = log.retries.borrow().clone();

                    prop_assert!(!attempts.is_empty());
                    prop_assert!(
                        attempts.len() <= b.max_attempts as usize,
                        "{} attempts",
                        attempts.len()
                    );
                    prop_assert_eq!(retries.len(), attempts.len() - 1, "one hook per retry");
                    if let Some(d) = t.deadline_ms {
                        prop_assert!(
                            elapsed <= Duration::from_millis(d),
                            "{:?} past the {} ms deadline",
                            elapsed,
                            d
                        );
                    }

                    // Delays: the server's hint exactly, else within the jitter bounds.
                    let mut previous = b.initial_ns;
                    for r in &retries {
                        let i = r.attempt as usize - 1;
                        let step = steps[i.min(steps.len() - 1)];
                        // A cut attempt has no answer, so no hint.
                        let hinted = match step {
                            Step::Err {
                                hint_ms: Some(h), ..
                            } if attempts[i].answered => Some(h),
                            _ => None,
                        };
                        match hinted {
                            Some(h) => prop_assert_eq!(r.delay, Duration::from_millis(h)),
                            None => {
                                let range = bounds(&b, r.attempt, previous);
                                prop_assert!(
                                    within(r.delay, range),
                                    "delay {:?} after attempt {} outside {:?}",
                                    r.delay,
                                    r.attempt,
                                    range
                                );
                                previous = u64::try_from(r.delay.as_nanos()).unwrap();
                            }
                        }
                    }

                    // Conservation: replay what the call did through a clipping bucket.
                    if attempts[0].ok {
                        model.deposit(c.reward);
                    }
                    for r in &retries {
                        let cost = c.cost(r.class);
                        prop_assert!(
                            model.level >= cost,
                            "a retry took {} from {}",
                            cost,
                            model.level
                        );
                        model.level -= cost;
                        if attempts[r.attempt as usize].ok {
                            model.deposit(cost);
                        }
                    }
                    let level = bucket.available();
                    prop_assert!(level <= c.capacity);
                    prop_assert_eq!(level, model.level, "bucket level");
                    tally.call(attempts.len(), retries.len(), out.is_ok());
                    if matches!(out, Err(TestError::TimedOut(_))) {
                        tally.timed_out.set(tally.timed_out.get() + 1);
                    }
                }
                Ok(())
            })?;
            tally.case();
            Ok(())
        })
        .unwrap();
    tally.report("timed_calls_keep_their_invariants");
}
