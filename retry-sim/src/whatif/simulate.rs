//! A [`Plan`] run on the paused clock: the users' processes offer their calls, every process
//! retries with the real engine under its tier's policy, every replica serves its requests
//! with its tier's work, queue, throttle and faults, and each tier's counters fill.
//!
//! A request from a caller takes one network hop to a replica of the tier drawn uniformly and
//! one hop back, and carries what the caller's attempt writes on the wire: its number and its
//! time left. The replica, at the request's arrival: fails it at once in an outage or (each on
//! its own) under transient failures; answers 429 above its throttle; else queues it if the
//! tier has a capacity (behind the layer, a request still queued when its deadline passes is
//! dropped without taking the replica's time), does its work (`latency`, times a brownout's
//! factor), and makes its calls, side by side, each a call of the engine under the tier's
//! policy; it answers `Ok` when all succeed. Its handler runs on a task of its own under
//! `retry_runtime::__private::serve`, the engine of `tower::ServerLayer`: with the layer under
//! its caller's deadline, its answer after calls that gave up saying not to retry it.

use super::model::{Edge, FaultKind, Load, Plan, PolicyPlan};
use super::policy::keys_of;
use super::progress::Progress;
use crate::sim::{self, AllOk, Answer, Client, Rng, SimError};
use retry_runtime::__private::{BreakerRef, BudgetRef, CHAIN_STOP, Site, serve};
use retry_runtime::TokenBucket;
use retry_runtime::grpc::{GrpcPolicy, ServiceConfig};
use retry_runtime::testing::{self, EarlyEnd, Overrides, Record};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

/// The width of a counting bin, seconds.
pub const BIN: f64 = 0.1;

/// Counters of one bin.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bin {
    /// Requests that arrived in the bin (the users: calls offered in it).
    pub arrived: u64,
    /// Of those, the ones answered `Ok` (the users: calls that succeeded).
    pub ok: u64,
    /// Requests of the user calls offered in the bin, whenever they arrived (the users: the
    /// attempts of those calls).
    pub booked: u64,
    /// Of those, the ones answered `Ok` (the users: as `ok`).
    pub booked_ok: u64,
    /// Requests that arrived in the bin (the users: attempts sent in it) for user calls offered
    /// before the last fault's end: what the faults leave behind once they are over.
    pub carried: u64,
    /// The users: attempts sent in the bin.
    pub sent: u64,
}

/// What the protections of a tier's processes refused, and how its calls ended: the engine's
/// early ends (`testing::Record::early_ends`), by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Retries the retry token bucket refused (`bucket_empty`).
    pub bucket_empty: u64,
    /// Retries the retry budget refused (`budget_exhausted`).
    pub budget_exhausted: u64,
    /// Retries the circuit breaker refused (`circuit_open`, after an attempt).
    pub circuit_open: u64,
    /// Calls the circuit breaker refused before any attempt (`circuit_open`, attempt 0).
    pub circuit_open_calls: u64,
    /// Retries or calls a guard refused (`refused`).
    pub guard: u64,
    /// Calls the deadline ended before their attempts were spent (`deadline`).
    pub deadline: u64,
    /// Calls that ended on a server's hint longer than `max_backoff` (`hint_too_long`).
    pub hint_too_long: u64,
    /// Calls of a non-idempotent function not retried (`not_idempotent`).
    pub not_idempotent: u64,
}

impl Refusals {
    fn count(&mut self, record: &Record) {
        for end in record.early_ends() {
            match end.reason {
                EarlyEnd::BucketEmpty => self.bucket_empty += 1,
                EarlyEnd::BudgetExhausted => self.budget_exhausted += 1,
                EarlyEnd::CircuitOpen if end.attempt == 0 => self.circuit_open_calls += 1,
                EarlyEnd::CircuitOpen => self.circuit_open += 1,
                EarlyEnd::Refused(_) => self.guard += 1,
                EarlyEnd::Deadline => self.deadline += 1,
                EarlyEnd::HintTooLong => self.hint_too_long += 1,
                EarlyEnd::NotIdempotent => self.not_idempotent += 1,
                _ => {}
            }
        }
    }

    /// Every early end.
    pub fn total(&self) -> u64 {
        self.bucket_empty
            + self.budget_exhausted
            + self.circuit_open
            + self.circuit_open_calls
            + self.guard
            + self.deadline
            + self.hint_too_long
            + self.not_idempotent
    }
}

/// What one tier (or the users) counted.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Per bin of [`BIN`] seconds from the start.
    pub bins: Vec<Bin>,
    /// Requests that arrived (the users: calls offered).
    pub requests: u64,
    /// Requests answered `Ok` (the users: calls that succeeded).
    pub ok: u64,
    /// Requests that arrived as their caller's retry.
    pub retries: u64,
    /// Requests answered 429 (the tier's throttle or a throttling fault).
    pub throttled: u64,
    /// Requests dropped from the queue unserved, their deadline passed.
    pub shed: u64,
    /// Error answers that said not to retry them (behind the layer).
    pub told_not_to_retry: u64,
    /// Seconds from a request's arrival to its answer (the users: from a call's start to its
    /// end, its attempts and backoffs included), in the order they ended.
    pub latencies: Vec<f64>,
    /// Calls the tier's processes made (the users: attempts' calls, one per request of a user
    /// call).
    pub calls: u64,
    /// Attempts of those calls.
    pub attempts: u64,
    /// Of those calls, the ones that failed.
    pub calls_failed: u64,
    /// What the protections refused, and the other early ends.
    pub refused: Refusals,
}

impl Counters {
    fn bin(&mut self, t: f64) -> &mut Bin {
        let i = (t.max(0.0) / BIN) as usize;
        if i >= self.bins.len() {
            self.bins.resize(i + 1, Bin::default());
        }
        &mut self.bins[i]
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The users' counters.
    pub users: Counters,
    /// Each tier's, in the plan's order.
    pub tiers: Vec<Counters>,
    /// Seconds from the start until the last call ended.
    pub simulated: f64,
}

/// Runs `plan` on the paused clock, reporting how far it is to `progress`.
pub fn run(plan: &Plan, progress: Option<Arc<Progress>>) -> Outcome {
    let plan = plan.clone();
    sim::run(async move { simulate(plan, progress).await })
}

/// One process: the engine under a policy of keys, or a gRPC method's policy. A client owns its
/// site (its protections' state), a kilobyte and more, so it is boxed.
enum Proc {
    Keys { client: Box<Client>, hedged: bool },
    Grpc(GrpcPolicy),
}

impl Proc {
    fn new(policy: &PolicyPlan, name: &'static str) -> Proc {
        match policy {
            PolicyPlan::Keys(k) => {
                let mut site = Site::new(name, keys_of(&k.values));
                if k.no_bucket {
                    site = site.bucket(TokenBucket::none());
                }
                if let Some(share) = k.budget {
                    site = site.budget(BudgetRef::Share(share));
                }
                if let Some(ratio) = k.breaker {
                    site = site.breaker(BreakerRef::Ratio(ratio));
                }
                for guard in &k.guards {
                    site = site.guard_shared(guard.make());
                }
                let timed = k.values.attempt_timeout.is_some() || k.values.deadline.is_some();
                let refuses = k.breaker.is_some() || !k.guards.is_empty();
                Proc::Keys {
                    client: Box::new(Client::of_site(site, refuses, timed)),
                    hedged: k.values.hedge_after.is_some(),
                }
            }
            PolicyPlan::Grpc(g) => {
                // Each process its own config value: its own retry throttle, as each channel has.
                let config = if g.google {
                    ServiceConfig::from_google_json(&g.json)
                } else {
                    ServiceConfig::from_json(&g.json)
                };
                let config = config.expect("the service config was checked when it was loaded");
                Proc::Grpc(config.policy(&g.service, &g.method))
            }
        }
    }

    /// One call, its attempts made by `attempt`, and what the engine recorded of it.
    async fn call<A, Fut>(&self, seed: u64, mut attempt: A) -> (Result<(), SimError>, Record)
    where
        A: FnMut() -> Fut,
        Fut: Future<Output = Result<(), SimError>>,
    {
        match self {
            Proc::Keys { client, hedged } => client.call_recorded(seed, *hedged, attempt).await,
            Proc::Grpc(policy) => {
                let call = policy.retry(|| {
                    let answer = attempt();
                    async move { answer.await.map_err(status_of) }
                });
                let (out, record) = testing::record(Overrides::new().seed(seed), call).await;
                (out.map_err(|_| SimError::Unavailable), record)
            }
        }
    }
}

/// A simulated answer as a gRPC status: a 5xx is `UNAVAILABLE`, a 429 `RESOURCE_EXHAUSTED`, a
/// timeout `DEADLINE_EXCEEDED`, and an answer that says not to retry carries the layer's
/// `grpc-retry-pushback-ms: -1`.
fn status_of(e: SimError) -> tonic::Status {
    match e {
        SimError::Throttled => tonic::Status::resource_exhausted("throttled"),
        SimError::TimedOut(_) => tonic::Status::deadline_exceeded("timed out"),
        SimError::DoNotRetry => {
            let mut s = tonic::Status::unavailable("its calls gave up");
            s.metadata_mut().insert(
                "grpc-retry-pushback-ms",
                tonic::metadata::MetadataValue::from_static("-1"),
            );
            s
        }
        SimError::Conflict => tonic::Status::aborted("conflict"),
        _ => tonic::Status::unavailable("unavailable"),
    }
}

/// One replica's state: its queue and its throttle's bucket.
#[derive(Debug, Default)]
struct Replica {
    busy_until: f64,
    tokens: f64,
    refilled_at: f64,
    /// The throttle's rate at the last refill (its bucket is refilled at this rate).
    rate: f64,
}

impl Replica {
    /// Takes a token of a throttle of `rate` per second (a bucket of a tenth of a second's
    /// worth, full at first; refilled at the rate in effect since the last request, so a
    /// throttling fault's lower rate takes over from the tier's own where it starts); `false`
    /// if none is left.
    fn admit(&mut self, t: f64, rate: f64) -> bool {
        if self.rate == 0.0 {
            self.tokens = rate / 10.0;
        } else {
            self.tokens += (t - self.refilled_at) * self.rate;
        }
        self.rate = rate;
        self.tokens = self.tokens.min(rate / 10.0);
        self.refilled_at = t;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Who makes a call: a user's process, or a replica of a tier.
#[derive(Debug, Clone, Copy)]
enum Who {
    User(usize),
    Replica(usize, usize),
}

/// What the requests of a run share.
struct Ctx {
    t0: Instant,
    plan: Plan,
    /// The users' processes.
    users: Vec<Proc>,
    /// The processes of each tier that calls others (one per replica).
    procs: Vec<Vec<Proc>>,
    replicas: Vec<Vec<RefCell<Replica>>>,
    rng: RefCell<Rng>,
    user_counters: RefCell<Counters>,
    tiers: Vec<RefCell<Counters>>,
    /// The log-normal's sigma of each tier's work (0: fixed).
    sigma: Vec<f64>,
    /// The last fault's end (infinite without faults).
    fault_end: f64,
}

impl Ctx {
    fn now(&self) -> f64 {
        sim::since(self.t0)
    }

    /// One network hop, drawn (none when the plan's network is instant).
    fn hop(&self) -> Option<Duration> {
        let mean = self.plan.network;
        (mean > 0.0).then(|| sim::secs(self.rng.borrow_mut().abs_normal(mean, mean / 5.0)))
    }

    fn proc(&self, who: Who) -> &Proc {
        match who {
            Who::User(u) => &self.users[u],
            Who::Replica(t, r) => &self.procs[t][r],
        }
    }

    fn counters(&self, who: Who) -> &RefCell<Counters> {
        match who {
            Who::User(_) => &self.user_counters,
            Who::Replica(t, _) => &self.tiers[t],
        }
    }
}

async fn simulate(plan: Plan, progress: Option<Arc<Progress>>) -> Outcome {
    let t0 = Instant::now();
    let seed = plan.seed;
    let name = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let procs = plan
        .tiers
        .iter()
        .map(|t| match &t.policy {
            Some(p) => {
                let n = name(&t.name);
                (0..t.replicas).map(|_| Proc::new(p, n)).collect()
            }
            None => Vec::new(),
        })
        .collect();
    let replicas = plan
        .tiers
        .iter()
        .map(|t| (0..t.replicas).map(|_| RefCell::default()).collect())
        .collect();
    let sigma = plan
        .tiers
        .iter()
        .map(|t| {
            if t.work.median > 0.0 && t.work.p99 > t.work.median {
                (t.work.p99 / t.work.median).ln() / 2.326_347_874
            } else {
                0.0
            }
        })
        .collect();
    let users = (0..plan.users.clients)
        .map(|_| Proc::new(&plan.users.policy, "users"))
        .collect();
    let clients = plan.users.clients;
    let fault_end = plan.fault_window().map_or(f64::INFINITY, |(_, end)| end);
    let ctx = Rc::new(Ctx {
        t0,
        tiers: plan.tiers.iter().map(|_| RefCell::default()).collect(),
        plan,
        users,
        procs,
        replicas,
        rng: RefCell::new(Rng::new(seed)),
        user_counters: RefCell::default(),
        sigma,
        fault_end,
    });
    let total_calls = match ctx.plan.users.load {
        Load::Sequential { calls } => calls as f64 * clients as f64,
        Load::Poisson { .. } => 0.0,
    };
    let ended = Rc::new(Cell::new(0u64));
    let sampler = progress.clone().map(|p| {
        let (ctx, ended) = (ctx.clone(), ended.clone());
        tokio::task::spawn_local(async move {
            loop {
                sleep(Duration::from_secs(1)).await;
                let share = match ctx.plan.users.load {
                    Load::Poisson { .. } => ctx.now() / ctx.plan.duration,
                    Load::Sequential { .. } => ended.get() as f64 / total_calls,
                };
                p.set(share.min(0.999));
            }
        })
    });
    let mut tasks = Vec::new();
    for user in 0..clients {
        let own_seed = ctx.rng.borrow_mut().seed();
        let (ctx, ended) = (ctx.clone(), ended.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let mut own = Rng::new(own_seed);
            match ctx.plan.users.load {
                Load::Poisson { rate } => {
                    let mut calls = Vec::new();
                    let mut t = own.exponential(rate);
                    while t < ctx.plan.duration {
                        sleep_until(ctx.t0 + sim::secs(t)).await;
                        let (ctx, seed, ended) = (ctx.clone(), own.seed(), ended.clone());
                        calls.push(tokio::task::spawn_local(async move {
                            user_call(ctx, user, seed).await;
                            ended.set(ended.get() + 1);
                        }));
                        t += own.exponential(rate);
                    }
                    for c in calls {
                        c.await.expect("a user call");
                    }
                }
                Load::Sequential { calls } => {
                    for _ in 0..calls {
                        user_call(ctx.clone(), user, own.seed()).await;
                        ended.set(ended.get() + 1);
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("a user");
    }
    if let Some(s) = sampler {
        s.abort();
    }
    if let Some(p) = &progress {
        p.set(1.0);
    }
    let simulated = ctx.now();
    let users = ctx.user_counters.borrow().clone();
    let tiers = ctx.tiers.iter().map(|t| t.borrow().clone()).collect();
    Outcome {
        users,
        tiers,
        simulated,
    }
}

/// One user call: a call of the user's process per request of `users.calls`, side by side.
async fn user_call(ctx: Rc<Ctx>, user: usize, seed: u64) {
    let offered = ctx.now();
    {
        let mut u = ctx.user_counters.borrow_mut();
        u.requests += 1;
        u.bin(offered).arrived += 1;
    }
    let attempts = Rc::new(Cell::new(0u64));
    let edges = ctx.plan.users.calls.clone();
    let ok = AllOk(calls(
        &ctx,
        Who::User(user),
        &edges,
        seed,
        offered,
        Some(&attempts),
    ))
    .await
    .is_ok();
    let end = ctx.now();
    let mut u = ctx.user_counters.borrow_mut();
    u.latencies.push(end - offered);
    let b = u.bin(offered);
    b.booked += attempts.get();
    b.ok += u64::from(ok);
    b.booked_ok += u64::from(ok);
    u.ok += u64::from(ok);
}

/// The calls one request (or user call) makes through the process `who`: one call of the
/// engine per request of each edge, side by side. `attempts` counts their attempts.
fn calls(
    ctx: &Rc<Ctx>,
    who: Who,
    edges: &[Edge],
    seed: u64,
    offered: f64,
    attempts: Option<&Rc<Cell<u64>>>,
) -> Vec<Option<Answer>> {
    let mut seeds = Rng::new(seed);
    let mut out = Vec::new();
    for e in edges {
        for _ in 0..e.count {
            let call = one_call(
                ctx.clone(),
                who,
                e.tier,
                seeds.seed(),
                offered,
                attempts.cloned(),
            );
            out.push(Some(Box::pin(call) as Answer));
        }
    }
    out
}

/// One call of `who`'s process to the tier `callee`, retried by the engine; its outcome booked
/// to `who`'s tier.
async fn one_call(
    ctx: Rc<Ctx>,
    who: Who,
    callee: usize,
    seed: u64,
    offered: f64,
    attempts: Option<Rc<Cell<u64>>>,
) -> Result<(), SimError> {
    let sent = Cell::new(0u64);
    let (out, record) = ctx
        .proc(who)
        .call(seed, || {
            sent.set(sent.get() + 1);
            if let Who::User(_) = who {
                let now = ctx.now();
                let mut u = ctx.user_counters.borrow_mut();
                let b = u.bin(now);
                b.sent += 1;
                b.carried += u64::from(offered < ctx.fault_end && now >= ctx.fault_end);
            }
            request(ctx.clone(), callee, offered)
        })
        .await;
    if let Some(a) = &attempts {
        a.set(a.get() + sent.get());
    }
    let mut c = ctx.counters(who).borrow_mut();
    c.calls += 1;
    c.attempts += sent.get();
    c.calls_failed += u64::from(out.is_err());
    c.refused.count(&record);
    out
}

/// One attempt's request to `tier`. Its first poll runs inside the caller's attempt, where it
/// reads what the attempt writes on the wire.
fn request(ctx: Rc<Ctx>, tier: usize, offered: f64) -> Answer {
    Box::pin(async move {
        let wire = retry_runtime::attempt();
        let number = wire.as_ref().map_or(1, |a| a.number());
        let time_left = wire.and_then(|a| a.time_left());
        let replica = ctx.rng.borrow_mut().below(ctx.plan.tiers[tier].replicas);
        if let Some(there) = ctx.hop() {
            sleep(there).await;
        }
        // The replica is another process: its handler runs on a task of its own, and goes on
        // when this attempt is cut off (until the deadline it was given, behind the layer).
        let handler = tokio::task::spawn_local(handle(
            ctx.clone(),
            tier,
            replica,
            time_left,
            number,
            offered,
        ));
        let answer = handler.await.expect("a handler");
        if let Some(back) = ctx.hop() {
            sleep(back).await;
        }
        answer
    })
}

/// What the faults of `tier`'s `replica` do at `t`.
#[derive(Debug, Clone, Copy)]
struct Now {
    outage: bool,
    transient: f64,
    brownout: f64,
    overload: f64,
    throttle: Option<f64>,
}

fn faults_at(ctx: &Ctx, tier: usize, replica: usize, t: f64) -> Now {
    let mut now = Now {
        outage: false,
        transient: 0.0,
        brownout: 1.0,
        overload: 1.0,
        throttle: ctx.plan.tiers[tier].throttle,
    };
    for f in ctx.plan.faults.iter().filter(|f| f.hits(tier, replica, t)) {
        match f.kind {
            FaultKind::Outage => now.outage = true,
            FaultKind::Transient { rate } => {
                now.transient = 1.0 - (1.0 - now.transient) * (1.0 - rate)
            }
            FaultKind::Brownout { factor } => now.brownout *= factor,
            FaultKind::Overload { factor } => now.overload *= factor,
            FaultKind::Throttling { capacity } => {
                now.throttle = Some(now.throttle.map_or(capacity, |c| c.min(capacity)));
            }
        }
    }
    now
}

/// A replica of `tier` serves a request that was its caller's attempt `number`, with
/// `time_left` if its caller had a deadline.
async fn handle(
    ctx: Rc<Ctx>,
    tier: usize,
    replica: usize,
    time_left: Option<Duration>,
    number: u32,
    offered: f64,
) -> Result<(), SimError> {
    let arrived = ctx.now();
    {
        let mut c = ctx.tiers[tier].borrow_mut();
        c.requests += 1;
        c.retries += u64::from(number > 1);
        let b = c.bin(arrived);
        b.arrived += 1;
        b.carried += u64::from(offered < ctx.fault_end && arrived >= ctx.fault_end);
        c.bin(offered).booked += 1;
    }
    let now = faults_at(&ctx, tier, replica, arrived);
    let unlucky = now.transient > 0.0 && ctx.rng.borrow_mut().uniform() < now.transient;
    let answer = if now.outage || unlucky {
        Err(SimError::Unavailable)
    } else if now.throttle.is_some_and(|rate| {
        !ctx.replicas[tier][replica]
            .borrow_mut()
            .admit(arrived, rate)
    }) {
        Err(SimError::Throttled)
    } else {
        serve_request(
            &ctx, tier, replica, time_left, number, offered, arrived, now,
        )
        .await
    };
    let mut c = ctx.tiers[tier].borrow_mut();
    c.latencies.push(ctx.now() - arrived);
    match &answer {
        Ok(()) => {
            c.ok += 1;
            c.bin(arrived).ok += 1;
            c.bin(offered).booked_ok += 1;
        }
        Err(SimError::Throttled) => c.throttled += 1,
        Err(SimError::DoNotRetry) => c.told_not_to_retry += 1,
        Err(_) => {}
    }
    answer
}

/// The request's queue, work and calls, under `serve`.
#[allow(clippy::too_many_arguments)]
async fn serve_request(
    ctx: &Rc<Ctx>,
    tier: usize,
    replica: usize,
    time_left: Option<Duration>,
    number: u32,
    offered: f64,
    arrived: f64,
    now: Now,
) -> Result<(), SimError> {
    let t = &ctx.plan.tiers[tier];
    // The layer reads the deadline when the request arrives.
    let time_left = time_left.filter(|_| t.server_layer);
    let deadline = time_left.map(|left| arrived + left.as_secs_f64());
    // FIFO: the requests ahead of this one are all known, so when the replica starts it is
    // known on arrival.
    let queued_until = match t.capacity {
        None => arrived,
        Some(capacity) => {
            let start = ctx.replicas[tier][replica].borrow().busy_until.max(arrived);
            if let Some(d) = deadline.filter(|&d| start >= d) {
                ctx.tiers[tier].borrow_mut().shed += 1;
                sleep_until(ctx.t0 + sim::secs(d)).await;
                // The layer's 504, after the caller stopped waiting.
                return Err(SimError::Unavailable);
            }
            let rate = capacity * faults_at(ctx, tier, replica, start).overload;
            let until = start + 1.0 / rate;
            ctx.replicas[tier][replica].borrow_mut().busy_until = until;
            until
        }
    };
    let work = if t.work.median > 0.0 {
        let median = t.work.median * now.brownout;
        let sigma = ctx.sigma[tier];
        if sigma > 0.0 {
            ctx.rng.borrow_mut().log_normal(median, sigma)
        } else {
            median
        }
    } else {
        0.0
    };
    let done = queued_until + work;
    let seed = ctx.rng.borrow_mut().seed();
    let single = t.server_layer && CHAIN_STOP && number > 1;
    let handler = {
        let ctx = ctx.clone();
        async move {
            if done > ctx.now() {
                sleep_until(ctx.t0 + sim::secs(done)).await;
            }
            let edges = &ctx.plan.tiers[tier].calls;
            if edges.is_empty() {
                return Ok(());
            }
            let edges = edges.clone();
            AllOk(calls(
                &ctx,
                Who::Replica(tier, replica),
                &edges,
                seed,
                offered,
                None,
            ))
            .await
        }
    };
    let (out, gave_up) = serve(time_left, single, handler).await;
    let told = gave_up && t.server_layer;
    match out {
        Ok(Ok(())) => Ok(()),
        _ if told => Err(SimError::DoNotRetry),
        Ok(Err(_)) => Err(SimError::Unavailable),
        Err(timed_out) => Err(SimError::TimedOut(timed_out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_admits_its_rate_and_a_lower_one_takes_over() {
        let mut r = Replica::default();
        // 100 per second: a bucket of 10, full at first.
        let first: usize = (0..20).filter(|_| r.admit(0.0, 100.0)).count();
        assert_eq!(first, 10);
        // A second refills 100, of which the bucket keeps 10.
        let next: usize = (0..20).filter(|_| r.admit(1.0, 100.0)).count();
        assert_eq!(next, 10);
        // 0.05 s later at 100 per second: 5 tokens; then a throttle of 20 per second caps the
        // bucket at 2.
        let lower: usize = (0..20).filter(|_| r.admit(1.05, 20.0)).count();
        assert_eq!(lower, 2);
        // Refilled at 20 per second from there: 0.5 s later, 2 again (10, capped at 2).
        let later: usize = (0..20).filter(|_| r.admit(1.55, 20.0)).count();
        assert_eq!(later, 2);
    }
}
