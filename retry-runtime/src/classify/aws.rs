//! The errors the AWS SDKs retry, by error code and by HTTP status (the AWS SDK for Kotlin's
//! `AwsRetryPolicy`), for clients of AWS-style services that do not use an AWS SDK.
//!
//! | error code | class |
//! |---|---|
//! | `BandwidthLimitExceeded`, `EC2ThrottledException`, `LimitExceededException`, `PriorRequestNotComplete`, `ProvisionedThroughputExceededException`, `RequestLimitExceeded`, `RequestThrottled`, `RequestThrottledException`, `SlowDown`, `ThrottledException`, `Throttling`, `ThrottlingException`, `TooManyRequestsException`, `TransactionInProgressException` | `Throttling` |
//! | `IDPCommunicationError`, `RequestTimeout`, `RequestTimeoutException` | `Transient` |
//!
//! | HTTP status (when the code is none of the above) | class |
//! |---|---|
//! | 500, 502, 503, 504 | `Transient` |
//!
//! Everything else is `Permanent`: missing or invalid parameters, authentication and
//! authorization failures, misconfiguration. The server's hint is the `x-amz-retry-after`
//! header, in milliseconds ([`hint::amz_retry_after`](crate::hint::amz_retry_after)).
//!
//! ```
//! use retry_runtime::{aws, Classify, ErrorClass};
//! use std::time::Duration;
//!
//! /// An S3-style error response: status, `<Code>` and the hint header.
//! #[derive(Debug)]
//! struct ServiceError {
//!     status: u16,
//!     code: Option<String>,
//!     retry_after_ms: Option<String>,
//! }
//!
//! impl Classify for ServiceError {
//!     fn classify(&self) -> ErrorClass {
//!         aws::classify(self.code.as_deref(), Some(self.status))
//!     }
//!     fn retry_after(&self) -> Option<Duration> {
//!         self.retry_after_ms.as_deref().and_then(retry_runtime::hint::amz_retry_after)
//!     }
//! }
//!
//! let slow_down = ServiceError { status: 503, code: Some("SlowDown".into()), retry_after_ms: None };
//! assert_eq!(slow_down.classify(), ErrorClass::Throttling);
//! let missing = ServiceError { status: 404, code: Some("NoSuchKey".into()), retry_after_ms: None };
//! assert_eq!(missing.classify(), ErrorClass::Permanent);
//! assert_eq!(aws::classify(None, Some(502)), ErrorClass::Transient);
//! ```

use super::ErrorClass;

/// Error codes that mean the service throttled the request.
pub const THROTTLING_CODES: &[&str] = &[
    "BandwidthLimitExceeded",
    "EC2ThrottledException",
    "LimitExceededException",
    "PriorRequestNotComplete",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "RequestThrottledException",
    "SlowDown",
    "ThrottledException",
    "Throttling",
    "ThrottlingException",
    "TooManyRequestsException",
    "TransactionInProgressException",
];

/// Error codes of faults that may clear on their own.
pub const TRANSIENT_CODES: &[&str] = &[
    "IDPCommunicationError",
    "RequestTimeout",
    "RequestTimeoutException",
];

/// HTTP statuses retried whatever the error code.
pub const TRANSIENT_STATUSES: &[u16] = &[500, 502, 503, 504];

/// The class of an AWS error code, or `None` for a code the SDKs do not retry by code.
/// Codes are compared exactly (AWS error codes are case-sensitive).
#[must_use]
pub fn classify_code(code: &str) -> Option<ErrorClass> {
    if THROTTLING_CODES.contains(&code) {
        Some(ErrorClass::Throttling)
    } else if TRANSIENT_CODES.contains(&code) {
        Some(ErrorClass::Transient)
    } else {
        None
    }
}

/// The class of an AWS-style error response: its code first, then its HTTP status, else
/// `Permanent`.
#[must_use]
pub fn classify(code: Option<&str>, status: Option<u16>) -> ErrorClass {
    if let Some(class) = code.and_then(classify_code) {
        return class;
    }
    match status {
        Some(s) if TRANSIENT_STATUSES.contains(&s) => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_of_the_table() {
        assert_eq!(THROTTLING_CODES.len() + TRANSIENT_CODES.len(), 17);
        for code in THROTTLING_CODES {
            assert_eq!(classify(Some(code), Some(400)), ErrorClass::Throttling);
        }
        for code in TRANSIENT_CODES {
            assert_eq!(classify(Some(code), Some(400)), ErrorClass::Transient);
        }
    }

    #[test]
    fn codes_before_statuses() {
        assert_eq!(
            classify(Some("SlowDown"), Some(503)),
            ErrorClass::Throttling
        );
        assert_eq!(
            classify(Some("InternalError"), Some(500)),
            ErrorClass::Transient
        );
        assert_eq!(
            classify(Some("AccessDenied"), Some(403)),
            ErrorClass::Permanent
        );
        assert_eq!(
            classify(Some("throttling"), Some(400)),
            ErrorClass::Permanent
        );
        assert_eq!(classify(None, Some(504)), ErrorClass::Transient);
        assert_eq!(classify(None, Some(501)), ErrorClass::Permanent);
        assert_eq!(classify(None, Some(429)), ErrorClass::Permanent);
        assert_eq!(classify(None, None), ErrorClass::Permanent);
    }
}
