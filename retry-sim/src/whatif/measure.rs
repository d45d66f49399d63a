//! The figures of a run, per tier (the users first): attempts per user call, goodput, latency
//! percentiles, time to recover, and what the protections refused.
//!
//! Time to recover: from the end of the last fault until the tier is back, that is until, in
//! every window of one second from then on (sliding in steps of a tenth of one), the user calls
//! offered in the window cost the tier at most 1.05 times its requests per user call when
//! nothing fails, at least 95 % of those requests are answered `Ok` (the users: at least 95 % of
//! the calls succeed), and the requests still arriving for calls offered before the fault's
//! end (retries of calls it failed) are at most 5 % of that. Requests are booked to the second
//! their user call was offered in, so the time a request takes to reach a tier deep in the
//! graph does not move it to another window. A tier not back 10 s before the end of the
//! offered load is never back (`None`); one whose fault lasts to the end, too.

use super::model::{Load, Plan};
use super::simulate::{BIN, Bin, Counters, Outcome, Refusals};

/// The window a recovery is judged over, in bins.
const WINDOW: usize = (1.0 / BIN) as usize;
/// The most requests per user call a recovered window holds, over its tier's when nothing
/// fails.
pub const RECOVERED_AMPLIFICATION: f64 = 1.05;
/// The least share of a recovered window's requests answered `Ok`.
pub const RECOVERED_GOODPUT: f64 = 0.95;
/// The most requests of calls offered before the fault's end a recovered window holds, as a
/// share of its requests per user call when nothing fails.
pub const RECOVERED_CARRIED: f64 = 0.05;

/// Latency percentiles, seconds (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Quantiles {
    /// The median.
    pub p50: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
}

/// The figures of one tier, or of the users.
#[derive(Debug, Clone)]
pub struct Figures {
    /// `users`, or the tier's name.
    pub name: String,
    /// Its processes (users' clients, or replicas).
    pub processes: usize,
    /// Its policy, in one line (`-` for a tier that calls nothing).
    pub policy: String,
    /// Requests that arrived (the users: calls offered).
    pub requests: u64,
    /// Requests per user call when nothing fails (the users: requests each call sends).
    pub nominal: f64,
    /// Requests per user call that arrived (the users: attempts per call).
    pub per_call: f64,
    /// Requests that arrived during the faults' span (the users: attempts sent in it), per
    /// user call offered in it (`None` without faults).
    pub per_call_fault: Option<f64>,
    /// Share of requests answered `Ok` (the users: of calls that succeeded).
    pub goodput: f64,
    /// The same over the faults' span (`None` without faults).
    pub goodput_fault: Option<f64>,
    /// Latency of its answers (the users: of their calls, retries included).
    pub latency: Quantiles,
    /// Seconds from the last fault's end until it is back: `Some(0.0)` without faults, `None`
    /// when never (see the module's documentation).
    pub recovery: Option<f64>,
    /// Requests that arrived as their caller's retry.
    pub retries: u64,
    /// Requests answered 429.
    pub throttled: u64,
    /// Requests dropped unserved from its queue, their deadline passed.
    pub shed: u64,
    /// Error answers that said not to retry them.
    pub told_not_to_retry: u64,
    /// Calls its processes made, their attempts, and those that failed.
    pub calls: u64,
    /// Attempts of those calls.
    pub attempts: u64,
    /// Calls that failed.
    pub calls_failed: u64,
    /// What its processes' protections refused.
    pub refused: Refusals,
}

impl Figures {
    /// Requests per user call over those when nothing fails: the load the retries add (1: none).
    pub fn amplification(&self) -> f64 {
        self.per_call / self.nominal
    }

    /// The same during the faults' span.
    pub fn amplification_fault(&self) -> Option<f64> {
        self.per_call_fault.map(|x| x / self.nominal)
    }

    /// Share of requests not answered `Ok`.
    pub fn failed(&self) -> f64 {
        1.0 - self.goodput
    }
}

/// The figures of every tier of `outcome`, the users first.
pub fn figures(plan: &Plan, outcome: &Outcome) -> Vec<Figures> {
    let nominal = plan.nominal();
    let offered = &outcome.users.bins;
    let calls_total = outcome.users.requests;
    let window = plan.fault_window();
    let horizon = match plan.users.load {
        Load::Poisson { .. } => plan.duration,
        Load::Sequential { .. } => last_offered(offered),
    };
    let users_nominal: f64 = plan.users.calls.iter().map(|e| e.count as f64).sum();
    let mut out = Vec::with_capacity(plan.tiers.len() + 1);
    let users = &outcome.users;
    out.push(Figures {
        name: "users".to_owned(),
        processes: plan.users.clients,
        policy: plan.users.policy.describe().to_owned(),
        requests: users.requests,
        nominal: users_nominal,
        per_call: ratio(users.attempts, calls_total),
        per_call_fault: window.map(|(a, b)| {
            ratio(
                sum(offered, a, b, |x| x.sent),
                sum(offered, a, b, |x| x.arrived),
            )
        }),
        goodput: ratio(users.ok, users.requests),
        goodput_fault: window.map(|(a, b)| {
            ratio(
                sum(offered, a, b, |x| x.ok),
                sum(offered, a, b, |x| x.arrived),
            )
        }),
        latency: quantiles(&users.latencies),
        recovery: recovery(window, horizon, offered, users_nominal, |i| {
            let b = offered.get(i).copied().unwrap_or_default();
            (b.booked, b.carried, b.ok, b.arrived)
        }),
        ..counted(users)
    });
    for (t, (tier, c)) in plan.tiers.iter().zip(&outcome.tiers).enumerate() {
        let arrived = |b: &Bin| b.arrived;
        out.push(Figures {
            name: tier.name.clone(),
            processes: tier.replicas,
            policy: tier
                .policy
                .as_ref()
                .map_or_else(|| "-".to_owned(), |p| p.describe().to_owned()),
            requests: c.requests,
            nominal: nominal[t],
            per_call: ratio(c.requests, calls_total),
            per_call_fault: window.map(|(a, b)| {
                ratio(
                    sum(&c.bins, a, b, arrived),
                    sum(offered, a, b, |x| x.arrived),
                )
            }),
            goodput: ratio(c.ok, c.requests),
            goodput_fault: window
                .map(|(a, b)| ratio(sum(&c.bins, a, b, |x| x.ok), sum(&c.bins, a, b, arrived))),
            latency: quantiles(&c.latencies),
            recovery: recovery(window, horizon, offered, nominal[t], |i| {
                let b = c.bins.get(i).copied().unwrap_or_default();
                (b.booked, b.carried, b.booked_ok, b.booked)
            }),
            ..counted(c)
        });
    }
    out
}

/// The counts of `c` (the rest of the figures zero).
fn counted(c: &Counters) -> Figures {
    Figures {
        name: String::new(),
        processes: 0,
        policy: String::new(),
        requests: 0,
        nominal: 0.0,
        per_call: 0.0,
        per_call_fault: None,
        goodput: 0.0,
        goodput_fault: None,
        latency: Quantiles::default(),
        recovery: None,
        retries: c.retries,
        throttled: c.throttled,
        shed: c.shed,
        told_not_to_retry: c.told_not_to_retry,
        calls: c.calls,
        attempts: c.attempts,
        calls_failed: c.calls_failed,
        refused: c.refused,
    }
}

/// The end of the last bin in which a call was offered, seconds.
fn last_offered(offered: &[Bin]) -> f64 {
    offered
        .iter()
        .rposition(|b| b.arrived > 0)
        .map_or(0.0, |i| (i + 1) as f64 * BIN)
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The sum of `f` over the bins covering `[from, to)` seconds.
pub fn sum(bins: &[Bin], from: f64, to: f64, f: impl Fn(&Bin) -> u64) -> u64 {
    let first = (from / BIN).round() as usize;
    let last = if to.is_finite() {
        (to / BIN).round() as usize
    } else {
        bins.len()
    };
    bins.iter().take(last).skip(first).map(f).sum()
}

/// Nearest-rank percentiles of `latencies`.
pub fn quantiles(latencies: &[f64]) -> Quantiles {
    if latencies.is_empty() {
        return Quantiles::default();
    }
    let mut sorted = latencies.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let i = (q * sorted.len() as f64).ceil() as usize;
        sorted[i.clamp(1, sorted.len()) - 1]
    };
    Quantiles {
        p50: rank(0.5),
        p99: rank(0.99),
        p999: rank(0.999),
    }
}

/// Seconds from the fault window's end until every later window of one second up to
/// `horizon` is recovered (see the module's documentation). `offered` holds the users' bins
/// (calls offered in `arrived`), `nominal` the tier's requests per user call when nothing
/// fails, and `at(i)` bin `i`'s `(booked, carried, ok, of)`: the requests of the calls offered
/// in it, those arriving in it for calls offered before the fault's end, the `Ok` answers, and
/// the answers they are a share of.
pub fn recovery(
    window: Option<(f64, f64)>,
    horizon: f64,
    offered: &[Bin],
    nominal: f64,
    at: impl Fn(usize) -> (u64, u64, u64, u64),
) -> Option<f64> {
    let Some((_, end)) = window else {
        return Some(0.0);
    };
    if !end.is_finite() {
        return None;
    }
    let first = (end / BIN).round() as usize;
    let stop = (horizon / BIN).round() as usize;
    if stop < first + WINDOW {
        return None;
    }
    let good = |s: usize| {
        let (mut booked, mut carried, mut ok, mut of, mut calls) = (0, 0, 0, 0, 0u64);
        for i in s..s + WINDOW {
            let (b, c, k, o) = at(i);
            booked += b;
            carried += c;
            ok += k;
            of += o;
            calls += offered.get(i).map_or(0, |b| b.arrived);
        }
        let expected = nominal * calls as f64;
        booked as f64 <= RECOVERED_AMPLIFICATION * expected
            && carried as f64 <= RECOVERED_CARRIED * expected
            && ok as f64 >= RECOVERED_GOODPUT * of as f64
    };
    let last_bad = (first..=stop - WINDOW).rev().find(|&s| !good(s));
    let back = last_bad.map_or(first, |s| s + 1);
    let back_at = back as f64 * BIN;
    if back_at > horizon - 10.0 && last_bad.is_some() {
        return None;
    }
    Some(back_at - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bins(n: usize, f: impl Fn(usize) -> Bin) -> Vec<Bin> {
        (0..n).map(f).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let l: Vec<f64> = (1..=1000).map(f64::from).collect();
        let q = quantiles(&l);
        assert_eq!((q.p50, q.p99, q.p999), (500.0, 990.0, 999.0));
        assert_eq!(quantiles(&[]), Quantiles::default());
        assert_eq!(quantiles(&[3.0]).p999, 3.0);
    }

    #[test]
    fn recovered_once_every_later_window_holds() {
        // 10 calls per bin; a tier of one request per call: 3 per call offered until 12.5 s,
        // failing until 10 s, and retries of the calls the fault failed arriving until 11 s.
        let offered = bins(400, |_| Bin {
            arrived: 10,
            ok: 10,
            booked: 10,
            ..Bin::default()
        });
        let tier = bins(400, |i| Bin {
            booked: if i < 125 { 30 } else { 10 },
            booked_ok: if i < 100 {
                0
            } else if i < 125 {
                30
            } else {
                10
            },
            carried: if (100..110).contains(&i) { 5 } else { 0 },
            ..Bin::default()
        });
        let at = |i: usize| {
            let b = tier[i];
            (b.booked, b.carried, b.booked_ok, b.booked)
        };
        // The fault ends at 10 s: back at 12.5 s.
        let r = recovery(Some((5.0, 10.0)), 40.0, &offered, 1.0, at).unwrap();
        assert!((r - 2.5).abs() < 1e-9, "{r}");
        // No fault: nothing to recover from.
        assert_eq!(recovery(None, 40.0, &offered, 1.0, at), Some(0.0));
        // A fault to the end, or not back 10 s before the end: never.
        assert_eq!(
            recovery(Some((5.0, f64::INFINITY)), 40.0, &offered, 1.0, at),
            None
        );
        assert_eq!(recovery(Some((5.0, 10.0)), 20.0, &offered, 1.0, at), None);
        // Three requests per call when nothing fails: back once the retries of the calls the
        // fault failed stop arriving: 5 per bin until 11 s, 300 requests expected in a window,
        // so at most 15 of them: from the window starting at 10.7 s.
        let ok_all = |i: usize| (tier[i].booked, tier[i].carried, 1, 1);
        let r = recovery(Some((5.0, 10.0)), 40.0, &offered, 3.0, ok_all).unwrap();
        assert!((r - 0.7).abs() < 1e-9, "{r}");
    }

    #[test]
    fn sums_cover_whole_bins_of_the_span() {
        let b = bins(100, |i| Bin {
            arrived: i as u64,
            ..Bin::default()
        });
        assert_eq!(sum(&b, 1.0, 2.0, |x| x.arrived), (10..20).sum::<u64>());
        assert_eq!(
            sum(&b, 9.0, f64::INFINITY, |x| x.arrived),
            (90..100).sum::<u64>()
        );
    }
}
