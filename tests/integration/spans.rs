//! A call's spans as an operator's pipeline receives them: `tracing` spans exported through
//! tracing-opentelemetry to OpenTelemetry's SDK (its in-memory exporter), for `#[retry]` calls
//! against a real HTTP server on 127.0.0.1 (one that answers 503, 503, then 200; one that fails
//! every attempt, with a reset connection among the 503s), and for a gRPC call through a service
//! config's tower layer against a real tonic server that answers UNAVAILABLE twice. One call
//! span, named after the function, one attempt span per attempt, its child, with
//! OpenTelemetry's names, attributes and status: a failed attempt's span and a failed call's are
//! errors, whose `error.type` is the status the failure carried (`503`, `UNAVAILABLE`) or else
//! its class; the spans the body opens nest under its attempt's. Real sockets need real time:
//! the backoff is short and its bounds are lower bounds only.

use crate::grpc_server::{self, GetItem};
use crate::http_server::{Fault, Server, client};
use crate::util::classes;
use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use retry_runtime::grpc::ServiceConfig;
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::retry;
use retry_runtime::testing;
use retry_runtime::tower::RetryLayer;
use std::future::Future;
use std::time::Duration;
use tower::ServiceBuilder;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Runs `fut` with a subscriber that exports every span to OpenTelemetry's in-memory exporter
/// (on this thread: the tests run on a current-thread runtime), and returns its output and the
/// spans exported.
async fn exported<T>(fut: impl Future<Output = T>) -> (T, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("retry-tests")));
    let guard = tracing::subscriber::set_default(subscriber);
    let out = fut.await;
    drop(guard);
    provider.force_flush().expect("flushed");
    let spans = exporter.get_finished_spans().expect("the exporter's spans");
    (out, spans)
}

fn attr<'s>(span: &'s SpanData, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn int(span: &SpanData, key: &str) -> Option<i64> {
    match attr(span, key)? {
        Value::I64(n) => Some(*n),
        other => panic!("{key} is {other:?} on {}", span.name),
    }
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

/// The call span (named `name`) and its attempt spans, in order; the spans of the transports
/// (h2's, tonic's) are left out.
fn tree<'s>(spans: &'s [SpanData], name: &str) -> (&'s SpanData, Vec<&'s SpanData>) {
    let calls: Vec<_> = spans
        .iter()
        .filter(|s| attr(s, "retry.function").is_some())
        .collect();
    assert_eq!(calls.len(), 1, "one call span: {calls:#?}");
    assert_eq!(calls[0].name, name);
    let call = calls[0];
    let mut attempts: Vec<_> = spans.iter().filter(|s| s.name == "retry.attempt").collect();
    attempts.sort_by_key(|s| int(s, "retry.attempt"));
    for attempt in &attempts {
        assert_eq!(
            attempt.parent_span_id,
            call.span_context.span_id(),
            "an attempt span is the call span's child"
        );
    }
    (call, attempts)
}

#[retry(max_attempts = 3, initial_backoff = "10ms", jitter = "none")]
async fn get_item(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    let text = response
        .text()
        .instrument(tracing::info_span!("read body"))
        .await?;
    Ok(text)
}

#[tokio::test]
async fn a_call_retried_over_http_is_one_span_with_an_attempt_span_per_attempt() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Unavailable]);
    let url = server.url("/items/1");
    let (out, spans) = exported(get_item(&client(), &url)).await;
    assert_eq!(out.unwrap(), "GET /items/1");

    let (call, attempts) = tree(&spans, "get_item");
    assert_eq!(text(call, "retry.function").as_deref(), Some("get_item"));
    assert_eq!(int(call, "retry.attempts"), Some(3));
    assert_eq!(text(call, "error.type"), None, "the call succeeded");
    assert_eq!(
        text(call, "retry.invocation_id").map(|id| id.len()),
        Some(36),
        "a UUID"
    );
    // Each retry decided is an event of the call span.
    assert_eq!(call.events.len(), 2, "{:#?}", call.events);
    assert!(
        call.events
            .iter()
            .all(|e| e.name == "attempt failed, retrying")
    );

    assert_eq!(attempts.len(), 3);
    let numbers: Vec<_> = attempts.iter().map(|a| int(a, "retry.attempt")).collect();
    assert_eq!(numbers, [Some(1), Some(2), Some(3)]);
    let resends: Vec<_> = attempts
        .iter()
        .map(|a| int(a, "http.request.resend_count"))
        .collect();
    assert_eq!(resends, [None, Some(1), Some(2)]);
    let statuses: Vec<_> = attempts
        .iter()
        .map(|a| int(a, "http.response.status_code"))
        .collect();
    assert_eq!(statuses, [Some(503), Some(503), Some(200)]);
    // A failed attempt is an error whose type is the status its response carried.
    let errors: Vec<_> = attempts.iter().map(|a| text(a, "error.type")).collect();
    assert_eq!(errors, [Some("503".into()), Some("503".into()), None]);
    let status: Vec<_> = attempts.iter().map(|a| a.status.clone()).collect();
    assert_eq!(
        status,
        [Status::error(""), Status::error(""), Status::Unset]
    );
    // The call recovered: its span is not an error.
    assert_eq!(call.status, Status::Unset);
    // tracing-opentelemetry takes `otel.*` fields as the span's name and status, not as
    // attributes.
    assert!(
        spans
            .iter()
            .flat_map(|s| s.attributes.iter())
            .all(|kv| !kv.key.as_str().starts_with("otel."))
    );

    // The waits are the call span's time between its children: 10 ms, then 20 ms at least.
    for (pair, backoff) in attempts.windows(2).zip([10, 20]) {
        let gap = pair[1]
            .start_time
            .duration_since(pair[0].end_time)
            .expect("the attempts do not overlap");
        assert!(gap >= Duration::from_millis(backoff), "{gap:?}");
    }
    // The body's own span nests under the attempt it ran in (the last: the only one that
    // read a body).
    let read: Vec<_> = spans.iter().filter(|s| s.name == "read body").collect();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].parent_span_id, attempts[2].span_context.span_id());
    // The call span lasts as long as its attempts.
    assert!(call.start_time <= attempts[0].start_time);
    assert!(call.end_time >= attempts[2].end_time);
    // The call span is the test's root.
    assert_eq!(call.parent_span_id, SpanId::INVALID);
}

#[tokio::test]
async fn a_call_that_fails_is_an_error_span_with_its_last_attempts_error_type() {
    let server = Server::start().await;
    server.script(&[Fault::Unavailable, Fault::Reset, Fault::Unavailable]);
    let url = server.url("/items/2");
    let (out, spans) = exported(get_item(&client(), &url)).await;
    assert!(matches!(out, Err(Error::Status(_))), "{out:?}");

    let (call, attempts) = tree(&spans, "get_item");
    assert_eq!(int(call, "retry.attempts"), Some(3));
    assert_eq!(call.status, Status::error(""));
    assert_eq!(text(call, "error.type").as_deref(), Some("503"));
    let seen: Vec<_> = attempts
        .iter()
        .map(|a| {
            (
                int(a, "http.response.status_code"),
                text(a, "error.type"),
                a.status.clone(),
            )
        })
        .collect();
    // The reset connection carried no status: its error type is its class.
    assert_eq!(
        seen,
        [
            (Some(503), Some("503".into()), Status::error("")),
            (None, Some("transient".into()), Status::error("")),
            (Some(503), Some("503".into()), Status::error("")),
        ]
    );
}

const GET_RETRIES_UNAVAILABLE: &str = r#"{"methodConfig": [
  {"name": [{"service": "shop.Orders", "method": "Get"}],
   "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "1s",
                   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[tokio::test]
async fn a_grpc_call_through_the_service_config_layer_records_its_statuses() {
    let server = grpc_server::Server::start().await;
    server.script(&[
        grpc_server::Fault::Unavailable,
        grpc_server::Fault::Unavailable,
    ]);
    let config = ServiceConfig::from_json(GET_RETRIES_UNAVAILABLE).unwrap();
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::grpc(config))
        .service(server.channel());
    let call = grpc_server::unary_over::<_, _, grpc_server::Item>(
        channel,
        "/shop.Orders/Get",
        GetItem { id: 7 },
    );
    let ((out, record), spans) = exported(testing::record(crate::util::instant(), call)).await;
    assert_eq!(out.unwrap().name, "item 7");
    assert_eq!(classes(&record).len(), 2);

    let (call, attempts) = tree(&spans, "grpc");
    assert_eq!(int(call, "retry.attempts"), Some(3));
    let codes: Vec<_> = attempts
        .iter()
        .map(|a| int(a, "rpc.grpc.status_code"))
        .collect();
    assert_eq!(codes, [Some(14), Some(14), Some(0)]);
    assert!(
        attempts
            .iter()
            .all(|a| text(a, "rpc.system").as_deref() == Some("grpc"))
    );
    // A failed attempt's error type is its status's name, as OpenTelemetry's gRPC conventions
    // have it.
    let errors: Vec<_> = attempts.iter().map(|a| text(a, "error.type")).collect();
    assert_eq!(
        errors,
        [Some("UNAVAILABLE".into()), Some("UNAVAILABLE".into()), None]
    );
    let status: Vec<_> = attempts.iter().map(|a| a.status.clone()).collect();
    assert_eq!(
        status,
        [Status::error(""), Status::error(""), Status::Unset]
    );
    assert_eq!(call.status, Status::Unset);
}
