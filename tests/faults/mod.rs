//! What the test servers share: the faults they inject (the scripted ones first, in order,
//! then, if a plan is set, one drawn from a seeded random plan with some probability, else
//! none), the requests they saw, how many times they executed each, and the task that runs
//! them.

#![allow(dead_code)] // each test binary uses part of it

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// A test server running in the background: its address and its ledger `L`, which the tests
/// read through it. Dropping it stops the server.
pub struct Running<L> {
    pub addr: SocketAddr,
    pub state: Arc<L>,
    task: JoinHandle<()>,
}

impl<L> Running<L> {
    /// Runs `serve`, the server at `addr` keeping `state`, until dropped.
    pub fn spawn(
        addr: SocketAddr,
        state: Arc<L>,
        serve: impl Future<Output = ()> + Send + 'static,
    ) -> Running<L> {
        let task = tokio::spawn(serve);
        Running { addr, state, task }
    }
}

impl<L> Drop for Running<L> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<L> Deref for Running<L> {
    type Target = L;
    fn deref(&self) -> &L {
        &self.state
    }
}

/// A server's record: faults of type `F` to inject, every request it saw (an `A`), and how
/// many times it executed the request of each key `K`.
pub struct Ledger<F, A, K> {
    script: Mutex<VecDeque<F>>,
    plan: Mutex<Option<Plan<F>>>,
    /// The faults injected so far, in order.
    injected: Mutex<Vec<F>>,
    arrivals: Mutex<Vec<A>>,
    executed: Mutex<HashMap<K, u32>>,
}

struct Plan<F> {
    rng: StdRng,
    rate: f64,
    faults: Vec<F>,
}

impl<F, A, K> Default for Ledger<F, A, K> {
    fn default() -> Self {
        Ledger {
            script: Mutex::new(VecDeque::new()),
            plan: Mutex::new(None),
            injected: Mutex::new(Vec::new()),
            arrivals: Mutex::new(Vec::new()),
            executed: Mutex::new(HashMap::new()),
        }
    }
}

impl<F: Copy, A: Clone, K: Eq + Hash> Ledger<F, A, K> {
    /// The next request's fault, if it gets one.
    pub fn next_fault(&self) -> Option<F> {
        let fault = self.draw();
        if let Some(f) = fault {
            self.injected.lock().unwrap().push(f);
        }
        fault
    }

    fn draw(&self) -> Option<F> {
        if let Some(f) = self.script.lock().unwrap().pop_front() {
            return Some(f);
        }
        let mut plan = self.plan.lock().unwrap();
        let plan = plan.as_mut()?;
        plan.rng.random_bool(plan.rate).then(|| {
            let i = plan.rng.random_range(0..plan.faults.len());
            plan.faults[i]
        })
    }

    /// Panics unless each of `faults` was injected at least once: the random plan really tried
    /// them all.
    pub fn assert_each_injected(&self, faults: &[F])
    where
        F: PartialEq + Debug,
    {
        let injected = self.injected.lock().unwrap();
        for f in faults {
            assert!(injected.contains(f), "{f:?} never injected");
        }
    }

    /// The next requests get these faults, in order.
    pub fn script(&self, faults: &[F]) {
        self.script.lock().unwrap().extend(faults);
    }

    /// After the script, each request gets a fault with probability `rate`, drawn uniformly
    /// from `faults`, from a generator seeded with `seed`.
    pub fn random_faults(&self, seed: u64, rate: f64, faults: &[F]) {
        *self.plan.lock().unwrap() = Some(Plan {
            rng: StdRng::seed_from_u64(seed),
            rate,
            faults: faults.to_vec(),
        });
    }

    /// Notes a request.
    pub fn arrived(&self, arrival: A) {
        self.arrivals.lock().unwrap().push(arrival);
    }

    /// Every request so far, in order.
    pub fn arrivals(&self) -> Vec<A> {
        self.arrivals.lock().unwrap().clone()
    }

    /// Notes that the request of `key` was executed (acted on).
    pub fn execute(&self, key: K) {
        *self.executed.lock().unwrap().entry(key).or_default() += 1;
    }

    /// The requests seen since the last drain, forgotten here: a long run drains the ledger
    /// so that it does not grow.
    pub fn drain_arrivals(&self) -> Vec<A> {
        std::mem::take(&mut *self.arrivals.lock().unwrap())
    }

    /// How many times each request was executed since the last drain, forgotten here.
    pub fn drain_executed(&self) -> HashMap<K, u32> {
        std::mem::take(&mut *self.executed.lock().unwrap())
    }

    /// How many times the request of `key` was executed.
    pub fn executed<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> u32
    where
        K: Borrow<Q>,
    {
        self.executed.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

/// A port of 127.0.0.1 where nothing listens (it was free a moment ago): a refused connection.
pub fn refused_addr() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap()
}
