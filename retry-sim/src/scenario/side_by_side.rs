//! The outage and throttling scenarios with aws-smithy-runtime's orchestrator as the clients'
//! retry loop (its `StandardRetryStrategy`, retry token bucket and `ClientRateLimiter`), next
//! to ours on the same server, load, seed and clock.

use crate::fleet::Engine;
use crate::scenario::{outage, throttling};
use crate::sim::Strategy;

/// Both engines' summaries of one policy.
#[derive(Debug, Clone)]
pub struct Pair<S> {
    /// The policy (standard or adaptive).
    pub strategy: Strategy,
    /// This workspace's runtime.
    pub ours: S,
    /// aws-smithy-runtime.
    pub theirs: S,
}

/// The outage scenario, standard and adaptive, under both engines.
pub fn outage(config: &outage::Config) -> Vec<Pair<outage::Summary>> {
    [Strategy::Standard, Strategy::Adaptive]
        .into_iter()
        .map(|s| Pair {
            strategy: s,
            ours: outage::run_engine(config, s, Engine::Ours),
            theirs: outage::run_engine(config, s, Engine::Smithy),
        })
        .collect()
}

/// The throttling scenario, standard and adaptive, under both engines.
pub fn throttling(config: &throttling::Config) -> Vec<Pair<throttling::Summary>> {
    [Strategy::Standard, Strategy::Adaptive]
        .into_iter()
        .map(|s| Pair {
            strategy: s,
            ours: throttling::run_engine(config, s, Engine::Ours),
            theirs: throttling::run_engine(config, s, Engine::Smithy),
        })
        .collect()
}
