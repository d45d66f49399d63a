//! The scenarios.

pub mod brooker;
pub mod metastable;
pub mod outage;
pub mod throttling;
