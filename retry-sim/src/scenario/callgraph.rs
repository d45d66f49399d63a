//! The call graph: users calling through tiers of services to a leaf, every hop retrying.
//!
//! Tier 0 is the users' client processes (Poisson arrivals, an open loop, as in a fleet);
//! tiers 1 to d - 1 are services, each a set of replica processes with retry state of their
//! own; tier d, the leaf, is the simulated [`Server`] with its faults. A request from tier i
//! goes to a replica of tier i + 1 drawn uniformly, and carries what the caller's attempt
//! writes on the wire: its time left and its number. The replica runs its handler under
//! `retry_runtime::__private::serve`, the engine of `tower::ServerLayer`: its `fan_out` calls
//! to the next tier (made side by side; the first to fail fails the request, and the others
//! are dropped) clamp their deadlines to the caller's, and tell the request when they give up
//! retrying. The answer is `Ok`; a 5xx that says not to retry it ([`SimError::DoNotRetry`])
//! when a call gave up and the hop's [`Rule`] answers so; a plain 5xx otherwise; or a 504
//! when the caller's deadline passed first. A request that was its caller's retry makes one
//! attempt of each call when the rule stops the chain (Kitex's "chain stop").
//!
//! Every process of a run follows the same [`Rule`]. Under the rules that answer, every
//! service runs behind the layer, the leaf included: a leaf request carries its caller's
//! attempt's time left too, and the leaf drops a request still queued when that deadline passes
//! without serving it ([`Rule::sheds`]); under the others the leaf does all the work it is sent.
//! The leaf is down for 30 s, or slows to half speed for 10 s under a load of 0.8 of its
//! capacity (the metastable section's trigger), or fails 5 % of its requests on their own for
//! the whole run ([`Fault`]).

use crate::scenario::metastable;
use crate::sim::{
    self, AllOk, Answer, Client, Keys, Rng, Series, SharedRng, SharedSeries, SimError, Strategy,
};
use crate::world::{Server, World};
use retry_runtime::__private::{CHAIN_STOP, serve};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

/// What every process of a run does about retries: its retry policy, and the two rules of the
/// server side of a hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The name in tables and CSV files.
    pub name: &'static str,
    /// The retry policy of every client, users and replicas alike.
    pub strategy: Strategy,
    /// A service whose calls gave up retrying answers its error with "do not retry"
    /// (`x-should-retry: false`), which its caller does not retry.
    pub answers: bool,
    /// A service serving its caller's retry makes one attempt of each of its calls.
    pub chain_stop: bool,
    /// The leaf runs behind the layer too: it reads the deadline its request carries (the
    /// time left its caller's attempt wrote), and drops a request still queued when that
    /// passes without serving it (see `World::attempt_within`). The rules that answer are
    /// those where every service runs behind `tower::ServerLayer`, the leaf included; under
    /// the others the leaf does all the work it is sent.
    pub sheds: bool,
}

impl Rule {
    /// AWS standard settings without a bucket, nothing on the server side.
    pub const NAIVE: Rule = Rule {
        name: "naive",
        strategy: Strategy::NoBucket,
        answers: false,
        chain_stop: false,
        sheds: false,
    };
    /// AWS standard mode (the token bucket of 500) in every process.
    pub const STANDARD: Rule = Rule {
        name: "standard",
        strategy: Strategy::Standard,
        answers: false,
        chain_stop: false,
        sheds: false,
    };
    /// A 20 % retry budget per process instead of the bucket.
    pub const BUDGET: Rule = Rule {
        name: "budget-20%",
        strategy: Strategy::Budget,
        answers: false,
        chain_stop: false,
        sheds: false,
    };
    /// Kitex's rule on standard mode: a retried request is not retried downstream.
    pub const KITEX: Rule = Rule {
        name: "kitex",
        strategy: Strategy::Standard,
        answers: false,
        chain_stop: true,
        sheds: false,
    };
    /// Standard mode and the "do not retry" answers of a service whose calls gave up, every
    /// service behind the layer, the leaf shedding what its deadline passed.
    pub const STOP_ANSWERS: Rule = Rule {
        name: "stop-answers",
        strategy: Strategy::Standard,
        answers: true,
        chain_stop: false,
        sheds: true,
    };
    /// Standard mode, the "do not retry" answers and the chain stop, the leaf shedding.
    pub const STOP_ANSWERS_CHAIN_STOP: Rule = Rule {
        name: "stop-answers+chain-stop",
        strategy: Strategy::Standard,
        answers: true,
        chain_stop: true,
        sheds: true,
    };

    /// The rules compared, in report order.
    pub const ALL: [Rule; 6] = [
        Rule::NAIVE,
        Rule::STANDARD,
        Rule::BUDGET,
        Rule::KITEX,
        Rule::STOP_ANSWERS,
        Rule::STOP_ANSWERS_CHAIN_STOP,
    ];

    /// `naive` with the leaf behind the layer, shedding what its deadline passed: what the
    /// shedding does without the answers and without a bucket (the overload trigger only).
    pub const NAIVE_SHEDDING: Rule = Rule {
        name: "naive+leaf-shedding",
        sheds: true,
        ..Rule::NAIVE
    };
    /// `standard` with the leaf behind the layer, shedding: `stop-answers` without the answers
    /// (the overload trigger only).
    pub const STANDARD_SHEDDING: Rule = Rule {
        name: "standard+leaf-shedding",
        sheds: true,
        ..Rule::STANDARD
    };

    /// The leaf's shedding under the rules that do not answer, to tell what it does from what
    /// the answers do.
    pub const SHEDDING_ALONE: [Rule; 2] = [Rule::NAIVE_SHEDDING, Rule::STANDARD_SHEDDING];

    /// What `tower::ServerLayer` does today on standard mode: the answers always, the chain
    /// stop as the runtime's `CHAIN_STOP` says, and the deadline of every request, so the leaf
    /// sheds.
    pub const SERVER_LAYER: Rule = Rule {
        name: "server-layer (default)",
        strategy: Strategy::Standard,
        answers: true,
        chain_stop: CHAIN_STOP,
        sheds: true,
    };

    /// Whether the two rules run the same processes (their names aside).
    pub fn same_as(&self, other: &Rule) -> bool {
        (self.strategy, self.answers, self.chain_stop, self.sheds)
            == (other.strategy, other.answers, other.chain_stop, other.sheds)
    }

    /// The rule of [`Rule::ALL`] that `self` runs the same processes as, if any.
    pub fn twin(&self) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.same_as(self))
    }
}

/// The shape of a call graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The retrying hops: users, then `depth - 1` tiers of services, then the leaf (1: the
    /// users call the leaf).
    pub depth: usize,
    /// The calls each service request makes to the next tier, side by side; all must succeed.
    pub fan_out: usize,
}

impl Shape {
    /// Depths 1 to 4 at fan-out 1, then 2 to 4 at fan-out 3 (at depth 1 the users call the
    /// leaf: there is no service to fan out).
    pub const ALL: [Shape; 7] = [
        Shape::chain(1),
        Shape::chain(2),
        Shape::chain(3),
        Shape::chain(4),
        Shape::tree(2, 3),
        Shape::tree(3, 3),
        Shape::tree(4, 3),
    ];

    /// `depth` hops in a chain (fan-out 1).
    pub const fn chain(depth: usize) -> Shape {
        Shape { depth, fan_out: 1 }
    }

    /// `depth` hops, each service request making `fan_out` calls.
    pub const fn tree(depth: usize, fan_out: usize) -> Shape {
        Shape { depth, fan_out }
    }

    /// Requests tier `tier` (1 to `depth`) receives per user call when nothing fails:
    /// `fan_out^(tier - 1)`.
    pub fn per_call(&self, tier: usize) -> f64 {
        (self.fan_out as f64).powi(tier as i32 - 1)
    }

    /// Leaf requests per user call when nothing fails: `fan_out^(depth - 1)`.
    pub fn leaf_per_call(&self) -> f64 {
        self.per_call(self.depth)
    }
}

/// What goes wrong at the leaf.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Every request fails at once with a 5xx from `start` for `len` seconds; the rest of the
    /// time the leaf serves whatever it gets. (The outage section's server throttles above
    /// 1.5 times its load, with a bucket of a tenth of a second's worth; a fan-out sends
    /// `fan_out^(depth - 1)` leaf requests at once per user call, bursts that such a bucket
    /// throttles when nothing is wrong.)
    Down {
        /// When the outage starts, in seconds.
        start: f64,
        /// How long it lasts.
        len: f64,
    },
    /// A FIFO queue served at `rate(t)` requests per second, which is `capacity` but half of
    /// it during the metastable section's trigger (from `metastable::TRIGGER_START` to
    /// `metastable::TRIGGER_END`), under a load of `metastable::LOAD` of its capacity.
    Overload {
        /// The leaf's rate at each second.
        rate: fn(f64) -> f64,
        /// Its rate when healthy, requests per second.
        capacity: f64,
    },
    /// Each request fails on its own (a 5xx) with probability `rate`, all run long.
    Transient {
        /// The probability.
        rate: f64,
    },
}

impl Fault {
    /// The name in tables and CSV files.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Down { .. } => "down",
            Fault::Overload { .. } => "overload",
            Fault::Transient { .. } => "transient",
        }
    }

    /// The seconds the fault lasts, `[from, to)` (the whole run for transient failures).
    pub fn window(&self, horizon: f64) -> (f64, f64) {
        match *self {
            Fault::Down { start, len } => (start, start + len),
            Fault::Overload { .. } => (metastable::TRIGGER_START, metastable::TRIGGER_END),
            Fault::Transient { .. } => (0.0, horizon),
        }
    }
}

/// One fault's runs: the leaf's fault, the load, and the hops' timeouts.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The name in tables and CSV files.
    pub name: &'static str,
    /// What goes wrong at the leaf.
    pub fault: Fault,
    /// Leaf requests per second when nothing fails (user calls offered per second times
    /// `fan_out^(depth - 1)`): every shape puts the same load on the leaf.
    pub leaf_load: f64,
    /// Requests per second each process receives (the users: offers) when nothing fails; sets
    /// how many user processes and replicas each tier has (at least one).
    pub per_process: f64,
    /// Seconds simulated; no user call starts after it.
    pub horizon: f64,
    /// Every hop's attempt timeout, if any.
    pub attempt_timeout: Option<Duration>,
    /// The seed.
    pub seed: u64,
}

impl Setup {
    /// The leaf's server.
    pub fn server(&self) -> Server {
        let none = Server {
            outage: None,
            capacity: None,
            queue: None,
            transient_rate: None,
        };
        match self.fault {
            Fault::Down { start, len } => Server {
                outage: Some((start, start + len)),
                ..none
            },
            Fault::Overload { rate, .. } => Server {
                queue: Some(rate),
                ..none
            },
            Fault::Transient { rate } => Server {
                transient_rate: Some(rate),
                ..none
            },
        }
    }

    /// Every hop's retry policy: AWS standard settings, and the setup's attempt timeout.
    pub fn policy(&self) -> Keys {
        match self.attempt_timeout {
            Some(t) => sim::aws_standard().attempt_timeout(t),
            None => sim::aws_standard(),
        }
    }

    /// The run of `rule` on a graph of `shape`, its processes sized for the setup's load.
    pub fn graph(&self, shape: Shape, rule: Rule) -> Graph {
        let user_rate = self.leaf_load / shape.leaf_per_call();
        let processes = |rate: f64| ((rate / self.per_process).round() as usize).max(1);
        Graph {
            shape,
            rule,
            users: processes(user_rate),
            replicas: (1..shape.depth)
                .map(|tier| processes(user_rate * shape.per_call(tier)))
                .collect(),
            load: Load::Poisson { rate: user_rate },
            horizon: self.horizon,
            policy: self.policy(),
            server: self.server(),
            seed: self.seed,
        }
    }
}

/// How the users offer their calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// `rate` calls per second between all users, Poisson arrivals, an open loop.
    Poisson {
        /// Calls per second.
        rate: f64,
    },
    /// Each user makes `calls` calls one after the other (a closed loop), from time 0.
    Sequential {
        /// Calls per user.
        calls: usize,
    },
}

/// One run of a call graph.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Depth and fan-out.
    pub shape: Shape,
    /// What every process does about retries.
    pub rule: Rule,
    /// User processes.
    pub users: usize,
    /// Replica processes of each service tier, 1 to `depth - 1`.
    pub replicas: Vec<usize>,
    /// How the users offer their calls.
    pub load: Load,
    /// Seconds simulated; no Poisson user call starts after it.
    pub horizon: f64,
    /// Every hop's retry policy.
    pub policy: Keys,
    /// The leaf.
    pub server: Server,
    /// The seed.
    pub seed: u64,
}

/// Requests counted at one tier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tier {
    /// Requests that arrived, per second of arrival.
    pub arrived: Vec<u64>,
    /// Requests sent, per second in which the user call they serve was offered.
    pub booked: Vec<u64>,
    /// Requests sent, in all.
    pub total: u64,
    /// Requests that arrived as their caller's retry (attempt 2 or later), in all.
    pub retries: u64,
    /// Requests answered "do not retry", in all (services only).
    pub told_not_to_retry: u64,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Run {
    /// Per second: the users' calls (offered, succeeded, failed, attempts booked to the second
    /// offered and successes booked so) and the leaf's counters (attempts that reached it,
    /// served, throttled, answers delivered, time queued).
    pub series: Series,
    /// Tiers 1 to `depth` (the leaf last), index 0 for tier 1.
    pub tiers: Vec<Tier>,
    /// User calls offered, in all.
    pub calls: u64,
    /// User calls that succeeded, in all.
    pub succeeded: u64,
}

impl Graph {
    /// Runs the graph on the paused clock.
    pub fn run(&self) -> Run {
        let graph = self.clone();
        sim::run(async move { graph.simulate().await })
    }

    async fn simulate(self) -> Run {
        let bins = self.horizon.ceil() as usize + 60;
        let series: SharedSeries = Arc::new(Mutex::new(Series::new(1.0, bins)));
        let rng: SharedRng = Arc::new(Mutex::new(Rng::new(self.seed)));
        let t0 = Instant::now();
        let world = World::new(t0, self.server.clone(), rng.clone(), series.clone());
        let tier = Tier {
            arrived: vec![0; bins],
            booked: vec![0; bins],
            ..Tier::default()
        };
        let services = self
            .replicas
            .iter()
            .map(|&n| {
                (0..n)
                    .map(|_| Client::new("service", self.policy, self.rule.strategy))
                    .collect()
            })
            .collect();
        let ctx = Rc::new(Ctx {
            t0,
            shape: self.shape,
            rule: self.rule,
            world,
            services,
            rng: rng.clone(),
            series: series.clone(),
            tiers: RefCell::new(vec![tier; self.shape.depth]),
            totals: RefCell::new((0, 0)),
        });
        let users: Vec<Rc<Client>> = (0..self.users)
            .map(|_| Rc::new(Client::new("user", self.policy, self.rule.strategy)))
            .collect();
        let mut tasks = Vec::new();
        for user in users {
            let own_seed = sim::lock(&rng).seed();
            let (ctx, graph) = (ctx.clone(), self.clone());
            tasks.push(tokio::task::spawn_local(async move {
                let mut own = Rng::new(own_seed);
                match graph.load {
                    Load::Poisson { rate } => {
                        let rate = rate / graph.users as f64;
                        let mut calls = Vec::new();
                        let mut t = own.exponential(rate);
                        while t < graph.horizon {
                            sleep_until(t0 + sim::secs(t)).await;
                            let (ctx, user, seed) = (ctx.clone(), user.clone(), own.seed());
                            calls.push(tokio::task::spawn_local(async move {
                                user_call(&ctx, &user, seed).await;
                            }));
                            t += own.exponential(rate);
                        }
                        for c in calls {
                            c.await.expect("a user call");
                        }
                    }
                    Load::Sequential { calls } => {
                        for _ in 0..calls {
                            user_call(&ctx, &user, own.seed()).await;
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.expect("a user");
        }
        let mut tiers = ctx.tiers.borrow().clone();
        let series = sim::lock(&series).clone();
        // The leaf's arrivals are the server's own count.
        if let Some(leaf) = tiers.last_mut() {
            leaf.arrived = series.bins.iter().map(|b| b.attempts).collect();
        }
        let (calls, succeeded) = *ctx.totals.borrow();
        Run {
            series,
            tiers,
            calls,
            succeeded,
        }
    }
}

/// What the requests of a run share.
struct Ctx {
    t0: Instant,
    shape: Shape,
    rule: Rule,
    /// The leaf.
    world: World,
    /// The replicas of tiers 1 to `depth - 1`, each with its own retry state.
    services: Vec<Vec<Client>>,
    /// The network's latencies, the replicas drawn and the calls' jitter seeds.
    rng: SharedRng,
    series: SharedSeries,
    tiers: RefCell<Vec<Tier>>,
    /// User calls offered and succeeded, in all.
    totals: RefCell<(u64, u64)>,
}

impl Ctx {
    fn now(&self) -> f64 {
        sim::since(self.t0)
    }

    fn count(&self, tier: usize, f: impl FnOnce(&mut Tier)) {
        f(&mut self.tiers.borrow_mut()[tier - 1]);
    }
}

/// The second `t` falls in, if inside `bins`.
fn bin(t: f64, bins: usize) -> Option<usize> {
    let i = t.floor();
    (i >= 0.0 && (i as usize) < bins).then_some(i as usize)
}

/// One user call: the user's client retries its requests to tier 1 as its rule says.
async fn user_call(ctx: &Rc<Ctx>, user: &Client, seed: u64) {
    let offered = ctx.now();
    if let Some(b) = sim::lock(&ctx.series).at(offered) {
        b.offered += 1;
    }
    let sent = std::cell::Cell::new(0);
    let ok = user
        .call(seed, || {
            sent.set(sent.get() + 1);
            request(ctx.clone(), 1, offered)
        })
        .await
        .is_ok();
    {
        let mut totals = ctx.totals.borrow_mut();
        totals.0 += 1;
        totals.1 += u64::from(ok);
    }
    let mut series = sim::lock(&ctx.series);
    if let Some(b) = series.at(ctx.now()) {
        if ok {
            b.succeeded += 1;
        } else {
            b.failed += 1;
        }
    }
    if let Some(b) = series.at(offered) {
        b.call_attempts += sent.get();
        b.offered_succeeded += u64::from(ok);
    }
}

/// One attempt's request to tier `tier` (the leaf if `tier` is the depth), for a user call
/// offered at `offered`. Its first poll runs inside the caller's attempt, where it reads what
/// the attempt writes on the wire.
fn request(ctx: Rc<Ctx>, tier: usize, offered: f64) -> Answer {
    Box::pin(async move {
        ctx.count(tier, |t| {
            t.total += 1;
            if let Some(i) = bin(offered, t.booked.len()) {
                t.booked[i] += 1;
            }
        });
        let wire = retry_runtime::attempt();
        let number = wire.as_ref().map_or(1, |a| a.number());
        if tier == ctx.shape.depth {
            if number > 1 {
                ctx.count(tier, |t| t.retries += 1);
            }
            let time_left = wire.and_then(|a| a.time_left()).filter(|_| ctx.rule.sheds);
            return ctx.world.attempt_within(time_left).await;
        }
        let time_left = wire.and_then(|a| a.time_left());
        let (there, back, replica) = {
            let mut r = sim::lock(&ctx.rng);
            (
                sim::secs(r.abs_normal(0.010, 0.002)),
                sim::secs(r.abs_normal(0.010, 0.002)),
                r.below(ctx.services[tier - 1].len()),
            )
        };
        sleep(there).await;
        let now = ctx.now();
        ctx.count(tier, |t| {
            if let Some(i) = bin(now, t.arrived.len()) {
                t.arrived[i] += 1;
            }
            t.retries += u64::from(number > 1);
        });
        // The replica is another process: its handler runs on a task of its own, and goes
        // on if this attempt is cut off (until the deadline it was given).
        let handler = tokio::task::spawn_local(handle(
            ctx.clone(),
            tier,
            replica,
            time_left,
            number,
            offered,
        ));
        let answer = handler.await.expect("a handler");
        sleep(back).await;
        answer
    })
}

/// A replica of tier `tier` serves a request that was its caller's attempt `number`, with
/// `time_left` (if the caller had a deadline): its calls to the next tier under `serve`.
async fn handle(
    ctx: Rc<Ctx>,
    tier: usize,
    replica: usize,
    time_left: Option<Duration>,
    number: u32,
    offered: f64,
) -> Result<(), SimError> {
    let single = ctx.rule.chain_stop && number > 1;
    let seeds: Vec<u64> = {
        let mut r = sim::lock(&ctx.rng);
        (0..ctx.shape.fan_out).map(|_| r.seed()).collect()
    };
    let client = &ctx.services[tier - 1][replica];
    let calls = seeds
        .into_iter()
        .map(|seed| {
            let ctx = ctx.clone();
            Some(Box::pin(
                client.call(seed, move || request(ctx.clone(), tier + 1, offered)),
            ))
        })
        .collect();
    let (out, gave_up) = serve(time_left, single, AllOk(calls)).await;
    let told = gave_up && ctx.rule.answers;
    if told && !matches!(out, Ok(Ok(()))) {
        ctx.count(tier, |t| t.told_not_to_retry += 1);
    }
    match out {
        Ok(Ok(())) => Ok(()),
        _ if told => Err(SimError::DoNotRetry),
        Ok(Err(_)) => Err(SimError::Unavailable),
        Err(timed_out) => Err(SimError::TimedOut(timed_out)),
    }
}

/// One tier's requests per user call, over the spans the tables report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Amplification {
    /// Requests of the user calls offered in the fault's first [`EARLY`] seconds, whenever
    /// sent, per such call: while the processes' buckets are still full.
    pub early: f64,
    /// Requests of the user calls offered during the fault, whenever sent, per such call.
    pub per_call: f64,
    /// Requests arriving during the fault per user call offered during it.
    pub during: f64,
    /// The same over the fault's last third.
    pub last_third: f64,
    /// The same over the 10 s after the fault.
    pub after: f64,
}

/// The span at the start of a fault over which [`Amplification::early`] counts.
pub const EARLY: f64 = 5.0;

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The setup's name.
    pub setup: &'static str,
    /// The leaf's fault.
    pub fault: Fault,
    /// Depth and fan-out.
    pub shape: Shape,
    /// What every process does about retries.
    pub rule: Rule,
    /// Tiers 1 to `depth` (the leaf last): requests per user call.
    pub tiers: Vec<Amplification>,
    /// User calls that failed, over all user calls.
    pub failed: f64,
    /// User calls that failed, in all.
    pub failed_calls: u64,
    /// User calls offered, in all.
    pub calls: u64,
    /// Of the user calls offered during the fault, those that succeeded.
    pub goodput_fault: f64,
    /// Of the user calls offered in the 10 s after the fault, those that succeeded.
    pub goodput_after: f64,
    /// Seconds from the fault's end until, in every second of the rest of the run, 95 % or
    /// more of the user calls offered in it succeed (the metastable section's measure);
    /// `None` if that never holds for the run's last 10 s, or for transient failures, which
    /// never end.
    pub recovered_after: Option<f64>,
    /// The leaf's highest arrivals in one second, over its load when nothing fails.
    pub leaf_peak: f64,
    /// The counters.
    pub run: Run,
}

impl Summary {
    /// The leaf's figures.
    pub fn leaf(&self) -> Amplification {
        self.tiers[self.shape.depth - 1]
    }

    /// The leaf's figures as multiples of its requests per user call when nothing fails.
    pub fn leaf_multiple(&self) -> Amplification {
        let m = self.shape.leaf_per_call();
        let a = self.leaf();
        Amplification {
            early: a.early / m,
            per_call: a.per_call / m,
            during: a.during / m,
            last_third: a.last_third / m,
            after: a.after / m,
        }
    }
}

/// The sum of `values` over the seconds `[from, to)`.
fn sum(values: &[u64], from: f64, to: f64) -> u64 {
    values
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as f64 >= from && (*i as f64) < to)
        .map(|(_, v)| v)
        .sum()
}

/// Runs `rule` on a graph of `shape` under `setup`, and sums it up.
pub fn run_one(setup: &Setup, shape: Shape, rule: Rule) -> Summary {
    let run = setup.graph(shape, rule).run();
    summarize(setup, shape, rule, run)
}

fn summarize(setup: &Setup, shape: Shape, rule: Rule, run: Run) -> Summary {
    let s = &run.series;
    let offered: Vec<u64> = s.bins.iter().map(|b| b.offered).collect();
    let (start, end) = setup.fault.window(setup.horizon);
    let third = end - (end - start) / 3.0;
    let calls_in = |from: f64, to: f64| sum(&offered, from, to);
    let tiers = run
        .tiers
        .iter()
        .map(|t| Amplification {
            early: sim::ratio(
                sum(&t.booked, start, start + EARLY),
                calls_in(start, start + EARLY),
            ),
            per_call: sim::ratio(sum(&t.booked, start, end), calls_in(start, end)),
            during: sim::ratio(sum(&t.arrived, start, end), calls_in(start, end)),
            last_third: sim::ratio(sum(&t.arrived, third, end), calls_in(third, end)),
            after: sim::ratio(sum(&t.arrived, end, end + 10.0), calls_in(end, end + 10.0)),
        })
        .collect();
    let recovered_after = match setup.fault {
        Fault::Transient { .. } => None,
        _ => {
            let horizon = setup.horizon;
            let mut last_bad = None;
            for (i, b) in s.bins.iter().enumerate() {
                let t = i as f64;
                if t >= end && t < horizon && (b.offered_succeeded as f64) < 0.95 * b.offered as f64
                {
                    last_bad = Some(t);
                }
            }
            match last_bad {
                None => Some(0.0),
                Some(t) if t + 1.0 < horizon - 10.0 => Some(t + 1.0 - end),
                Some(_) => None,
            }
        }
    };
    let fault = s.total(start, end);
    let after = s.total(end, end + 10.0);
    let leaf_load = setup.leaf_load;
    let leaf_peak = s
        .bins
        .iter()
        .take(setup.horizon.ceil() as usize)
        .map(|b| b.attempts as f64 / leaf_load)
        .fold(0.0, f64::max);
    Summary {
        setup: setup.name,
        fault: setup.fault,
        shape,
        rule,
        tiers,
        failed: sim::ratio(run.calls - run.succeeded, run.calls),
        failed_calls: run.calls - run.succeeded,
        calls: run.calls,
        goodput_fault: sim::ratio(fault.offered_succeeded, fault.offered),
        goodput_after: sim::ratio(after.offered_succeeded, after.offered),
        recovered_after,
        leaf_peak,
        run,
    }
}

/// User calls of the chain the loopback test runs (users → A → B → leaf C, the leaf down
/// throughout): 20, one after the other, from one user.
pub const LOOPBACK_CALLS: usize = 20;

/// What a graph whose leaf is down for its whole run sent, per user call.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Depth and fan-out.
    pub shape: Shape,
    /// What every process does about retries.
    pub rule: Rule,
    /// User calls made (all of them fail).
    pub calls: u64,
    /// Requests each tier received per user call, tiers 1 to `depth` (the leaf last).
    pub per_call: Vec<f64>,
}

impl Chain {
    /// Leaf requests per user call.
    pub fn leaf(&self) -> f64 {
        self.per_call[self.shape.depth - 1]
    }
}

/// `calls` user calls, one after the other from one user, through one replica per service
/// tier to a leaf that fails every request for the whole run; every hop AWS standard
/// settings without timeouts (`#[retry(max_attempts = 3)]`) under `rule`.
pub fn down_throughout(shape: Shape, rule: Rule, calls: usize, seed: u64) -> Chain {
    let graph = Graph {
        shape,
        rule,
        users: 1,
        replicas: vec![1; shape.depth - 1],
        load: Load::Sequential { calls },
        horizon: 0.0,
        policy: sim::aws_standard(),
        server: Server {
            outage: Some((0.0, f64::INFINITY)),
            capacity: None,
            queue: None,
            transient_rate: None,
        },
        seed,
    };
    let run = graph.run();
    Chain {
        shape,
        rule,
        calls: run.calls,
        per_call: run
            .tiers
            .iter()
            .map(|t| sim::ratio(t.total, run.calls))
            .collect(),
    }
}

/// The loopback test's chain (users → A → B → leaf C, [`LOOPBACK_CALLS`] calls) under `rule`.
pub fn loopback(rule: Rule) -> Chain {
    down_throughout(Shape::chain(3), rule, LOOPBACK_CALLS, 1)
}

/// The sizes of the scenario.
#[derive(Debug, Clone)]
pub struct Config {
    /// The shapes run under every fault.
    pub shapes: Vec<Shape>,
    /// The leaf down, no timeouts (the outage section's clients, and the loopback test's).
    pub down: Setup,
    /// The same with the 1 s attempt timeout at every hop.
    pub down_timed: Setup,
    /// The leaf's overload trigger.
    pub overload: Setup,
    /// Transient failures at the leaf, no timeouts (the normal-operation section's clients).
    pub transient: Setup,
    /// The same with the 1 s attempt timeout at every hop.
    pub transient_timed: Setup,
    /// The seeds of the transient runs, with timeouts and without (their figures are means
    /// over them: one seed's count of failed calls varies more than the goal's margin).
    pub transient_seeds: Vec<u64>,
    /// User calls of each chain whose leaf is down throughout ([`down_throughout`]).
    pub chain_calls: usize,
}

/// The metastable section's server at a tenth of its rate (the quick sizes').
fn tenth_rate(t: f64) -> f64 {
    metastable::service_rate(t) / 10.0
}

impl Config {
    /// Depths 1 to 4 at fan-out 1 and 3. The leaf down from t = 20 s for 30 s, under 300
    /// requests per second, 90 s (the outage section's timing), without timeouts and with 1 s
    /// attempt timeouts; the overload trigger at
    /// 0.8 of the metastable section's server (1,000 per second), 150 s; 5 % of requests
    /// failing under 1,000 per second (the normal-operation section's load) for 60 s, seeds
    /// 1 to 8, without timeouts and with 1 s attempt timeouts.
    pub fn full() -> Config {
        let transient = Setup {
            name: "transient",
            fault: Fault::Transient { rate: 0.05 },
            leaf_load: 1000.0,
            per_process: 5.0,
            horizon: 60.0,
            attempt_timeout: None,
            seed: 1,
        };
        let down = Setup {
            name: "down",
            fault: Fault::Down {
                start: 20.0,
                len: 30.0,
            },
            leaf_load: 300.0,
            per_process: 5.0,
            horizon: 90.0,
            attempt_timeout: None,
            seed: 1,
        };
        Config {
            shapes: Shape::ALL.to_vec(),
            down_timed: Setup {
                name: "down-1s",
                attempt_timeout: Some(Duration::from_secs(1)),
                ..down.clone()
            },
            down,
            overload: Setup {
                name: "overload",
                fault: Fault::Overload {
                    rate: metastable::service_rate,
                    capacity: metastable::CAPACITY,
                },
                leaf_load: metastable::LOAD * metastable::CAPACITY,
                per_process: 8.0,
                horizon: 150.0,
                attempt_timeout: Some(Duration::from_secs(1)),
                seed: 1,
            },
            transient_timed: Setup {
                name: "transient-1s",
                attempt_timeout: Some(Duration::from_secs(1)),
                ..transient.clone()
            },
            transient,
            transient_seeds: (1..=8).collect(),
            chain_calls: LOOPBACK_CALLS,
        }
    }

    /// The smallest case, for `cargo test`: the leaf down for 21 s under 60 requests per
    /// second, without timeouts and with them; the trigger on a leaf of a tenth of the metastable section's rate, 100 s; 5 %
    /// failing under 100 requests per second for 20 s, one seed.
    pub fn quick() -> Config {
        let full = Config::full();
        let transient = Setup {
            leaf_load: 100.0,
            horizon: 20.0,
            ..full.transient
        };
        let down = Setup {
            fault: Fault::Down {
                start: 5.0,
                len: 21.0,
            },
            leaf_load: 60.0,
            horizon: 36.0,
            ..full.down
        };
        Config {
            shapes: Shape::ALL.to_vec(),
            down_timed: Setup {
                name: full.down_timed.name,
                attempt_timeout: full.down_timed.attempt_timeout,
                ..down.clone()
            },
            down,
            overload: Setup {
                fault: Fault::Overload {
                    rate: tenth_rate,
                    capacity: metastable::CAPACITY / 10.0,
                },
                leaf_load: metastable::LOAD * metastable::CAPACITY / 10.0,
                horizon: 100.0,
                ..full.overload
            },
            transient_timed: Setup {
                leaf_load: transient.leaf_load,
                horizon: transient.horizon,
                ..full.transient_timed
            },
            transient,
            transient_seeds: vec![1],
            chain_calls: LOOPBACK_CALLS,
        }
    }
}

/// Everything the scenario runs.
#[derive(Debug, Clone)]
pub struct Results {
    /// The leaf down: every shape under every rule.
    pub down: Vec<Summary>,
    /// The same with 1 s attempt timeouts.
    pub down_timed: Vec<Summary>,
    /// The overload trigger: every shape under every rule.
    pub overload: Vec<Summary>,
    /// The same under [`Rule::SHEDDING_ALONE`].
    pub overload_shedding: Vec<Summary>,
    /// Transient failures without timeouts: every seed, shape and rule.
    pub transient: Vec<Summary>,
    /// Transient failures with 1 s attempt timeouts: every seed, shape and rule.
    pub transient_timed: Vec<Summary>,
    /// The leaf down throughout, [`Config::chain_calls`] sequential user calls: depths 1 to 4
    /// in a chain under every rule.
    pub chains: Vec<Chain>,
}

/// Runs every fault, shape and rule, on as many threads as the machine has (each run on a
/// paused-clock runtime of its own, so the figures do not depend on the threads).
pub fn run(config: &Config) -> Results {
    let mut jobs = Vec::new();
    let mut push = |setup: &Setup, rules: &[Rule]| {
        for &shape in &config.shapes {
            for &rule in rules {
                jobs.push((setup.clone(), shape, rule));
            }
        }
    };
    push(&config.down, &Rule::ALL);
    push(&config.down_timed, &Rule::ALL);
    push(&config.overload, &Rule::ALL);
    push(&config.overload, &Rule::SHEDDING_ALONE);
    for &seed in &config.transient_seeds {
        push(
            &Setup {
                seed,
                ..config.transient.clone()
            },
            &Rule::ALL,
        );
    }
    for &seed in &config.transient_seeds {
        push(
            &Setup {
                seed,
                ..config.transient_timed.clone()
            },
            &Rule::ALL,
        );
    }
    let mut summaries = par_map(jobs, |(setup, shape, rule)| run_one(setup, *shape, *rule));
    let mut take = |name: &str| -> Vec<Summary> {
        let (taken, rest) = summaries.drain(..).partition(|s| s.setup == name);
        summaries = rest;
        taken
    };
    let down = take(config.down.name);
    let down_timed = take(config.down_timed.name);
    let (overload, overload_shedding) = take(config.overload.name)
        .into_iter()
        .partition(|s| Rule::ALL.contains(&s.rule));
    let transient = take(config.transient.name);
    let transient_timed = take(config.transient_timed.name);
    let chain_jobs: Vec<(Shape, Rule)> = (1..=4)
        .flat_map(|d| Rule::ALL.map(|r| (Shape::chain(d), r)))
        .collect();
    let chains = par_map(chain_jobs, |(shape, rule)| {
        down_throughout(*shape, *rule, config.chain_calls, 1)
    });
    Results {
        down,
        down_timed,
        overload,
        overload_shedding,
        transient,
        transient_timed,
        chains,
    }
}

/// `f` of every item, in order, computed on as many threads as the machine has; the items
/// are started in order, so the heavier ones go first when they come first.
pub fn par_map<T: Sync, R: Send>(items: Vec<T>, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let out = f(item);
                    sim::lock(&done)[i] = Some(out);
                }
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .map(|r| r.expect("every item run"))
        .collect()
}
