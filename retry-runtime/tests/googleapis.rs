//! Google's published service configs (googleapis' `*_grpc_service_config.json`) read by
//! `ServiceConfig::from_google_json`: a sample of twenty kept in `tests/data/googleapis/`, and
//! every file of a googleapis checkout when `GOOGLEAPIS_DIR` names one.
//!
//! Each file is read by both readers. Every method config's names are then looked up, and the
//! policy found is compared with what the file's JSON says, read here on its own: the last
//! entry naming the method, its `maxAttempts` (`u32::MAX` without one), its codes, its
//! `timeout`. A few calls run under the policies, on tokio's paused clock.

use retry_runtime::grpc::{GrpcPolicy, PolicyKind, ServiceConfig};
use retry_runtime::testing::{self, Overrides};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::Status;

/// The vendored sample.
fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/googleapis")
}

/// Every `*_grpc_service_config.json` under `dir`, sorted.
fn configs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with("_grpc_service_config.json"))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A proto3 JSON duration as the files write them (`"60s"`, `"0.100s"`).
fn duration(text: &str) -> Duration {
    let digits = text.strip_suffix('s').expect("a duration ends with s");
    let (secs, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let nanos = format!("{frac:0<9}");
    Duration::new(
        secs.parse().expect("whole seconds"),
        nanos.parse().expect("nanoseconds"),
    )
}

/// What a method config asks, read from its JSON here, as the generators' clients read it.
#[derive(Debug, PartialEq)]
struct Expected {
    kind: PolicyKind,
    max_attempts: u32,
    timeout: Option<Duration>,
}

fn expected(entry: &Value) -> Expected {
    let timeout = entry.get("timeout").and_then(Value::as_str).map(duration);
    let Some(retry) = entry.get("retryPolicy") else {
        return Expected {
            kind: PolicyKind::None,
            max_attempts: 1,
            timeout,
        };
    };
    let written = retry
        .get("maxAttempts")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let max_attempts = if written == 0 {
        u32::MAX
    } else {
        u32::try_from(written).expect("a uint32")
    };
    let codes = retry
        .get("retryableStatusCodes")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let retries =
        codes > 0 && max_attempts > 1 && !(written == 0 && timeout == Some(Duration::ZERO));
    if !retries {
        return Expected {
            kind: PolicyKind::None,
            max_attempts: 1,
            timeout,
        };
    }
    Expected {
        kind: PolicyKind::Retry,
        max_attempts,
        timeout: timeout.or((written == 0).then_some(Duration::from_secs(5))),
    }
}

fn found(policy: &GrpcPolicy) -> Expected {
    Expected {
        kind: policy.kind(),
        max_attempts: policy.max_attempts(),
        timeout: policy.timeout(),
    }
}

/// What one reading of a set of files found.
#[derive(Debug, Default)]
struct Tally {
    files: usize,
    /// The files `from_json` refuses, relative to the set's folder.
    refused_by_a6: Vec<String>,
    /// The names looked up (each entry's each name).
    names: usize,
    /// Of those, the ones whose policy retries without a limit on attempts.
    timeout_bounded: usize,
}

/// Reads every file under `dir` with both readers and checks every name's policy.
fn check_all(dir: &Path) -> Tally {
    let mut tally = Tally::default();
    for path in configs(dir) {
        let shown = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{shown}: {e}"));
        let config = ServiceConfig::from_google_json(&text)
            .unwrap_or_else(|e| panic!("{shown} is refused: {e}"));
        tally.files += 1;
        if ServiceConfig::from_json(&text).is_err() {
            tally.refused_by_a6.push(shown.clone());
        }
        let json: Value = serde_json::from_str(&text).expect("JSON");
        // The last entry naming each (service, method) wins.
        let mut last: HashMap<(String, String), &Value> = HashMap::new();
        for entry in json["methodConfig"].as_array().expect("methodConfig") {
            for name in entry["name"].as_array().expect("name") {
                let part = |key: &str| name.get(key).and_then(Value::as_str).unwrap_or("");
                last.insert(
                    (part("service").to_owned(), part("method").to_owned()),
                    entry,
                );
            }
        }
        for ((service, method), entry) in &last {
            if service.is_empty() {
                continue;
            }
            // A service's entry is found for a method no entry names (`""` names none).
            let policy = config.policy(service, method);
            assert_eq!(
                found(&policy),
                expected(entry),
                "{shown}: {service}/{method}"
            );
            tally.names += 1;
            if policy.kind() == PolicyKind::Retry && policy.max_attempts() == u32::MAX {
                let timeout = policy.timeout().expect("a bound");
                assert!(!timeout.is_zero(), "{shown}: {service}/{method}");
                tally.timeout_bounded += 1;
            }
        }
    }
    tally
}

#[test]
fn every_vendored_config_is_read_as_the_generators_read_it() {
    let tally = check_all(&sample_dir());
    assert_eq!(tally.files, 20);
    assert_eq!(
        tally.refused_by_a6,
        [
            "google/cloud/bigquery/storage/v1/bigquerystorage_grpc_service_config.json",
            "google/cloud/ces/v1/ces_grpc_service_config.json",
            "google/cloud/connectors/v1/connectors_grpc_service_config.json",
            "google/cloud/dialogflow/v2beta1/dialogflow_grpc_service_config.json",
            "google/cloud/discoveryengine/v1/discoveryengine_grpc_service_config.json",
            "google/cloud/oracledatabase/v1/oracledatabase_v1_grpc_service_config.json",
            "google/cloud/speech/v2/speech_grpc_service_config.json",
            "google/cloud/tasks/v2/cloudtasks_grpc_service_config.json",
            "google/cloud/videointelligence/v1/videointelligence_grpc_service_config.json",
            "google/cloud/vision/v1p3beta1/vision_grpc_service_config.json",
            "google/datastore/v1/datastore_grpc_service_config.json",
            "google/devtools/cloudtrace/v2/cloudtrace_grpc_service_config.json",
            "google/example/library/v1/library_grpc_service_config.json",
            "google/spanner/v1/spanner_grpc_service_config.json",
        ]
    );
    assert!(tally.names > 200, "{tally:?}");
    assert!(tally.timeout_bounded > 50, "{tally:?}");
    println!(
        "{} vendored files, {} names: all read by from_google_json, {} refused by from_json; \
         {} names retry until their timeout",
        tally.files,
        tally.names,
        tally.refused_by_a6.len(),
        tally.timeout_bounded
    );
}

/// The whole published set, when `GOOGLEAPIS_DIR` names a googleapis checkout.
#[test]
fn every_published_config_is_read_when_googleapis_dir_is_set() {
    let Some(dir) = std::env::var_os("GOOGLEAPIS_DIR") else {
        println!("GOOGLEAPIS_DIR is not set: the whole googleapis set is not read (the sample is)");
        return;
    };
    let tally = check_all(Path::new(&dir));
    assert!(
        tally.files > 0,
        "no *_grpc_service_config.json under {dir:?}"
    );
    println!(
        "googleapis at {}: {} files, {} names: all read by from_google_json, {} files \
         refused by from_json; {} names retry until their timeout",
        Path::new(&dir).display(),
        tally.files,
        tally.names,
        tally.refused_by_a6.len(),
        tally.timeout_bounded
    );
}

fn sample(relative: &str) -> ServiceConfig {
    let path = sample_dir().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
    ServiceConfig::from_google_json(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

const TASKS: &str = "google/cloud/tasks/v2/cloudtasks_grpc_service_config.json";
const BIGTABLE_ADMIN: &str = "google/bigtable/admin/v2/bigtableadmin_grpc_service_config.json";
const CES: &str = "google/cloud/ces/v1/ces_grpc_service_config.json";
const DIALOGFLOW: &str = "google/cloud/dialogflow/v2beta1/dialogflow_grpc_service_config.json";
const DATASTORE: &str = "google/datastore/v1/datastore_grpc_service_config.json";
const PUBSUB: &str = "google/pubsub/v1/pubsub_grpc_service_config.json";

#[test]
fn the_policies_of_a_few_files() {
    let secs = |n| Some(Duration::from_secs(n));
    let tasks = sample(TASKS);
    let get = tasks.policy("google.cloud.tasks.v2.CloudTasks", "GetQueue");
    assert_eq!(
        (get.kind(), get.max_attempts(), get.timeout()),
        (PolicyKind::Retry, u32::MAX, secs(20))
    );
    let create = tasks.policy("google.cloud.tasks.v2.CloudTasks", "CreateTask");
    assert_eq!(
        (create.kind(), create.max_attempts(), create.timeout()),
        (PolicyKind::None, 1, secs(20))
    );
    // Not in the file: one attempt, no timeout.
    let other = tasks.policy("google.cloud.tasks.v2.CloudTasks", "Unknown");
    assert_eq!((other.kind(), other.timeout()), (PolicyKind::None, None));

    let admin = sample(BIGTABLE_ADMIN);
    let check = admin.policy(
        "google.bigtable.admin.v2.BigtableTableAdmin",
        "CheckConsistency",
    );
    assert_eq!(
        (check.kind(), check.max_attempts(), check.timeout()),
        (PolicyKind::Retry, 100, secs(3600))
    );
    let list = admin.policy("google.bigtable.admin.v2.BigtableTableAdmin", "ListTables");
    assert_eq!((list.max_attempts(), list.timeout()), (5, secs(60)));

    // An empty retryableStatusCodes: no retry, under the method's timeout.
    let ces = sample(CES);
    let run = ces.policy("google.cloud.ces.v1.SessionService", "RunSession");
    assert_eq!(
        (run.kind(), run.max_attempts(), run.timeout()),
        (PolicyKind::None, 1, secs(220))
    );
    // The service's entry for the service's other methods.
    let other = ces.policy("google.cloud.ces.v1.SessionService", "GetSession");
    assert_eq!(
        (other.kind(), other.max_attempts(), other.timeout()),
        (PolicyKind::Retry, u32::MAX, secs(60))
    );

    // ConversationProfiles is listed twice in the first entry.
    let dialogflow = sample(DIALOGFLOW);
    let profiles = dialogflow.policy(
        "google.cloud.dialogflow.v2beta1.ConversationProfiles",
        "GetConversationProfile",
    );
    assert_eq!(
        (profiles.kind(), profiles.max_attempts(), profiles.timeout()),
        (PolicyKind::Retry, u32::MAX, secs(60))
    );
    let detect = dialogflow.policy("google.cloud.dialogflow.v2beta1.Sessions", "DetectIntent");
    assert_eq!(
        (detect.kind(), detect.timeout()),
        (PolicyKind::Retry, secs(220))
    );
    let bidi = dialogflow.policy(
        "google.cloud.dialogflow.v2beta1.Participants",
        "BidiStreamingAnalyzeContent",
    );
    assert_eq!(
        (bidi.kind(), bidi.timeout()),
        (PolicyKind::None, secs(1800))
    );

    // A timeout of "0s" without a retry policy: kept as written (a call reads it as none).
    let datastore = sample(DATASTORE);
    let execute = datastore.policy("google.datastore.v1.Datastore", "Execute");
    assert_eq!(
        (execute.kind(), execute.timeout()),
        (PolicyKind::None, Some(Duration::ZERO))
    );
}

/// Runs `policy` over attempts that fail with `status` until `succeed_at` (never if 0) and
/// returns the attempts made, the result and what the loop recorded.
async fn run(
    policy: &GrpcPolicy,
    overrides: Overrides,
    status: fn() -> Status,
    succeed_at: u32,
) -> (u32, Result<u32, Status>, testing::Record) {
    let mut attempts = 0;
    let (out, record) = testing::record(
        overrides,
        policy.retry(|| {
            attempts += 1;
            let n = attempts;
            async move {
                if n == succeed_at {
                    Ok(n)
                } else {
                    Err(status())
                }
            }
        }),
    )
    .await;
    (attempts, out, record)
}

/// Cloud Tasks' GetQueue has no maxAttempts: its retries go on until its 20 s timeout, far past
/// A6's 5 attempts, each wait below `min(0.1 s * 1.3^(n-1), 10 s)`.
#[tokio::test(start_paused = true)]
async fn a_policy_without_max_attempts_retries_until_its_timeout() {
    let tasks = sample(TASKS);
    let get = tasks.policy("google.cloud.tasks.v2.CloudTasks", "GetQueue");
    let start = tokio::time::Instant::now();
    let (attempts, out, record) =
        run(&get, Overrides::new(), || Status::unavailable("down"), 0).await;
    let elapsed = start.elapsed();
    assert!(out.is_err());
    assert!(attempts > 5, "{attempts} attempts");
    assert!(elapsed <= Duration::from_secs(20), "{elapsed:?}");
    let delays = record.delays();
    assert_eq!(delays.len(), usize::try_from(attempts - 1).unwrap_or(0));
    for (n, delay) in delays.iter().enumerate() {
        let ceiling = (0.1 * 1.3_f64.powi(i32::try_from(n).unwrap_or(i32::MAX))).min(10.0);
        assert!(
            delay.as_secs_f64() <= ceiling + 1e-9,
            "retry {n}: {delay:?} > {ceiling}"
        );
    }
    // The sum of the ceilings passes 20 s after 15 retries: the timeout, not a count, ends it.
    assert!(delays.iter().sum::<Duration>() <= Duration::from_secs(20));

    // DEADLINE_EXCEEDED is listed too; INTERNAL is not.
    let (attempts, out, _) = run(
        &get,
        Overrides::new(),
        || Status::deadline_exceeded("slow"),
        3,
    )
    .await;
    assert_eq!((attempts, out.ok()), (3, Some(3)));
    let (attempts, out, _) = run(&get, Overrides::new(), || Status::internal("bug"), 0).await;
    assert_eq!(
        (attempts, out.map_err(|s| s.code())),
        (1, Err(tonic::Code::Internal))
    );
}

/// Bigtable admin's CheckConsistency asks for 100 attempts, which A6 caps at 5.
#[tokio::test(start_paused = true)]
async fn max_attempts_above_5_are_made() {
    let admin = sample(BIGTABLE_ADMIN);
    let check = admin.policy(
        "google.bigtable.admin.v2.BigtableTableAdmin",
        "CheckConsistency",
    );
    let instant = Overrides::new().instant();
    let (attempts, out, _) = run(&check, instant, || Status::unavailable("busy"), 0).await;
    assert_eq!(attempts, 100);
    assert!(out.is_err());
    let (attempts, out, _) = run(&check, instant, || Status::unavailable("busy"), 60).await;
    assert_eq!((attempts, out.ok()), (60, Some(60)));
}

/// CES's RunSession has an empty retryableStatusCodes: one attempt whatever the status.
#[tokio::test(start_paused = true)]
async fn an_empty_code_list_retries_nothing() {
    let ces = sample(CES);
    let run_session = ces.policy("google.cloud.ces.v1.SessionService", "RunSession");
    let (attempts, out, record) = run(
        &run_session,
        Overrides::new(),
        || Status::unavailable("down"),
        0,
    )
    .await;
    assert_eq!(attempts, 1);
    assert!(out.is_err());
    assert!(record.retries().is_empty());
}

/// Pub/Sub's Publish: maxAttempts 5, seven codes, read alike by both readers.
#[tokio::test(start_paused = true)]
async fn a_config_both_readers_accept_reads_alike() {
    let text = std::fs::read_to_string(sample_dir().join(PUBSUB)).expect("the sample");
    let a6 = ServiceConfig::from_json(&text).expect("A6 reads it");
    let google = sample(PUBSUB);
    let instant = Overrides::new().instant();
    for config in [&a6, &google] {
        let publish = config.policy("google.pubsub.v1.Publisher", "Publish");
        assert_eq!(
            (publish.kind(), publish.max_attempts(), publish.timeout()),
            (PolicyKind::Retry, 5, Some(Duration::from_secs(60)))
        );
        let (attempts, _, _) = run(&publish, instant, || Status::aborted("contention"), 0).await;
        assert_eq!(attempts, 5);
        let (attempts, _, _) = run(&publish, instant, || Status::not_found("gone"), 0).await;
        assert_eq!(attempts, 1);
    }
}
