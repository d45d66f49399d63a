//! The call graph's smallest cases, asserting the qualitative results of SIMULATION.md's call
//! graph section: how retries compound from hop to hop under each server-side rule, and what
//! a leaf behind the layer sheds. Nothing here depends on how fast the machine is.

use retry_sim::scenario::callgraph::{self, Config, Rule, Shape};
use retry_sim::scenario::normal;
use retry_sim::sim::Strategy;

/// The rules that answer "do not retry": on their own, with the chain stop, and the runtime's
/// server layer as `CHAIN_STOP` sets it.
const ANSWERING: [Rule; 3] = [
    Rule::STOP_ANSWERS,
    Rule::STOP_ANSWERS_CHAIN_STOP,
    Rule::SERVER_LAYER,
];

#[test]
fn callgraph_the_leaf_down_the_answers_hold_the_leaf_to_one_hops_retries_at_any_depth() {
    let config = Config::quick();
    for depth in 2..=4 {
        let shape = Shape::chain(depth);
        for rule in ANSWERING {
            let s = callgraph::run_one(&config.down, shape, rule);
            let leaf = s.leaf();
            // Only the hop next to the leaf retries: its three attempts per user call while
            // the buckets are full, the offered load once its replicas' buckets are dry.
            assert!(
                leaf.early <= 3.0 + 1e-9 && leaf.early > 2.5,
                "depth {depth}, {}: {leaf:?}",
                rule.name
            );
            assert!(
                leaf.last_third <= 1.1,
                "depth {depth}, {}: {leaf:?}",
                rule.name
            );
            // No service above it sends a retry: one request per user call at each tier.
            for (tier, t) in s.tiers[..depth - 1].iter().enumerate() {
                assert_eq!(
                    t.per_call,
                    1.0,
                    "depth {depth}, {}, tier {}",
                    rule.name,
                    tier + 1
                );
            }
            assert_eq!(s.run.tiers[0].retries, 0, "the users retried");
        }
        // With 1 s attempt timeouts at every hop the hop next to the leaf retries only while
        // its backoff fits before its caller's cutoff, and a call the deadline ended after its
        // first attempt leaves the retry to its caller: still no more than three leaf requests
        // per user call early in the outage.
        let timed = callgraph::run_one(&config.down_timed, shape, Rule::SERVER_LAYER);
        assert!(
            timed.leaf().early <= 3.0 + 1e-9,
            "depth {depth}, 1 s timeouts: {:?}",
            timed.leaf()
        );
        // Without the answers, every hop retries while its bucket lasts: more than one hop's
        // three attempts reach the leaf early in the outage, the offered load once every
        // bucket is dry.
        let standard = callgraph::run_one(&config.down, shape, Rule::STANDARD);
        assert!(standard.leaf().early > 5.0, "{:?}", standard.leaf());
        assert!(standard.leaf().last_third <= 1.1, "{:?}", standard.leaf());
        // A 20 % budget per process compounds from hop to hop: 1.2 per retrying hop.
        let budget = callgraph::run_one(&config.down, shape, Rule::BUDGET);
        let bound = 1.2_f64.powi(depth as i32);
        assert!(
            budget.leaf().last_third > 1.05_f64.powi(depth as i32)
                && budget.leaf().last_third <= 1.05 * bound,
            "depth {depth}: {:?}",
            budget.leaf()
        );
    }
}

#[test]
fn callgraph_the_leaf_down_throughout_naive_retries_multiply_by_three_per_hop() {
    for depth in 1..=4 {
        let shape = Shape::chain(depth);
        let naive = callgraph::down_throughout(shape, Rule::NAIVE, 5, 1);
        assert_eq!(naive.calls, 5);
        // Every attempt fails, so every call at every hop makes its three attempts.
        for (tier, per_call) in naive.per_call.iter().enumerate() {
            assert_eq!(*per_call, 3f64.powi(tier as i32 + 1), "depth {depth}");
        }
        for rule in ANSWERING {
            let c = callgraph::down_throughout(shape, rule, 5, 1);
            assert_eq!(c.leaf(), 3.0, "depth {depth}, {}", rule.name);
        }
    }
}

#[test]
fn callgraph_the_loopback_chain_sends_27_leaf_requests_per_call_naive_and_3_behind_the_server_layer()
 {
    assert_eq!(callgraph::loopback(Rule::NAIVE).leaf(), 27.0);
    let layer = callgraph::loopback(Rule::SERVER_LAYER);
    assert_eq!(layer.calls, callgraph::LOOPBACK_CALLS as u64);
    assert_eq!(layer.leaf(), 3.0);
    assert_eq!(layer.per_call, [1.0, 1.0, 3.0]);
    // The buckets bound the naive storm only once they are dry, which 20 calls of one user
    // reach at the hops nearest the leaf.
    let standard = callgraph::loopback(Rule::STANDARD).leaf();
    assert!(standard > 3.0 && standard < 27.0, "{standard}");
}

#[test]
fn callgraph_transient_failures_are_recovered_by_one_hop_once_and_the_chain_stop_costs_nothing() {
    let config = Config::quick();
    let normal_config = normal::Config::quick();
    let rate = match config.transient.fault {
        callgraph::Fault::Transient { rate } => rate,
        _ => unreachable!("the transient setup"),
    };
    let one_hop = normal::run_one(&normal_config, Strategy::Standard, rate).failed_fraction;
    for depth in 2..=4 {
        let shape = Shape::chain(depth);
        let answers = callgraph::run_one(&config.transient, shape, Rule::STOP_ANSWERS);
        // No more user calls fail than one retrying hop loses.
        assert!(
            answers.failed <= one_hop + 0.0001,
            "depth {depth}: {} against {one_hop}",
            answers.failed
        );
        // The hop next to the leaf retries (about 5 % more leaf requests than user calls),
        // and no other: every other tier gets one request per user call.
        let leaf = answers.leaf().per_call;
        assert!(leaf > 1.02 && leaf < 1.1, "depth {depth}: {leaf}");
        for t in &answers.tiers[..depth - 1] {
            assert_eq!(t.per_call, 1.0, "depth {depth}");
        }
        // Every failure a service passes up is an answer not to retry it, so no request
        // arrives as a retry and the chain stop never applies: the same run to the request.
        let both = callgraph::run_one(&config.transient, shape, Rule::STOP_ANSWERS_CHAIN_STOP);
        assert_eq!(
            both.run.series.bins, answers.run.series.bins,
            "depth {depth}"
        );
        assert_eq!(both.run.tiers, answers.run.tiers, "depth {depth}");
        for t in &both.run.tiers[..depth - 1] {
            assert_eq!(t.retries, 0, "depth {depth}");
        }
        // With 1 s attempt timeouts a service's deadline is its caller's attempt's cutoff: a
        // call whose first attempt failed and whose backoff does not fit before it ends there,
        // and leaves the retry to its caller (the users retry it), where one that retried
        // tells its caller not to. Every "do not retry" answer comes from a request whose leaf
        // call retried.
        let timed = callgraph::run_one(&config.transient_timed, shape, Rule::SERVER_LAYER);
        assert!(timed.run.tiers[0].retries > 0, "depth {depth}");
        let told: u64 = timed.run.tiers[..depth - 1]
            .iter()
            .map(|t| t.told_not_to_retry)
            .sum();
        assert!(told > 0, "depth {depth}");
        assert!(
            timed.run.tiers[depth - 2].told_not_to_retry <= timed.run.tiers[depth - 1].retries,
            "depth {depth}"
        );
    }
}

#[test]
fn callgraph_the_overload_trigger_the_leaf_behind_the_layer_sheds_its_stale_queue_and_recovers_within_5_s()
 {
    let config = Config::quick();
    let shape = Shape::chain(3);
    let total_shed = |s: &callgraph::Summary| s.run.series.total(0.0, f64::INFINITY).shed;
    // The rules whose leaf does all the work it is sent: naive never comes back, the buckets
    // bound the storm but the backlog takes longer than 5 s to drain, and nothing is shed.
    let naive = callgraph::run_one(&config.overload, shape, Rule::NAIVE);
    assert_eq!(naive.recovered_after, None);
    let standard = callgraph::run_one(&config.overload, shape, Rule::STANDARD);
    let back = standard.recovered_after.expect("the bucket recovers");
    assert!(back > 5.0, "{back}");
    for s in [&naive, &standard] {
        assert_eq!(total_shed(s), 0, "{}", s.rule.name);
    }
    // A service whose leaf call timed out has no time left before its caller's cutoff to
    // retry it, so no request below the users arrives as a retry, and the chain stop has
    // nothing to stop: kitex runs standard's requests.
    for t in &standard.run.tiers[1..] {
        assert_eq!(t.retries, 0);
    }
    let kitex = callgraph::run_one(&config.overload, shape, Rule::KITEX);
    assert_eq!(kitex.run.series.bins, standard.run.series.bins);
    // Behind the layer the leaf drops what waited past its deadline without serving it, so
    // its queue holds no more than a deadline's work: every call offered from the trigger's
    // end on is served in time.
    for rule in ANSWERING {
        let s = callgraph::run_one(&config.overload, shape, rule);
        let back = s.recovered_after.expect("the shedding leaf recovers");
        assert!(back <= 5.0, "{}: {back}", rule.name);
        assert!(total_shed(&s) > 0, "{}", rule.name);
        assert!(s.goodput_fault > standard.goodput_fault, "{}", rule.name);
        assert!(s.failed < standard.failed / 2.0, "{}", rule.name);
    }
    // The shedding does it, not the answers: standard with a shedding leaf runs the answering
    // rule's requests, to the request.
    let answers = callgraph::run_one(&config.overload, shape, Rule::STOP_ANSWERS);
    let shedding = callgraph::run_one(&config.overload, shape, Rule::STANDARD_SHEDDING);
    assert_eq!(shedding.run.series.bins, answers.run.series.bins);
    assert_eq!(shedding.run.tiers, answers.run.tiers);
}

#[test]
fn callgraph_the_leaf_sheds_only_behind_the_layer_and_only_from_its_queue() {
    let config = Config::quick();
    let shape = Shape::chain(3);
    // The rules whose services do not answer run a leaf that does all the work it is sent.
    for rule in Rule::ALL.into_iter().chain([Rule::SERVER_LAYER]) {
        assert_eq!(rule.sheds, rule.answers, "{}", rule.name);
    }
    for rule in [Rule::BUDGET, Rule::KITEX] {
        let s = callgraph::run_one(&config.overload, shape, rule);
        assert_eq!(
            s.run.series.total(0.0, f64::INFINITY).shed,
            0,
            "{}",
            rule.name
        );
    }
    // Without a queue (the leaf down, transient failures) nothing waits at the leaf, so
    // nothing is shed: an answering rule runs the same requests with the leaf shedding or
    // not, with attempt timeouts and without.
    let not_shedding = Rule {
        sheds: false,
        ..Rule::SERVER_LAYER
    };
    for setup in [&config.down, &config.down_timed, &config.transient_timed] {
        let a = callgraph::run_one(setup, shape, Rule::SERVER_LAYER);
        let b = callgraph::run_one(setup, shape, not_shedding);
        assert_eq!(a.run.series.bins, b.run.series.bins, "{}", setup.name);
        assert_eq!(a.run.tiers, b.run.tiers, "{}", setup.name);
    }
}

#[test]
fn callgraph_runs_are_deterministic_for_a_seed() {
    let mut setup = Config::quick().down;
    setup.horizon = 12.0;
    let graph = setup.graph(Shape::tree(3, 3), Rule::STOP_ANSWERS);
    let (a, b) = (graph.run(), graph.run());
    assert_eq!(a.series.bins, b.series.bins);
    assert_eq!(a.tiers, b.tiers);
}
