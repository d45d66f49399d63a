//! A Toxiproxy-compatible fault proxy on 127.0.0.1, started and stopped by each test, between
//! a client and a test server: clients connect to `Proxy::addr`, the proxy connects to the
//! server, and its toxics act on the bytes between them, as Toxiproxy's do.
//!
//! The proxy is noxious, the Rust port of Toxiproxy, running in-process: its runner accepts,
//! links each client to the upstream and runs the toxics. noxious has six of Toxiproxy's seven
//! toxics (`latency`, `timeout`, `slow_close`, `slicer`, `limit_data`, `bandwidth`); it has no
//! `reset_peer`. That one runs in a stage of this module in front of noxious, with Toxiproxy's
//! semantics (its `toxics/reset_peer.go` and `link.go`): the first chunk to cross in the
//! toxic's direction is dropped, and after `timeout` ms both sockets are closed with
//! `SO_LINGER` 0, so that the peers get a TCP RST.
//!
//! ```text
//! client --> reset_peer stage --> noxious (the other toxics) --> server
//! ```
//!
//! Setting the toxics starts a new noxious runner with them and stops the old one, closing the
//! connections through it (as disabling and enabling a Toxiproxy proxy does), rather than
//! updating a running one: noxious 1.0.4 swaps the directions of an open connection's toxics
//! on each update (`recreate_links` takes the downstream link's ends for the upstream's), its
//! "remove all" empties only the upstream list, and each connection leaves a few tasks behind
//! until its runner stops.

#![allow(dead_code)] // each test binary uses part of it

pub mod calls;

use bmrng::RequestSender;
use noxious::proxy::{ProxyConfig, ProxyRunner, Runner, Toxics};
use noxious::signal::{Close, Stop, Stopper};
use noxious::socket::TcpListener as NoxiousListener;
use noxious::toxic::{Toxic as NoxiousToxic, ToxicEvent, ToxicEventResult, ToxicKind};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

pub use noxious::toxic::StreamDirection::{self, Downstream, Upstream};

/// One of Toxiproxy's toxics, with its attributes as Toxiproxy names them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Toxic {
    /// `latency`: each chunk waits `latency` ± `jitter` ms.
    Latency { latency: u64, jitter: u64 },
    /// `timeout`: nothing passes; the connection is closed after `timeout` ms (never if 0).
    Timeout { timeout: u64 },
    /// `reset_peer`: the first chunk is dropped and the connection reset after `timeout` ms.
    ResetPeer { timeout: u64 },
    /// `slow_close`: the connection's close is held back `delay` ms.
    SlowClose { delay: u64 },
    /// `slicer`: chunks are cut into slices of `average_size` ± `size_variation` bytes, each
    /// sent `delay` µs after the last.
    Slicer {
        average_size: u64,
        size_variation: u64,
        delay: u64,
    },
    /// `limit_data`: the connection is closed once `bytes` have crossed.
    LimitData { bytes: u64 },
    /// `bandwidth`: at most `rate` KB/s.
    Bandwidth { rate: u64 },
}

impl Toxic {
    /// The toxic's type, as Toxiproxy's API writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Toxic::Latency { .. } => "latency",
            Toxic::Timeout { .. } => "timeout",
            Toxic::ResetPeer { .. } => "reset_peer",
            Toxic::SlowClose { .. } => "slow_close",
            Toxic::Slicer { .. } => "slicer",
            Toxic::LimitData { .. } => "limit_data",
            Toxic::Bandwidth { .. } => "bandwidth",
        }
    }

    /// noxious's kind for this toxic; `None` for `reset_peer`, which noxious lacks.
    fn noxious_kind(self) -> Option<ToxicKind> {
        Some(match self {
            Toxic::Latency { latency, jitter } => ToxicKind::Latency { latency, jitter },
            Toxic::Timeout { timeout } => ToxicKind::Timeout { timeout },
            Toxic::ResetPeer { .. } => return None,
            Toxic::SlowClose { delay } => ToxicKind::SlowClose { delay },
            Toxic::Slicer {
                average_size,
                size_variation,
                delay,
            } => ToxicKind::Slicer {
                average_size,
                size_variation,
                delay,
            },
            Toxic::LimitData { bytes } => ToxicKind::LimitData { bytes },
            Toxic::Bandwidth { rate } => ToxicKind::Bandwidth { rate },
        })
    }
}

/// The `reset_peer` toxic in force, if any.
#[derive(Clone, Copy, Debug)]
struct ResetPeer {
    timeout: Duration,
    direction: StreamDirection,
    /// The share of connections it acts on, drawn once per connection as Toxiproxy does.
    toxicity: f32,
}

/// What the `reset_peer` stage shares with its connections.
struct Stage {
    reset: Mutex<Option<ResetPeer>>,
    /// Where the noxious runner in service listens.
    noxious: Mutex<SocketAddr>,
    /// Counts the toxics' replacements, which close the connections open before.
    replaced: watch::Sender<u64>,
    /// Draws each connection's number against the toxicity (seeded: the same draws each run).
    draws: Mutex<StdRng>,
    connections: AtomicU64,
    resets: AtomicU64,
}

impl Stage {
    /// The delay before the reset if the toxic acts on a chunk going `direction` on a
    /// connection that drew `draw`.
    fn reset_after(&self, direction: StreamDirection, draw: f32) -> Option<Duration> {
        let reset = (*self.reset.lock().unwrap())?;
        (reset.direction == direction && draw < reset.toxicity).then_some(reset.timeout)
    }
}

/// A noxious runner: its listener's address, and how to stop it.
struct Noxious {
    addr: SocketAddr,
    /// Kept so that the runner's loop for toxic updates waits rather than ends.
    _updates: RequestSender<ToxicEvent, ToxicEventResult>,
    stopper: Stopper,
    closed: Close,
}

impl Noxious {
    /// A runner on a free port of 127.0.0.1 to `upstream`, with `toxics`.
    async fn start(name: &str, upstream: SocketAddr, toxics: Toxics) -> Noxious {
        // noxious binds the address it is given: a port that was free a moment ago, tried
        // again if another test took it in between.
        let mut tries = 0;
        let (listener, info, addr) = loop {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let config = ProxyConfig {
                name: name.to_string(),
                listen: port.to_string(),
                upstream: upstream.to_string(),
                enabled: true,
                rand_seed: None,
            };
            match ProxyRunner::initialize_proxy::<NoxiousListener>(config, toxics.clone()).await {
                Ok((listener, info)) => break (listener, info, port),
                Err(e) if tries < 20 => {
                    tries += 1;
                    eprintln!("noxious could not bind {port} ({e}); another port");
                }
                Err(e) => panic!("noxious could not bind a port: {e}"),
            }
        };
        let (updates, receiver) = bmrng::channel(1);
        let (stop, stopper) = Stop::new();
        let (closed, closer) = Close::new();
        tokio::spawn(ProxyRunner::run_proxy(
            listener, info, receiver, stop, closer,
        ));
        Noxious {
            addr,
            _updates: updates,
            stopper,
            closed,
        }
    }

    /// Stops the runner, which closes its connections, and waits until it has let its
    /// listener go.
    async fn stop(self) {
        self.stopper.stop();
        let _ = self.closed.recv().await;
    }
}

/// A proxy running in the background: noxious behind the `reset_peer` stage. Dropping it
/// stops both and closes every connection through it.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    name: String,
    upstream: SocketAddr,
    noxious: tokio::sync::Mutex<Option<Noxious>>,
    stage: Arc<Stage>,
    front: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a free port of 127.0.0.1 to `upstream`, with no toxic.
    pub async fn start(name: &str, upstream: SocketAddr) -> Proxy {
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = front.local_addr().unwrap();
        let noxious = Noxious::start(name, upstream, Toxics::empty()).await;
        let stage = Arc::new(Stage {
            reset: Mutex::new(None),
            noxious: Mutex::new(noxious.addr),
            replaced: watch::Sender::new(0),
            draws: Mutex::new(StdRng::seed_from_u64(7)),
            connections: AtomicU64::new(0),
            resets: AtomicU64::new(0),
        });
        let front = tokio::spawn(accept(front, stage.clone()));
        Proxy {
            addr,
            name: name.to_string(),
            upstream,
            noxious: tokio::sync::Mutex::new(Some(noxious)),
            stage,
            front,
        }
    }

    /// Replaces the proxy's toxics with these: each a toxic, the direction it acts on, and
    /// the share of connections it acts on (1.0: all), at most one of each type per
    /// direction. Connections open through the proxy are closed; new ones get the toxics.
    pub async fn set(&self, toxics: &[(Toxic, StreamDirection, f32)]) {
        let mut lists = Toxics::empty();
        let mut reset = None;
        for &(toxic, direction, toxicity) in toxics {
            let Some(kind) = toxic.noxious_kind() else {
                let Toxic::ResetPeer { timeout } = toxic else {
                    unreachable!("only reset_peer runs outside noxious")
                };
                reset = Some(ResetPeer {
                    timeout: Duration::from_millis(timeout),
                    direction,
                    toxicity,
                });
                continue;
            };
            let toxic = NoxiousToxic {
                kind,
                name: format!("{}_{direction}", toxic.name()),
                toxicity,
                direction,
            };
            match direction {
                Upstream => lists.upstream.push(toxic),
                Downstream => lists.downstream.push(toxic),
            }
        }
        let mut current = self.noxious.lock().await;
        let next = Noxious::start(&self.name, self.upstream, lists).await;
        *self.stage.noxious.lock().unwrap() = next.addr;
        *self.stage.reset.lock().unwrap() = reset;
        self.stage.replaced.send_modify(|n| *n += 1);
        if let Some(previous) = current.replace(next) {
            previous.stop().await;
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.stage.connections.load(Ordering::Relaxed)
    }

    /// Connections reset by `reset_peer` so far.
    pub fn resets(&self) -> u64 {
        self.stage.resets.load(Ordering::Relaxed)
    }

    /// Stops the proxy and waits until noxious has let its listener go.
    pub async fn stop(self) {
        self.front.abort();
        if let Some(noxious) = self.noxious.lock().await.take() {
            noxious.stop().await;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.front.abort();
        if let Some(noxious) = self.noxious.get_mut().take() {
            noxious.stopper.stop();
        }
    }
}

/// The `reset_peer` stage: relays each client to noxious. Dropping the set (when the proxy
/// stops and this task is aborted) closes every connection.
async fn accept(listener: TcpListener, stage: Arc<Stage>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        while connections.try_join_next().is_some() {}
        stage.connections.fetch_add(1, Ordering::Relaxed);
        let draw: f32 = stage.draws.lock().unwrap().random();
        // Subscribed first: a replacement after this closes the connection, and one before
        // it has already named its runner.
        let replaced = stage.replaced.subscribe();
        let noxious = *stage.noxious.lock().unwrap();
        connections.spawn(relay(client, noxious, stage.clone(), draw, replaced));
    }
}
/// How one direction of a connection ended.
enum Ended {
    /// Its source closed (or failed): the other direction may go on.
    Closed,
    /// `reset_peer` acted: the whole connection is reset.
    Reset,
}

async fn relay(
    mut client: TcpStream,
    noxious: SocketAddr,
    stage: Arc<Stage>,
    draw: f32,
    mut replaced: watch::Receiver<u64>,
) {
    let _ = client.set_nodelay(true);
    let Ok(mut upstream) = TcpStream::connect(noxious).await else {
        return; // dropping the client closes it, as Toxiproxy does when it cannot connect
    };
    let _ = upstream.set_nodelay(true);
    let reset = {
        let (mut client_read, mut client_write) = client.split();
        let (mut upstream_read, mut upstream_write) = upstream.split();
        let mut up = pin!(pump(
            &mut client_read,
            &mut upstream_write,
            Upstream,
            &stage,
            draw
        ));
        let mut down = pin!(pump(
            &mut upstream_read,
            &mut client_write,
            Downstream,
            &stage,
            draw
        ));
        let both = async {
            tokio::select! {
                first = &mut up => matches!(first, Ended::Reset) || matches!(down.await, Ended::Reset),
                first = &mut down => matches!(first, Ended::Reset) || matches!(up.await, Ended::Reset),
            }
        };
        tokio::select! {
            reset = both => reset,
            // New toxics: the connection is closed, whatever its noxious runner does.
            _ = replaced.changed() => false,
        }
    };
    if reset {
        stage.resets.fetch_add(1, Ordering::Relaxed);
        // Closed with SO_LINGER 0: an RST instead of a FIN, to both peers.
        let _ = client.set_zero_linger();
        let _ = upstream.set_zero_linger();
    }
}

/// Copies `from` to `to` until `from` closes or `reset_peer` acts on a chunk.
async fn pump(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    direction: StreamDirection,
    stage: &Stage,
    draw: f32,
) -> Ended {
    let mut buf = vec![0; 32 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return Ended::Closed;
            }
            Ok(n) => n,
        };
        if let Some(after) = stage.reset_after(direction, draw) {
            tokio::time::sleep(after).await;
            return Ended::Reset;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return Ended::Closed;
        }
    }
}
