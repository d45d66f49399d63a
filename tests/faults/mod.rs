//! The faults a test server injects: the scripted ones first, in order, then (if a plan is
//! set) one drawn from a seeded random plan with some probability, else none.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::VecDeque;
use std::sync::Mutex;

pub struct Faults<F> {
    script: Mutex<VecDeque<F>>,
    plan: Mutex<Option<Plan<F>>>,
}

struct Plan<F> {
    rng: StdRng,
    rate: f64,
    faults: Vec<F>,
}

impl<F> Default for Faults<F> {
    fn default() -> Self {
        Faults {
            script: Mutex::new(VecDeque::new()),
            plan: Mutex::new(None),
        }
    }
}

impl<F: Copy> Faults<F> {
    /// The next request's fault, if it gets one.
    pub fn next(&self) -> Option<F> {
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

    /// The next requests get these faults, in order.
    pub fn script(&self, faults: &[F]) {
        self.script.lock().unwrap().extend(faults);
    }

    /// After the script, each request gets a fault with probability `rate`, drawn uniformly
    /// from `faults`, from a generator seeded with `seed`.
    pub fn random(&self, seed: u64, rate: f64, faults: &[F]) {
        *self.plan.lock().unwrap() = Some(Plan {
            rng: StdRng::seed_from_u64(seed),
            rate,
            faults: faults.to_vec(),
        });
    }
}
