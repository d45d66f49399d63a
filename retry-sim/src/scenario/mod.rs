//! The scenarios.

pub mod aws2026;
pub mod brooker;
pub mod callgraph;
pub mod guards;
pub mod hedging;
pub mod metastable;
pub mod normal;
pub mod outage;
pub mod overload;
pub mod side_by_side;
pub mod sizes;
pub mod throttling;
