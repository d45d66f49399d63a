//! The runtime's guards (`Bulkhead`, `ConcurrencyBudget`, `AdaptiveThrottle`) in every
//! scenario beside today's policies, and the no-regret table: for each policy, its distance
//! from the best policy on each scenario's headline figure.
//!
//! Each simulated client gets guards of its own, made by the policy's factories when the
//! client is built, as it gets a bucket of its own: a guard is a `static` of one process, and
//! each simulated client is one process.

use crate::scenario::{brooker, metastable, normal, outage, throttling};
use crate::sim::{GuardFactory, Policy, Strategy};
use retry_runtime::{AdaptiveConcurrency, AdaptiveThrottle, Bulkhead, ConcurrencyBudget, Guard};
use std::sync::Arc;
use std::time::Duration;

/// A bulkhead of `N` attempts in flight per client, an attempt beyond it refused at once.
pub fn bulkhead<const N: u32>() -> Arc<dyn Guard> {
    Arc::new(Bulkhead::new(N))
}

/// A bulkhead of `N` attempts in flight per client, an attempt beyond it waiting up to
/// `WAIT_MS` milliseconds for a place before it is refused.
pub fn bulkhead_wait<const N: u32, const WAIT_MS: u64>() -> Arc<dyn Guard> {
    Arc::new(Bulkhead::new(N).with_max_wait(Duration::from_millis(WAIT_MS)))
}

/// Envoy's retry budget per client: retries in flight (their backoff included) at most
/// `max(MIN, PERCENT % of the attempts in flight)`.
pub fn concurrency_budget<const PERCENT: u32, const MIN: u32>() -> Arc<dyn Guard> {
    Arc::new(ConcurrencyBudget::ratio(PERCENT as f64 / 100.0).with_min_concurrency(MIN))
}

/// The SRE book's client-side throttling per client, `k = K_TENTHS / 10` over a window of
/// `WINDOW_S` seconds, gating retries only (Google's Rust client libraries).
pub fn throttle<const K_TENTHS: u32, const WINDOW_S: u64>() -> Arc<dyn Guard> {
    Arc::new(
        AdaptiveThrottle::new(K_TENTHS as f64 / 10.0).with_window(Duration::from_secs(WINDOW_S)),
    )
}

/// [`throttle`] gating first attempts too (the SRE book's client).
pub fn throttle_all<const K_TENTHS: u32, const WINDOW_S: u64>() -> Arc<dyn Guard> {
    Arc::new(
        AdaptiveThrottle::new(K_TENTHS as f64 / 10.0)
            .with_window(Duration::from_secs(WINDOW_S))
            .with_first_attempts(true),
    )
}

/// A concurrency limit per client that sizes itself from its attempts' latency and failures.
pub fn adaptive_concurrency() -> Arc<dyn Guard> {
    Arc::new(AdaptiveConcurrency::new())
}

const BULKHEAD_4: &[GuardFactory] = &[bulkhead::<4>];
const ENVOY: &[GuardFactory] = &[concurrency_budget::<20, 3>];
const SRE: &[GuardFactory] = &[throttle::<20, 120>];
const SRE_ALL: &[GuardFactory] = &[throttle_all::<20, 120>];
const BULKHEAD_3_250: &[GuardFactory] = &[bulkhead_wait::<3, 250>];
const BULKHEAD_3_500: &[GuardFactory] = &[bulkhead_wait::<3, 500>];
const SRE_5S_BULKHEAD_4: &[GuardFactory] = &[throttle::<20, 5>, bulkhead::<4>];

/// The three guards with their defaults, each added to AWS standard mode: a bulkhead of 4
/// attempts in flight (a bulkhead has no default size; 4 is several times what a client of
/// these scenarios has in flight when nothing is wrong: 0.1 to 2), Envoy's retry budget
/// (20 %, at least 3), and the SRE book's throttling with `k = 2` over 2 minutes on retries
/// (the runtime's defaults).
pub const DEFAULTS: [Policy; 3] = [
    Policy::guarded("standard+bulkhead-4", Strategy::Standard, BULKHEAD_4),
    Policy::guarded("standard+concurrency-20%", Strategy::Standard, ENVOY),
    Policy::guarded("standard+throttle-k2", Strategy::Standard, SRE),
];

/// The settings explored for the no-regret search, beyond the defaults: the throttle gating
/// first attempts too, a bulkhead of 3 whose attempts wait for a place (250 ms or 500 ms),
/// in standard and adaptive mode, and a throttle over 5 s in front of a bulkhead of 4.
pub const EXPLORED: [Policy; 5] = [
    Policy::guarded("standard+throttle-k2-all", Strategy::Standard, SRE_ALL),
    Policy::guarded(
        "standard+bulkhead-3-wait-250ms",
        Strategy::Standard,
        BULKHEAD_3_250,
    ),
    Policy::guarded(
        "standard+bulkhead-3-wait-500ms",
        Strategy::Standard,
        BULKHEAD_3_500,
    ),
    Policy::guarded(
        "adaptive+bulkhead-3-wait-250ms",
        Strategy::Adaptive,
        BULKHEAD_3_250,
    ),
    Policy::guarded(
        "adaptive+throttle-k2-5s+bulkhead-4",
        Strategy::Adaptive,
        SRE_5S_BULKHEAD_4,
    ),
];

/// Every policy of the no-regret table, in report order: today's ([`Strategy::COMPARED`]),
/// the guards with their defaults, and the settings explored.
pub fn policies() -> Vec<Policy> {
    Strategy::COMPARED
        .iter()
        .map(|&s| Policy::of(s))
        .chain(DEFAULTS)
        .chain(EXPLORED)
        .collect()
}

/// The sizes of every scenario, as their own sections of SIMULATION.md run them, except where
/// said.
#[derive(Debug, Clone)]
pub struct Config {
    /// Normal operation, at 5 % of attempts failing only (the headline's error rate).
    pub normal: normal::Config,
    /// The seeds normal operation runs with: its headline is their mean, since the goal's
    /// margin (0.01 points, 6 calls of 60,000) is below what one seed's failures vary by.
    pub normal_seeds: u64,
    /// Normal operation of the same load from clients 20 times larger (100 calls per second
    /// each), at 5 %, one seed: not one of the goals, but what a guard sized for the
    /// scenarios' small clients does to a larger one.
    pub normal_large: normal::Config,
    /// The outage.
    pub outage: outage::Config,
    /// The metastable failure.
    pub metastable: metastable::Config,
    /// Throttling.
    pub throttling: throttling::Config,
    /// Brooker's contention, on full jitter; the headline is its largest size.
    pub brooker: brooker::Config,
}

impl Config {
    /// The full sizes; normal operation over 8 seeds, Brooker's contention at 50, 100 and 200
    /// clients (20 runs each).
    pub fn full() -> Config {
        Config {
            normal: normal::Config {
                error_rates: vec![HEADLINE_ERROR_RATE],
                ..normal::Config::full()
            },
            normal_seeds: 8,
            normal_large: normal::Config {
                clients: 10,
                rate_per_client: 100.0,
                error_rates: vec![HEADLINE_ERROR_RATE],
                ..normal::Config::full()
            },
            outage: outage::Config::full(),
            metastable: metastable::Config::full(),
            throttling: throttling::Config::full(),
            brooker: brooker::Config {
                clients: vec![50, 100, 200],
                ..brooker::Config::full()
            },
        }
    }

    /// The test sizes of every scenario, normal operation over 2 seeds.
    pub fn quick() -> Config {
        Config {
            normal: normal::Config::quick(),
            normal_seeds: 2,
            normal_large: normal::Config {
                clients: 1,
                rate_per_client: 100.0,
                ..normal::Config::quick()
            },
            outage: outage::Config::quick(),
            metastable: metastable::Config::quick(),
            throttling: throttling::Config::quick(),
            brooker: brooker::Config::quick(),
        }
    }
}

/// The error rate of normal operation's headline.
pub const HEADLINE_ERROR_RATE: f64 = 0.05;

/// What one policy did in every scenario.
#[derive(Debug, Clone)]
pub struct Row {
    /// The policy.
    pub policy: Policy,
    /// Normal operation at 5 %, one summary per seed (seed 1 first).
    pub normal: Vec<normal::Summary>,
    /// Normal operation at 5 % with clients of 100 calls per second.
    pub normal_large: normal::Summary,
    /// The outage.
    pub outage: outage::Summary,
    /// The metastable failure.
    pub metastable: metastable::Summary,
    /// Throttling.
    pub throttling: throttling::Summary,
    /// Brooker's contention, one point per size.
    pub brooker: Vec<brooker::PolicyPoint>,
}

/// Runs `policy` in every scenario of `config`.
pub fn run_one(config: &Config, policy: Policy) -> Row {
    let normal = (0..config.normal_seeds)
        .map(|i| {
            let c = normal::Config {
                seed: config.normal.seed + i,
                ..config.normal.clone()
            };
            normal::run_policy(&c, policy, HEADLINE_ERROR_RATE)
        })
        .collect();
    Row {
        policy,
        normal,
        normal_large: normal::run_policy(&config.normal_large, policy, HEADLINE_ERROR_RATE),
        outage: outage::run_policy(&config.outage, policy),
        metastable: metastable::run_policy(&config.metastable, policy),
        throttling: throttling::run_policy(&config.throttling, policy),
        brooker: brooker::run_policy(&config.brooker, policy),
    }
}

/// One policy's headline figure in each scenario: what that scenario's section reports as its
/// main result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headline {
    /// Normal operation: calls failed at 5 % of attempts failing, mean over the seeds.
    pub failed: f64,
    /// The outage: attempts reaching the server during it, per call offered during it.
    pub amplification: f64,
    /// The metastable failure: seconds from the trigger's end to recovery (`None`: never).
    pub recovered_after: Option<f64>,
    /// Throttling: attempts per successful call at steady state (the load carried over the
    /// goodput: `1 / (1 - throttled)` when every answer arrives in time).
    pub attempts_per_success: f64,
    /// Throttling: successful calls per second over C at steady state.
    pub goodput: f64,
    /// Brooker's contention at its largest size: mean calls.
    pub brooker_calls: f64,
    /// The same: mean time until every client has written or given up, milliseconds.
    pub brooker_time_ms: f64,
    /// The same: mean clients per run whose call gave up without writing.
    pub brooker_gave_up: f64,
}

impl Row {
    /// The headline figures of the row.
    pub fn headline(&self) -> Headline {
        let (failed, calls) = self.normal.iter().fold((0.0, 0.0), |(f, c), s| {
            let all = s.run.series.total(0.0, f64::INFINITY);
            (
                f + all.failed as f64,
                c + (all.failed + all.succeeded) as f64,
            )
        });
        let brooker = self
            .brooker
            .iter()
            .max_by_key(|p| p.clients)
            .expect("at least one size of Brooker's contention");
        Headline {
            failed: if calls == 0.0 { 0.0 } else { failed / calls },
            amplification: self.outage.amplification_outage,
            recovered_after: self.metastable.recovered_after,
            attempts_per_success: self.throttling.load / self.throttling.goodput,
            goodput: self.throttling.goodput,
            brooker_calls: brooker.calls,
            brooker_time_ms: brooker.time_ms,
            brooker_gave_up: brooker.gave_up,
        }
    }
}

/// The goal of the no-regret search: a preset that does, in every scenario, at most this
/// much worse than the best policy.
pub mod goal {
    /// Normal operation: at most this many more calls failed (a fraction of the calls: 0.01
    /// percentage points) than under the standard bucket.
    pub const FAILED_OVER_BUCKET: f64 = 0.0001;
    /// The outage: at most this amplification.
    pub const AMPLIFICATION: f64 = 1.1;
    /// The metastable failure: recovered at most this many seconds after the trigger's end.
    pub const RECOVERY_S: f64 = 5.0;
    /// Throttling and Brooker's contention: within this ratio of the best policy's figure
    /// (10 %), and no client of the contention giving up.
    pub const RATIO: f64 = 1.1;
}

/// One policy's distance from the best policy on each headline figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regret {
    /// The policy's headline figures.
    pub headline: Headline,
    /// Normal operation: percentage points of calls failed over the best policy's.
    pub normal_points: f64,
    /// The outage: amplification over the best (lowest) policy's, as a ratio.
    pub outage_ratio: f64,
    /// The metastable failure: seconds after the best policy's recovery (`None`: never
    /// recovered).
    pub metastable_s: Option<f64>,
    /// Throttling: the larger of attempts per success over the best policy's and the best
    /// goodput over the policy's, as a ratio.
    pub throttling_ratio: f64,
    /// Brooker's contention: the larger of calls and time over the best policy's, as a ratio,
    /// among the policies whose clients all wrote (`None`: some gave up).
    pub brooker_ratio: Option<f64>,
    /// Which goals the policy meets: normal operation, the outage, the metastable failure,
    /// throttling and Brooker's contention, in that order.
    pub meets: [bool; 5],
    /// The largest of its distances from the goals, each as a share of its goal's allowance
    /// (at most 1 in a scenario whose goal it meets): what "closest" ranks by. A metastable
    /// failure never recovered from, or a contention some of whose clients gave up, is
    /// infinitely far.
    pub worst_share: f64,
    /// The sum of those shares (those of goals met are below 1 each): what ranks two policies
    /// equally far from their worst goal.
    pub total_share: f64,
}

impl Regret {
    /// Whether the policy meets the goal in every scenario.
    pub fn meets_all(&self) -> bool {
        self.meets.iter().all(|&m| m)
    }
}

/// The no-regret table: each row's distance from the best row on each headline. Normal
/// operation's goal is against the standard bucket's figure, `bucket` (the best's when
/// `None`).
pub fn no_regret(headlines: &[Headline], bucket: Option<f64>) -> Vec<Regret> {
    let min = |f: &dyn Fn(&Headline) -> Option<f64>| {
        headlines.iter().filter_map(f).fold(f64::INFINITY, f64::min)
    };
    let best_failed = min(&|h| Some(h.failed));
    let best_amplification = min(&|h| Some(h.amplification));
    let best_recovery = min(&|h| h.recovered_after);
    let best_aps = min(&|h| Some(h.attempts_per_success));
    let best_goodput = headlines.iter().map(|h| h.goodput).fold(0.0, f64::max);
    let wrote = |h: &Headline| h.brooker_gave_up == 0.0;
    let best_calls = min(&|h| wrote(h).then_some(h.brooker_calls));
    let best_time = min(&|h| wrote(h).then_some(h.brooker_time_ms));
    let bucket = bucket.unwrap_or(best_failed);
    headlines
        .iter()
        .map(|&h| {
            let throttling_ratio =
                (h.attempts_per_success / best_aps).max(best_goodput / h.goodput);
            let brooker_ratio = wrote(&h)
                .then(|| (h.brooker_calls / best_calls).max(h.brooker_time_ms / best_time));
            // A hair of slack on the normal goal: the failed fractions are ratios of counts,
            // and a difference of exactly 0.01 points meets it.
            let meets = [
                h.failed <= bucket + goal::FAILED_OVER_BUCKET + 1e-12,
                h.amplification <= goal::AMPLIFICATION,
                h.recovered_after.is_some_and(|s| s <= goal::RECOVERY_S),
                throttling_ratio <= goal::RATIO,
                brooker_ratio.is_some_and(|r| r <= goal::RATIO),
            ];
            let shares = [
                100.0 * (h.failed - bucket) / (100.0 * goal::FAILED_OVER_BUCKET),
                h.amplification / goal::AMPLIFICATION,
                h.recovered_after
                    .map_or(f64::INFINITY, |s| s / goal::RECOVERY_S),
                (throttling_ratio - 1.0) / (goal::RATIO - 1.0),
                brooker_ratio.map_or(f64::INFINITY, |r| (r - 1.0) / (goal::RATIO - 1.0)),
            ];
            Regret {
                headline: h,
                worst_share: shares.into_iter().fold(0.0, f64::max),
                total_share: shares.iter().map(|s| s.max(0.0)).sum(),
                normal_points: 100.0 * (h.failed - best_failed),
                outage_ratio: h.amplification / best_amplification,
                metastable_s: h.recovered_after.map(|s| s - best_recovery),
                throttling_ratio,
                brooker_ratio,
                meets,
            }
        })
        .collect()
}

/// The index of the policy closest to the goal: the smallest worst share, then the smallest
/// total share.
pub fn closest(table: &[Regret]) -> Option<usize> {
    (0..table.len()).min_by(|&a, &b| {
        let key = |r: &Regret| (r.worst_share, r.total_share);
        let (ka, kb) = (key(&table[a]), key(&table[b]));
        ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    })
}

/// The no-regret table of `rows`, normal operation's goal against the row of the standard
/// bucket without guards, if `rows` has it.
pub fn table(rows: &[Row]) -> Vec<Regret> {
    let headlines: Vec<Headline> = rows.iter().map(Row::headline).collect();
    let bucket = rows
        .iter()
        .zip(&headlines)
        .find(|(r, _)| r.policy.strategy == Strategy::Standard && !r.policy.has_guards())
        .map(|(_, h)| h.failed);
    no_regret(&headlines, bucket)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headline() -> Headline {
        Headline {
            failed: 0.0001,
            amplification: 1.0,
            recovered_after: Some(3.0),
            attempts_per_success: 1.0,
            goodput: 1.0,
            brooker_calls: 100.0,
            brooker_time_ms: 1000.0,
            brooker_gave_up: 0.0,
        }
    }

    #[test]
    fn each_distance_is_from_the_best_row_and_each_goal_from_its_own_reference() {
        let best = headline();
        let other = Headline {
            failed: 0.0003,
            amplification: 2.0,
            recovered_after: None,
            attempts_per_success: 1.05,
            goodput: 0.8,
            brooker_calls: 50.0,
            brooker_time_ms: 500.0,
            brooker_gave_up: 1.0,
        };
        let table = no_regret(&[best, other], Some(0.00015));
        let (a, b) = (table[0], table[1]);
        assert_eq!(a.normal_points, 0.0);
        assert!(
            (b.normal_points - 0.02).abs() < 1e-12,
            "{}",
            b.normal_points
        );
        assert_eq!((a.outage_ratio, b.outage_ratio), (1.0, 2.0));
        assert_eq!((a.metastable_s, b.metastable_s), (Some(0.0), None));
        // Throttling: the worse of the two ratios, here goodput's.
        assert_eq!(a.throttling_ratio, 1.0);
        assert!((b.throttling_ratio - 1.25).abs() < 1e-12);
        // The contention's best is among the rows whose clients all wrote: fewer calls from
        // clients that gave up are not better.
        assert_eq!((a.brooker_ratio, b.brooker_ratio), (Some(1.0), None));
        assert!(a.meets_all());
        assert_eq!(b.meets, [false; 5]);
        assert!(a.worst_share <= 1.0 && b.worst_share.is_infinite());
        assert_eq!(closest(&table), Some(0));
    }

    #[test]
    fn the_goals_edges_are_met() {
        let edge = Headline {
            failed: 0.0002,
            amplification: 1.1,
            recovered_after: Some(5.0),
            ..headline()
        };
        let table = no_regret(&[headline(), edge], None);
        assert!(table[1].meets_all(), "{:?}", table[1]);
        let past = Headline {
            amplification: 1.1001,
            ..edge
        };
        assert!(!no_regret(&[headline(), past], None)[1].meets[1]);
    }
}
