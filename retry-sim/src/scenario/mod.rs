//! The scenarios.

pub mod brooker;
pub mod outage;
pub mod throttling;
