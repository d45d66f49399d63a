//! A fleet of clients at a fixed offered load against one simulated server: the common part of
//! the outage, throttling and metastable scenarios.

use crate::sim::{self, Client, Keys, Rng, Series, SharedRng, SharedSeries, Strategy, lock};
use crate::smithy::SmithyClient;
use crate::world::{Server, World};
use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// Whose retry loop the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// This workspace's runtime (the loop `#[retry]` expands to).
    Ours,
    /// aws-smithy-runtime's orchestrator (the AWS Rust SDK's retry loop), driven through
    /// `Operation::builder()` with an HTTP client that answers from the simulated server.
    Smithy,
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
    pub policy: Keys,
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
        let t0 = Instant::now();
        let world = World::new(t0, server, rng.clone(), series.clone());
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
