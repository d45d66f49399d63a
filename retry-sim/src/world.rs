//! The simulated server, and the world every attempt runs in: the server, its state, the
//! shared randomness and the counters. A fleet builds it for a run; both engines' clients send
//! their attempts into it, ours from `fleet` and aws-smithy-runtime's through the HTTP client
//! of `smithy`.

use crate::sim::{self, SharedRng, SharedSeries, SimError, lock};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

/// The simulated server. Every attempt takes one network hop there and one back
/// (|Normal(10 ms, 2 ms)| each).
#[derive(Debug, Clone)]
pub struct Server {
    /// Fails every request (a 5xx) from the first to the second second.
    pub outage: Option<(f64, f64)>,
    /// Serves at most this many requests per second (a token bucket holding a tenth of a
    /// second's worth); above it, answers with throttling (a 429).
    pub capacity: Option<f64>,
    /// Serves one request at a time from a FIFO queue, at the rate `queue(t)` requests per
    /// second: no request is refused, but a queue builds when requests come faster. Work stays
    /// queued after its client has timed out and gone, unless its request carries a deadline
    /// (`World::attempt_within`: a server behind `tower::ServerLayer`).
    pub queue: Option<fn(f64) -> f64>,
    /// Fails each request on its own (a 5xx) with this probability (a draw from the run's
    /// generator only when set, so the other scenarios' draws are unchanged).
    pub transient_rate: Option<f64>,
}

/// The server's mutable state during a run.
struct State {
    tokens: f64,
    refilled_at: f64,
    busy_until: f64,
}

/// The simulated world an attempt runs in: the server, its state, the shared randomness and
/// the counters.
#[derive(Clone)]
pub(crate) struct World {
    t0: Instant,
    server: Arc<Server>,
    state: Arc<Mutex<State>>,
    rng: SharedRng,
    series: SharedSeries,
}

impl World {
    /// The world of a run that started at `t0`: `server` with its bucket full and its queue
    /// empty, `rng` drawing the network's latencies, `series` counting.
    pub(crate) fn new(t0: Instant, server: Server, rng: SharedRng, series: SharedSeries) -> World {
        let state = State {
            tokens: server.capacity.map_or(0.0, |c| c / 10.0),
            refilled_at: 0.0,
            busy_until: 0.0,
        };
        World {
            t0,
            server: Arc::new(server),
            state: Arc::new(Mutex::new(state)),
            rng,
            series,
        }
    }

    /// The instant the run started.
    pub(crate) fn t0(&self) -> Instant {
        self.t0
    }

    /// One attempt against the server.
    pub(crate) fn attempt(&self) -> impl Future<Output = Result<(), SimError>> + Send + use<> {
        self.attempt_within(None)
    }

    /// One attempt whose request carries `time_left`, the time its caller's attempt had left
    /// when it sent it (`attempt().time_left()`, as `with_attempt` writes it on the wire): a
    /// server behind `tower::ServerLayer` (or `DeadlineLayer`), which reads it when the request
    /// arrives and runs the handler under that deadline. A request still waiting in the queue
    /// when its deadline passes is dropped there without taking any of the server's time (the
    /// layer drops the handler and answers a 504, after the caller stopped waiting: its own
    /// cutoff came a network hop earlier). A request the server has started is finished: its
    /// work (`1 / rate`: 1 or 2 ms at the metastable section's rates) is not interrupted, and if it ends after
    /// the deadline the answer is the layer's 504 at the deadline. `None`, or a server without
    /// a queue: [`attempt`](Self::attempt), to the draw.
    pub(crate) fn attempt_within(
        &self,
        time_left: Option<Duration>,
    ) -> impl Future<Output = Result<(), SimError>> + Send + use<> {
        let (there, back) = {
            let mut r = lock(&self.rng);
            (
                sim::secs(r.abs_normal(0.010, 0.002)),
                sim::secs(r.abs_normal(0.010, 0.002)),
            )
        };
        let (t0, server, state, series) = (
            self.t0,
            self.server.clone(),
            self.state.clone(),
            self.series.clone(),
        );
        let unlucky = self
            .server
            .transient_rate
            .is_some_and(|p| lock(&self.rng).uniform() < p);
        async move {
            sleep(there).await;
            let t = sim::since(t0);
            if let Some(b) = lock(&series).at(t) {
                b.attempts += 1;
            }
            let answer = if unlucky || server.outage.is_some_and(|(a, b)| t >= a && t < b) {
                Err(SimError::Unavailable)
            } else if let Some(rate) = server.capacity {
                let mut s = lock(&state);
                s.tokens = (s.tokens + (t - s.refilled_at) * rate).min(rate / 10.0);
                s.refilled_at = t;
                if s.tokens >= 1.0 {
                    s.tokens -= 1.0;
                    Ok(())
                } else {
                    Err(SimError::Throttled)
                }
            } else {
                Ok(())
            };
            let answer = match (answer, server.queue) {
                (Ok(()), Some(rate)) => {
                    // FIFO: the requests ahead of this one are all known, so when the server
                    // would start it is known on arrival.
                    let deadline = time_left.map(|left| t + left.as_secs_f64());
                    let (done, shed) = {
                        let mut s = lock(&state);
                        let start = s.busy_until.max(t);
                        match deadline {
                            Some(d) if start >= d => (d.max(t), true),
                            _ => {
                                s.busy_until = start + 1.0 / rate(start);
                                (s.busy_until, false)
                            }
                        }
                    };
                    let cut = deadline.filter(|&d| !shed && done > d);
                    if let Some(b) = lock(&series).at(t) {
                        b.queue_s += done - t;
                        b.shed += u64::from(shed);
                    }
                    // The 504 is a plain 5xx to a client that reads it: none does here.
                    match cut {
                        Some(d) => {
                            sleep_until(t0 + sim::secs(d)).await;
                            Err(SimError::Unavailable)
                        }
                        None if shed => {
                            sleep_until(t0 + sim::secs(done)).await;
                            Err(SimError::Unavailable)
                        }
                        None => {
                            sleep_until(t0 + sim::secs(done)).await;
                            Ok(())
                        }
                    }
                }
                (answer, _) => answer,
            };
            if let Some(b) = lock(&series).at(sim::since(t0)) {
                match answer {
                    Ok(()) => b.served += 1,
                    Err(SimError::Throttled) => b.throttled += 1,
                    Err(_) => {}
                }
            }
            sleep(back).await;
            if answer.is_ok() {
                if let Some(b) = lock(&series).at(sim::since(t0)) {
                    b.delivered += 1;
                }
            }
            answer
        }
    }
}
