//! What hedging knows beyond its settings: the latency estimate of a function hedged by a
//! percentile, and the delay of its hedge budget. When a hedge starts is the hedged driver's
//! (`engine::hedged`), from the function's settings (`hedge_after`, `max_in_flight`,
//! `min_hedge_after`, `max_hedge_after`, `hedge_budget`).
//!
//! A fixed delay is the attribute's duration. A percentile (`"p95"`) follows the function's
//! own latency: the quantile of its recent successful attempts ([`Latency`]), kept within
//! `[min_hedge_after, max_hedge_after]`. Until the estimate has enough samples the delay is
//! `max_hedge_after`: a function hedges late until it knows its tail ("The Tail at Scale",
//! Dean and Barroso, CACM 2013, defers the hedge to the 95th-percentile expected latency).
//! A budget (`hedge_budget = "2%"`) raises either delay as far as it takes for about that
//! share of the calls to hedge (`budget`), learned from the calls that hedged.
//!
//! The keys are resolved with the others (the environment and the config file may set them
//! for a function whose attribute writes `hedge_after`).

pub(crate) mod budget;
pub(crate) mod latency;

pub use latency::Latency;
