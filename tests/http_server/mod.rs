//! An HTTP/1.1 server on 127.0.0.1 with fault injection, started and stopped by each test.
//!
//! Every request to `/items/N` (GET) or `/orders/N` (POST) takes the next fault of the script,
//! else one drawn from the seeded random plan, else none. The server counts, per path, how
//! many times it *executed* the request (acted on it): a `429` is refused before executing;
//! a `503` (with or without `Retry-After`), a reset connection and a hang happen after
//! executing, the worst case for a client that must not repeat a non-idempotent request.

#![allow(dead_code)] // each test binary uses part of it

use crate::faults::{Ledger, Running};
use crate::resettable::Resettable;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;

/// What the server does with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Execute and answer 200.
    None,
    /// Refuse with 429 Too Many Requests, with the given hint headers.
    Throttle(Hint),
    /// Execute, then answer 503 Service Unavailable.
    Unavailable,
    /// Execute, then answer 503 Service Unavailable with `Retry-After: N` (delta-seconds).
    UnavailableFor(u64),
    /// Execute, then reset the connection (RST) without answering.
    Reset,
    /// Execute, then never answer.
    Hang,
}

/// The hint headers of a 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// No hint.
    None,
    /// `Retry-After: N` (delta-seconds).
    Seconds(u64),
    /// `Retry-After: <HTTP-date>`, N seconds from now truncated to the second.
    DateIn(u64),
    /// `x-amz-retry-after: N` and `Retry-After: 9`.
    AmzMillis(u64),
    /// `Retry-After: <this text>`.
    Raw(&'static str),
    /// `RateLimit: <this text>` alone (draft-ietf-httpapi-ratelimit-headers).
    RateLimit(&'static str),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Arrival {
    pub method: http::Method,
    pub path: String,
    pub at: Instant,
    pub fault: Fault,
    /// The HTTP-date sent in `Retry-After`, if any.
    pub date_sent: Option<SystemTime>,
    /// The request's headers, as they arrived.
    pub headers: http::HeaderMap,
}

/// What the server keeps across connections; the tests read it through the `Server`.
pub type State = Ledger<Fault, Arrival, String>;

pub type Server = Running<State>;

impl Server {
    /// A server on a free port of 127.0.0.1.
    pub async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Server::on(listener)
    }

    /// A server on `listener`.
    pub fn on(listener: TcpListener) -> Server {
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        Server::spawn(addr, state.clone(), accept(listener, state))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

async fn accept(listener: TcpListener, state: Arc<State>) {
    // Dropping the set (when the server is dropped and this task aborted) ends every
    // connection.
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        while connections.try_join_next().is_some() {}
        connections.spawn(serve(stream, state.clone()));
    }
}

async fn serve(stream: TcpStream, state: Arc<State>) {
    let reset = Arc::new(AtomicBool::new(false));
    let kill = Arc::new(Notify::new());
    let io = TokioIo::new(Resettable {
        stream,
        reset: reset.clone(),
    });
    let k = kill.clone();
    let service = service_fn(move |req| handle(state.clone(), req, reset.clone(), k.clone()));
    let connection = http1::Builder::new().serve_connection(io, service);
    tokio::select! {
        _ = connection => {}
        () = kill.notified() => {} // drops the connection: a reset
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    reset: Arc<AtomicBool>,
    kill: Arc<Notify>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let fault = state.next_fault().unwrap_or(Fault::None);
    let path = req.uri().path().to_string();
    let mut arrival = Arrival {
        method: req.method().clone(),
        path: path.clone(),
        at: Instant::now(),
        fault,
        date_sent: None,
        headers: req.headers().clone(),
    };
    let response = match fault {
        Fault::Throttle(hint) => {
            let mut r = Response::builder().status(StatusCode::TOO_MANY_REQUESTS);
            match hint {
                Hint::None => {}
                Hint::Seconds(s) => r = r.header("retry-after", s.to_string()),
                Hint::DateIn(s) => {
                    let whole = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap()
                        .as_secs();
                    let date = UNIX_EPOCH + Duration::from_secs(whole + s);
                    arrival.date_sent = Some(date);
                    r = r.header("retry-after", http_date(date));
                }
                Hint::AmzMillis(ms) => {
                    r = r
                        .header("x-amz-retry-after", ms.to_string())
                        .header("retry-after", "9");
                }
                Hint::Raw(text) => r = r.header("retry-after", text),
                Hint::RateLimit(text) => r = r.header("ratelimit", text),
            }
            Some(r.body(Full::new(Bytes::from_static(b"slow down"))).unwrap())
        }
        Fault::Unavailable => {
            state.execute(path.clone());
            Some(
                Response::builder()
                    .status(StatusCode::SERVICE_UNAVAILABLE)
                    .body(Full::new(Bytes::from_static(b"try again")))
                    .unwrap(),
            )
        }
        Fault::UnavailableFor(seconds) => {
            state.execute(path.clone());
            Some(
                Response::builder()
                    .status(StatusCode::SERVICE_UNAVAILABLE)
                    .header("retry-after", seconds.to_string())
                    .body(Full::new(Bytes::from_static(b"try again later")))
                    .unwrap(),
            )
        }
        Fault::Reset => {
            state.execute(path.clone());
            reset.store(true, Ordering::SeqCst);
            kill.notify_one();
            None
        }
        Fault::Hang => {
            state.execute(path.clone());
            None
        }
        Fault::None => {
            state.execute(path.clone());
            let body = format!("{} {path}", req.method());
            Some(Response::new(Full::new(Bytes::from(body))))
        }
    };
    state.arrived(arrival);
    match response {
        Some(r) => Ok(r),
        None => std::future::pending().await,
    }
}

/// IMF-fixdate, as a server writes `Retry-After`.
pub fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let days = i64::try_from(secs / 86_400).unwrap();
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian, counted from March).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[usize::try_from(days.rem_euclid(7)).unwrap()],
        MONTHS[usize::try_from(month - 1).unwrap()],
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
    )
}

/// A reqwest client that talks to loopback directly, whatever proxy the environment names.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[test]
fn http_dates_are_written_as_servers_write_them() {
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
    assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(951_782_400)),
        "Tue, 29 Feb 2000 00:00:00 GMT"
    );
}
