//! What a failed attempt means for the retry loop: [`ErrorClass`], [`Classify`] and [`TimedOut`],
//! the AWS error codes, and server hints. The impls of `Classify` for what users call are
//! `crate::integrations`'.

use core::fmt;
use std::time::Duration;

pub mod aws;
pub mod hint;

/// How the retry loop treats a failed attempt.
///
/// The class decides whether the call is retried at all, what the retry costs in the
/// partition's [`TokenBucket`](crate::TokenBucket), and whether a function declared
/// `idempotent = false` may be retried.
///
/// | class | retried | bucket cost (standard) | retried when not idempotent |
/// |---|---|---|---|
/// | `Permanent` | never | - | - |
/// | `Transient` | yes | 5 | no |
/// | `Timeout` | yes | 10 | no |
/// | `Throttling` | yes | 5 | yes |
/// | `NotSent` | yes | 5 | yes |
///
/// `bool` converts into a class (`true` is `Transient`, `false` is `Permanent`), so a
/// `retry_on` predicate may return either.
///
/// ```
/// use retry_runtime::ErrorClass;
/// assert_eq!(ErrorClass::from(true), ErrorClass::Transient);
/// assert!(ErrorClass::Throttling.is_retryable());
/// assert!(!ErrorClass::Permanent.is_retryable());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Retrying cannot help (a bad request, a missing resource, a denied permission).
    Permanent,
    /// A fault that may clear on its own (a 5xx, a reset connection).
    Transient,
    /// The attempt did not finish in time. The request may have reached the server.
    Timeout,
    /// The server asked the client to slow down (429, `SlowDown`, `RESOURCE_EXHAUSTED`).
    Throttling,
    /// The request provably never left the client (connection refused, DNS failure),
    /// so retrying is safe even for a function that is not idempotent.
    NotSent,
}

impl ErrorClass {
    /// Whether an error of this class may be retried at all.
    #[must_use]
    pub const fn is_retryable(self) -> bool {
        !matches!(self, ErrorClass::Permanent)
    }

    /// Whether an error of this class may be retried by a function that is not
    /// idempotent: only when the server did not act on the request.
    #[must_use]
    pub const fn is_safe_for_non_idempotent(self) -> bool {
        matches!(self, ErrorClass::Throttling | ErrorClass::NotSent)
    }

    /// The class's name, as tracing events and the docs write it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Permanent => "permanent",
            ErrorClass::Transient => "transient",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Throttling => "throttling",
            ErrorClass::NotSent => "not_sent",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<bool> for ErrorClass {
    /// `true` means "retry this" (`Transient`), `false` means `Permanent`.
    fn from(retry: bool) -> Self {
        if retry {
            ErrorClass::Transient
        } else {
            ErrorClass::Permanent
        }
    }
}

/// Tells the retry loop what an error means.
///
/// Derive it for your error type, implement it by hand, or name a predicate with
/// `retry_on = path` instead.
///
/// `#[derive(Classify)]` gives each variant its class, or classifies a variant by the one error it
/// wraps (`delegate`: its class and its server hint); `default` covers the variants left bare:
///
/// ```
/// use retry_runtime::{Classify, ErrorClass, TimedOut};
///
/// #[derive(Debug, Classify)]
/// #[classify(default = permanent)]
/// enum StoreError {
///     #[classify(throttling)]
///     Busy { queue: usize },
///     #[classify(transient)]
///     Unavailable,
///     #[classify(delegate)]
///     Io(std::io::Error),
///     #[classify(delegate)]
///     TimedOut(TimedOut),
///     NotFound(String),
/// }
///
/// assert_eq!(StoreError::Busy { queue: 3 }.classify(), ErrorClass::Throttling);
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// assert_eq!(StoreError::Io(reset).classify(), ErrorClass::Transient);
/// assert_eq!(StoreError::NotFound("k".into()).classify(), ErrorClass::Permanent);
/// ```
///
/// The attributes, their rules and their errors are [`derive@Classify`]'s. A server hint of your
/// own (`retry_after`), or a class that depends on a variant's values, needs the impl written by
/// hand:
///
/// ```
/// use retry_runtime::{Classify, ErrorClass};
/// use std::time::Duration;
///
/// enum StoreError {
///     Busy { retry_after_ms: u64 },
///     Unavailable,
///     NotFound,
/// }
///
/// impl Classify for StoreError {
///     fn classify(&self) -> ErrorClass {
///         match self {
///             StoreError::Busy { .. } => ErrorClass::Throttling,
///             StoreError::Unavailable => ErrorClass::Transient,
///             StoreError::NotFound => ErrorClass::Permanent,
///         }
///     }
///     fn retry_after(&self) -> Option<Duration> {
///         match self {
///             StoreError::Busy { retry_after_ms } => Some(Duration::from_millis(*retry_after_ms)),
///             _ => None,
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`#[retry]` cannot tell whether `{Self}` is worth retrying",
    label = "the error type `{Self}` does not implement `retry_runtime::Classify`",
    note = "derive it (`#[derive(retry_runtime::Classify)]`, with `#[classify(transient)]`... on \
            its variants), implement it (`fn classify(&self) -> ErrorClass`), or name a \
            predicate: `#[retry(retry_on = is_transient)]` with `fn is_transient(e: &{Self}) -> \
            bool`"
)]
pub trait Classify {
    /// The class of this error.
    fn classify(&self) -> ErrorClass;

    /// A delay the server asked for (`Retry-After` and the like). When present it replaces
    /// the computed backoff, without jitter; a hint longer than `max_backoff` ends the retries.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

/// The derive: `#[derive(retry_runtime::Classify)]`, or `#[derive(Classify)]` with the trait
/// imported (`use retry_runtime::Classify` brings both).
pub use retry_macros::Classify;

impl<E: Classify + ?Sized> Classify for &E {
    fn classify(&self) -> ErrorClass {
        (**self).classify()
    }
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<E: Classify + ?Sized> Classify for Box<E> {
    fn classify(&self) -> ErrorClass {
        (**self).classify()
    }
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl Classify for ErrorClass {
    fn classify(&self) -> ErrorClass {
        *self
    }
}

/// Which limit a [`TimedOut`] error hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeoutKind {
    /// The per-attempt timeout (`attempt_timeout`, grown by its multiplier).
    Attempt,
    /// The total deadline of the call (`deadline`).
    Deadline,
}

/// An attempt was cut off, by its own timeout or by the call's deadline.
///
/// The loop turns it into the function's error type with `E::from(TimedOut)`, so a function
/// with `attempt_timeout` or `deadline` needs `impl From<TimedOut> for E`. The runtime
/// provides it for [`std::io::Error`] (kind `TimedOut`); wrap other foreign errors:
///
/// ```
/// use retry_runtime::{Classify, ErrorClass, TimedOut};
///
/// #[derive(Debug)]
/// enum ApiError {
///     Http(u16),
///     TimedOut(TimedOut),
/// }
///
/// impl From<TimedOut> for ApiError {
///     fn from(t: TimedOut) -> Self {
///         ApiError::TimedOut(t)
///     }
/// }
///
/// impl Classify for ApiError {
///     fn classify(&self) -> ErrorClass {
///         match self {
///             ApiError::Http(500..=599) => ErrorClass::Transient,
///             ApiError::Http(429) => ErrorClass::Throttling,
///             ApiError::Http(_) => ErrorClass::Permanent,
///             ApiError::TimedOut(_) => ErrorClass::Timeout,
///         }
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimedOut {
    kind: TimeoutKind,
    limit: Duration,
    attempt: u32,
}

impl TimedOut {
    pub(crate) const fn new(kind: TimeoutKind, limit: Duration, attempt: u32) -> Self {
        TimedOut {
            kind,
            limit,
            attempt,
        }
    }

    /// Which limit was hit.
    #[must_use]
    pub const fn kind(&self) -> TimeoutKind {
        self.kind
    }

    /// Whether the call's total deadline was hit (rather than the attempt's own timeout).
    #[must_use]
    pub const fn is_deadline(&self) -> bool {
        matches!(self.kind, TimeoutKind::Deadline)
    }

    /// The limit that expired: the attempt's timeout, or the whole deadline.
    #[must_use]
    pub const fn limit(&self) -> Duration {
        self.limit
    }

    /// The attempt (1-based) that was cut off; 0 for a caller's deadline
    /// ([`with_deadline`](crate::with_deadline)) that cut its future off, which is no attempt.
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TimeoutKind::Attempt => write!(
                f,
                "attempt {} timed out after {:?}",
                self.attempt, self.limit
            ),
            TimeoutKind::Deadline if self.attempt == 0 => {
                write!(f, "deadline of {:?} exceeded", self.limit)
            }
            TimeoutKind::Deadline => write!(
                f,
                "deadline of {:?} exceeded during attempt {}",
                self.limit, self.attempt
            ),
        }
    }
}

impl std::error::Error for TimedOut {}

/// For a closure or function whose error is a message: the timeout's description.
impl From<TimedOut> for String {
    fn from(t: TimedOut) -> Self {
        t.to_string()
    }
}

/// For a closure or function whose error is only its class: a cut attempt is a `Timeout`.
///
/// ```
/// use retry_runtime::{ErrorClass, Policy};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().max_attempts(2).attempt_timeout(Duration::from_millis(10));
/// let out: Result<(), ErrorClass> = policy
///     .retry(|| async {
///         tokio::time::sleep(Duration::from_secs(1)).await;
///         Ok(())
///     })
///     .await;
/// assert_eq!(out, Err(ErrorClass::Timeout));
/// # }
/// ```
impl From<TimedOut> for ErrorClass {
    fn from(_: TimedOut) -> Self {
        ErrorClass::Timeout
    }
}

impl Classify for TimedOut {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Timeout
    }
}
