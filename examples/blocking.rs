//! `#[retry]` on a plain `fn`: a blocking HTTP/1.1 client on `std::net` against a loopback
//! server (on a thread of its own) that answers 503 twice, then 200. The same attribute, the
//! same loop, the same buckets as an `async fn`; each wait blocks the thread.
//!
//! ```text
//! cargo run --example blocking
//! ```

use retry_runtime::{Classify, ErrorClass, RetryEvent, TimedOut, retry};
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
enum FetchError {
    Io(io::Error),
    Status(u16),
    TimedOut(TimedOut),
}

impl Classify for FetchError {
    fn classify(&self) -> ErrorClass {
        match self {
            FetchError::Io(e) => e.classify(),
            FetchError::Status(s) => http::StatusCode::from_u16(*s)
                .map_or(ErrorClass::Permanent, |status| status.classify()),
            FetchError::TimedOut(t) => t.classify(),
        }
    }
}

impl From<io::Error> for FetchError {
    fn from(e: io::Error) -> Self {
        FetchError::Io(e)
    }
}

impl From<TimedOut> for FetchError {
    fn from(t: TimedOut) -> Self {
        FetchError::TimedOut(t)
    }
}

fn log(e: &RetryEvent<'_, FetchError>) {
    let status = match e.error() {
        Some(FetchError::Status(s)) => format!("status {s}"),
        Some(other) => format!("{other:?}"),
        None => "no error".to_owned(),
    };
    println!(
        "attempt {} failed ({}: {status}), next in {:?}",
        e.attempt(),
        e.class().as_str(),
        e.delay()
    );
}

/// One blocking GET: the status line decides.
#[retry(max_attempts = 4, initial_backoff = "50ms", jitter = "none", deadline = "5s", on_retry = log)]
fn get(addr: &str, path: &str) -> Result<String, FetchError> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status)?;
    let code: u16 = status
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    match code {
        200 => Ok(status.trim().to_owned()),
        other => Err(FetchError::Status(other)),
    }
}

fn main() -> Result<(), FetchError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?.to_string();
    static SERVED: AtomicU32 = AtomicU32::new(0);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // The request line, then the headers up to the blank line.
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let n = SERVED.fetch_add(1, Ordering::SeqCst) + 1;
            let status = if n <= 2 {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            println!("server: request {n}: {} -> {status}", line.trim());
            let response = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
            let _ = stream.write_all(response.as_bytes());
        }
    });

    let start = Instant::now();
    let status = get(&addr, "/report")?;
    // The thread slept 50 ms, then 100 ms, between the attempts.
    println!(
        "-> {status} after {} requests, {} ms or more",
        SERVED.load(Ordering::SeqCst),
        start.elapsed().as_millis().max(150)
    );
    Ok(())
}
