//! The smallest case of each scenario, asserting its qualitative result. The figures of the
//! full sizes are in SIMULATION.md; nothing here depends on how fast the machine is.

use retry_sim::fleet::Arrivals;
use retry_sim::scenario::{aws2026, brooker, metastable, normal, outage, throttling};
use retry_sim::sim::Strategy;

#[test]
fn brooker_full_jitter_does_less_work_than_exponential_without_jitter() {
    let points = brooker::run(&brooker::Config::quick());
    let get = |b: brooker::Backoff| points.iter().find(|p| p.backoff == b).unwrap().clone();
    let none = get(brooker::Backoff::None);
    let exp = get(brooker::Backoff::Exponential);
    let full = get(brooker::Backoff::Full);
    let decorrelated = get(brooker::Backoff::Decorrelated);
    assert!(full.calls < exp.calls, "{full:?} vs {exp:?}");
    assert!(full.calls < none.calls, "{full:?} vs {none:?}");
    assert!(
        decorrelated.calls < exp.calls,
        "{decorrelated:?} vs {exp:?}"
    );
    // Without jitter the clients stay in lockstep and wait out ever longer backoffs.
    assert!(exp.time_ms > 5.0 * full.time_ms, "{exp:?} vs {full:?}");
}

#[test]
fn brooker_is_deterministic_for_a_seed() {
    let a = brooker::run_once(20, brooker::Backoff::Full, 7);
    let b = brooker::run_once(20, brooker::Backoff::Full, 7);
    assert_eq!(a, b);
    let c = brooker::run_once(20, brooker::Backoff::Full, 8);
    assert_ne!(a, c);
}

#[test]
fn outage_the_bucket_stops_the_retry_storm_once_drained() {
    let config = outage::Config::quick();
    let none = outage::run_one(&config, Strategy::NoBucket);
    let standard = outage::run_one(&config, Strategy::Standard);
    assert!(
        none.amplification_drained > 2.5,
        "{}",
        none.amplification_drained
    );
    assert!(
        standard.amplification_drained <= 1.2,
        "{}",
        standard.amplification_drained
    );
    assert!(standard.amplification_after <= none.amplification_after);
    assert!(standard.time_to_recover <= none.time_to_recover);
}

#[test]
fn outage_a_budget_bounds_the_storm_from_the_first_second() {
    let config = outage::Config::quick();
    let standard = outage::run_one(&config, Strategy::Standard);
    for strategy in [Strategy::Budget, Strategy::GrpcThrottling] {
        let s = outage::run_one(&config, strategy);
        // Over the whole outage, not only once drained: the bucket spends its 500 tokens first.
        assert!(
            s.amplification_outage <= 1.25
                && s.amplification_outage < standard.amplification_outage,
            "{}: {} (standard {})",
            strategy.name(),
            s.amplification_outage,
            standard.amplification_outage
        );
        assert!(s.time_to_recover <= standard.time_to_recover + 1.0);
    }
}

#[test]
fn throttling_adaptive_mode_sends_about_what_the_server_takes() {
    let config = throttling::Config::quick();
    let standard = throttling::run_one(&config, Strategy::Standard);
    let adaptive = throttling::run_one(&config, Strategy::Adaptive);
    assert!(standard.throttled > 0.4, "{}", standard.throttled);
    assert!(adaptive.throttled < 0.1, "{}", adaptive.throttled);
    assert!(adaptive.load < 1.2 && standard.load > 2.0);
    assert!(adaptive.goodput > 0.5, "{}", adaptive.goodput);
}

#[test]
fn metastable_naive_retries_never_recover_and_the_bucket_does() {
    let config = metastable::Config::quick();
    let none = metastable::run_one(&config, Strategy::NoBucket);
    let standard = metastable::run_one(&config, Strategy::Standard);
    assert!(none.goodput_before > 0.9 && standard.goodput_before > 0.9);
    assert_eq!(none.recovered_after, None);
    assert!(none.goodput_end < 0.1, "{}", none.goodput_end);
    assert!(standard.recovered_after.is_some());
    assert!(standard.goodput_end > 0.9, "{}", standard.goodput_end);
}

#[test]
fn side_by_side_both_engines_drain_the_bucket_and_pace_under_throttling() {
    use retry_sim::fleet::Engine;
    let oc = outage::Config::quick();
    let ours = outage::run_engine(&oc, Strategy::Standard, Engine::Ours);
    let theirs = outage::run_engine(&oc, Strategy::Standard, Engine::Smithy);
    assert!(ours.amplification_drained <= 1.2 && theirs.amplification_drained <= 1.2);
    // Same bucket, same costs, same server: the same amplification while it drains.
    assert!((ours.amplification_outage - theirs.amplification_outage).abs() < 0.1);

    let tc = throttling::Config::quick();
    let ours = throttling::run_engine(&tc, Strategy::Adaptive, Engine::Ours);
    let theirs = throttling::run_engine(&tc, Strategy::Adaptive, Engine::Smithy);
    assert!(ours.throttled < 0.1 && theirs.throttled < 0.1);
    assert!(ours.load < 1.2 && theirs.load < 1.2);
}

#[test]
fn fleet_runs_are_deterministic_for_a_seed_under_both_engines() {
    use retry_sim::fleet::Engine;
    let mut tc = throttling::Config::quick();
    tc.horizon = 10.0;
    tc.steady_from = 5.0;
    for engine in [Engine::Ours, Engine::Smithy] {
        let a = tc.fleet(Strategy::Adaptive, engine).run(&tc.server());
        let b = tc.fleet(Strategy::Adaptive, engine).run(&tc.server());
        assert_eq!(a.series.bins, b.series.bins, "{engine:?}");
    }
}

#[test]
fn normal_operation_the_bucket_fails_no_call_a_plain_retry_saves() {
    let config = normal::Config::quick();
    let p = config.error_rates[0];
    let none = normal::run_one(&config, Strategy::NoBucket, p);
    let standard = normal::run_one(&config, Strategy::Standard, p);
    assert_eq!(standard.failed_fraction, none.failed_fraction);
    // A budget without a floor refuses some early retries (its window starts empty), but few.
    let budget = normal::run_one(&config, Strategy::Budget, p);
    assert!(budget.failed_fraction >= none.failed_fraction);
    assert!(budget.failed_fraction < 0.01, "{}", budget.failed_fraction);
}

#[test]
fn outage_the_breaker_keeps_calls_off_the_dead_server_and_refuses_them_for_its_break() {
    let config = outage::Config::quick();
    let none = outage::run_one(&config, Strategy::NoBucket);
    let standard = outage::run_one(&config, Strategy::Standard);
    let breaker = outage::run_one(&config, Strategy::Breaker);
    // The target, against no bucket: 90% fewer attempts reach the dead server. Against the
    // bucket alone the cut is smaller: the breaker opens only once half of its window's
    // attempts have failed.
    assert!(
        breaker.cut_against(&none) >= 0.9,
        "{} of {} attempts",
        breaker.outage_attempts,
        none.outage_attempts
    );
    assert!(breaker.cut_against(&standard) >= 0.8);
    // Goodput: the bucket's calls succeed again within a second of the outage's end; the
    // breaker refuses calls until its 5 s break has passed and a probe has succeeded (which
    // the attempt-based measure cannot see: a refused call sends nothing).
    assert!(
        standard.goodput_recovery <= 1.0,
        "{}",
        standard.goodput_recovery
    );
    assert!(
        breaker.goodput_recovery > standard.goodput_recovery && breaker.goodput_recovery <= 6.0,
        "{}",
        breaker.goodput_recovery
    );
    assert_eq!(breaker.time_to_recover, 0.0);
    // A 1 s break is back sooner, at the price of more probes while the server is down.
    let short = outage::run_one(&config, Strategy::BreakerShortBreak);
    assert!(
        short.goodput_recovery < breaker.goodput_recovery && short.goodput_recovery <= 2.0,
        "{}",
        short.goodput_recovery
    );
    assert!(short.outage_attempts > breaker.outage_attempts);
}

#[test]
fn normal_operation_a_breaker_fails_no_call_the_bucket_saves() {
    let config = normal::Config::quick();
    let p = config.error_rates[0];
    let standard = normal::run_one(&config, Strategy::Standard, p);
    let breaker = normal::run_one(&config, Strategy::Breaker, p);
    // 5% of attempts failing on their own never make half of a window's attempts fail.
    assert!(
        breaker.failed_fraction <= standard.failed_fraction,
        "{} vs {}",
        breaker.failed_fraction,
        standard.failed_fraction
    );
    let budget = normal::run_one(&config, Strategy::Budget, p);
    let both = normal::run_one(&config, Strategy::BreakerBudget, p);
    assert!(both.failed_fraction <= budget.failed_fraction);
}

/// Full size, so not in the default run (about 10 s in a release build):
/// `cargo test --release -p retry-sim -- --ignored`.
#[test]
#[ignore = "full size: run with --release -- --ignored"]
fn outage_full_size_the_budgets_excess_over_20_percent_is_the_variation_of_poisson_arrivals() {
    let mut config = outage::Config::full();
    let poisson = outage::run_one(&config, Strategy::Budget);
    config.arrivals = Arrivals::Even;
    let even = outage::run_one(&config, Strategy::Budget);
    // Each client's calls of the last 10 s vary around 50 with Poisson arrivals: a retry waits
    // for room, which opens whenever that count goes up and is not taken back when it goes
    // down. With evenly spaced calls, the same budget holds 20% over the whole outage.
    assert!(
        poisson.amplification_outage > 1.205,
        "{}",
        poisson.amplification_outage
    );
    assert!(
        (even.amplification_outage - 1.2).abs() < 0.001,
        "{}",
        even.amplification_outage
    );
}

#[test]
fn hedging_cuts_the_fan_out_tail_for_a_few_percent_more_requests() {
    use retry_sim::scenario::hedging::{self, Hedge, Variant};
    let config = hedging::Config::quick();
    let results = hedging::run(&config);
    let get = |v: Variant| results.iter().find(|s| s.variant == v).unwrap();
    let never = get(Variant::NEVER);
    let fixed = get(Variant::fixed(hedging::FIXED_MS));
    let p95 = get(Variant::percentile(95));
    let two_hedges = get(Variant::percentile(95).in_flight(3));
    let slow = |s: &hedging::Summary| hedging::share_above(&s.fan_out_sorted, 0.1);
    for s in &results {
        // The simulation's own bookkeeping of the engine: every losing attempt dropped when
        // its call returns, one winner per leaf, no hedge early or beyond max_in_flight, the
        // engine's record of hedges equal to what the servers saw, every bucket balanced.
        assert!(s.faults.none(), "{}: {:?}", s.variant.name(), s.faults);
        assert_eq!(s.user_requests * config.fan_out as u64, s.leaves);
        if s.variant.hedge != Hedge::Never {
            assert_eq!(s.hedges_recorded, s.hedges, "{}", s.variant.name());
            assert_eq!(s.cancelled, s.hedges, "{}", s.variant.name());
        }
    }
    // Without hedging, most user requests meet a slow leaf (1 - 0.99^100 = 63%, and more
    // with the queues behind slow requests).
    assert!(slow(never) > 0.5, "{}", slow(never));
    assert!(never.fan_out.p50 > 0.5, "{:?}", never.fan_out);
    assert!(never.fan_out.p99 > 1.0, "{:?}", never.fan_out);
    assert!(never.leaf.p99 > 0.1, "{:?}", never.leaf);
    for s in [fixed, p95, two_hedges] {
        let name = s.variant.name();
        // With a hedge near the leaves' p95, a leaf is slow only when both copies are: the
        // leaves' p99 and the user requests' median and p90 come down to tens of
        // milliseconds, and a few percent of user requests are still slow.
        assert!(s.leaf.p99 < 0.05, "{name}: {:?}", s.leaf);
        assert!(s.fan_out.p50 < 0.05, "{name}: {:?}", s.fan_out);
        assert!(s.fan_out.p90 < 0.05, "{name}: {:?}", s.fan_out);
        assert!(slow(s) < 0.05, "{name}: {}", slow(s));
        // For a few percent more requests, and the bucket never runs out.
        assert!(
            s.extra_requests() > 0.02 && s.extra_requests() < 0.10,
            "{name}: {}",
            s.extra_requests()
        );
        assert!(s.bucket_low > 0, "{name}: the bucket ran out");
    }
    // One user request in a hundred still meets a leaf whose two copies were both slow
    // (100 leaves x 1% x 1%), so one hedge leaves the fan-out's p99 near that edge; a second
    // hedge cuts it far below no hedging's, for hardly more requests.
    assert!(
        two_hedges.fan_out.p99 < 0.1 && two_hedges.fan_out.p99 < never.fan_out.p99 / 10.0,
        "{:?}",
        two_hedges.fan_out
    );
    assert!(two_hedges.extra_requests() < p95.extra_requests() + 0.01);
}

#[test]
fn a_hedge_budget_keeps_most_of_the_cut_for_less_than_half_the_hedges() {
    use retry_sim::scenario::hedging::{self, Variant};
    let config = hedging::Config::budget_quick();
    let results = hedging::run(&config);
    let get = |v: Variant| results.iter().find(|s| s.variant == v).unwrap();
    let never = get(Variant::NEVER);
    let two_hedges = get(Variant::percentile(95).in_flight(3));
    let budgeted = get(Variant::percentile(95).in_flight(3).budget(20));
    for s in &results {
        assert!(s.faults.none(), "{}: {:?}", s.variant.name(), s.faults);
    }
    // The p95 hedges about 5 % of the leaves; a budget of 2 % raises the delay until about
    // that share hedges (over 10 s it is still coming down from its start: under 2.5 %).
    assert!(
        two_hedges.extra_requests() > 0.045,
        "{}",
        two_hedges.extra_requests()
    );
    assert!(
        budgeted.extra_requests() > 0.015 && budgeted.extra_requests() < 0.025,
        "{}",
        budgeted.extra_requests()
    );
    // Each slow leaf is still hedged, later: the user requests' p99.9 stays at least 20
    // times below no hedging's (30 times over the full run, SIMULATION.md).
    assert!(
        budgeted.fan_out.p999 < never.fan_out.p999 / 20.0,
        "{:?} against {:?}",
        budgeted.fan_out,
        never.fan_out
    );
}

#[test]
fn hedging_runs_are_deterministic_for_a_seed() {
    use retry_sim::scenario::hedging::{self, Variant};
    let mut config = hedging::Config::quick();
    config.horizon = 3.0;
    let a = hedging::run_one(&config, Variant::percentile(95));
    let b = hedging::run_one(&config, Variant::percentile(95));
    assert_eq!(a.fan_out_sorted, b.fan_out_sorted);
    assert_eq!(a.leaf_sorted, b.leaf_sorted);
    assert_eq!((a.hedges, a.bucket_low), (b.hedges, b.bucket_low));
    assert_eq!(a.seconds, b.seconds);
}

#[test]
fn hedging_a_percentile_follows_a_slowdown_that_a_fixed_delay_does_not() {
    use retry_sim::scenario::hedging::{self, Variant};
    let config = hedging::Config::shifted_quick();
    let shift = config.shift.unwrap();
    let fixed = hedging::run_one(&config, Variant::fixed(hedging::FIXED_MS));
    let p95 = hedging::run_one(&config, Variant::percentile(95));
    assert!(fixed.faults.none() && p95.faults.none());
    let (before, after) = ((config.warmup, shift.at), (shift.at + 2.0, config.horizon));
    // Before the slowdown, both hedge about 5% of the leaves.
    for s in [&fixed, &p95] {
        assert!(s.extra_between(before.0, before.1) < 0.08);
    }
    // After it, the fixed delay is below most leaves' latency: it hedges a fifth or more of
    // them, its bucket runs out, and the slow leaves go unhedged. The percentile's delay
    // follows the leaves' latency: fewer hedges, tokens left, and the tail stays cut.
    let slow =
        |s: &hedging::Summary| hedging::share_above(&s.fan_out_between(after.0, after.1), 0.1);
    assert!(fixed.extra_between(after.0, after.1) > 0.15);
    assert_eq!(fixed.bucket_low_between(after.0, after.1), 0);
    assert!(p95.extra_between(after.0, after.1) < 0.5 * fixed.extra_between(after.0, after.1));
    assert!(p95.bucket_low_between(after.0, after.1) > 0);
    assert!(
        slow(&p95) < 0.2 && slow(&fixed) > 0.5,
        "{} {}",
        slow(&p95),
        slow(&fixed)
    );
    assert!(p95.seconds[after.0 as usize].delay > 0.025);
}

#[test]
fn aws2026_less_amplification_in_a_long_outage_more_in_a_blip_and_faster_calls_through_a_transient_error()
 {
    // The outage (21 s): a retry costs 14 instead of 5, so each client's bucket of 500 pays
    // for 35 retries instead of 100 and the storm ends sooner; the calls that met the dead
    // server end sooner (a 50 ms base instead of 1 s), and recovery is no slower.
    let oc = outage::Config::quick();
    let classic = aws2026::outage_one(&oc, Strategy::Standard);
    let new = aws2026::outage_one(&oc, Strategy::Standard2026);
    let (c, n) = (&classic.summary, &new.summary);
    assert!(
        n.amplification_outage < c.amplification_outage - 0.3,
        "{} vs {}",
        n.amplification_outage,
        c.amplification_outage
    );
    assert!(
        new.storm < classic.storm,
        "{} vs {}",
        new.storm,
        classic.storm
    );
    assert!(n.time_to_recover <= c.time_to_recover);
    assert!(n.goodput_recovery <= c.goodput_recovery);
    assert!(new.transient.calls > 1000 && new.transient.p99 < classic.transient.p99);

    // A blip of 1 s: no bucket runs dry, and the 2026 rules' retries, 50 ms and 100 ms
    // apart, fall inside it where the classic ones, up to 1 s and 2 s apart, mostly fall
    // after it. More load on the failing server, and more calls fail.
    let blip = outage::Config {
        outage_len: 1.0,
        ..oc.clone()
    };
    let classic = aws2026::outage_one(&blip, Strategy::Standard);
    let new = aws2026::outage_one(&blip, Strategy::Standard2026);
    assert!(
        new.summary.amplification_outage > classic.summary.amplification_outage + 0.5,
        "{} vs {}",
        new.summary.amplification_outage,
        classic.summary.amplification_outage
    );
    assert!(
        new.offered_in_it_succeeded < 0.5 && classic.offered_in_it_succeeded > 0.8,
        "{} vs {}",
        new.offered_in_it_succeeded,
        classic.offered_in_it_succeeded
    );

    // Normal operation: the same calls fail, for the same attempts; a call that met a 5xx
    // retries after a backoff drawn below 50 ms instead of 1 s.
    let nc = normal::Config::quick();
    let p = nc.error_rates[0];
    let classic = aws2026::normal_one(&nc, Strategy::Standard, p);
    let new = aws2026::normal_one(&nc, Strategy::Standard2026, p);
    assert_eq!(new.summary.failed_fraction, classic.summary.failed_fraction);
    assert!(new.transient.calls > 50, "{:?}", new.transient);
    assert!(
        new.transient.p50 < 0.2 && classic.transient.p50 > 2.0 * new.transient.p50,
        "{:?} vs {:?}",
        new.transient,
        classic.transient
    );

    // Throttling alone: a throttling retry costs 5 and backs off from 1 s under both rules,
    // so standard mode does exactly the same thing.
    let tc = throttling::Config::quick();
    let classic = aws2026::throttling_one(&tc, Strategy::Standard);
    let new = aws2026::throttling_one(&tc, Strategy::Standard2026);
    assert_eq!(classic.summary.run.series.bins, new.summary.run.series.bins);
    assert_eq!(classic.throttled, new.throttled);
}
