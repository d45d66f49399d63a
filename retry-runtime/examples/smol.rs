//! `#[retry]` on smol, without tokio: a line server on 127.0.0.1 that is busy for the first two
//! requests, a client retried with backoff, an attempt timeout and a deadline on async-io's
//! timers, and a `Policy` hedging a request the server leaves hanging.
//!
//! ```text
//! cargo run -p retry-runtime --no-default-features --features smol --example smol
//! ```
//!
//! With `default-features = false, features = ["smol"]`, tokio is not in the build at all.

use retry_runtime::{Policy, attempt, retry};
use smol::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use smol::net::{TcpListener, TcpStream};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static REQUESTS: AtomicU32 = AtomicU32::new(0);

/// Answers each connection with one line: `busy` to the first two, then `hello from smol`;
/// the fourth request gets no answer at all (the hedged call below meets it).
async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let n = REQUESTS.fetch_add(1, Ordering::SeqCst) + 1;
        smol::spawn(async move {
            let answer = match n {
                1 | 2 => "busy\n",
                4 => {
                    // Hangs: the client's hedge answers instead.
                    smol::Timer::after(Duration::from_secs(30)).await;
                    return;
                }
                _ => "hello from smol\n",
            };
            println!("server: request {n} -> {}", answer.trim_end());
            let _ = stream.write_all(answer.as_bytes()).await;
        })
        .detach();
    }
}

/// One request: a line back, a busy server as a transient error.
async fn request(addr: SocketAddr) -> io::Result<String> {
    let stream = TcpStream::connect(addr).await?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).await?;
    match line.trim_end() {
        "busy" => Err(io::ErrorKind::ConnectionReset.into()),
        answer => Ok(answer.to_owned()),
    }
}

#[retry(
    max_attempts = 4,
    initial_backoff = "50ms",
    jitter = "none",
    attempt_timeout = "1s",
    deadline = "5s"
)]
async fn fetch(addr: SocketAddr) -> io::Result<String> {
    let a = attempt().expect("inside the body");
    let left = a.time_left().unwrap_or_default();
    println!(
        "client: attempt {}, {} ms left",
        a.number(),
        left.as_millis().div_ceil(100) * 100
    );
    request(addr).await
}

fn main() -> io::Result<()> {
    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        smol::spawn(serve(listener)).detach();

        let start = Instant::now();
        let answer = fetch(addr).await?;
        println!(
            "client: {answer:?} after {} attempts, {} ms of backoff or more",
            REQUESTS.load(Ordering::SeqCst),
            start.elapsed().as_millis().min(150) / 50 * 50
        );

        // The fourth request hangs; a hedge started 100 ms later gets the answer.
        let hedged = Policy::new()
            .max_attempts(2)
            .hedge_after(Duration::from_millis(100));
        let answer = hedged.retry(|| request(addr)).await?;
        println!("client: hedged call answered {answer:?}");
        Ok(())
    })
}
