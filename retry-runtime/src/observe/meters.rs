//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`): every
//! `#[retry]` function reports to whatever recorder the program installs (Prometheus,
//! OpenTelemetry, StatsD exporters all plug into it).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `retry.attempts` | counter | `function`, `partition` | attempts sent, the first of each call included |
//! | `retry.retries` | counter | `function`, `partition`, `class` | retries decided, by the class of the failure (`transient`, `timeout`, `throttling`, `not_sent`) |
//! | `retry.hedges` | counter | `function`, `partition` | hedges started (attempts sent while another of the same call was in flight) |
//! | `retry.calls.recovered` | counter | `function`, `partition` | calls that succeeded after retrying |
//! | `retry.calls.ended_early` | counter | `function`, `partition`, `reason` | calls that gave up before `max_attempts` (`bucket_empty`, `deadline`, `not_idempotent`, `hint_too_long`, `budget_exhausted`, `circuit_open`; a call an open breaker refused counts here too) |
//! | `retry.breaker.transitions` | counter | `function`, `partition`, `from`, `to` | circuit breaker transitions, counted for the function whose attempt made them |
//! | `retry.bucket.tokens` | gauge | `function`, `partition` | the retry token bucket's level: as the function first runs, after each retry's cost, and after each success that gives tokens back (a retried call's refund, a first attempt's reward to a bucket that is not full) |
//! | `retry.limiter.fill_rate` | gauge | `function`, `partition` | adaptive mode's allowed send rate (per second), as it changes |
//! | `retry.guard.limit` | gauge | `guard`, `function`, `partition` | an `AdaptiveConcurrency`'s limit (attempts in flight), after each attempt it settles, for each function and partition it guards |
//! | `retry.call.attempts` | histogram | `function`, `partition`, `outcome` | attempts sent per call (`outcome`: `ok` or `error`; a call dropped before it ended is not counted) |
//! | `retry.call.retry_delay` | histogram | `function`, `partition`, `outcome` | seconds a call slept between its attempts (backoffs, and waits for a protection's leave) |
//! | `retry.call.duration` | histogram | `function`, `partition`, `outcome` | seconds from a call's start to its end |
//!
//! Names follow OpenTelemetry's conventions (dot-separated, `retry.` as namespace; a resend is
//! what `http.request.resend_count` counts on a span). `partition` is empty for a function
//! without one.
//!
//! A function takes its handles from the recorder on its first call and keeps them, so a
//! call allocates nothing: install the recorder before the first call. With the feature, each
//! call reads the clock at its start and its end, for its duration.

use crate::classify::ErrorClass;
use crate::observe::report::EarlyEnd;
use crate::protect::Change;
use crate::protect::Transition;
use crate::protect::breaker::BreakerState;
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};
use std::time::Duration;

/// Attempts sent.
pub const ATTEMPTS: &str = "retry.attempts";
/// Retries decided, by class.
pub const RETRIES: &str = "retry.retries";
/// Hedges started.
pub const HEDGES: &str = "retry.hedges";
/// Calls that succeeded after retrying.
pub const RECOVERED: &str = "retry.calls.recovered";
/// Calls that gave up before `max_attempts`, by reason.
pub const ENDED_EARLY: &str = "retry.calls.ended_early";
/// Circuit breaker transitions.
pub const BREAKER_TRANSITIONS: &str = "retry.breaker.transitions";
/// The retry token bucket's level.
pub const BUCKET_TOKENS: &str = "retry.bucket.tokens";
/// Adaptive mode's send rate.
pub const FILL_RATE: &str = "retry.limiter.fill_rate";
/// An adaptive concurrency limit.
pub const GUARD_LIMIT: &str = "retry.guard.limit";
/// Attempts sent per call.
pub const CALL_ATTEMPTS: &str = "retry.call.attempts";
/// Seconds slept between attempts per call.
pub const CALL_RETRY_DELAY: &str = "retry.call.retry_delay";
/// Seconds from a call's start to its end.
pub const CALL_DURATION: &str = "retry.call.duration";

/// The classes a retry can follow (a permanent failure is not retried).
const CLASSES: [ErrorClass; 4] = [
    ErrorClass::Transient,
    ErrorClass::Timeout,
    ErrorClass::Throttling,
    ErrorClass::NotSent,
];

const REASONS: [EarlyEnd; 6] = [
    EarlyEnd::BucketEmpty,
    EarlyEnd::Deadline,
    EarlyEnd::NotIdempotent,
    EarlyEnd::HintTooLong,
    EarlyEnd::BudgetExhausted,
    EarlyEnd::CircuitOpen,
];

const TRANSITIONS: [(BreakerState, BreakerState); 4] = [
    (BreakerState::Closed, BreakerState::Open),
    (BreakerState::Open, BreakerState::HalfOpen),
    (BreakerState::HalfOpen, BreakerState::Open),
    (BreakerState::HalfOpen, BreakerState::Closed),
];

/// One function's handles, taken from the recorder when it resolves.
pub(crate) struct Meters {
    attempts: Counter,
    retries: [Counter; 4],
    hedges: Counter,
    recovered: Counter,
    ended_early: [Counter; 6],
    /// Early ends a guard refused, one counter per guard of the function, in its order.
    refused: Vec<(&'static str, Counter)>,
    transitions: [Counter; 4],
    tokens: Gauge,
    fill_rate: Gauge,
    /// Each guard's limit gauge, taken from the recorder when the guard first reports one.
    limits: Vec<(&'static str, std::sync::OnceLock<Gauge>)>,
    function: &'static str,
    partition: &'static str,
    /// The per-call histograms of calls that succeeded, then of those that failed.
    calls: [Calls; 2],
}

/// The per-call histograms of one outcome.
struct Calls {
    attempts: Histogram,
    retry_delay: Histogram,
    duration: Histogram,
}

impl std::fmt::Debug for Meters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Meters")
    }
}

impl Meters {
    /// The meters of a function whose bucket holds `tokens` as it first runs.
    pub(crate) fn new(
        function: &'static str,
        partition: Option<&'static str>,
        guards: impl Iterator<Item = &'static str>,
        tokens: u32,
    ) -> Meters {
        let partition = partition.unwrap_or("");
        let guards: Vec<&'static str> = guards.collect();
        Meters {
            limits: guards
                .iter()
                .map(|&g| (g, std::sync::OnceLock::new()))
                .collect(),
            function,
            partition,
            attempts: counter!(ATTEMPTS, "function" => function, "partition" => partition),
            retries: CLASSES.map(|c| {
                counter!(RETRIES, "function" => function, "partition" => partition,
                    "class" => c.as_str())
            }),
            hedges: counter!(HEDGES, "function" => function, "partition" => partition),
            recovered: counter!(RECOVERED, "function" => function, "partition" => partition),
            ended_early: REASONS.map(|r| {
                counter!(ENDED_EARLY, "function" => function, "partition" => partition,
                    "reason" => r.label())
            }),
            refused: guards
                .into_iter()
                .map(|guard| {
                    let c = counter!(ENDED_EARLY, "function" => function,
                        "partition" => partition, "reason" => "refused", "guard" => guard);
                    (guard, c)
                })
                .collect(),
            transitions: TRANSITIONS.map(|(from, to)| {
                counter!(BREAKER_TRANSITIONS, "function" => function, "partition" => partition,
                    "from" => from.as_str(), "to" => to.as_str())
            }),
            tokens: {
                let gauge = gauge!(BUCKET_TOKENS, "function" => function, "partition" => partition);
                gauge.set(f64::from(tokens));
                gauge
            },
            fill_rate: gauge!(FILL_RATE, "function" => function, "partition" => partition),
            calls: ["ok", "error"].map(|outcome| Calls {
                attempts: histogram!(CALL_ATTEMPTS, "function" => function,
                    "partition" => partition, "outcome" => outcome),
                retry_delay: histogram!(CALL_RETRY_DELAY, "function" => function,
                    "partition" => partition, "outcome" => outcome),
                duration: histogram!(CALL_DURATION, "function" => function,
                    "partition" => partition, "outcome" => outcome),
            }),
        }
    }

    /// A call ended (`ok`: with a success), after sending `attempts` attempts, sleeping
    /// `slept` between them, `duration` after it started.
    pub(crate) fn call_ended(&self, ok: bool, attempts: u32, slept: Duration, duration: Duration) {
        let calls = &self.calls[usize::from(!ok)];
        calls.attempts.record(f64::from(attempts));
        calls.retry_delay.record(slept.as_secs_f64());
        calls.duration.record(duration.as_secs_f64());
    }

    pub(crate) fn attempt(&self) {
        self.attempts.increment(1);
    }

    /// A retry of `class`, after which the bucket holds `tokens`.
    pub(crate) fn retry(&self, class: ErrorClass, tokens: u32) {
        if let Some(i) = CLASSES.iter().position(|c| *c == class) {
            self.retries[i].increment(1);
        }
        self.bucket_level(tokens);
    }

    /// The bucket holds `tokens`.
    pub(crate) fn bucket_level(&self, tokens: u32) {
        self.tokens.set(f64::from(tokens));
    }

    /// A protection's change of state: a breaker's transition counted, a rate or a limit set.
    pub(crate) fn changed(&self, change: Change) {
        match change {
            Change::Breaker(transition) => self.transition(transition),
            Change::Rate(rate) => self.fill_rate.set(rate),
            Change::Limit { guard, limit } => {
                if let Some((_, gauge)) = self.limits.iter().find(|(g, _)| *g == guard) {
                    let (function, partition) = (self.function, self.partition);
                    gauge
                        .get_or_init(|| {
                            gauge!(GUARD_LIMIT, "guard" => guard, "function" => function,
                                "partition" => partition)
                        })
                        .set(limit);
                }
            }
        }
    }

    pub(crate) fn hedge(&self) {
        self.hedges.increment(1);
    }

    pub(crate) fn recovered(&self) {
        self.recovered.increment(1);
    }

    pub(crate) fn ended_early(&self, reason: EarlyEnd) {
        if let EarlyEnd::Refused(by) = reason {
            if let Some((_, c)) = self.refused.iter().find(|(g, _)| *g == by) {
                c.increment(1);
            }
        } else if let Some(i) = REASONS.iter().position(|r| *r == reason) {
            self.ended_early[i].increment(1);
        }
    }

    fn transition(&self, change: Transition) {
        if let Some(i) = TRANSITIONS
            .iter()
            .position(|t| *t == (change.from, change.to))
        {
            self.transitions[i].increment(1);
        }
    }
}
