//! A tonic gRPC server on 127.0.0.1 with fault injection, started and stopped by each test.
//!
//! No protoc: the messages are prost derives written by hand and the service is a
//! `tower::Service` that hands each method to `tonic::server::Grpc`, as generated code would.
//!
//! `shop.Orders/Get` reads an item (idempotent); `shop.Orders/Place` places an order (not
//! idempotent). Each call takes the next fault of the script, else one drawn from the seeded
//! random plan, else none. `RESOURCE_EXHAUSTED` refuses before executing; `UNAVAILABLE` and a
//! hang come after executing.

#![allow(dead_code)] // each test binary uses part of it

use crate::faults::{Ledger, Running};
use http::uri::PathAndQuery;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::body::Body;
use tonic::client::GrpcService;
use tonic::codegen::{BoxFuture, Service};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetItem {
    #[prost(uint32, tag = "1")]
    pub id: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Item {
    #[prost(uint32, tag = "1")]
    pub id: u32,
    #[prost(string, tag = "2")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PlaceOrder {
    #[prost(uint32, tag = "1")]
    pub id: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Receipt {
    #[prost(uint32, tag = "1")]
    pub id: u32,
}

/// What the server does with one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Execute, then fail with `UNAVAILABLE`.
    Unavailable,
    /// Refuse with `RESOURCE_EXHAUSTED`, with this `grpc-retry-pushback-ms` if any.
    Exhausted(Option<&'static str>),
    /// Execute, then never answer.
    Hang,
}

#[derive(Clone, Debug)]
pub struct Arrival {
    pub method: &'static str,
    pub id: u32,
    pub at: Instant,
    pub fault: Fault,
    /// The request's metadata, as headers (`grpc-timeout` among them).
    pub headers: http::HeaderMap,
}

/// What the server keeps across calls; the tests read it through the `Server`.
pub type State = Ledger<Fault, Arrival, (&'static str, u32)>;

/// Logs the call and plays its fault: `Ok(())` to answer normally.
async fn play(
    state: &State,
    method: &'static str,
    id: u32,
    headers: http::HeaderMap,
) -> Result<(), Status> {
    let fault = state.next_fault().unwrap_or(Fault::None);
    state.arrived(Arrival {
        method,
        id,
        at: Instant::now(),
        fault,
        headers,
    });
    if let Fault::Exhausted(pushback) = fault {
        let mut status = Status::resource_exhausted("slow down");
        if let Some(ms) = pushback {
            status
                .metadata_mut()
                .insert("grpc-retry-pushback-ms", ms.parse().unwrap());
        }
        return Err(status);
    }
    state.execute((method, id));
    match fault {
        Fault::Unavailable => Err(Status::unavailable("try again")),
        Fault::Hang => std::future::pending().await,
        _ => Ok(()),
    }
}

/// The service: routes each method to `tonic::server::Grpc`.
#[derive(Clone)]
struct Orders(Arc<State>);

impl Service<http::Request<Body>> for Orders {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            Ok(match req.uri().path() {
                "/shop.Orders/Get" => {
                    let mut grpc = tonic::server::Grpc::new(ProstCodec::<Item, GetItem>::default());
                    let get = Unary {
                        state,
                        method: "Get",
                        id: |r: &GetItem| r.id,
                        answer: |id| Item {
                            id,
                            name: format!("item {id}"),
                        },
                    };
                    grpc.unary(get, req).await
                }
                "/shop.Orders/Place" => {
                    let mut grpc =
                        tonic::server::Grpc::new(ProstCodec::<Receipt, PlaceOrder>::default());
                    let place = Unary {
                        state,
                        method: "Place",
                        id: |r: &PlaceOrder| r.id,
                        answer: |id| Receipt { id },
                    };
                    grpc.unary(place, req).await
                }
                _ => Status::unimplemented("no such method").into_http(),
            })
        })
    }
}

/// One method: the call of `id` (read from the request) plays its fault, then gets `answer`.
struct Unary<Req, Resp> {
    state: Arc<State>,
    method: &'static str,
    id: fn(&Req) -> u32,
    answer: fn(u32) -> Resp,
}

impl<Req: Send + 'static, Resp: Send + 'static> Service<Request<Req>> for Unary<Req, Resp> {
    type Response = Response<Resp>;
    type Error = Status;
    type Future = BoxFuture<Response<Resp>, Status>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Req>) -> Self::Future {
        let (state, method, answer) = (self.state.clone(), self.method, self.answer);
        let id = (self.id)(req.get_ref());
        let headers = req.metadata().clone().into_headers();
        Box::pin(async move {
            play(&state, method, id, headers).await?;
            Ok(Response::new(answer(id)))
        })
    }
}

pub type Server = Running<State>;

impl Server {
    /// A server on a free port of 127.0.0.1.
    pub async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let service = Orders(state.clone());
        Server::spawn(addr, state, async move {
            let _ = tonic::transport::Server::builder()
                .serve_with_incoming(service, TcpListenerStream::new(listener))
                .await;
        })
    }

    /// How many times the call of `method` with `id` was executed.
    pub fn executed(&self, method: &'static str, id: u32) -> u32 {
        self.state.executed(&(method, id))
    }

    pub fn channel(&self) -> Channel {
        channel_to(self.addr)
    }
}

/// A channel that connects on first use.
pub fn channel_to(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy()
}

/// One unary call, as generated client code makes it; a channel that is not ready (it could
/// not connect) gives the status tonic derives from the transport error.
pub async fn unary<Req, Resp>(
    channel: &Channel,
    path: &'static str,
    req: Req,
) -> Result<Resp, Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    unary_request(channel, path, Request::new(req)).await
}

/// [`unary`] with a request the caller has built (its metadata and timeout set).
pub async fn unary_request<Req, Resp>(
    channel: &Channel,
    path: &'static str,
    req: Request<Req>,
) -> Result<Resp, Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    call(channel.clone(), path, req).await
}

/// [`unary`] over any service a generated client can be built on (a tonic `Channel` wrapped
/// in layers).
pub async fn unary_over<T, Req, Resp>(
    service: T,
    path: &'static str,
    req: Req,
) -> Result<Resp, Status>
where
    T: GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError> + Send,
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    call(service, path, Request::new(req)).await
}

async fn call<T, Req, Resp>(
    service: T,
    path: &'static str,
    req: Request<Req>,
) -> Result<Resp, Status>
where
    T: GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError> + Send,
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(service);
    grpc.ready()
        .await
        .map_err(|e| Status::from_error(e.into()))?;
    let codec = ProstCodec::<Req, Resp>::default();
    grpc.unary(req, PathAndQuery::from_static(path), codec)
        .await
        .map(Response::into_inner)
}
