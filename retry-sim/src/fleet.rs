//! A fleet of clients at a fixed offered load against one simulated server: the common part of
//! the outage, throttling and metastable scenarios.

use crate::sim::{
    self, Client, GuardFactory, Keys, Policy, Rng, Series, SharedRng, SharedSeries, SimError,
    Strategy, lock,
};
use crate::smithy::SmithyClient;
use crate::world::{Server, World};
use retry_runtime::{Classify, ErrorClass};
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
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Arrivals {
    /// Poisson arrivals (exponential gaps), as in every scenario.
    #[default]
    Poisson,
    /// One call every `1 / rate` seconds from a random phase: the same load without its
    /// variation from one second to the next (to tell what that variation does).
    Even,
    /// Poisson arrivals whose rate is multiplied by `factor` from `at` seconds on: a surge
    /// after normal operation.
    Surge {
        /// When the surge starts, seconds.
        at: f64,
        /// The rate from then on, as a multiple of the rate before.
        factor: f64,
    },
}

impl Arrivals {
    /// The gap to the next call at time `t` for a client offering `rate` calls a second.
    fn gap(self, own: &mut Rng, rate: f64, t: f64) -> f64 {
        match self {
            Arrivals::Poisson => own.exponential(rate),
            Arrivals::Even => 1.0 / rate,
            Arrivals::Surge { at, factor } if t >= at => own.exponential(rate * factor),
            Arrivals::Surge { at, factor } => {
                // A gap that crosses the surge's start is drawn again from there at the new
                // rate (the exponential's lack of memory).
                let gap = own.exponential(rate);
                if t + gap < at {
                    gap
                } else {
                    at - t + own.exponential(rate * factor)
                }
            }
        }
    }
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
    /// The guards each client adds to `strategy`, made fresh for each client (our engine
    /// only: aws-smithy-runtime has no guards).
    pub guards: &'static [GuardFactory],
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
    /// Every call of our engine that had at least one attempt fail with a transient error or
    /// with throttling, in the order the calls ended (aws-smithy-runtime's calls are not
    /// recorded).
    pub troubled: Vec<Troubled>,
    /// Every call of our engine that succeeded: when it was offered and how long it took,
    /// seconds, in the order the calls ended (the overload section's p99).
    pub succeeded: Vec<(f64, f64)>,
}

/// What a call's failed attempts were answered with: the errors the latency of a call is
/// reported by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Met {
    /// At least one attempt failed with a transient error (`ErrorClass::Transient`: a 5xx).
    pub transient: bool,
    /// At least one attempt failed with throttling (a 429).
    pub throttled: bool,
}

impl Met {
    /// What the call has met once an attempt answered `answer`.
    pub fn and(self, answer: &Result<(), SimError>) -> Met {
        let class = answer.as_ref().err().map(Classify::classify);
        Met {
            transient: self.transient || class == Some(ErrorClass::Transient),
            throttled: self.throttled || class == Some(ErrorClass::Throttling),
        }
    }

    /// Whether the call met either.
    pub fn any(self) -> bool {
        self.transient || self.throttled
    }
}

/// A call that met a transient error or throttling on at least one attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Troubled {
    /// When the call started, in seconds from the start of the run.
    pub offered_at: f64,
    /// Seconds from the call's start to its end: its attempts and the waits between them.
    pub latency: f64,
    /// Whether the call returned `Ok`.
    pub ok: bool,
    /// The attempts it sent.
    pub attempts: u64,
    /// What its failed attempts met.
    pub met: Met,
}

impl Fleet {
    /// Runs the fleet against `server` on the paused clock.
    pub fn run(&self, server: &Server) -> Run {
        let fleet = self.clone();
        let server = server.clone();
        sim::run(async move { fleet.simulate(server).await })
    }

    async fn simulate(self, server: Server) -> Run {
        // aws-smithy-runtime's orchestrator has no seam for guards.
        assert!(
            self.engine == Engine::Ours || self.guards.is_empty(),
            "guards run on our engine only"
        );
        let bins = self.horizon.ceil() as usize + 60;
        // smithy's jitter comes from fastrand's thread-local generator; the runtime has one
        // thread, so seeding it here makes smithy's runs repeatable too.
        fastrand::seed(self.seed);
        let series: SharedSeries = Arc::new(Mutex::new(Series::new(1.0, bins)));
        let troubled: Arc<Mutex<Vec<Troubled>>> = Arc::default();
        let succeeded: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
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
                        let guarded = Policy::guarded("fleet", self.strategy, self.guards);
                        Driver::Ours(Client::new("fleet", policy, guarded))
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
            let (world, series, troubled) = (world.clone(), series.clone(), troubled.clone());
            let succeeded = succeeded.clone();
            let fleet = self.clone();
            arrivals.push(tokio::task::spawn_local(async move {
                let mut own = Rng::new(client_seed);
                let mut calls = Vec::new();
                let rate = fleet.rate_per_client;
                let mut t = match fleet.arrivals {
                    Arrivals::Even => own.uniform() / rate,
                    arrivals => arrivals.gap(&mut own, rate, 0.0),
                };
                while t < fleet.horizon {
                    sleep_until(t0 + sim::secs(t)).await;
                    let seed = own.seed();
                    let (client, world, series, troubled) = (
                        client.clone(),
                        world.clone(),
                        series.clone(),
                        troubled.clone(),
                    );
                    let succeeded = succeeded.clone();
                    calls.push(tokio::task::spawn_local(async move {
                        if let Some(b) = lock(&series).at(sim::since(t0)) {
                            b.offered += 1;
                        }
                        let offered_at = sim::since(t0);
                        let sent = Cell::new(0);
                        let met = Cell::new(Met::default());
                        let ok = match &*client {
                            Driver::Ours(c) => c
                                .call(seed, || {
                                    sent.set(sent.get() + 1);
                                    let (answer, met) = (world.attempt(), &met);
                                    async move {
                                        let answer = answer.await;
                                        met.set(met.get().and(&answer));
                                        answer
                                    }
                                })
                                .await
                                .is_ok(),
                            Driver::Smithy(c) => c.call().await,
                        };
                        if met.get().any() {
                            lock(&troubled).push(Troubled {
                                offered_at,
                                latency: sim::since(t0) - offered_at,
                                ok,
                                attempts: sent.get(),
                                met: met.get(),
                            });
                        }
                        if ok && matches!(&*client, Driver::Ours(_)) {
                            lock(&succeeded).push((offered_at, sim::since(t0) - offered_at));
                        }
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
                    t += fleet.arrivals.gap(&mut own, rate, t);
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
        let troubled = std::mem::take(&mut *lock(&troubled));
        let succeeded = std::mem::take(&mut *lock(&succeeded));
        Run {
            series,
            fill_rate,
            troubled,
            succeeded,
        }
    }
}

/// A client of either engine.
#[allow(clippy::large_enum_variant)] // one per simulated client, never moved
enum Driver {
    Ours(Client),
    Smithy(SmithyClient),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Server;

    fn fleet(max_attempts: u32) -> Fleet {
        Fleet {
            clients: 5,
            rate_per_client: 10.0,
            arrivals: Arrivals::Poisson,
            horizon: 10.0,
            policy: Keys::new().max_attempts(max_attempts),
            deadline: None,
            strategy: Strategy::NoBucket,
            guards: &[],
            seed: 3,
            engine: Engine::Ours,
        }
    }

    fn server() -> Server {
        Server {
            outage: None,
            capacity: None,
            queue: None,
            transient_rate: None,
        }
    }

    #[test]
    fn an_answer_is_met_by_its_class() {
        let none = Met::default();
        assert_eq!(none.and(&Ok(())), none);
        for transient in [SimError::Unavailable, SimError::Conflict] {
            let met = none.and(&Err(transient));
            assert!(met.transient && !met.throttled && met.any());
        }
        let met = none.and(&Err(SimError::Throttled));
        assert!(met.throttled && !met.transient);
        // What a call has met stays met whatever its later attempts answer.
        let both = none
            .and(&Err(SimError::Throttled))
            .and(&Err(SimError::Unavailable));
        assert_eq!(both.and(&Ok(())), both);
        assert!(both.transient && both.throttled);
    }

    #[test]
    fn with_one_attempt_the_calls_recorded_are_those_that_failed_in_the_outage() {
        let server = Server {
            outage: Some((3.0, 6.0)),
            ..server()
        };
        let run = fleet(1).run(&server);
        let all = run.series.total(0.0, f64::INFINITY);
        assert!(all.failed > 50 && all.succeeded > 200, "{all:?}");
        // A call of one attempt met a 5xx exactly when it failed.
        assert_eq!(run.troubled.len() as u64, all.failed);
        for c in &run.troubled {
            assert!(c.met.transient && !c.met.throttled && !c.ok && c.attempts == 1);
            assert!((2.9..6.1).contains(&c.offered_at), "{c:?}");
            // One round trip: two hops of about 10 ms.
            assert!(c.latency > 0.0 && c.latency < 0.1, "{c:?}");
        }
    }

    #[test]
    fn every_call_with_a_failed_attempt_is_recorded_with_its_attempts() {
        let server = Server {
            transient_rate: Some(0.3),
            ..server()
        };
        let run = fleet(3).run(&server);
        let all = run.series.total(0.0, f64::INFINITY);
        let recorded = &run.troubled;
        // Every failed attempt was a 5xx; the calls not recorded made one attempt, which
        // succeeded.
        let failed_attempts: u64 = recorded.iter().map(|c| c.attempts - u64::from(c.ok)).sum();
        assert_eq!(failed_attempts, all.attempts - all.served);
        let sent: u64 = recorded.iter().map(|c| c.attempts).sum();
        assert_eq!(sent + (all.offered - recorded.len() as u64), all.attempts);
        assert_eq!(recorded.iter().filter(|c| !c.ok).count() as u64, all.failed);
        assert!(recorded.iter().all(|c| c.met.transient && !c.met.throttled));
        // A retried call waited its backoff (up to 1 s, then 2 s, full jitter) besides its
        // round trips.
        assert!(recorded.iter().any(|c| c.attempts == 3 && c.latency > 1.0));
        assert!(recorded.len() > 100, "{}", recorded.len());
    }

    #[test]
    fn a_throttled_call_is_recorded_as_throttled_only() {
        let server = Server {
            capacity: Some(25.0),
            ..server()
        };
        let run = fleet(3).run(&server);
        let all = run.series.total(0.0, f64::INFINITY);
        assert!(all.throttled > 100, "{all:?}");
        let failed_attempts: u64 = run
            .troubled
            .iter()
            .map(|c| c.attempts - u64::from(c.ok))
            .sum();
        assert_eq!(failed_attempts, all.throttled);
        assert!(
            run.troubled
                .iter()
                .all(|c| c.met.throttled && !c.met.transient)
        );
    }
}
