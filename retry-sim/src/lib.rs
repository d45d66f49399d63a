//! Fleet simulations of retry policies. Every simulated client runs the real `retry-runtime`
//! engine (the loop a `#[retry]` function expands to, through `retry_runtime::__private`) with
//! fresh retry state per run, against a simulated server, on tokio's paused clock: thousands
//! of clients and minutes of simulated time run in seconds, the same for a given seed.
//!
//! `SIMULATION.md` describes each scenario, its figures and plots, and the commands that
//! reproduce them.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fleet;
pub mod report;
pub mod scenario;
pub mod sim;
mod smithy;
pub mod whatif;
pub mod world;
