//! A fleet of clients at a fixed offered load against one simulated server: the common part of
//! the outage, throttling and metastable scenarios.

use crate::sim::{
    self, Client, Policy, Rng, Series, SharedRng, SharedSeries, SimError, Strategy, lock,
};
use crate::smithy::SmithyClient;
use std::cell::Cell;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

/// Whose retry loop the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// This workspace's runtime (the loop `#[retry]` expands to).
    Ours,
    /// aws-smithy-runtime's orchestrator (the AWS Rust SDK's retry loop), driven through
    /// `Operation::builder()` with an HTTP client that answers from the simulated server.
    Smithy,
}

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
    /// Fails each request on its own (a 5xx) with this probability (a draw from the run's
    /// generator only when set, so the other scenarios' draws are unchanged).
    pub transient_rate: Option<f64>,
}

/// How each client's application spaces its calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Arrivals {
    /// Poisson arrivals (exponential gaps), as in every scenario.
    #[default]
    Poisson,
    /// One call every `1 / rate` seconds from a random phase: the same load without its
    /// variation from one second to the next (to tell what that variation does).
    Even,
}

/// The server's mutable state during a run.
pub(crate) struct State {
    tokens: f64,
    refilled_at: f64,
    busy_until: f64,
}

/// One run of a fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Client processes, each with its own retry state.
    pub clients: usize,
    /// Requests per second each client's application offers.
    pub rate_per_client: f64,
    /// How the calls are spaced.
    pub arrivals: Arrivals,
    /// Seconds simulated; no call starts after it.
    pub horizon: f64,
    /// The retry policy of every client (AWS standard settings in every scenario; the smithy
    /// engine uses its own `RetryConfig::standard()`, which has the same values).
    pub policy: Policy,
    /// The time for all attempts of a call: our deadline, the smithy orchestrator's operation
    /// timeout.
    pub deadline: Option<Duration>,
    /// No bucket, standard or adaptive.
    pub strategy: Strategy,
    /// The seed of the run.
    pub seed: u64,
    /// Whose retry loop runs.
    pub engine: Engine,
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
        // smithy's jitter comes from fastrand's thread-local generator; the runtime has one
        // thread, so seeding it here makes smithy's runs repeatable too.
        fastrand::seed(self.seed);
        let series: SharedSeries = Arc::new(Mutex::new(Series::new(1.0, bins)));
        let rng: SharedRng = Arc::new(Mutex::new(Rng::new(self.seed)));
        let state = Arc::new(Mutex::new(State {
            tokens: server.capacity.map_or(0.0, |c| c / 10.0),
            refilled_at: 0.0,
            busy_until: 0.0,
        }));
        let server = Arc::new(server);
        let t0 = Instant::now();
        let world = World {
            t0,
            server: server.clone(),
            state: state.clone(),
            rng: rng.clone(),
            series: series.clone(),
        };
        let clients: Vec<Arc<Driver>> = (0..self.clients)
            .map(|_| {
                Arc::new(match self.engine {
                    Engine::Ours => {
                        let policy = match self.deadline {
                            Some(d) => self.policy.deadline(d),
                            None => self.policy,
                        };
                        Driver::Ours(Client::new("fleet", policy, self.strategy))
                    }
                    Engine::Smithy => Driver::Smithy(SmithyClient::new(
                        self.strategy,
                        self.deadline,
                        world.clone(),
                    )),
                })
            })
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
                        .map(|c| match &**c {
                            Driver::Ours(c) if c.limiter().is_enabled() => c.limiter().fill_rate(),
                            _ => 0.0,
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
            let client_seed = lock(&rng).seed();
            let (world, series) = (world.clone(), series.clone());
            let fleet = self.clone();
            arrivals.push(tokio::task::spawn_local(async move {
                let mut own = Rng::new(client_seed);
                let mut calls = Vec::new();
                let rate = fleet.rate_per_client;
                let mut t = match fleet.arrivals {
                    Arrivals::Poisson => own.exponential(rate),
                    Arrivals::Even => own.uniform() / rate,
                };
                while t < fleet.horizon {
                    sleep_until(t0 + sim::secs(t)).await;
                    let seed = own.seed();
                    let (client, world, series) = (client.clone(), world.clone(), series.clone());
                    calls.push(tokio::task::spawn_local(async move {
                        if let Some(b) = lock(&series).at(sim::since(t0)) {
                            b.offered += 1;
                        }
                        let offered_at = sim::since(t0);
                        let sent = Cell::new(0);
                        let ok = match &*client {
                            Driver::Ours(c) => c
                                .call(seed, || {
                                    sent.set(sent.get() + 1);
                                    world.attempt()
                                })
                                .await
                                .is_ok(),
                            Driver::Smithy(c) => c.call().await,
                        };
                        let mut series = lock(&series);
                        if let Some(b) = series.at(sim::since(t0)) {
                            if ok {
                                b.succeeded += 1;
                            } else {
                                b.failed += 1;
                            }
                        }
                        if let Some(b) = series.at(offered_at) {
                            b.call_attempts += sent.get();
                            b.offered_succeeded += u64::from(ok);
                        }
                    }));
                    t += match fleet.arrivals {
                        Arrivals::Poisson => own.exponential(rate),
                        Arrivals::Even => 1.0 / rate,
                    };
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
        let series = lock(&series).clone();
        Run { series, fill_rate }
    }
}

/// A client of either engine.
#[allow(clippy::large_enum_variant)] // one per simulated client, never moved
enum Driver {
    Ours(Client),
    Smithy(SmithyClient),
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
    /// The instant the run started.
    pub(crate) fn t0(&self) -> Instant {
        self.t0
    }

    /// One attempt against the server.
    pub(crate) fn attempt(&self) -> impl Future<Output = Result<(), SimError>> + Send + use<> {
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
                    let done = {
                        let mut s = lock(&state);
                        let start = s.busy_until.max(t);
                        s.busy_until = start + 1.0 / rate(start);
                        s.busy_until
                    };
                    if let Some(b) = lock(&series).at(t) {
                        b.queue_s += done - t;
                    }
                    sleep_until(t0 + sim::secs(done)).await;
                    Ok(())
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
