//! An HTTP/1.1 server on 127.0.0.1 that deduplicates requests by their `Idempotency-Key`, as
//! the IETF httpapi draft "The Idempotency-Key HTTP Header Field"
//! (draft-ietf-httpapi-idempotency-key-header) asks of a server: it executes a request the
//! first time it sees its key and stores the answer; a repeat with the same key and payload
//! gets the stored answer without executing again; a repeat while the first is still being
//! processed gets `409 Conflict`; a repeat with another payload gets `422 Unprocessable
//! Content`. A request without a key is executed every time.
//!
//! Each request takes the next [`Action`] of the script, else one drawn from the seeded plan
//! (by its path and how many requests with that path came before it, so the draws do not depend
//! on the order in which concurrent requests arrive), else [`Action::Serve`]. The server counts
//! how many times it executed the request of each key and of each path, and records what
//! arrived.

#![allow(dead_code)] // each test binary uses part of it

use crate::resettable::Resettable;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

/// The draft's header, as the server reads it.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// What the server does with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// As the draft says: a new key's request is executed and answered `200` with its result,
    /// a repeat gets the stored answer, `409` while its key is being processed, `422` with
    /// another payload.
    Serve,
    /// Answer this status at once, without executing (a proxy's `503`, a scripted `409`).
    Status(u16),
    /// Reset the connection before executing anything.
    ResetBefore,
    /// Serve (a new key's request is executed and its answer stored), then reset the
    /// connection instead of answering: the client never learns that it was executed.
    ResetAfter,
    /// Start executing a new key's request (its key is being processed from now on), reset the
    /// connection, and finish executing once `n` more requests with its key have been
    /// answered `409`. For a key already seen: as `ResetAfter`.
    ResetWhileProcessing(u32),
    /// Execute a new key's request slowly: its key is being processed for this long (real
    /// time), then the answer is stored and sent. For a key already seen: as `Serve`.
    Slow(Duration),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Arrival {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub action: Action,
    /// The status it was answered with; `None` for a reset connection.
    pub status: Option<u16>,
}

impl Arrival {
    /// The request's idempotency key, if it carried one.
    pub fn key(&self) -> Option<&str> {
        self.headers
            .get(IDEMPOTENCY_KEY)
            .map(|v| v.to_str().unwrap())
    }
}

/// What the server knows of a key.
enum Entry {
    /// Executed, the answer not yet stored: `left` more requests with the key are answered
    /// `409` before it is (`None`: until a timer stores it).
    Processing {
        payload: Bytes,
        answer: Bytes,
        left: Option<u32>,
    },
    /// Executed, the answer stored.
    Done { payload: Bytes, answer: Bytes },
}

/// A seeded plan: each request's action drawn with these weights.
struct Plan {
    seed: u64,
    actions: Vec<(f64, Action)>,
}

#[derive(Default)]
struct Books {
    script: VecDeque<Action>,
    plan: Option<Plan>,
    /// Requests seen per path, for the plan's draws.
    seen: HashMap<String, u64>,
    keys: HashMap<String, Entry>,
    executed_by_key: HashMap<String, u32>,
    executed_by_path: HashMap<String, u32>,
    executions: u64,
    arrivals: Vec<Arrival>,
    /// How many requests each action was drawn or scripted for.
    actions: HashMap<Action, u64>,
    /// How many `409`s and `422`s the dedup answered.
    conflicts: u64,
    mismatches: u64,
    /// Whether arrivals are recorded (a long run counts them without keeping them).
    record: bool,
}

/// The server's state, shared by its connections.
#[derive(Default)]
pub struct State(Mutex<Books>);

impl State {
    fn books(&self) -> MutexGuard<'_, Books> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running server; dropping it stops it.
pub struct KeyedServer {
    pub addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Drop for KeyedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KeyedServer {
    /// A server on a free port of 127.0.0.1 that records every request.
    pub async fn start() -> KeyedServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        state.books().record = true;
        let task = tokio::spawn(accept(listener, state.clone()));
        KeyedServer { addr, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next requests get these actions, in order.
    pub fn script(&self, actions: &[Action]) {
        self.state.books().script.extend(actions);
    }

    /// After the script, each request's action is drawn with these weights (summing to at
    /// most 1; `Serve` for the rest) from a generator seeded by `seed`, the request's path
    /// and the number of requests with that path before it.
    pub fn plan(&self, seed: u64, actions: &[(f64, Action)]) {
        self.state.books().plan = Some(Plan {
            seed,
            actions: actions.to_vec(),
        });
    }

    /// Stops recording arrivals (a long run keeps the counts only).
    pub fn stop_recording(&self) {
        self.state.books().record = false;
    }

    pub fn arrivals(&self) -> Vec<Arrival> {
        self.state.books().arrivals.clone()
    }

    /// How many times the request with `key` was executed.
    pub fn executed_key(&self, key: &str) -> u32 {
        self.state
            .books()
            .executed_by_key
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// How many times a request to `path` was executed.
    pub fn executed(&self, path: &str) -> u32 {
        self.state
            .books()
            .executed_by_path
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// How many times each path's requests were executed.
    pub fn executed_by_path(&self) -> HashMap<String, u32> {
        self.state.books().executed_by_path.clone()
    }

    /// How many times each key's request was executed.
    pub fn executed_by_key(&self) -> HashMap<String, u32> {
        self.state.books().executed_by_key.clone()
    }

    /// How many requests each action was given.
    pub fn actions(&self) -> HashMap<Action, u64> {
        self.state.books().actions.clone()
    }

    /// How many requests arrived with each path.
    pub fn seen(&self) -> HashMap<String, u64> {
        self.state.books().seen.clone()
    }

    /// The `409`s and `422`s the dedup answered.
    pub fn conflicts(&self) -> (u64, u64) {
        let books = self.state.books();
        (books.conflicts, books.mismatches)
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

/// The action of the `n`th request (0-based) to `path` under `plan`.
fn draw(plan: &Plan, path: &str, n: u64) -> Action {
    let mut hasher = std::hash::DefaultHasher::new();
    (plan.seed, path, n).hash(&mut hasher);
    let x: f64 = StdRng::seed_from_u64(hasher.finish()).random();
    let mut sum = 0.0;
    for (weight, action) in &plan.actions {
        sum += weight;
        if x < sum {
            return *action;
        }
    }
    Action::Serve
}

/// What the handler does after looking at the books.
enum Reply {
    Answer(u16, Bytes),
    /// Answer after holding the key as being processed for a while, then store the answer.
    Slow(Duration, String, Bytes),
    Reset,
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    reset: Arc<AtomicBool>,
    kill: Arc<Notify>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let payload = body
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let key = parts
        .headers
        .get(IDEMPOTENCY_KEY)
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    let (reply, action) = {
        let mut books = state.books();
        let books = &mut *books;
        let n = {
            let seen = books.seen.entry(path.clone()).or_default();
            *seen += 1;
            *seen - 1
        };
        let action = match books.script.pop_front() {
            Some(a) => a,
            None => books
                .plan
                .as_ref()
                .map_or(Action::Serve, |p| draw(p, &path, n)),
        };
        *books.actions.entry(action).or_default() += 1;
        (
            decide(books, action, &path, key.as_deref(), &payload),
            action,
        )
    };
    let reply = match reply {
        Reply::Slow(delay, key, answer) => {
            tokio::time::sleep(delay).await;
            let mut books = state.books();
            if let Some(Entry::Processing { payload, .. }) = books.keys.remove(&key) {
                books.keys.insert(
                    key,
                    Entry::Done {
                        payload,
                        answer: answer.clone(),
                    },
                );
            }
            Reply::Answer(200, answer)
        }
        other => other,
    };
    let status = match &reply {
        Reply::Answer(status, _) => Some(*status),
        _ => None,
    };
    {
        let mut books = state.books();
        if books.record {
            books.arrivals.push(Arrival {
                method: parts.method.clone(),
                path,
                headers: parts.headers.clone(),
                action,
                status,
            });
        }
    }
    match reply {
        Reply::Answer(status, body) => Ok(Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .body(Full::new(body))
            .unwrap()),
        Reply::Reset | Reply::Slow(..) => {
            reset.store(true, Ordering::SeqCst);
            kill.notify_one();
            std::future::pending().await
        }
    }
}

/// The reply to a request under `action`, with the books kept.
fn decide(
    books: &mut Books,
    action: Action,
    path: &str,
    key: Option<&str>,
    payload: &Bytes,
) -> Reply {
    match action {
        Action::Status(status) => return Reply::Answer(status, Bytes::from_static(b"scripted")),
        Action::ResetBefore => return Reply::Reset,
        _ => {}
    }
    let Some(key) = key else {
        // Without a key, every request is executed.
        let answer = execute(books, path, None);
        return match action {
            Action::Serve | Action::Slow(_) => Reply::Answer(200, answer),
            _ => Reply::Reset,
        };
    };
    match books.keys.get_mut(key) {
        None => {
            let answer = execute(books, path, Some(key));
            let payload = payload.clone();
            match action {
                Action::ResetWhileProcessing(n) => {
                    books.keys.insert(
                        key.to_owned(),
                        Entry::Processing {
                            payload,
                            answer,
                            left: Some(n),
                        },
                    );
                    Reply::Reset
                }
                Action::Slow(delay) => {
                    books.keys.insert(
                        key.to_owned(),
                        Entry::Processing {
                            payload,
                            answer: answer.clone(),
                            left: None,
                        },
                    );
                    Reply::Slow(delay, key.to_owned(), answer)
                }
                _ => {
                    books.keys.insert(
                        key.to_owned(),
                        Entry::Done {
                            payload,
                            answer: answer.clone(),
                        },
                    );
                    if action == Action::ResetAfter {
                        Reply::Reset
                    } else {
                        Reply::Answer(200, answer)
                    }
                }
            }
        }
        Some(Entry::Processing {
            payload: first,
            answer,
            left,
        }) => {
            if first != payload {
                books.mismatches += 1;
                return Reply::Answer(422, Bytes::from_static(b"key reused"));
            }
            let finished = left.as_mut().is_some_and(|left| {
                *left = left.saturating_sub(1);
                *left == 0
            });
            if finished {
                let entry = Entry::Done {
                    payload: first.clone(),
                    answer: answer.clone(),
                };
                books.keys.insert(key.to_owned(), entry);
            }
            books.conflicts += 1;
            Reply::Answer(409, Bytes::from_static(b"a request is outstanding"))
        }
        Some(Entry::Done {
            payload: first,
            answer,
        }) => {
            if first != payload {
                books.mismatches += 1;
                return Reply::Answer(422, Bytes::from_static(b"key reused"));
            }
            match action {
                Action::Serve | Action::Slow(_) => Reply::Answer(200, answer.clone()),
                _ => Reply::Reset,
            }
        }
    }
}

/// Executes the request to `path` (with `key`): counts it, and returns its result.
fn execute(books: &mut Books, path: &str, key: Option<&str>) -> Bytes {
    books.executions += 1;
    *books.executed_by_path.entry(path.to_owned()).or_default() += 1;
    if let Some(key) = key {
        *books.executed_by_key.entry(key.to_owned()).or_default() += 1;
    }
    Bytes::from(format!("{path} executed as #{}", books.executions))
}
