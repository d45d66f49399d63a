//! State shared between calls: the retry token bucket, retry budgets, the adaptive rate limiter,
//! circuit breakers and guards, one module each, in one test binary (see `tests/README.md`).
//! `cargo test -p retry-workspace --test state NAME::` runs one module.
//!
//! Every module names its own partitions and statics, so that the exact levels each test
//! asserts are not shared with another module's calls in this process.

#[path = "../util/mod.rs"]
mod util;

mod adaptive;
mod breaker;
mod bucket;
mod budget;
mod guards;
mod limit;
