//! Guards in the simulation: one written as a user writes one (the public API only) runs in a
//! simulated fleet, and the smallest cases of the runtime's guards assert the qualitative
//! results of SIMULATION.md's guard sections. Nothing here depends on how fast the machine is.

use retry_runtime::{Admit, AttemptKind, Guard, GuardContext, GuardOutcome};
use retry_sim::scenario::guards::{self, bulkhead, bulkhead_wait, throttle};
use retry_sim::scenario::{brooker, metastable, normal, outage};
use retry_sim::sim::{GuardFactory, Policy, Strategy};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A user's guard: refuses every retry (or every attempt), and counts what it was asked and
/// told.
struct NoRetries {
    refuse_first: bool,
    admitted: AtomicU64,
    refused: AtomicU64,
    settled: AtomicU64,
}

impl NoRetries {
    fn make(refuse_first: bool, made: &Mutex<Vec<Arc<NoRetries>>>) -> Arc<dyn Guard> {
        let guard = Arc::new(NoRetries {
            refuse_first,
            admitted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            settled: AtomicU64::new(0),
        });
        made.lock().unwrap().push(Arc::clone(&guard));
        guard
    }

    /// Whether every client that held one of the guards released it (the list holds the
    /// last reference).
    fn released(made: &Mutex<Vec<Arc<NoRetries>>>) -> bool {
        made.lock()
            .unwrap()
            .iter()
            .all(|g| Arc::strong_count(g) == 1)
    }

    fn totals(made: &Mutex<Vec<Arc<NoRetries>>>) -> (usize, u64, u64, u64) {
        let made = made.lock().unwrap();
        let sum = |f: fn(&NoRetries) -> &AtomicU64| {
            made.iter()
                .map(|g| f(g).load(Ordering::Relaxed))
                .sum::<u64>()
        };
        (
            made.len(),
            sum(|g| &g.admitted),
            sum(|g| &g.refused),
            sum(|g| &g.settled),
        )
    }
}

impl Guard for NoRetries {
    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if attempt.kind() == AttemptKind::First && !self.refuse_first {
            self.admitted.fetch_add(1, Ordering::Relaxed);
            Admit::Go
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            Admit::Refuse
        }
    }

    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {
        self.settled.fetch_add(1, Ordering::Relaxed);
    }

    fn name(&self) -> &'static str {
        "no_retries"
    }
}

static NO_RETRIES: Mutex<Vec<Arc<NoRetries>>> = Mutex::new(Vec::new());
static CLOSED: Mutex<Vec<Arc<NoRetries>>> = Mutex::new(Vec::new());

fn no_retries() -> Arc<dyn Guard> {
    NoRetries::make(false, &NO_RETRIES)
}

fn closed() -> Arc<dyn Guard> {
    NoRetries::make(true, &CLOSED)
}

#[test]
fn a_guard_written_against_the_public_api_runs_in_every_client_of_a_fleet() {
    let config = normal::Config::quick();
    const GUARDS: &[GuardFactory] = &[no_retries];
    let policy = Policy::guarded("standard+no-retries", Strategy::Standard, GUARDS);
    let s = normal::run_policy(&config, policy, 0.05);
    let all = s.run.series.total(0.0, f64::INFINITY);
    let (made, admitted, refused, settled) = NoRetries::totals(&NO_RETRIES);
    // One guard per client, asked about every first attempt and every retry.
    assert_eq!(made, config.clients);
    assert!(
        NoRetries::released(&NO_RETRIES),
        "each client released its guard"
    );
    assert_eq!(admitted, all.offered, "every first attempt admitted");
    assert_eq!(settled, admitted, "every admitted attempt settled once");
    // No retry reached the server: a call fails exactly when its first attempt does, with
    // that attempt's own error (the retry refused).
    assert_eq!(all.attempts, all.offered);
    assert_eq!(refused, all.attempts - all.served);
    assert_eq!(all.failed, refused);
    assert!(all.failed > 20, "{all:?}");

    // The same without the guard retries those calls.
    let plain = normal::run_one(&config, Strategy::Standard, 0.05);
    assert!(plain.failed_fraction < s.failed_fraction / 10.0);
}

#[test]
fn a_refused_first_attempt_ends_the_call_without_sending_anything() {
    let config = normal::Config::quick();
    const GUARDS: &[GuardFactory] = &[closed];
    let policy = Policy::guarded("standard+closed", Strategy::Standard, GUARDS);
    let s = normal::run_policy(&config, policy, 0.05);
    let all = s.run.series.total(0.0, f64::INFINITY);
    let (made, admitted, refused, settled) = NoRetries::totals(&CLOSED);
    assert_eq!(made, config.clients);
    assert_eq!((admitted, settled), (0, 0));
    assert_eq!(refused, all.offered);
    assert_eq!((all.attempts, all.succeeded), (0, 0));
    assert_eq!(all.failed, all.offered);
}

#[test]
fn a_guard_run_is_deterministic_for_a_seed() {
    let config = outage::Config::quick();
    let policy = guards::DEFAULTS[0];
    let a = outage::run_policy(&config, policy);
    let b = outage::run_policy(&config, policy);
    assert_eq!(a.run.series.bins, b.run.series.bins);
}

#[test]
fn brooker_a_throttle_takes_contention_for_overload_and_gives_writes_up() {
    let config = brooker::Config::quick();
    const THROTTLE: &[GuardFactory] = &[throttle::<20, 120>];
    const BULKHEAD: &[GuardFactory] = &[bulkhead::<4>];
    let plain = &brooker::run_policy(&config, Policy::of(Strategy::Standard))[0];
    let throttled = &brooker::run_policy(
        &config,
        Policy::guarded("throttle", Strategy::Standard, THROTTLE),
    )[0];
    let bulkhead = &brooker::run_policy(
        &config,
        Policy::guarded("bulkhead", Strategy::Standard, BULKHEAD),
    )[0];
    // A conflict is a request the backend did not accept: after a client's first one, its
    // retry is refused with probability (1 - 0) / (1 + 1).
    assert!(throttled.gave_up >= 5.0, "{throttled:?}");
    // A client with one call has one attempt in flight: a bulkhead never refuses it.
    assert_eq!(plain.gave_up, 0.0);
    assert_eq!(
        (bulkhead.calls, bulkhead.time_ms, bulkhead.gave_up),
        (plain.calls, plain.time_ms, 0.0)
    );
}

#[test]
fn metastable_a_bulkhead_per_client_sheds_the_trigger_that_the_bucket_works_off() {
    let config = metastable::Config::quick();
    let standard = metastable::run_one(&config, Strategy::Standard);
    let bulkhead = metastable::run_policy(&config, guards::DEFAULTS[0]);
    assert!(
        standard.recovered_after.is_none_or(|s| s > 20.0),
        "{:?}",
        standard.recovered_after
    );
    // At most 4 attempts per client in flight, 400 in all: the queue never holds more than
    // 0.8 s of work at half speed, under the 1 s timeout.
    assert!(
        bulkhead.recovered_after.is_some_and(|s| s <= 2.0),
        "{:?}",
        bulkhead.recovered_after
    );
    assert!(bulkhead.failed_fraction < standard.failed_fraction / 4.0);
}

#[test]
fn outage_a_bulkhead_whose_attempts_wait_holds_the_load_near_the_offered_load() {
    let config = outage::Config::quick();
    const WAITING: &[GuardFactory] = &[bulkhead_wait::<3, 250>];
    let standard = outage::run_one(&config, Strategy::Standard);
    let waiting = outage::run_policy(
        &config,
        Policy::guarded("bulkhead-3-wait", Strategy::Standard, WAITING),
    );
    // Retries sleeping their backoff hold the places; waiters, first attempts and retries
    // alike, take the places that free in the order they came (a retry does not keep the
    // place its failed attempt freed ahead of the line), so the storm stays well under the
    // standard mode's.
    assert!(
        waiting.amplification_outage <= 1.4,
        "{}",
        waiting.amplification_outage
    );
    assert!(waiting.amplification_outage < standard.amplification_outage * 0.75);
    assert!(standard.amplification_outage > 1.5);
    assert!(waiting.goodput_recovery <= standard.goodput_recovery + 1.0);
}
