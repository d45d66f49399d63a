//! `#[retry]` on every shape of function it supports, and the `From` impls `#[derive(Classify)]`
//! writes for `from(...)`, run (see `tests/README.md`).
//!
//! `macro_ui.rs` (trybuild, which runs cargo) and `macro_lints.rs` (the generated code in a
//! crate whose root denies warnings and strict lints) are binaries of their own.

mod derive;
mod shapes;
