//! The protections a call passes through: the retry token bucket (AWS standard mode), the
//! client-side rate limiter (AWS adaptive mode), retry budgets and circuit breakers, and the
//! named partitions that share them. Each is shared state built by `const fn`, so that it can
//! live in a `static`, and changed lock-free (but for a refilling bucket's clock).

pub(crate) mod breaker;
pub(crate) mod bucket;
pub(crate) mod budget;
pub(crate) mod limiter;
pub(crate) mod partition;
pub(crate) mod sync;
pub(crate) mod window;
