//! The loopback HTTP server the examples talk to: each example writes what its server answers
//! as a handler, and `serve` runs it on 127.0.0.1.

#![allow(dead_code)] // each example uses part of it

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// What a handler answers.
pub type Reply = Response<Full<Bytes>>;

/// Serves `handle` over HTTP/1.1 on a free port of 127.0.0.1, in the background, and returns
/// the address.
pub async fn serve<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service =
                service_fn(move |req| async move { Ok::<_, Infallible>(handle(req).await) });
            tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
        }
    });
    addr
}

/// An answer with `status` and a fixed body.
pub fn reply(status: StatusCode, body: &'static str) -> Reply {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

/// A reqwest client that talks to 127.0.0.1 directly, whatever proxy the environment names.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}
