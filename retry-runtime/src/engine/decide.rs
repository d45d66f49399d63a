//! The decisions of the loop that depend only on numbers: which early end, if any, an error
//! meets, what the next delay is, and whether a wait fits before the deadline. The engine
//! ([`Call`](super::Call)) applies them to the call's state and the shared bucket.

use crate::classify::ErrorClass;
use crate::observe::report::EarlyEnd;
use retry_keys::AWS_2026_HINT_ABOVE_BACKOFF;
use std::time::Duration;

/// What follows a failed attempt, before the retry's cost and delay (steps 3 and 4 of the
/// README's "One call").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterError {
    /// The call returns the error as it should: a permanent error, or the last attempt.
    Return,
    /// The call returns the error before `max_attempts`.
    EndEarly(EarlyEnd),
    /// Go on to take the retry's cost.
    Retry,
}

/// Step 3's and 4's ends: a permanent error or the last attempt ends the call as it should;
/// a function that is not idempotent ends it early on an error after which the request may
/// have reached the server.
pub(crate) fn after_error(class: ErrorClass, last: bool, idempotent: bool) -> AfterError {
    if class == ErrorClass::Permanent || last {
        AfterError::Return
    } else if !idempotent && !class.is_safe_for_non_idempotent() {
        AfterError::EndEarly(EarlyEnd::NotIdempotent)
    } else {
        AfterError::Retry
    }
}

/// Step 5 in the classic behavior for a server's hint `h`: obeyed, unjittered, unless it asks
/// for more than `max_backoff` (without a hint, the backoff).
pub(crate) fn hint(h: Duration, max_backoff: Duration) -> Result<Duration, EarlyEnd> {
    if h > max_backoff {
        Err(EarlyEnd::HintTooLong)
    } else {
        Ok(h)
    }
}

/// Step 5 under the 2026 behavior: the computed (jittered) backoff `t`, or the server's hint
/// kept within `[t, t + 5 s]` (the AWS SDKs' rule for `x-amz-retry-after`; a hint never ends
/// the call early).
pub(crate) fn delay_2026(hint: Option<Duration>, t: Duration) -> Duration {
    match hint {
        Some(h) => h.clamp(t, t.saturating_add(AWS_2026_HINT_ABOVE_BACKOFF)),
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Instant, reaches};
    use ErrorClass::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_permanent_error_or_the_last_attempt_returns() {
        for idempotent in [true, false] {
            assert_eq!(
                after_error(Permanent, false, idempotent),
                AfterError::Return
            );
            for class in [Transient, Timeout, Throttling, NotSent] {
                assert_eq!(after_error(class, true, idempotent), AfterError::Return);
            }
        }
    }

    #[test]
    fn an_idempotent_function_retries_every_other_class() {
        for class in [Transient, Timeout, Throttling, NotSent] {
            assert_eq!(after_error(class, false, true), AfterError::Retry);
        }
    }

    #[test]
    fn a_function_that_is_not_idempotent_retries_only_what_never_reached_the_server() {
        assert_eq!(after_error(Throttling, false, false), AfterError::Retry);
        assert_eq!(after_error(NotSent, false, false), AfterError::Retry);
        for class in [Transient, Timeout] {
            assert_eq!(
                after_error(class, false, false),
                AfterError::EndEarly(EarlyEnd::NotIdempotent)
            );
        }
    }

    #[test]
    fn a_hint_replaces_the_backoff_unless_it_exceeds_max_backoff() {
        assert_eq!(hint(MS(300), MS(1000)), Ok(MS(300)));
        assert_eq!(hint(MS(1000), MS(1000)), Ok(MS(1000)));
        assert_eq!(hint(MS(1001), MS(1000)), Err(EarlyEnd::HintTooLong));
        assert_eq!(hint(Duration::ZERO, MS(1000)), Ok(Duration::ZERO));
        assert_eq!(delay_2026(None, MS(42)), MS(42));
    }

    #[test]
    fn under_2026_a_hint_is_kept_within_five_seconds_above_the_backoff() {
        // The AWS SDKs' vectors: with a backoff of 50 ms, a hint of 1.5 s is obeyed, 0 and 10 ms
        // give the backoff, 10 s gives the backoff + 5 s.
        assert_eq!(delay_2026(Some(MS(1500)), MS(50)), MS(1500));
        assert_eq!(delay_2026(Some(MS(0)), MS(50)), MS(50));
        assert_eq!(delay_2026(Some(MS(10)), MS(50)), MS(50));
        assert_eq!(delay_2026(Some(MS(10_000)), MS(50)), MS(5050));
        assert_eq!(delay_2026(Some(MS(3000)), MS(50)), MS(3000));
        assert_eq!(delay_2026(None, MS(50)), MS(50));
        assert_eq!(
            delay_2026(Some(Duration::MAX), Duration::MAX),
            Duration::MAX
        );
    }

    #[test]
    fn a_wait_that_ends_at_the_deadline_reaches_it() {
        let now = Instant::now();
        let deadline = now + MS(100);
        assert!(!reaches(deadline, now, MS(99)));
        assert!(reaches(deadline, now, MS(100)));
        assert!(reaches(deadline, now + MS(100), Duration::ZERO));
        assert!(reaches(deadline, now, Duration::MAX));
    }
}
