//! Invariants under random policies, faults and cancellation, on tokio's paused clock: the
//! property tests and the cancellation tests, one module each, in one test binary (see
//! `tests/README.md` and `RELIABILITY.md`). `cargo test --test reliability NAME::` runs one
//! module.
//!
//! The other reliability tests are binaries of their own: `reliability_stress.rs` (a counting
//! global allocator), `reliability_loom.rs` (runs cargo), `reliability_faults.rs` (real time,
//! with a tolerance) and `reliability_soak.rs` (ignored, ten minutes).

#[path = "../util/mod.rs"]
mod util;

mod cancel;
mod guards;
mod hedge;
mod props;
