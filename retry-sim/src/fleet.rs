//! A fleet of clients at a fixed offered load against one simulated server: the common part of
//! the outage, throttling and metastable scenarios.

use crate::sim::{self, Client, Policy, Rng, Series, SharedRng, SharedSeries, SimError, Strategy};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
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
    /// queued after its client has timed out and gone.
    pub queue: Option<fn(f64) -> f64>,
}

/// The server's mutable state during a run.
struct State {
    tokens: f64,
    refilled_at: f64,
    busy_until: f64,
}

/// One run of a fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Client processes, each with its own retry state.
    pub clients: usize,
    /// Requests per second each client's application offers (Poisson arrivals).
    pub rate_per_client: f64,
    /// Seconds simulated; no call starts after it.
    pub horizon: f64,
    /// The retry policy of every client.
    pub policy: Policy,
    /// No bucket, standard or adaptive.
    pub strategy: Strategy,
    /// The seed of the run.
    pub seed: u64,
}

/// What a fleet run measured.
#[derive(Debug, Clone)]
pub struct Run {
    /// Counters per second.
    pub series: Series,
    /// The mean fill rate of the clients' rate limiters at the end of each second (adaptive
    /// mode; 0 while a limiter is off).
    pub fill_rate: Vec<f64>,
}

impl Fleet {
    /// Runs the fleet against `server` on the paused clock.
    pub fn run(&self, server: &Server) -> Run {
        let fleet = self.clone();
        let server = server.clone();
        sim::run(async move { fleet.simulate(server).await })
    }

    async fn simulate(self, server: Server) -> Run {
        let bins = self.horizon.ceil() as usize + 60;
        let series: SharedSeries = Rc::new(RefCell::new(Series::new(1.0, bins)));
        let rng: SharedRng = Rc::new(RefCell::new(Rng::new(self.seed)));
        let state = Rc::new(RefCell::new(State {
            tokens: server.capacity.map_or(0.0, |c| c / 10.0),
            refilled_at: 0.0,
            busy_until: 0.0,
        }));
        let server = Rc::new(server);
        let t0 = Instant::now();
        let clients: Vec<Rc<Client>> = (0..self.clients)
            .map(|_| Rc::new(Client::new("fleet", self.policy, self.strategy)))
            .collect();

        // The fill rates, sampled once a second.
        let sampler = {
            let clients = clients.clone();
            let horizon = self.horizon;
            tokio::task::spawn_local(async move {
                let mut out = Vec::new();
                let mut t = 1.0;
                while t <= horizon {
                    sleep_until(t0 + sim::secs(t)).await;
                    let sum: f64 = clients
                        .iter()
                        .map(|c| {
                            let l = c.limiter();
                            if l.is_enabled() { l.fill_rate() } else { 0.0 }
                        })
                        .sum();
                    out.push(sum / clients.len() as f64);
                    t += 1.0;
                }
                out
            })
        };

        let mut arrivals = Vec::new();
        for client in clients {
            let client_seed = rng.borrow_mut().seed();
            let (rng, series, state, server) =
                (rng.clone(), series.clone(), state.clone(), server.clone());
            let fleet = self.clone();
            arrivals.push(tokio::task::spawn_local(async move {
                let mut own = Rng::new(client_seed);
                let mut calls = Vec::new();
                let mut t = own.exponential(fleet.rate_per_client);
                while t < fleet.horizon {
                    sleep_until(t0 + sim::secs(t)).await;
                    let seed = own.seed();
                    let (client, rng, series, state, server) = (
                        client.clone(),
                        rng.clone(),
                        series.clone(),
                        state.clone(),
                        server.clone(),
                    );
                    calls.push(tokio::task::spawn_local(async move {
                        if let Some(b) = series.borrow_mut().at(sim::since(t0)) {
                            b.offered += 1;
                        }
                        let out = client
                            .call(seed, || attempt(t0, &server, &state, &rng, &series))
                            .await;
                        if let Some(b) = series.borrow_mut().at(sim::since(t0)) {
                            if out.is_ok() {
                                b.succeeded += 1;
                            } else {
                                b.failed += 1;
                            }
                        }
                    }));
                    t += own.exponential(fleet.rate_per_client);
                }
                for c in calls {
                    c.await.expect("a call task");
                }
            }));
        }
        for a in arrivals {
            a.await.expect("a client task");
        }
        let fill_rate = sampler.await.expect("the sampler");
        let series = series.borrow().clone();
        Run { series, fill_rate }
    }
}

/// One attempt against the server.
fn attempt(
    t0: Instant,
    server: &Rc<Server>,
    state: &Rc<RefCell<State>>,
    rng: &SharedRng,
    series: &SharedSeries,
) -> impl Future<Output = Result<(), SimError>> + use<> {
    let (there, back) = {
        let mut r = rng.borrow_mut();
        (
            sim::secs(r.abs_normal(0.010, 0.002)),
            sim::secs(r.abs_normal(0.010, 0.002)),
        )
    };
    let (server, state, series) = (server.clone(), state.clone(), series.clone());
    async move {
        sleep(there).await;
        let t = sim::since(t0);
        if let Some(b) = series.borrow_mut().at(t) {
            b.attempts += 1;
        }
        let answer = if server.outage.is_some_and(|(a, b)| t >= a && t < b) {
            Err(SimError::Unavailable)
        } else if let Some(rate) = server.capacity {
            let mut s = state.borrow_mut();
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
                let done = {
                    let mut s = state.borrow_mut();
                    let start = s.busy_until.max(t);
                    s.busy_until = start + 1.0 / rate(start);
                    s.busy_until
                };
                if let Some(b) = series.borrow_mut().at(t) {
                    b.queue_s += done - t;
                }
                sleep_until(t0 + sim::secs(done)).await;
                Ok(())
            }
            (answer, _) => answer,
        };
        if let Some(b) = series.borrow_mut().at(sim::since(t0)) {
            match answer {
                Ok(()) => b.served += 1,
                Err(SimError::Throttled) => b.throttled += 1,
                Err(_) => {}
            }
        }
        sleep(back).await;
        if answer.is_ok() {
            if let Some(b) = series.borrow_mut().at(sim::since(t0)) {
                b.delivered += 1;
            }
        }
        answer
    }
}
