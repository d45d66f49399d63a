//! The simulator against reality: a fleet of client processes running the real runtime
//! (`retry_runtime::Policy`, one per client, so each has its own retry token bucket) over TCP
//! on 127.0.0.1 with real timers, against one axum server with an outage; and a two-tier
//! chain, users → a service behind `retry_runtime::tower::ServerLayer` → a leaf with the
//! outage. Each is run again by `what-if`'s simulator on the same settings (the same fleet,
//! load, outage, policies and throttle, written as a topology), and the two must agree on the
//! amplification during the outage (requests reaching the failing server per user call offered
//! during it) and on the time to recover (`whatif::measure`'s, computed from the same counts).
//!
//! The real fleet's counts come from the servers (each request carries its user call's offer
//! time, forwarded by the service) and the clients, binned as the simulator bins its own. Real
//! time makes runs slow and a loaded machine noisy: the test CI runs is short (a 3 s outage,
//! 100 ms backoffs) with tolerances for a shared machine; the full size, ignored, is the one
//! SIMULATION.md reports: `cargo test --release -p retry-sim --test loopback -- --ignored
//! --nocapture`. A mutex keeps the real runs of the two from sharing the machine.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retry_runtime::reqwest::{Error, error_for_status};
use retry_runtime::tower::ServerLayer;
use retry_runtime::wire::WithAttempt;
use retry_runtime::{Policy, TokenBucket};
use retry_sim::whatif::measure;
use retry_sim::whatif::simulate::{self, BIN, Bin};
use retry_sim::whatif::topology::{self, Options};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// One comparison's settings, shared by the real fleet and the topology the simulator runs.
#[derive(Debug, Clone, Copy)]
struct Settings {
    /// Client processes.
    clients: usize,
    /// Calls per second per client (Poisson).
    rate: f64,
    /// Seconds of offered load.
    duration: f64,
    /// The outage: start and length, seconds.
    start: f64,
    length: f64,
    /// Every policy's `initial_backoff`, ms (AWS standard settings otherwise: 3 attempts, the
    /// backoff doubling to 20 s, full jitter).
    backoff_ms: u64,
    /// The users' policy has the standard retry token bucket (else `bucket = "none"`).
    users_bucket: bool,
    /// Users → a service behind the layer (its policy without a bucket) → the leaf.
    chain: bool,
    /// The failing server answers 429 above this many requests per second.
    throttle: f64,
}

impl Settings {
    /// The topology of these settings, for `what-if`.
    fn topology(&self, seed: u64) -> String {
        let bucket = |b: bool| if b { "" } else { ", bucket = \"none\"" };
        let backoff = format!("initial_backoff = \"{}ms\"", self.backoff_ms);
        let users = format!(
            "[users]\nclients = {}\nrate = {}\ncalls = \"{}\"\npolicy = {{ {backoff}{} }}\n",
            self.clients,
            self.rate,
            if self.chain { "service" } else { "leaf" },
            bucket(self.users_bucket)
        );
        let service = if self.chain {
            format!(
                "[tier.service]\nserver_layer = true\ncalls = \"leaf\"\npolicy = {{ {backoff}{} }}\n",
                bucket(false)
            )
        } else {
            String::new()
        };
        format!(
            "duration = \"{}s\"\nseed = {seed}\nnetwork = \"0.1ms\"\n{users}{service}\
             [tier.leaf]\nthrottle = {}\n[[fault]]\ntier = \"leaf\"\nkind = \"outage\"\n\
             start = \"{}s\"\nlength = \"{}s\"\n",
            self.duration, self.throttle, self.start, self.length
        )
    }

    fn window(&self) -> (f64, f64) {
        (self.start, self.start + self.length)
    }
}

/// The figures compared: requests reaching the failing server per user call offered during the
/// outage, and its time to recover (`None`: never).
#[derive(Debug, Clone, Copy)]
struct Figures {
    amplification: f64,
    recovery: Option<f64>,
}

/// The simulator's figures of the leaf, the mean over `seeds`.
fn simulated(s: &Settings, seeds: u64) -> Figures {
    let mut amplification = 0.0;
    let mut recovery = Some(0.0);
    for seed in 1..=seeds {
        let (plan, _) = topology::load_str(
            "loopback.toml",
            &s.topology(seed),
            Path::new("."),
            &Options::default(),
            &|_| None,
        )
        .unwrap_or_else(|p| panic!("{p:?}"));
        let outcome = simulate::run(&plan, None);
        let figures = measure::figures(&plan, &outcome);
        let leaf = figures.iter().find(|f| f.name == "leaf").expect("the leaf");
        amplification += leaf.amplification_fault().expect("an outage") / seeds as f64;
        recovery = recovery
            .zip(leaf.recovery)
            .map(|(a, b)| a + b / seeds as f64);
    }
    Figures {
        amplification,
        recovery,
    }
}

/// Counters binned as the simulator bins its own.
#[derive(Default)]
struct Bins(Mutex<Vec<Bin>>);

impl Bins {
    fn at(&self, t: f64, f: impl FnOnce(&mut Bin)) {
        let i = (t.max(0.0) / BIN) as usize;
        let mut bins = self.0.lock().unwrap();
        if bins.len() <= i {
            bins.resize(i + 1, Bin::default());
        }
        f(&mut bins[i]);
    }

    fn take(&self) -> Vec<Bin> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// The failing server: its outage, its throttle's bucket, its counts.
struct Leaf {
    t0: Instant,
    settings: Settings,
    /// Tokens and when they were last refilled (a bucket of a tenth of a second's worth).
    throttle: Mutex<(f64, f64)>,
    bins: Bins,
}

const OFFERED: &str = "x-offered-us";

/// The offer time a request carries, seconds.
fn offered_of(headers: &HeaderMap) -> f64 {
    headers
        .get(OFFERED)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0.0, |us| us as f64 / 1e6)
}

async fn leaf(State(l): State<Arc<Leaf>>, headers: HeaderMap) -> Response {
    let now = l.t0.elapsed().as_secs_f64();
    let offered = offered_of(&headers);
    let (start, end) = l.settings.window();
    l.bins.at(now, |b| {
        b.arrived += 1;
        b.carried += u64::from(offered < end && now >= end);
    });
    l.bins.at(offered, |b| b.booked += 1);
    let status = if now >= start && now < end {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        let rate = l.settings.throttle;
        let mut t = l.throttle.lock().unwrap();
        t.0 = (t.0 + (now - t.1) * rate).min(rate / 10.0);
        t.1 = now;
        if t.0 >= 1.0 {
            t.0 -= 1.0;
            StatusCode::OK
        } else {
            StatusCode::TOO_MANY_REQUESTS
        }
    };
    if status == StatusCode::OK {
        l.bins.at(now, |b| b.ok += 1);
        l.bins.at(offered, |b| b.booked_ok += 1);
    }
    status.into_response()
}

/// The service of the chain: one process, its policy, the leaf's URL.
struct Service {
    client: reqwest::Client,
    policy: Policy,
    next: String,
}

async fn service(State(s): State<Arc<Service>>, headers: HeaderMap) -> Response {
    let offered = headers.get(OFFERED).cloned();
    let out = s
        .policy
        .retry(|| {
            let mut request = s.client.get(&s.next);
            if let Some(o) = &offered {
                request = request.header(OFFERED, o.clone());
            }
            let request = request.with_attempt();
            async move { error_for_status(request.send().await?) }
        })
        .await;
    match out {
        Ok(_) => StatusCode::OK.into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// A policy of the settings: AWS standard settings, the backoff from `backoff_ms`, with or
/// without the retry token bucket.
fn policy(s: &Settings, bucket: bool) -> Policy {
    let p = Policy::new().initial_backoff(Duration::from_millis(s.backoff_ms));
    if bucket {
        p
    } else {
        p.bucket(TokenBucket::none())
    }
}

async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, router).into_future());
    url
}

/// The real fleet's figures of the leaf, and the run's wall time.
fn real(s: &Settings) -> (Figures, f64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let (users, leaf_bins) = rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let t0 = Instant::now() + Duration::from_millis(200);
        let leaf_state = Arc::new(Leaf {
            t0,
            settings: *s,
            throttle: Mutex::new((s.throttle / 10.0, 0.0)),
            bins: Bins::default(),
        });
        let leaf_url = serve(
            Router::new()
                .route("/", get(leaf))
                .with_state(leaf_state.clone()),
        )
        .await;
        let url = if s.chain {
            let state = Arc::new(Service {
                client: client.clone(),
                policy: policy(s, false),
                next: leaf_url,
            });
            serve(
                Router::new()
                    .route("/", get(service))
                    .with_state(state)
                    .layer(ServerLayer::new()),
            )
            .await
        } else {
            leaf_url
        };
        let users = Arc::new(Bins::default());
        let end = s.start + s.length;
        let mut clients = Vec::new();
        for c in 0..s.clients {
            let (client, url, users, settings) = (client.clone(), url.clone(), users.clone(), *s);
            clients.push(tokio::spawn(async move {
                let policy = Arc::new(policy(&settings, settings.users_bucket));
                let mut rng = StdRng::seed_from_u64(c as u64 + 1);
                let mut exp = || -(1.0 - rng.random::<f64>()).ln() / settings.rate;
                let mut t = exp();
                let mut calls = Vec::new();
                while t < settings.duration {
                    tokio::time::sleep_until((t0 + Duration::from_secs_f64(t)).into()).await;
                    let (client, url, users, policy) =
                        (client.clone(), url.clone(), users.clone(), policy.clone());
                    calls.push(tokio::spawn(async move {
                        let offered = t0.elapsed().as_secs_f64();
                        users.at(offered, |b| b.arrived += 1);
                        let mark = format!("{}", (offered * 1e6) as u64);
                        let sent = std::sync::atomic::AtomicU64::new(0);
                        let out: Result<reqwest::Response, Error> = policy
                            .retry(|| {
                                sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let now = t0.elapsed().as_secs_f64();
                                users.at(now, |b| {
                                    b.sent += 1;
                                    b.carried += u64::from(offered < end && now >= end);
                                });
                                let request =
                                    client.get(&url).header(OFFERED, &mark).with_attempt();
                                async move { error_for_status(request.send().await?) }
                            })
                            .await;
                        let ok = out.is_ok();
                        let attempts = sent.load(std::sync::atomic::Ordering::Relaxed);
                        users.at(offered, |b| {
                            b.booked += attempts;
                            b.ok += u64::from(ok);
                            b.booked_ok += u64::from(ok);
                        });
                    }));
                    t += exp();
                }
                for c in calls {
                    c.await.unwrap();
                }
            }));
        }
        for c in clients {
            c.await.unwrap();
        }
        (users.take(), leaf_state.bins.take())
    });
    let wall = started.elapsed().as_secs_f64();
    let (start, end) = s.window();
    let amplification = measure::ratio(
        measure::sum(&leaf_bins, start, end, |b| b.arrived),
        measure::sum(&users, start, end, |b| b.arrived),
    );
    let recovery = measure::recovery(Some(s.window()), s.duration, &users, 1.0, |i| {
        let b = leaf_bins.get(i).copied().unwrap_or_default();
        (b.booked, b.carried, b.booked_ok, b.booked)
    });
    (
        Figures {
            amplification,
            recovery,
        },
        wall,
    )
}

/// The real runs, one at a time.
static REAL: Mutex<()> = Mutex::new(());

/// Whether `real` is within `share` of `sim` (or, for a time, within `slack` seconds of it).
fn close(real: f64, sim: f64, share: f64, slack: f64) -> bool {
    (real - sim).abs() <= share * sim.abs().max(real.abs()) || (real - sim).abs() <= slack
}

/// Runs `s` for real and in the simulator; prints both; asserts they agree within `share`
/// (times also within `slack` seconds, the measure's step at least).
fn compare(name: &str, s: &Settings, seeds: u64, share: f64, slack: f64) {
    let started = Instant::now();
    let sim = simulated(s, seeds);
    let sim_wall = started.elapsed().as_secs_f64();
    let (real, wall) = {
        let _one = REAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        real(s)
    };
    let show = |r: Option<f64>| r.map_or_else(|| "never".to_owned(), |r| format!("{r:.1} s"));
    eprintln!(
        "{name}: amplification during the outage {:.3} real, {:.3} simulated; time to recover {} \
         real, {} simulated ({seeds} seeds); {wall:.1} s of wall time real, {sim_wall:.1} s simulated",
        real.amplification,
        sim.amplification,
        show(real.recovery),
        show(sim.recovery),
    );
    assert!(
        close(real.amplification, sim.amplification, share, 0.0),
        "{name}: amplification {real:?} against {sim:?}"
    );
    match (real.recovery, sim.recovery) {
        (Some(r), Some(m)) => assert!(
            close(r, m, share, slack),
            "{name}: time to recover {real:?} against {sim:?}"
        ),
        (r, m) => assert_eq!(r, m, "{name}: time to recover"),
    }
}

/// The CI sizes: 100 clients of 4 calls per second, a 3 s outage, 100 ms backoffs.
fn short(users_bucket: bool, chain: bool) -> Settings {
    Settings {
        clients: 100,
        rate: 4.0,
        duration: 16.0,
        start: 2.0,
        length: 3.0,
        backoff_ms: 100,
        users_bucket,
        chain,
        throttle: 600.0,
    }
}

#[test]
fn a_loopback_fleet_and_the_simulator_agree_on_an_outage() {
    compare(
        "single tier, no bucket",
        &short(false, false),
        3,
        0.10,
        0.35,
    );
    compare(
        "chain behind ServerLayer",
        &short(true, true),
        3,
        0.10,
        0.35,
    );
}

/// The full sizes: 200 clients of 5 calls per second (1,000 per second), a 20 s outage, AWS
/// standard settings (the backoff from 1 s), a server that serves 1.5 times the offered load.
fn full(users_bucket: bool, chain: bool) -> Settings {
    Settings {
        clients: 200,
        rate: 5.0,
        duration: 45.0,
        start: 5.0,
        length: 20.0,
        backoff_ms: 1000,
        users_bucket,
        chain,
        throttle: 1500.0,
    }
}

#[test]
#[ignore = "real time: two and a half minutes; SIMULATION.md reports its figures"]
fn a_loopback_fleet_and_the_simulator_agree_at_full_size() {
    compare("single tier, standard", &full(true, false), 5, 0.10, BIN);
    compare("single tier, no bucket", &full(false, false), 5, 0.10, BIN);
    compare("chain behind ServerLayer", &full(true, true), 5, 0.10, BIN);
}
