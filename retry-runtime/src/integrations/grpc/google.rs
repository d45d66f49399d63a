//! Google's published service configs: googleapis' `*_grpc_service_config.json` read as Google's
//! generated client libraries read them.

use super::config::{Dialect, ServiceConfig};
use super::error::ServiceConfigError;

impl ServiceConfig {
    /// Reads one of the service configs Google publishes beside its APIs' protos, the
    /// `*_grpc_service_config.json` files of googleapis
    /// (<https://github.com/googleapis/googleapis>), as Google's generated client libraries read
    /// them, where [`from_json`](Self::from_json) holds to gRFC A6 and refuses about a quarter
    /// of them (a `retryPolicy` without `maxAttempts`, an empty `retryableStatusCodes`, a name
    /// listed twice).
    ///
    /// ```
    /// use retry_runtime::grpc::{PolicyKind, ServiceConfig};
    /// use std::time::Duration;
    ///
    /// // Cut from googleapis' google/cloud/tasks/v2/cloudtasks_grpc_service_config.json: a
    /// // retryPolicy without maxAttempts, which from_json refuses.
    /// let text = r#"{
    ///   "methodConfig": [
    ///     {
    ///       "name": [{ "service": "google.cloud.tasks.v2.CloudTasks", "method": "GetQueue" }],
    ///       "timeout": "20s",
    ///       "retryPolicy": {
    ///         "initialBackoff": "0.100s",
    ///         "maxBackoff": "10s",
    ///         "backoffMultiplier": 1.3,
    ///         "retryableStatusCodes": ["DEADLINE_EXCEEDED", "UNAVAILABLE"]
    ///       }
    ///     },
    ///     {
    ///       "name": [{ "service": "google.cloud.tasks.v2.CloudTasks", "method": "CreateTask" }],
    ///       "timeout": "20s"
    ///     }
    ///   ]
    /// }"#;
    /// assert!(ServiceConfig::from_json(text).is_err());
    ///
    /// let config = ServiceConfig::from_google_json(text)?;
    /// let get = config.policy("google.cloud.tasks.v2.CloudTasks", "GetQueue");
    /// assert_eq!(get.kind(), PolicyKind::Retry);
    /// // No limit on attempts: the 20 s timeout alone ends the retries.
    /// assert_eq!(get.max_attempts(), u32::MAX);
    /// assert_eq!(get.timeout(), Some(Duration::from_secs(20)));
    ///
    /// // A timeout without a retry policy: one attempt.
    /// let create = config.policy("google.cloud.tasks.v2.CloudTasks", "CreateTask");
    /// assert_eq!(create.kind(), PolicyKind::None);
    /// assert_eq!(create.max_attempts(), 1);
    /// assert_eq!(create.timeout(), Some(Duration::from_secs(20)));
    /// # Ok::<(), retry_runtime::grpc::ServiceConfigError>(())
    /// ```
    ///
    /// # How the generators read a config
    ///
    /// Each generator of Google's client libraries reads the file when it generates a client,
    /// and writes each method's retry settings and timeout into the client's code:
    ///
    /// - gapic-generator-java (`GapicServiceConfig` and `RetrySettingsComposer`, in
    ///   <https://github.com/googleapis/sdk-platform-java/tree/main/gapic-generator-java/src/main/java/com/google/api/generator/gapic>):
    ///   `initialBackoff`, `maxBackoff` and `backoffMultiplier` become gax-java's
    ///   `RetrySettings` delays, the `timeout` its total timeout; `maxAttempts` is not read, so
    ///   `RetrySettings.maxAttempts` stays 0, which gax-java reads as "no limit but the total
    ///   timeout"
    ///   (<https://github.com/googleapis/sdk-platform-java/blob/main/gax-java/gax/src/main/java/com/google/api/gax/retrying/RetrySettings.java>).
    /// - gapic-generator-go (`internal/grpc_service_config/config.go` and
    ///   `internal/gengapic/gengrpc.go`, in <https://github.com/googleapis/gapic-generator-go>):
    ///   `gax.OnCodes(codes, gax.Backoff{...})` and `gax.WithTimeout`; "this ignores
    ///   max_attempts", its source says.
    /// - gapic-generator-python (`_get_retry_and_timeout` in `gapic/schema/api.py`, in
    ///   <https://github.com/googleapis/gapic-generator-python>): a `Retry` of
    ///   google-api-core whose deadline is the `timeout`; `maxAttempts` is read into its model
    ///   but no template uses it.
    /// - gapic-generator-csharp (`MethodDetails.LoadTiming` and `ServiceDetails`, in
    ///   <https://github.com/googleapis/gapic-generator-csharp/tree/main/Google.Api.Generator/Generation>):
    ///   the one that reads `maxAttempts`, as written, and "gRPC uses maxAttempts = 0 to mean
    ///   unlimited; GAX wants a positive number. int.MaxValue is fine."
    /// - google-cloud-rust's generator (sidekick, now in
    ///   <https://github.com/googleapis/librarian/tree/main/internal/sidekick>) does not read
    ///   these files: the Rust clients share one default policy.
    ///
    /// # The rules
    ///
    /// Durations, status code numbers, `null` fields and fields it does not read are read as
    /// [`from_json`](Self::from_json) reads them, and every problem is reported at once in one
    /// [`ServiceConfigError`]. The rest follows the generators:
    ///
    /// - **`maxAttempts` absent (or 0, proto3's default)**: no limit on attempts; the method's
    ///   `timeout` alone ends the retries, not gRFC A6's cap of 5 (gax-java's `maxAttempts` of
    ///   0, gapic-generator-csharp's `int.MaxValue`; Go's and Python's ignore the field).
    ///   [`GrpcPolicy::max_attempts`](super::GrpcPolicy::max_attempts) is then `u32::MAX`.
    /// - **`maxAttempts` present**: that many attempts, not capped at 5 (gapic-generator-csharp
    ///   writes it as it is: A6's cap is gRPC's, whose retries these clients do not use); an
    ///   integer from 0 to 4294967295, as the proto's `uint32` is. 1 allows no retry.
    /// - **`timeout` absent**: no timeout (Go's, Python's and C#'s clients set none), except
    ///   for a retry policy without `maxAttempts`, which would then retry without end: it is
    ///   bounded by 5 s, the total timeout gapic-generator-java gives a retry policy written
    ///   without a timeout (`GapicServiceConfig.EMPTY_TIMEOUT`). A `timeout` of `"0s"` beside a
    ///   policy without `maxAttempts` allows no retry (gax-java makes none when the total
    ///   timeout and `maxAttempts` are both 0).
    /// - **`retryableStatusCodes` empty or absent**: no status is retried (gax-java's empty
    ///   code set, Go's `gax.OnCodes` of no code; Go's REST transport leaves the retry out).
    /// - A retry policy that allows no retry (no code, `maxAttempts` 1, or the case above) is
    ///   read as no policy: [`PolicyKind::None`](super::PolicyKind::None), one attempt, under
    ///   the method's `timeout`.
    /// - **`initialBackoff`, `maxBackoff` and `backoffMultiplier`** have no default: each is
    ///   required (gapic-generator-java checks that both backoffs are present, Go's and C#'s
    ///   generators fail without them; only Python's leaves them to google-api-core). The
    ///   backoffs must be above zero, as `from_json` asks, and `maxBackoff` not below
    ///   `initialBackoff` and `backoffMultiplier` at least 1, as gax-java's `RetrySettings`
    ///   refuses to build anything else.
    /// - **Status code names** are the `google.rpc.Code` names in upper case (`"UNAVAILABLE"`),
    ///   or numbers from 0 to 16: proto3's JSON mapping reads an enum by its exact name
    ///   (<https://protobuf.dev/programming-guides/json/>), and Java's, Go's and C#'s parsers
    ///   (Python's `getattr(grpc.StatusCode, code)` too) refuse `"unavailable"`.
    /// - **A name listed twice**, in one entry or across entries, is no problem: the last entry
    ///   that lists it wins (gapic-generator-java's `methodConfigTable.put`, Go's map; Python's
    ///   takes the first, and gapic-generator-csharp fails on a name two entries list).
    /// - **Lookup**: a method takes the entry naming it, else the one naming its service, and
    ///   uses it whole, as Java's and C#'s generators do (Go's takes a missing `timeout` from
    ///   the service's entry; Python's reads only entries naming the method). None of them looks
    ///   up anything else, so a name without a service (`{}`, gRFC A6's default, or a method
    ///   alone) applies to no method; without an entry, one attempt and no timeout.
    /// - **`hedgingPolicy`** must be an object (and not beside a `retryPolicy`, the proto's
    ///   `oneof`), but the generated clients do not hedge: the method gets no policy, under its
    ///   `timeout`. **`retryThrottling`** is not read: the generators read `methodConfig`
    ///   alone, so the policies share no throttle.
    ///
    /// # Errors
    ///
    /// A [`ServiceConfigError`] with every problem found, if there is any: nothing is built
    /// from a config that has one. A text that is not JSON is one problem, with its line and
    /// column.
    pub fn from_google_json(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        ServiceConfig::read(json, Dialect::Google)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::grpc::config::{GOOGLE_DEFAULT_TIMEOUT, UNLIMITED_ATTEMPTS};
    use crate::integrations::grpc::policy::{GrpcPolicy, PolicyKind};
    use ::tonic::{Code, Status};
    use serde_json::{Value, json};
    use std::time::Duration;

    fn ok(config: &str) -> ServiceConfig {
        ServiceConfig::from_google_json(config).unwrap_or_else(|e| panic!("{config}: {e}"))
    }

    /// The problems of a config that must fail, as their `Display` writes them.
    fn problems(config: &str) -> Vec<String> {
        match ServiceConfig::from_google_json(config) {
            Ok(c) => panic!("{config} was accepted: {c:?}"),
            Err(e) => e.problems().iter().map(ToString::to_string).collect(),
        }
    }

    /// A retry policy as googleapis writes most of them: no `maxAttempts`.
    fn retry() -> Value {
        json!({
            "initialBackoff": "0.100s",
            "maxBackoff": "60s",
            "backoffMultiplier": 1.3,
            "retryableStatusCodes": ["UNAVAILABLE"]
        })
    }

    /// `policy` with `key` set to `value` (or removed, for `None`).
    fn with(mut policy: Value, key: &str, value: Option<Value>) -> Value {
        if let Value::Object(o) = &mut policy {
            match value {
                Some(v) => o.insert(key.to_owned(), v),
                None => o.remove(key),
            };
        }
        policy
    }

    /// A config of one entry naming the service `s`, with this retry policy and timeout.
    fn entry(policy: Value, timeout: Option<&str>) -> String {
        let mut entry = json!({ "name": [{ "service": "s" }], "retryPolicy": policy });
        if let (Some(t), Value::Object(o)) = (timeout, &mut entry) {
            o.insert("timeout".to_owned(), json!(t));
        }
        json!({ "methodConfig": [entry] }).to_string()
    }

    fn policy(config: &str) -> GrpcPolicy {
        ok(config).policy("s", "m")
    }

    const RETRY: &str = "methodConfig[0].retryPolicy";

    #[test]
    fn without_max_attempts_the_timeout_alone_bounds_the_retries() {
        let text = entry(retry(), Some("60s"));
        assert!(ServiceConfig::from_json(&text).is_err(), "A6 requires it");
        let p = policy(&text);
        assert_eq!(p.kind(), PolicyKind::Retry);
        assert_eq!(p.max_attempts(), u32::MAX);
        assert_eq!(p.max_attempts(), UNLIMITED_ATTEMPTS);
        assert_eq!(p.timeout(), Some(Duration::from_secs(60)));
        assert_eq!(p.initial_backoff(), Duration::from_millis(100));
        assert_eq!(p.max_backoff(), Duration::from_secs(60));
        assert_eq!(p.backoff_multiplier(), 1.3);
        assert_eq!(p.retryable_codes().bits(), 1 << 14);
        // 0 is proto3's default: the same as absent.
        let zero = policy(&entry(
            with(retry(), "maxAttempts", Some(json!(0))),
            Some("60s"),
        ));
        assert_eq!(zero.max_attempts(), u32::MAX);
        assert_eq!(zero.kind(), PolicyKind::Retry);
    }

    /// Under tokio's paused clock: far more than 5 attempts, until the timeout ends the call.
    #[tokio::test(start_paused = true)]
    async fn a_policy_without_max_attempts_retries_until_its_timeout() {
        let p = policy(&entry(
            json!({ "initialBackoff": "0.1s", "maxBackoff": "0.1s", "backoffMultiplier": 1,
                    "retryableStatusCodes": ["UNAVAILABLE"] }),
            Some("2s"),
        ));
        let start = tokio::time::Instant::now();
        let mut attempts = 0_u32;
        let out: Result<(), Status> = p
            .retry(|| {
                attempts += 1;
                async { Err(Status::unavailable("down")) }
            })
            .await;
        let elapsed = start.elapsed();
        let code = out.expect_err("never succeeds").code();
        // The call ends with the last attempt's status when the next wait would cross the
        // timeout (no wait crosses it), or with the timeout's if it cut an attempt.
        assert!(
            matches!(code, Code::DeadlineExceeded | Code::Unavailable),
            "{code:?}"
        );
        // Waits of at most 100 ms (full jitter below the ceiling) until the next would cross
        // the 2 s: 20 attempts at the least, about 40 on average.
        assert!(attempts >= 20, "{attempts} attempts");
        assert!(
            elapsed >= Duration::from_millis(1900) && elapsed <= Duration::from_secs(2),
            "{elapsed:?}"
        );
    }

    #[test]
    fn max_attempts_when_present_is_read_as_written() {
        let attempts = |v: Value| {
            policy(&entry(with(retry(), "maxAttempts", Some(v)), Some("60s"))).max_attempts()
        };
        assert_eq!(attempts(json!(2)), 2);
        assert_eq!(attempts(json!(5)), 5);
        // googleapis' bigtableadmin config asks for 100; A6 would read 5.
        assert_eq!(attempts(json!(100)), 100);
        assert_eq!(attempts(json!(4_294_967_295_u64)), u32::MAX);
        assert_eq!(attempts(json!(7.0)), 7, "an integer written with a point");
        let path = format!("{RETRY}.maxAttempts");
        for bad in [
            json!(-1),
            json!(2.5),
            json!("3"),
            json!(4_294_967_296_u64),
            json!(true),
        ] {
            let text = entry(with(retry(), "maxAttempts", Some(bad.clone())), None);
            assert_eq!(
                problems(&text),
                [format!(
                    "{path}: must be an integer from 0 to 4294967295, found {bad}"
                )]
            );
        }
    }

    #[test]
    fn a_policy_that_allows_no_retry_is_no_policy_under_its_timeout() {
        // One attempt.
        let one = policy(&entry(
            with(retry(), "maxAttempts", Some(json!(1))),
            Some("30s"),
        ));
        assert_eq!(one.kind(), PolicyKind::None);
        assert_eq!(one.max_attempts(), 1);
        assert_eq!(one.timeout(), Some(Duration::from_secs(30)));
        // No code to retry: empty, or absent (proto3's empty list).
        for codes in [Some(json!([])), None] {
            let text = entry(with(retry(), "retryableStatusCodes", codes), Some("60s"));
            let p = policy(&text);
            assert_eq!(p.kind(), PolicyKind::None, "{text}");
            assert_eq!(p.max_attempts(), 1);
            assert_eq!(p.timeout(), Some(Duration::from_secs(60)));
            assert!(!p.continues_on(Code::Unavailable));
        }
        assert!(
            ServiceConfig::from_json(&entry(
                with(
                    with(retry(), "maxAttempts", Some(json!(5))),
                    "retryableStatusCodes",
                    Some(json!([]))
                ),
                Some("60s")
            ))
            .is_err()
        );
        // A timeout of zero and no maxAttempts: gax-java makes no retry.
        let zero = policy(&entry(retry(), Some("0s")));
        assert_eq!(zero.kind(), PolicyKind::None);
        assert_eq!(zero.timeout(), Some(Duration::ZERO));
        // With maxAttempts, a zero timeout is only a timeout (the call reads it as none).
        let counted = policy(&entry(
            with(retry(), "maxAttempts", Some(json!(3))),
            Some("0s"),
        ));
        assert_eq!(counted.kind(), PolicyKind::Retry);
        assert_eq!(counted.max_attempts(), 3);
    }

    #[test]
    fn without_timeout_only_an_unbounded_policy_gets_5_seconds() {
        assert_eq!(GOOGLE_DEFAULT_TIMEOUT, Duration::from_secs(5));
        let unbounded = policy(&entry(retry(), None));
        assert_eq!(unbounded.kind(), PolicyKind::Retry);
        assert_eq!(unbounded.max_attempts(), u32::MAX);
        assert_eq!(unbounded.timeout(), Some(Duration::from_secs(5)));
        let counted = policy(&entry(with(retry(), "maxAttempts", Some(json!(4))), None));
        assert_eq!(counted.max_attempts(), 4);
        assert_eq!(counted.timeout(), None);
        let no_codes = policy(&entry(
            with(retry(), "retryableStatusCodes", Some(json!([]))),
            None,
        ));
        assert_eq!(no_codes.kind(), PolicyKind::None);
        assert_eq!(no_codes.timeout(), None);
        let timeout_only =
            ok(r#"{"methodConfig": [{"name": [{"service": "s"}], "timeout": "20s"}]}"#)
                .policy("s", "m");
        assert_eq!(timeout_only.kind(), PolicyKind::None);
        assert_eq!(timeout_only.timeout(), Some(Duration::from_secs(20)));
    }

    #[test]
    fn the_backoffs_and_multiplier_are_required() {
        for key in ["initialBackoff", "maxBackoff", "backoffMultiplier"] {
            assert_eq!(
                problems(&entry(with(retry(), key, None), Some("60s"))),
                [format!("{RETRY}.{key}: is required but missing")]
            );
        }
        assert_eq!(
            problems(&entry(json!({}), None)),
            [
                format!("{RETRY}.initialBackoff: is required but missing"),
                format!("{RETRY}.maxBackoff: is required but missing"),
                format!("{RETRY}.backoffMultiplier: is required but missing"),
            ]
        );
    }

    #[test]
    fn the_backoffs_must_hold_to_gax_java() {
        let cases = [
            (
                "backoffMultiplier",
                json!(0.5),
                "backoffMultiplier: must be at least 1, found 0.5",
            ),
            (
                "backoffMultiplier",
                json!(0),
                "backoffMultiplier: must be greater than 0, found 0",
            ),
            (
                "maxBackoff",
                json!("0.05s"),
                "maxBackoff: must not be shorter than initialBackoff (\"0.100s\"), found \
                 \"0.05s\"",
            ),
            (
                "initialBackoff",
                json!("0s"),
                "initialBackoff: must be greater than 0, found \"0s\"",
            ),
            (
                "maxBackoff",
                json!("100ms"),
                "maxBackoff: must be a duration in seconds with an \"s\" suffix and up to 9 \
                 fractional digits, such as \"0.1s\" or \"3s\", found \"100ms\"",
            ),
        ];
        for (key, value, message) in cases {
            assert_eq!(
                problems(&entry(with(retry(), key, Some(value)), None)),
                [format!("{RETRY}.{message}")]
            );
        }
        let p = policy(&entry(
            with(
                with(retry(), "backoffMultiplier", Some(json!(1))),
                "maxBackoff",
                Some(json!("0.1s")),
            ),
            Some("1s"),
        ));
        assert_eq!(p.backoff_multiplier(), 1.0);
        assert_eq!(p.max_backoff(), p.initial_backoff());
    }

    #[test]
    fn status_code_names_are_upper_case_or_numbers() {
        let codes = |list: Value| {
            policy(&entry(
                with(retry(), "retryableStatusCodes", Some(list)),
                Some("1s"),
            ))
            .retryable_codes()
            .bits()
        };
        assert_eq!(
            codes(json!(["UNAVAILABLE", "DEADLINE_EXCEEDED"])),
            1 << 14 | 1 << 4
        );
        assert_eq!(codes(json!([14, "UNAVAILABLE"])), 1 << 14);
        assert_eq!(codes(json!([1.0, 16])), 1 << 1 | 1 << 16);
        let path = format!("{RETRY}.retryableStatusCodes");
        let upper = "must be a status code name in upper case such as \"UNAVAILABLE\" or a \
                     number from 0 to 16";
        for (name, meant) in [
            ("unavailable", "UNAVAILABLE"),
            ("Deadline_Exceeded", "DEADLINE_EXCEEDED"),
            ("UNAVAILBLE", "UNAVAILABLE"),
        ] {
            let text = entry(
                with(
                    retry(),
                    "retryableStatusCodes",
                    Some(json!(["ABORTED", name])),
                ),
                None,
            );
            assert_eq!(
                problems(&text),
                [format!(
                    "{path}[1]: did you mean \"{meant}\"? {upper}, found \"{name}\""
                )]
            );
        }
        assert_eq!(
            problems(&entry(
                with(retry(), "retryableStatusCodes", Some(json!([17]))),
                None
            )),
            [format!(
                "{path}[0]: must be a status code from 0 to 16, found 17"
            )]
        );
        // from_json keeps reading a name in any case.
        let lower = entry(
            with(
                with(retry(), "maxAttempts", Some(json!(3))),
                "retryableStatusCodes",
                Some(json!(["unavailable"])),
            ),
            None,
        );
        assert!(ServiceConfig::from_json(&lower).is_ok());
    }

    #[test]
    fn a_name_listed_twice_is_the_last_entry_s() {
        let text = json!({ "methodConfig": [
            { "name": [{ "service": "s", "method": "Get" }, { "service": "s", "method": "Get" }],
              "timeout": "10s", "retryPolicy": with(retry(), "maxAttempts", Some(json!(3))) },
            { "name": [{ "service": "s" }], "timeout": "20s" },
            { "name": [{ "service": "s", "method": "Get" }, { "service": "t" }],
              "timeout": "30s", "retryPolicy": with(retry(), "maxAttempts", Some(json!(4))) },
            { "name": [{ "service": "s" }, { "service": "t" }], "timeout": "40s" },
        ] })
        .to_string();
        assert!(ServiceConfig::from_json(&text).is_err());
        let config = ok(&text);
        let get = config.policy("s", "Get");
        assert_eq!(get.max_attempts(), 4);
        assert_eq!(get.timeout(), Some(Duration::from_secs(30)));
        let other = config.policy("s", "List");
        assert_eq!(other.kind(), PolicyKind::None);
        assert_eq!(other.timeout(), Some(Duration::from_secs(40)));
        // The winner is used whole: t's last entry has no retry policy.
        let t = config.policy("t", "Get");
        assert_eq!(t.kind(), PolicyKind::None);
        assert_eq!(t.timeout(), Some(Duration::from_secs(40)));
    }

    #[test]
    fn a_name_without_a_service_applies_to_no_method() {
        let text = json!({ "methodConfig": [
            { "name": [{}], "timeout": "10s", "retryPolicy": retry() },
            { "name": [{ "method": "Get" }], "timeout": "20s", "retryPolicy": retry() },
            { "name": [{ "service": "", "method": "" }, { "service": "s", "method": "Put" }],
              "timeout": "30s" },
        ] })
        .to_string();
        let config = ok(&text);
        for (service, method) in [("s", "Get"), ("t", "List"), ("", "Get"), ("", "")] {
            let p = config.policy(service, method);
            assert_eq!(p.kind(), PolicyKind::None, "{service}/{method}");
            assert_eq!(p.timeout(), None, "{service}/{method}");
        }
        assert_eq!(
            config.policy("s", "Put").timeout(),
            Some(Duration::from_secs(30))
        );
        // The method's entry, else its service's.
        let config = ok(&json!({ "methodConfig": [
            { "name": [{ "service": "s" }], "timeout": "10s", "retryPolicy": retry() },
            { "name": [{ "service": "s", "method": "Get" }], "timeout": "20s" },
        ] })
        .to_string());
        assert_eq!(config.policy("s", "Get").kind(), PolicyKind::None);
        assert_eq!(config.policy("s", "List").kind(), PolicyKind::Retry);
    }

    #[test]
    fn hedging_and_throttling_are_not_read() {
        let text = json!({
            "methodConfig": [{ "name": [{ "service": "s" }], "timeout": "5s",
                               "hedgingPolicy": { "maxAttempts": 1, "hedgingDelay": "-1s" } }],
            "retryThrottling": { "maxTokens": 0 },
        })
        .to_string();
        assert!(ServiceConfig::from_json(&text).is_err());
        let p = policy(&text);
        assert_eq!(p.kind(), PolicyKind::None);
        assert_eq!(p.max_attempts(), 1);
        assert_eq!(p.timeout(), Some(Duration::from_secs(5)));
        assert!(p.throttle().is_none());
        let retrying = policy(
            &json!({
                "methodConfig": [{ "name": [{ "service": "s" }], "retryPolicy": retry(),
                                   "timeout": "5s" }],
                "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 },
            })
            .to_string(),
        );
        assert!(retrying.throttle().is_none());
        // Still an object, and never beside a retry policy (the proto's oneof).
        let both = json!({ "methodConfig": [{ "name": [{ "service": "s" }],
            "retryPolicy": retry(), "hedgingPolicy": {} }] })
        .to_string();
        assert_eq!(
            problems(&both),
            [
                "methodConfig[0]: must have at most one of retryPolicy and hedgingPolicy, found \
              both"
            ]
        );
        let not_object = json!({ "methodConfig": [{ "name": [{ "service": "s" }],
            "hedgingPolicy": [] }] })
        .to_string();
        assert_eq!(
            problems(&not_object),
            ["methodConfig[0].hedgingPolicy: must be an object, found []"]
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = r#"{
            "methodConfig": [
                {
                    "name": [{ "service": "s" }, { "service": 5 }],
                    "timeout": "-1s",
                    "retryPolicy": {
                        "maxAttempts": -2,
                        "initialBackoff": "2s",
                        "maxBackoff": "1s",
                        "backoffMultiplier": 0.9,
                        "retryableStatusCodes": ["unavailable", 99]
                    }
                },
                "oops"
            ]
        }"#;
        assert_eq!(
            problems(text),
            [
                "methodConfig[0].name[1].service: must be a string, found 5",
                "methodConfig[0].retryPolicy.maxAttempts: must be an integer from 0 to \
                 4294967295, found -2",
                "methodConfig[0].retryPolicy.maxBackoff: must not be shorter than \
                 initialBackoff (\"2s\"), found \"1s\"",
                "methodConfig[0].retryPolicy.backoffMultiplier: must be at least 1, found 0.9",
                "methodConfig[0].retryPolicy.retryableStatusCodes[0]: did you mean \
                 \"UNAVAILABLE\"? must be a status code name in upper case such as \
                 \"UNAVAILABLE\" or a number from 0 to 16, found \"unavailable\"",
                "methodConfig[0].retryPolicy.retryableStatusCodes[1]: must be a status code \
                 from 0 to 16, found 99",
                "methodConfig[0].timeout: must not be negative, found \"-1s\"",
                "methodConfig[1]: must be an object, found \"oops\"",
            ]
        );
        assert_eq!(
            problems("{"),
            [
                "service config: is not valid JSON at line 1, column 1: EOF while parsing an \
              object"
            ]
        );
    }

    /// gRFC A6's reading is unchanged by the other one: what it refuses it still refuses.
    #[test]
    fn from_json_keeps_a6() {
        for text in [
            entry(retry(), Some("60s")),
            entry(
                with(
                    with(retry(), "maxAttempts", Some(json!(3))),
                    "retryableStatusCodes",
                    Some(json!([])),
                ),
                None,
            ),
            json!({ "methodConfig": [{ "name": [{ "service": "s" }, { "service": "s" }] }] })
                .to_string(),
        ] {
            // Refused, and the error says which reader takes it.
            let refused = ServiceConfig::from_json(&text).unwrap_err().to_string();
            assert!(
                refused.ends_with(
                    "\n  (Google's generated clients read it as it is, as they read googleapis' \
                     published *_grpc_service_config.json files: ServiceConfig::from_google_json \
                     reads it so)"
                ),
                "{refused}"
            );
            let _ = ok(&text);
        }
        // A config that neither reads says nothing of the other.
        let bad = entry(with(retry(), "maxAttempts", Some(json!("x"))), None);
        let refused = ServiceConfig::from_json(&bad).unwrap_err().to_string();
        assert!(ServiceConfig::from_google_json(&bad).is_err());
        assert!(!refused.contains("from_google_json"), "{refused}");
        let capped = with(retry(), "maxAttempts", Some(json!(100)));
        let a6 = ServiceConfig::from_json(&entry(capped.clone(), None)).expect("A6 reads it");
        assert_eq!(a6.policy("s", "m").max_attempts(), 5);
        assert_eq!(policy(&entry(capped, None)).max_attempts(), 100);
    }
}
