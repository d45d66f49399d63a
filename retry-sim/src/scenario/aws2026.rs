//! The AWS SDKs' 2026 standard mode (`behavior = "2026"`) beside the classic one, in the
//! outage, throttling and normal-operation scenarios as they are defined there: same servers,
//! fleets and seeds, the policies [`Strategy::AWS_2026`] (standard and adaptive mode, each
//! under the classic and the 2026 rules).
//!
//! What the SDKs' update claims (aws-sdk-go-v2 #3400, smithy-rs #4670, aws-sdk-java-v2 #6925):
//! less retry amplification during an outage and a lower latency for calls that meet a
//! transient error. Besides each scenario's own figures, this measures the latency of those
//! calls: from a call's start to its end, for every call of which at least one attempt failed
//! with a transient error (a 5xx), or, in the throttling scenario, with throttling.

use crate::fleet::{Run, Troubled};
use crate::scenario::hedging::quantile;
use crate::scenario::{normal, outage, throttling};
use crate::sim::{self, Strategy};

/// The latency of the calls of a run that met an error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// How many calls.
    pub calls: usize,
    /// Of those, the calls that returned `Ok`.
    pub succeeded: usize,
    /// The median, in seconds (0 without calls).
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

impl Latency {
    /// The latency of the calls in `calls` that `pick` keeps (nearest-rank percentiles).
    pub fn of<'a>(
        calls: impl IntoIterator<Item = &'a Troubled>,
        pick: impl Fn(&Troubled) -> bool,
    ) -> Latency {
        let kept: Vec<&Troubled> = calls.into_iter().filter(|c| pick(c)).collect();
        let mut sorted: Vec<f64> = kept.iter().map(|c| c.latency).collect();
        sorted.sort_by(f64::total_cmp);
        Latency {
            calls: kept.len(),
            succeeded: kept.iter().filter(|c| c.ok).count(),
            p50: quantile(&sorted, 0.5),
            p90: quantile(&sorted, 0.9),
            p99: quantile(&sorted, 0.99),
            max: sorted.last().copied().unwrap_or(0.0),
        }
    }

    /// The calls of `run` that met a transient error on at least one attempt.
    pub fn transient(run: &Run) -> Latency {
        Latency::of(&run.troubled, |c| c.met.transient)
    }

    /// The share of the calls that returned `Ok` (0 without calls).
    pub fn success(&self) -> f64 {
        sim::ratio(self.succeeded as u64, self.calls as u64)
    }
}

/// One policy through the outage.
#[derive(Debug, Clone)]
pub struct Outage {
    /// How long the outage lasted, in seconds.
    pub outage_len: f64,
    /// The scenario's own figures (amplification, recovery, calls failed).
    pub summary: outage::Summary,
    /// Of the calls offered during the outage, the share that succeeded (whenever they
    /// ended).
    pub offered_in_it_succeeded: f64,
    /// Seconds from the start of the outage to the first second of it whose attempts are at
    /// most 1.05 times the calls offered in it: how long the retry storm lasted before the
    /// clients' buckets had run dry (the outage's length if it never fell that low).
    pub storm: f64,
    /// The calls that met a transient error (every call whose attempt reached the dead server).
    pub transient: Latency,
}

/// Runs `strategy` through the outage of `config`.
pub fn outage_one(config: &outage::Config, strategy: Strategy) -> Outage {
    let summary = outage::run_one(config, strategy);
    let s = &summary.run.series;
    let (start, end) = (config.outage_start, config.outage_start + config.outage_len);
    let storm = s
        .bins
        .iter()
        .enumerate()
        .map(|(i, b)| (i as f64 * s.width, b))
        .find(|(t, b)| *t >= start && *t < end && b.attempts as f64 <= 1.05 * b.offered as f64)
        .map_or(config.outage_len, |(t, _)| t - start);
    let during = s.total(start, end);
    Outage {
        outage_len: config.outage_len,
        offered_in_it_succeeded: sim::ratio(during.offered_succeeded, during.offered),
        transient: Latency::transient(&summary.run),
        storm,
        summary,
    }
}

/// One policy against the server that throttles half of the offered load.
#[derive(Debug, Clone)]
pub struct Throttling {
    /// The scenario's own figures at steady state (goodput, throttled, load).
    pub summary: throttling::Summary,
    /// Attempts per call offered at steady state.
    pub amplification: f64,
    /// Calls that failed at steady state, over the calls that ended in it.
    pub failed_fraction: f64,
    /// The calls offered at steady state that met throttling on at least one attempt.
    pub throttled: Latency,
    /// Those that met a transient error (none: this server only throttles).
    pub transient: Latency,
}

/// Runs `strategy` against the throttling server of `config`.
pub fn throttling_one(config: &throttling::Config, strategy: Strategy) -> Throttling {
    let summary = throttling::run_one(config, strategy);
    let steady = summary.run.series.total(config.steady_from, config.horizon);
    let in_steady = |c: &Troubled| c.offered_at >= config.steady_from;
    let troubled = &summary.run.troubled;
    Throttling {
        amplification: sim::ratio(steady.attempts, steady.offered),
        failed_fraction: sim::ratio(steady.failed, steady.failed + steady.succeeded),
        throttled: Latency::of(troubled, |c| in_steady(c) && c.met.throttled),
        transient: Latency::of(troubled, |c| in_steady(c) && c.met.transient),
        summary,
    }
}

/// One policy at one error rate in normal operation.
#[derive(Debug, Clone)]
pub struct Normal {
    /// The scenario's own figures (calls failed, attempts per call).
    pub summary: normal::Summary,
    /// The calls that met a transient error.
    pub transient: Latency,
}

/// Runs `strategy` in normal operation at `error_rate`.
pub fn normal_one(config: &normal::Config, strategy: Strategy, error_rate: f64) -> Normal {
    let summary = normal::run_one(config, strategy, error_rate);
    Normal {
        transient: Latency::transient(&summary.run),
        summary,
    }
}

/// The lengths of the shorter outages run beside the scenario's own, in seconds.
pub const SHORTER_OUTAGES: [f64; 3] = [1.0, 3.0, 10.0];

/// Every figure of the comparison.
#[derive(Debug, Clone)]
pub struct Results {
    /// The outage, one per policy of [`Strategy::AWS_2026`].
    pub outage: Vec<Outage>,
    /// The same outage, shorter: standard mode under both rules for each length of
    /// [`SHORTER_OUTAGES`] (by length, then policy).
    pub shorter: Vec<Outage>,
    /// Throttling, one per policy.
    pub throttling: Vec<Throttling>,
    /// Normal operation, every policy at every error rate of the config (by error rate, then
    /// policy).
    pub normal: Vec<Normal>,
}

/// Runs the policies of [`Strategy::AWS_2026`] in the three scenarios, and standard mode
/// through shorter outages.
pub fn run(o: &outage::Config, t: &throttling::Config, n: &normal::Config) -> Results {
    let policies = Strategy::AWS_2026;
    Results {
        outage: policies.iter().map(|&s| outage_one(o, s)).collect(),
        shorter: SHORTER_OUTAGES
            .iter()
            .flat_map(|&len| {
                let o = outage::Config {
                    outage_len: len,
                    ..o.clone()
                };
                [Strategy::Standard, Strategy::Standard2026].map(|s| outage_one(&o, s))
            })
            .collect(),
        throttling: policies.iter().map(|&s| throttling_one(t, s)).collect(),
        normal: n
            .error_rates
            .iter()
            .flat_map(|&p| policies.iter().map(move |&s| normal_one(n, s, p)))
            .collect(),
    }
}
