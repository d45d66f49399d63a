//! What an operator sees of a retried call: its spans, exported through tracing-opentelemetry
//! to OpenTelemetry's SDK and printed as a tree (each span's name as OpenTelemetry has it, its
//! start and end from the call's start, its attributes, its status when it is an error, the
//! call's events), then the histograms Prometheus scrapes, rendered with buckets.
//!
//! A flaky HTTP server on 127.0.0.1 answers 503 twice, then 200; a `#[retry]` client gets
//! through on its third attempt.
//!
//! ```text
//! cargo run -p retry-runtime --features tracing,metrics,reqwest --example observability
//! ```

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use opentelemetry::Value;
use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::retry;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;

#[retry(max_attempts = 4, initial_backoff = "20ms", partition = "catalog")]
async fn get_item(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

/// An HTTP/1.1 server that answers `503 Service Unavailable` to its first `failures` requests
/// and `200 OK` after, one request per connection.
async fn flaky_server(failures: u32) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let served = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let served = served.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = if served.fetch_add(1, Ordering::Relaxed) < failures {
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                } else {
                    "HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\nitem 42"
                };
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The pipeline: tracing's spans to OpenTelemetry (an in-memory exporter here, OTLP in
    // production), the metrics to Prometheus's exporter.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    // The retry loop's spans (INFO) and its events (DEBUG), the rest at INFO.
    let filter = Targets::new()
        .with_target("retry", Level::DEBUG)
        .with_default(Level::INFO);
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("observability")))
        .with(filter);
    tracing::subscriber::set_global_default(subscriber)?;
    // The `retry.call.*` histograms with buckets (`_bucket` lines): attempts, and seconds.
    let seconds = [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ];
    let builder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("retry.call.attempts".into()),
            &[1.0, 2.0, 3.0, 4.0, 5.0],
        )?
        .set_buckets_for_metric(Matcher::Prefix("retry.call.".into()), &seconds)?;
    let prometheus = builder.install_recorder()?;

    let addr = flaky_server(2).await;
    let url = format!("http://{addr}/items/42");
    let item = get_item(&reqwest::Client::new(), &url)
        .await
        .expect("the third attempt gets through");
    println!("got {item:?}\n");

    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;
    println!("The call's spans, as OpenTelemetry received them:\n");
    print_tree(&spans);

    println!("\nThe histograms, as Prometheus scrapes them:\n");
    for line in prometheus.render().lines() {
        if line.starts_with("retry_call_") && line.contains(r#"outcome="ok""#) {
            println!("{line}");
        }
    }
    Ok(())
}

/// Prints each root span and its descendants, with times from the root's start.
fn print_tree(spans: &[SpanData]) {
    for root in spans.iter().filter(|s| s.parent_span_id == SpanId::INVALID) {
        print_span(spans, root, root.start_time, "", "");
    }
}

fn print_span(spans: &[SpanData], span: &SpanData, origin: SystemTime, lead: &str, rest: &str) {
    let ms = |t: SystemTime| t.duration_since(origin).unwrap_or_default().as_secs_f64() * 1e3;
    // The attributes of OpenTelemetry's conventions and the crate's own (not the source
    // locations and timings tracing-opentelemetry adds).
    let attributes: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| {
            let key = kv.key.as_str();
            ["retry.", "http.", "rpc.", "error."]
                .iter()
                .any(|p| key.starts_with(p))
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    let status = match &span.status {
        Status::Error { .. } => " status=Error",
        Status::Ok => " status=Ok",
        Status::Unset => "",
    };
    println!(
        "{lead}{} [{:.1} ms .. {:.1} ms] {}{status}",
        span.name,
        ms(span.start_time),
        ms(span.end_time),
        attributes.join(" ")
    );
    for event in span.events.iter() {
        let fields: Vec<String> = event
            .attributes
            .iter()
            .filter(|kv| ["attempt", "class", "delay_ms"].contains(&kv.key.as_str()))
            .map(|kv| match kv.value {
                Value::F64(ms) => format!("{}={ms:.1}", kv.key),
                ref value => format!("{}={value}", kv.key),
            })
            .collect();
        println!(
            "{rest}  * {:.1} ms: {} {}",
            ms(event.timestamp),
            event.name,
            fields.join(" ")
        );
    }
    let mut children: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == span.span_context.span_id())
        .collect();
    children.sort_by_key(|s| s.start_time);
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, next) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        print_span(
            spans,
            child,
            origin,
            &format!("{rest}{branch}"),
            &format!("{rest}{next}"),
        );
    }
}
