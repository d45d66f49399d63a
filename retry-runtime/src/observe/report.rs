//! What the retry loop decided, as values: each retry, and each call that gave up before
//! `max_attempts`. The loop hands them to the call's ambient (a `testing::record` scope keeps
//! them); tracing events carry the same fields.

use crate::attempt::InvocationId;
use crate::classify::ErrorClass;
use crate::protect::chain::Stop;
use std::time::Duration;

/// Why a call stopped retrying before its error class or `max_attempts` said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EarlyEnd {
    /// The retry token bucket held less than the retry's cost.
    BucketEmpty,
    /// The next attempt could not start (or its send token not be had) before the deadline.
    Deadline,
    /// The function is not idempotent and the request may have reached the server.
    NotIdempotent,
    /// The server asked for a delay longer than `max_backoff`.
    HintTooLong,
    /// The function's retry budget had no room for another retry.
    BudgetExhausted,
    /// The function's circuit breaker is open: a retry, or (attempt 0) the call itself, was
    /// refused.
    CircuitOpen,
    /// The guard of this name ([`Guard::name`](crate::Guard::name)) refused a retry, a hedge,
    /// or (attempt 0) the call itself.
    Refused(&'static str),
}

impl EarlyEnd {
    /// The early end a protection's refusal of another attempt is reported as: a bucket short
    /// of the cost once the deadline has passed (`deadline_reached`) ends with the deadline.
    pub(crate) fn of(stop: Stop, deadline_reached: bool) -> EarlyEnd {
        match stop {
            Stop::CircuitOpen(_) => EarlyEnd::CircuitOpen,
            Stop::BudgetExhausted => EarlyEnd::BudgetExhausted,
            Stop::BucketEmpty if deadline_reached => EarlyEnd::Deadline,
            Stop::BucketEmpty | Stop::NeverRefilled => EarlyEnd::BucketEmpty,
            Stop::Guard(by) => EarlyEnd::Refused(by),
        }
    }

    /// The name of the guard that refused, for [`EarlyEnd::Refused`].
    #[must_use]
    pub const fn guard(self) -> Option<&'static str> {
        match self {
            EarlyEnd::Refused(by) => Some(by),
            _ => None,
        }
    }

    /// The reason as a metric label writes it: `bucket_empty`, `deadline`, `not_idempotent`,
    /// `hint_too_long`, `budget_exhausted`, `circuit_open`, `refused` (the guard's name is a
    /// label of its own, `guard`).
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            EarlyEnd::BucketEmpty => "bucket_empty",
            EarlyEnd::Deadline => "deadline",
            EarlyEnd::NotIdempotent => "not_idempotent",
            EarlyEnd::HintTooLong => "hint_too_long",
            EarlyEnd::BudgetExhausted => "budget_exhausted",
            EarlyEnd::CircuitOpen => "circuit_open",
            EarlyEnd::Refused(_) => "refused",
        }
    }

    /// The reason as the WARN event writes it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            EarlyEnd::BucketEmpty => "retry token bucket empty",
            EarlyEnd::Deadline => "deadline reached",
            EarlyEnd::NotIdempotent => "not idempotent",
            EarlyEnd::HintTooLong => "server retry hint longer than max_backoff",
            EarlyEnd::BudgetExhausted => "retry budget exhausted",
            EarlyEnd::CircuitOpen => "circuit breaker open",
            EarlyEnd::Refused(_) => "refused by a guard",
        }
    }
}

/// One retry: attempt `attempt` of `function` failed with `class` and the call waited `delay`
/// (or would have, in an instant scope) before the next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retried {
    /// The `#[retry]` function.
    pub function: &'static str,
    /// Its named partition, if any.
    pub partition: Option<&'static str>,
    /// The call's invocation id.
    pub invocation_id: InvocationId,
    /// The attempt (1-based) that failed.
    pub attempt: u32,
    /// The failure's class (`Transient` for a `retry_if_ok` repeat).
    pub class: ErrorClass,
    /// The delay chosen: the server's hint, or the jittered backoff.
    pub delay: Duration,
    /// The server's hint the delay follows, as the server gave it (`Retry-After`,
    /// `x-amz-retry-after`, `grpc-retry-pushback-ms`, `RateLimit`: [`Classify::retry_after`]),
    /// if the failure carried one; `None` when the delay is the backoff alone. Under the AWS
    /// 2026 behavior the delay is the hint kept within the backoff and 5 s more.
    ///
    /// [`Classify::retry_after`]: crate::Classify::retry_after
    pub hint: Option<Duration>,
}

/// A hedge: attempt `attempt` of `function` started while an earlier attempt of the same call
/// was still in flight, because none had answered within the hedge delay (`class` is `None`),
/// or because another attempt failed with `class` while one was still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hedged {
    /// The `#[retry]` function.
    pub function: &'static str,
    /// Its named partition, if any.
    pub partition: Option<&'static str>,
    /// The call's invocation id.
    pub invocation_id: InvocationId,
    /// The hedge's attempt number (1-based, counted with the call's other attempts).
    pub attempt: u32,
    /// The attempts of the call in flight once the hedge started, the hedge included.
    pub in_flight: u32,
    /// The class of the failure that started it at once, or `None` after the hedge delay.
    pub class: Option<ErrorClass>,
    /// The hedge delay in effect (for `hedge_after = "pNN"`, the estimate at that moment).
    pub delay: Duration,
}

/// A call of `function` that gave up after attempt `attempt`, before `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndedEarly {
    /// The `#[retry]` function.
    pub function: &'static str,
    /// Its named partition, if any.
    pub partition: Option<&'static str>,
    /// The call's invocation id.
    pub invocation_id: InvocationId,
    /// The last attempt that ran (0 when the first could not start before the deadline).
    pub attempt: u32,
    /// The class of the last failure (`None` after a success that `retry_if_ok` would repeat,
    /// or when no attempt ran).
    pub class: Option<ErrorClass>,
    /// Why it gave up.
    pub reason: EarlyEnd,
}
