//! The scenarios.

pub mod brooker;
