//! What one call does: the engine's tests, one module per feature, in one test binary (see
//! `tests/README.md`). `cargo test -p retry-workspace --test engine NAME::` runs one module.
//!
//! `engine_config.rs` and `engine_no_alloc.rs` are binaries of their own: the first reads its
//! keys once per process (it runs children of itself), the second installs a counting global
//! allocator.

#[path = "../capture/mod.rs"]
mod capture;
#[path = "../util/mod.rs"]
mod util;

mod aws2026;
mod blocking;
mod context;
mod derive;
mod hedging;
mod idempotency;
mod observe;
mod policy;
mod semantics;
mod served;
mod timelines;
