//! What the retry loop reports: tracing events (with the `tracing` feature), and the same
//! decisions, as values, to the call's ambient (which a `testing::record` scope keeps).
//!
//! Events have the target `retry`. `partition` is left out of the events of a function
//! without one (metrics, whose series keep one set of labels, label it `""`):
//!
//! | level | when | fields |
//! |---|---|---|
//! | DEBUG | an attempt failed and the call sleeps before the next | `function`, `partition`, `invocation_id`, `attempt`, `class`, `delay_ms`, `retry_after_ms` (the server's hint, when it gave one), `tokens` (the retry bucket's level after this retry's cost), and in adaptive mode `fill_rate` (send tokens per second) |
//! | WARN | the call gives up before `max_attempts` | the same but `delay_ms`, and `reason`: `retry token bucket empty`, `deadline reached`, `not idempotent`, `server retry hint longer than max_backoff`, `retry budget exhausted`, `circuit breaker open`, `refused by a guard` (with `guard`, its name) |
//! | DEBUG | an open circuit breaker or a guard refused a call before its body ran | `function`, `partition`, `invocation_id` (and `guard`, the refusing guard's name) |
//! | WARN | a circuit breaker opened (from closed or half-open) | `function` (the one whose attempt opened it), `partition`, `from`, `to` |
//! | INFO | a circuit breaker half-opened or closed | the same |
//! | DEBUG | a hedged call started another attempt while one was in flight | `function`, `partition`, `invocation_id`, `attempt` (the hedge's), `in_flight`, `class` (of the failure that started it at once, or `none` after the hedge delay), `delay_ms` (the hedge delay), `tokens` |
//! | WARN | once per function: it retries a failure that a `#[retry]` call nested in its attempt already retried | `function`, `partition`, `attempt`, `depth`, `class` |

pub(crate) mod event;
#[cfg(feature = "metrics")]
pub mod meters;
pub(crate) mod report;
pub(crate) mod trace;

use crate::attempt::InvocationId;
use crate::classify::ErrorClass;
use crate::observe::report::{EarlyEnd, EndedEarly, Hedged, Retried};
use crate::protect::Change;
use crate::protect::breaker::BreakerState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The function a report is about: its names and, with metrics, its handles.
#[derive(Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) function: &'static str,
    pub(crate) partition: Option<&'static str>,
    #[cfg(feature = "metrics")]
    pub(crate) meters: &'a meters::Meters,
    /// Without metrics, nothing borrowed.
    #[cfg(not(feature = "metrics"))]
    pub(crate) unused: core::marker::PhantomData<&'a ()>,
}

/// The shared state's levels a report carries: the retry bucket's tokens and, in adaptive
/// mode, the rate limiter's fill rate (send tokens per second). Read by tracing's events and the
/// metrics' gauges only.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(any(feature = "tracing", feature = "metrics")),
    allow(dead_code, reason = "read by tracing and metrics only")
)]
pub(crate) struct Levels {
    pub(crate) tokens: u32,
    /// Read by the tracing events only (metrics set the rate's gauge as it changes).
    #[cfg_attr(
        not(feature = "tracing"),
        allow(dead_code, reason = "read by the tracing events only")
    )]
    pub(crate) fill_rate: Option<f64>,
}

/// The call a report is about, as its loop tells it: the function, the call's invocation id
/// (drawn when first asked for), its attempt, and the levels (read only when a report needs
/// them).
pub(crate) trait Source {
    /// The function.
    fn who(&self) -> Who<'_>;
    /// The call's invocation id.
    fn invocation_id(&self) -> InvocationId;
    /// The current attempt's number.
    fn attempt(&self) -> u32;
    /// The levels of the shared state the call draws from.
    #[cfg_attr(
        not(any(feature = "tracing", feature = "metrics")),
        allow(dead_code, reason = "read by tracing and metrics only")
    )]
    fn levels(&self) -> Levels;
    /// The call's spans, which its events belong to (none by default).
    #[cfg_attr(
        not(feature = "tracing"),
        allow(dead_code, reason = "read by tracing only")
    )]
    fn trace(&self) -> &trace::Trace {
        &trace::NONE
    }
}

/// Who hears a call's decisions as values besides tracing and metrics: the call's ambient (a
/// `testing::record` scope).
pub(crate) trait Listener {
    /// Whether anyone listens.
    fn is_scoped(&self) -> bool;
    /// A retry was decided.
    fn retried(&self, retry: &Retried);
    /// A hedged call started another attempt.
    fn hedged(&self, hedge: &Hedged);
    /// A call gave up before `max_attempts`.
    fn ended_early(&self, end: &EndedEarly);
}

/// A retry is about to sleep: the frame's attempt failed with `class` (`Transient` for a
/// polling repeat) and the call waits `delay`. Inline, so that with nobody listening (no test
/// scope, no tracing subscriber for the level, no metrics) a retry pays two tests.
#[inline(always)]
pub(crate) fn retrying(
    call: &dyn Source,
    env: &impl Listener,
    class: ErrorClass,
    delay: Duration,
    hint: Option<Duration>,
) {
    #[cfg(feature = "tracing")]
    let traced = tracing::enabled!(target: "retry", tracing::Level::DEBUG);
    #[cfg(not(feature = "tracing"))]
    let traced = false;
    if cfg!(feature = "metrics") || env.is_scoped() || traced {
        report_retry(call, env, class, delay, hint, traced);
    }
}

#[cold]
#[inline(never)]
fn report_retry(
    call: &dyn Source,
    env: &impl Listener,
    class: ErrorClass,
    delay: Duration,
    hint: Option<Duration>,
    traced: bool,
) {
    let (r, attempt) = (call.who(), call.attempt());
    #[cfg(feature = "metrics")]
    {
        let levels = call.levels();
        r.meters.retry(class, levels.tokens);
    }
    if env.is_scoped() {
        env.retried(&Retried {
            function: r.function,
            partition: r.partition,
            invocation_id: call.invocation_id(),
            attempt,
            class,
            delay,
            hint,
        });
    }
    #[cfg(feature = "tracing")]
    if traced {
        let function = r.function;
        let invocation_id = tracing::field::display(call.invocation_id());
        let (partition, tokens, fill_rate) = levels(call);
        let class = class.as_str();
        let delay_ms = delay.as_secs_f64() * 1000.0;
        let retry_after_ms = hint.map(|h| h.as_secs_f64() * 1000.0);
        call.trace().in_call(|| match retry_after_ms {
            None => tracing::debug!(
                target: "retry",
                function, partition, invocation_id, attempt, class, delay_ms, tokens, fill_rate,
                "attempt failed, retrying",
            ),
            Some(retry_after_ms) => tracing::debug!(
                target: "retry",
                function, partition, invocation_id, attempt, class, delay_ms, retry_after_ms,
                tokens, fill_rate,
                "attempt failed, retrying after the server's hint",
            ),
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (r, attempt, class, delay, hint, traced);
}

/// A hedged call started attempt `frame.number` while others were in flight.
pub(crate) fn hedged(
    call: &dyn Source,
    env: &impl Listener,
    in_flight: u32,
    class: Option<ErrorClass>,
    delay: Duration,
) {
    let (r, attempt) = (call.who(), call.attempt());
    #[cfg(feature = "metrics")]
    r.meters.hedge();
    if env.is_scoped() {
        env.hedged(&Hedged {
            function: r.function,
            partition: r.partition,
            invocation_id: call.invocation_id(),
            attempt,
            in_flight,
            class,
            delay,
        });
    }
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::DEBUG) {
        let function = r.function;
        let invocation_id = tracing::field::display(call.invocation_id());
        let (partition, tokens, _) = levels(call);
        let class = class.map_or("none", ErrorClass::as_str);
        let delay_ms = delay.as_secs_f64() * 1000.0;
        call.trace().in_call(|| {
            tracing::debug!(
                target: "retry",
                function, partition, invocation_id, attempt, in_flight, class, delay_ms, tokens,
                "hedging: another attempt in flight",
            );
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (r, attempt, in_flight, class, delay);
}

/// Retries ended early, after attempt `attempt`; the caller gets the last result.
pub(crate) fn ended_early(
    call: &dyn Source,
    env: &impl Listener,
    attempt: u32,
    class: Option<ErrorClass>,
    reason: EarlyEnd,
) {
    let r = call.who();
    count_end(call, env, attempt, class, reason);
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry", tracing::Level::WARN) {
        let function = r.function;
        let invocation_id = tracing::field::display(call.invocation_id());
        let (partition, tokens, fill_rate) = levels(call);
        let class = class.map_or("none", ErrorClass::as_str);
        let guard = reason.guard();
        let reason = reason.as_str();
        call.trace().in_call(|| {
            tracing::warn!(
                target: "retry",
                function, partition, invocation_id, attempt, class, reason, guard, tokens,
                fill_rate,
                "giving up before max_attempts",
            );
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (r, attempt, class, reason);
}

/// An early end as the metrics and a test scope's record count it.
fn count_end(
    call: &dyn Source,
    env: &impl Listener,
    attempt: u32,
    class: Option<ErrorClass>,
    reason: EarlyEnd,
) {
    #[cfg(feature = "metrics")]
    call.who().meters.ended_early(reason);
    if env.is_scoped() {
        let r = call.who();
        env.ended_early(&EndedEarly {
            function: r.function,
            partition: r.partition,
            invocation_id: call.invocation_id(),
            attempt,
            class,
            reason,
        });
    }
}

/// An open breaker or a guard refused a call before its first attempt (`reason`): the testing
/// scope records it as an early end after attempt 0; tracing gets a DEBUG event (a breaker's
/// transition to open was the WARN).
pub(crate) fn refused(call: &dyn Source, env: &impl Listener, reason: EarlyEnd) {
    count_end(call, env, 0, None, reason);
    #[cfg(feature = "tracing")]
    {
        let who = call.who();
        let function = who.function;
        let partition = who.partition;
        let invocation_id = tracing::field::display(call.invocation_id());
        call.trace().in_call(|| match reason.guard() {
            Some(guard) => tracing::debug!(
                target: "retry",
                function, partition, invocation_id, guard,
                "refused by a guard: call refused",
            ),
            None => tracing::debug!(
                target: "retry",
                function, partition, invocation_id,
                "circuit breaker open: call refused",
            ),
        });
    }
}

/// A protection changed state: the one hook every protection's changes reach (a circuit
/// breaker opened, half-opened or closed; adaptive mode's rate limiter changed its rate; a
/// self-sizing guard changed its limit), from the call whose attempt made the change. A
/// breaker's transitions are events and a counter; rates and limits, which move with most
/// attempts, are gauges only.
pub(crate) fn state_changed(r: Who<'_>, change: Change) {
    #[cfg(feature = "metrics")]
    r.meters.changed(change);
    #[cfg(feature = "tracing")]
    if let Change::Breaker(t) = change {
        let function = r.function;
        let partition = r.partition;
        let (from, to) = (t.from.as_str(), t.to.as_str());
        match t.to {
            BreakerState::Open => tracing::warn!(
                target: "retry",
                function, partition, from, to,
                "circuit breaker opened",
            ),
            BreakerState::HalfOpen => tracing::info!(
                target: "retry",
                function, partition, from, to,
                "circuit breaker half-open: probing",
            ),
            BreakerState::Closed => tracing::info!(
                target: "retry",
                function, partition, from, to,
                "circuit breaker closed",
            ),
        }
    }
    #[cfg(not(any(feature = "tracing", feature = "metrics")))]
    let _ = (r, change);
    #[cfg(not(feature = "tracing"))]
    let _ = BreakerState::Open;
}

/// A call retries a failure that a `#[retry]` call nested in its attempt already retried:
/// attempts multiply (3 by 3 is up to 9 requests). One WARN per function.
pub(crate) fn nested_retry(
    r: Who<'_>,
    warned: &AtomicBool,
    attempt: u32,
    depth: u32,
    class: ErrorClass,
) {
    if warned.swap(true, Ordering::Relaxed) {
        return;
    }
    let function = r.function;
    let class = class.as_str();
    #[cfg(feature = "tracing")]
    {
        let partition = r.partition;
        tracing::warn!(
            target: "retry",
            function, partition, attempt, depth, class,
            "retrying a failure a nested #[retry] call already retried: attempts multiply; retry at one layer",
        );
    }
    #[cfg(not(feature = "tracing"))]
    eprintln!(
        "retry: {function} (attempt {attempt}, depth {depth}) is retrying a {class} failure a \
         nested #[retry] call already retried: attempts multiply; retry at one layer"
    );
}

/// A call of a function that sends idempotency keys failed on an attempt that wrote none into
/// its request: once per function, a WARN (or a line on standard error without `tracing`).
pub(crate) fn key_not_sent(r: Who<'_>, warned: &AtomicBool, attempt: u32) {
    if warned.swap(true, Ordering::Relaxed) {
        return;
    }
    key_not_sent_warning(r, attempt);
}

#[cold]
fn key_not_sent_warning(r: Who<'_>, attempt: u32) {
    let function = r.function;
    #[cfg(feature = "tracing")]
    {
        let partition = r.partition;
        tracing::warn!(
            target: "retry",
            function, partition, attempt,
            "an attempt of a function with idempotency_key = true wrote no idempotency key into its request (call with_attempt on the request): it is retried only as a function that is not idempotent",
        );
    }
    #[cfg(not(feature = "tracing"))]
    eprintln!(
        "retry: {function} has idempotency_key = true, but its attempt {attempt} wrote no \
         idempotency key into its request (call with_attempt on the request): it is retried \
         only as a function that is not idempotent"
    );
}

/// The partition, the bucket's level, and in adaptive mode the limiter's fill rate (a field
/// left out of the event when it is `None`, as the partition of a function without one is).
#[cfg(feature = "tracing")]
fn levels(call: &dyn Source) -> (Option<&'static str>, u32, Option<f64>) {
    let levels = call.levels();
    let partition = call.who().partition;
    (partition, levels.tokens, levels.fill_rate)
}
