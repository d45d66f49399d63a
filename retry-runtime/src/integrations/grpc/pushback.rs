//! The server's pushback (`grpc-retry-pushback-ms`) read as gRFC A6's "Pushback" section reads
//! it under a service config's policy.
//!
//! The value is parsed by the one parser of the hint ([`hint::grpc_pushback`]); what differs is
//! what a value that parser refuses means. Read as a server's hint (`Classify for
//! tonic::Status`), a malformed value is ignored like every other malformed hint, so a garbled
//! trailer cannot stop a retry the status code allows. Under a service config's policy, A6's
//! rule applies: a value that is negative or cannot be parsed asks the client not to retry at
//! all, and so does a trailer sent more than once. A negative number is `Stop` in both readings.

use crate::classify::hint;
use ::tonic::metadata::MetadataMap;
use std::time::Duration;

/// What a response's `grpc-retry-pushback-ms` asks of a policy's next retry or hedge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushback {
    /// No pushback: the policy's own backoff or hedging delay applies.
    None,
    /// Retry (or send the next hedge) after exactly this delay; the backoff starts again from
    /// `initialBackoff` after it.
    After(Duration),
    /// Do not retry, and send no further hedge (a negative or unparseable value). The response
    /// counts as a failure for retry throttling.
    Stop,
}

/// Reads `grpc-retry-pushback-ms` from a response's metadata (its trailers, or its headers for
/// a trailers-only response).
pub(crate) fn pushback(metadata: &MetadataMap) -> Pushback {
    let mut values = metadata.get_all(hint::GRPC_RETRY_PUSHBACK_MS).iter();
    let Some(value) = values.next() else {
        return Pushback::None;
    };
    if values.next().is_some() {
        return Pushback::Stop;
    }
    match value.to_str().ok().and_then(hint::grpc_pushback) {
        Some(hint::Pushback::After(delay)) => Pushback::After(delay),
        Some(hint::Pushback::Stop) | None => Pushback::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::tonic::metadata::MetadataValue;

    fn with(values: &[&'static str]) -> MetadataMap {
        let mut m = MetadataMap::new();
        for v in values {
            m.append(hint::GRPC_RETRY_PUSHBACK_MS, MetadataValue::from_static(v));
        }
        m
    }

    #[test]
    fn absent_is_none() {
        assert_eq!(pushback(&MetadataMap::new()), Pushback::None);
        let mut other = MetadataMap::new();
        other.insert("retry-after", MetadataValue::from_static("5"));
        assert_eq!(pushback(&other), Pushback::None);
    }

    #[test]
    fn milliseconds_are_the_delay() {
        assert_eq!(
            pushback(&with(&["250"])),
            Pushback::After(Duration::from_millis(250))
        );
        assert_eq!(pushback(&with(&["0"])), Pushback::After(Duration::ZERO));
        assert_eq!(
            pushback(&with(&["2147483647"])),
            Pushback::After(Duration::from_millis(2_147_483_647))
        );
    }

    #[test]
    fn negative_or_unparseable_is_stop() {
        for stop in [
            "-1",
            "-250",
            "-99999999999999999999",
            "abc",
            "",
            "1.5",
            "+5",
            "- 1",
            "1s",
        ] {
            assert_eq!(pushback(&with(&[stop])), Pushback::Stop, "{stop:?}");
        }
    }

    #[test]
    fn more_than_one_value_is_stop() {
        assert_eq!(pushback(&with(&["100", "200"])), Pushback::Stop);
    }

    #[test]
    fn a_value_that_is_not_text_is_stop() {
        let mut m = MetadataMap::new();
        let value = MetadataValue::try_from(&b"1\xff"[..]).expect("an opaque header value");
        m.insert(hint::GRPC_RETRY_PUSHBACK_MS, value);
        assert_eq!(pushback(&m), Pushback::Stop);
    }
}
