//! Retrying gRPC calls made with tonic, whose error type `tonic::Status` works as it is:
//! `Classify` reads its code and `grpc-retry-pushback-ms`, and `From<TimedOut>` makes an
//! expired attempt `DEADLINE_EXCEEDED`.
//!
//! The example starts its own inventory service on 127.0.0.1 (messages written with prost
//! derives, no protoc), then:
//! - counts stock through one `UNAVAILABLE`;
//! - reserves stock (not idempotent) through a `RESOURCE_EXHAUSTED` that asks for a 200 ms
//!   pushback: the server refused the call, so repeating it is safe;
//! - reserves again and meets a negative pushback: the server asks not to retry.
//!
//! Run it with `cargo run -p retry-workspace --example grpc_client`: it is an example of the
//! root package, which builds tonic, unlike the examples `cargo run --example NAME` finds.

use http::uri::PathAndQuery;
use retry_runtime::{RetryEvent, retry};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

#[derive(Clone, PartialEq, prost::Message)]
struct Sku {
    #[prost(string, tag = "1")]
    sku: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Stock {
    #[prost(uint32, tag = "1")]
    units: u32,
}

fn log_retry(event: &RetryEvent<'_, Status>) {
    if let Some(status) = event.error() {
        println!(
            "  attempt {} failed: {:?} ({}), next in {:?}",
            event.attempt(),
            status.code(),
            event.class(),
            event.delay()
        );
    }
}

/// One unary call, as generated client code makes it.
async fn call(channel: &Channel, path: &'static str, sku: &str) -> Result<Stock, Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::from_error(e.into()))?;
    let request = Request::new(Sku { sku: sku.into() });
    let codec = ProstCodec::<Sku, Stock>::default();
    let response = grpc
        .unary(request, PathAndQuery::from_static(path), codec)
        .await?;
    Ok(response.into_inner())
}

#[retry(max_attempts = 4, initial_backoff = "50ms", attempt_timeout = "2s", on_retry = log_retry)]
async fn count(channel: &Channel, sku: &str) -> Result<Stock, Status> {
    call(channel, "/inventory.Stock/Count", sku).await
}

#[retry(
    max_attempts = 4,
    initial_backoff = "50ms",
    attempt_timeout = "2s",
    idempotent = false,
    on_retry = log_retry
)]
async fn reserve(channel: &Channel, sku: &str) -> Result<Stock, Status> {
    call(channel, "/inventory.Stock/Reserve", sku).await
}

#[tokio::main]
async fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .serve_with_incoming(Inventory, TcpListenerStream::new(listener)),
    );
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();

    println!("Count(espresso-beans):");
    let stock = count(&channel, "espresso-beans").await.unwrap();
    println!("  -> {} units", stock.units);

    println!("Reserve(espresso-beans):");
    let stock = reserve(&channel, "espresso-beans").await.unwrap();
    println!("  -> reserved, {} units left", stock.units);

    println!("Reserve(espresso-beans) again:");
    match reserve(&channel, "espresso-beans").await {
        Ok(stock) => println!("  -> reserved, {} units left", stock.units),
        Err(status) => println!(
            "  -> {:?}: {} (the server said not to retry)",
            status.code(),
            status.message()
        ),
    }
}

static COUNTS: AtomicU32 = AtomicU32::new(0);
static RESERVES: AtomicU32 = AtomicU32::new(0);
static UNITS: AtomicU32 = AtomicU32::new(12);

/// The service: routes each method to `tonic::server::Grpc`, as generated code would.
#[derive(Clone)]
struct Inventory;

impl Service<http::Request<Body>> for Inventory {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Stock, Sku>::default());
            Ok(match req.uri().path() {
                "/inventory.Stock/Count" => grpc.unary(Method(count_stock), req).await,
                "/inventory.Stock/Reserve" => grpc.unary(Method(reserve_stock), req).await,
                _ => Status::unimplemented("no such method").into_http(),
            })
        })
    }
}

fn count_stock() -> Result<Stock, Status> {
    match COUNTS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(Status::unavailable("replica restarting")),
        _ => Ok(Stock {
            units: UNITS.load(Ordering::SeqCst),
        }),
    }
}

fn reserve_stock() -> Result<Stock, Status> {
    let pushback = |ms: &str| {
        let mut status = Status::resource_exhausted("too many reservations");
        status
            .metadata_mut()
            .insert("grpc-retry-pushback-ms", ms.parse().unwrap());
        status
    };
    match RESERVES.fetch_add(1, Ordering::SeqCst) {
        0 => Err(pushback("200")),
        2 => Err(pushback("-1")),
        _ => Ok(Stock {
            units: UNITS.fetch_sub(1, Ordering::SeqCst) - 1,
        }),
    }
}

/// A unary method answered by a plain function.
struct Method(fn() -> Result<Stock, Status>);

impl Service<Request<Sku>> for Method {
    type Response = Response<Stock>;
    type Error = Status;
    type Future = BoxFuture<Response<Stock>, Status>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Sku>) -> Self::Future {
        let answer = (self.0)().map(Response::new);
        Box::pin(async move { answer })
    }
}
