//! Invariants under random policies, faults and cancellation, on tokio's paused clock: the
//! property tests and the cancellation tests, one module each, in one test binary (see
//! `tests/README.md` and `RELIABILITY.md`). `cargo test -p retry-workspace --test reliability
//! NAME::` runs one module.
//!
//! The other reliability tests are binaries of their own: `reliability_stress.rs` (a counting
//! global allocator) and `reliability_faults.rs` (real time, with a tolerance; its `soak`
//! module is ignored, ten minutes). The loom models run in the `workspace` binary (`loom.rs`,
//! which runs cargo).

#[path = "../util/mod.rs"]
mod util;

mod cancel;
mod guards;
mod hedge;
mod limit;
mod props;
