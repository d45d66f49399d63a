//! The no-regret table at every client size, and the overload scenario: every scenario of the
//! guards section with the same offered load in clients of 5, 100 and 1,000 calls a second,
//! for the policies that size nothing by hand beside those that do.

use crate::scenario::guards::{self, adaptive_concurrency, bulkhead_wait};
use crate::scenario::{metastable, normal, outage, throttling};
use crate::sim::{GuardFactory, Policy, Strategy};

/// The client sizes, calls per second each.
pub const SIZES: [f64; 3] = [5.0, 100.0, 1000.0];

const LIMIT: &[GuardFactory] = &[adaptive_concurrency];
const BULKHEAD_3_250: &[GuardFactory] = &[bulkhead_wait::<3, 250>];

/// The preset: AWS standard mode (the default) and one `AdaptiveConcurrency` per client.
pub const PRESET: Policy =
    Policy::guarded("standard+adaptive-concurrency", Strategy::Standard, LIMIT);

/// The policies of the table: the standard bucket (normal operation's reference), the
/// bulkhead the guards section found closest (sized for its clients), and the preset.
pub fn policies() -> Vec<Policy> {
    vec![
        Policy::of(Strategy::Standard),
        Policy::guarded(
            "standard+bulkhead-3-wait-250ms",
            Strategy::Standard,
            BULKHEAD_3_250,
        ),
        PRESET,
    ]
}

/// Clients of `size` calls a second carrying `load` calls a second: at least one, the load
/// kept.
pub fn clients(load: f64, size: f64) -> (usize, f64) {
    let n = (load / size).round().max(1.0) as usize;
    (n, load / n as f64)
}

/// The guards section's sizes with the same offered load in clients of `size` calls a
/// second. The metastable and throttling scenarios fix each client's rate from the load, the
/// number of clients given: there the size is the load over the clients, rounded.
pub fn config(base: &guards::Config, size: f64) -> guards::Config {
    let mut c = base.clone();
    let resize_normal = |n: &mut normal::Config| {
        (n.clients, n.rate_per_client) = clients(n.clients as f64 * n.rate_per_client, size);
    };
    resize_normal(&mut c.normal);
    resize_normal(&mut c.normal_large);
    let o: &mut outage::Config = &mut c.outage;
    (o.clients, o.rate_per_client) = clients(o.clients as f64 * o.rate_per_client, size);
    let m: &mut metastable::Config = &mut c.metastable;
    m.clients = clients(metastable::LOAD * metastable::CAPACITY, size).0;
    let t: &mut throttling::Config = &mut c.throttling;
    t.clients = clients(2.0 * t.capacity, size).0;
    c
}
