//! The runtime seam: the clock the engine reads and the timers it sleeps on, chosen at compile
//! time by feature, each item a re-export or a thin `#[inline]` wrapper of the chosen
//! backend's own, so that a backend costs nothing beyond its timers.
//!
//! | backend | chosen when | `Instant` | timers |
//! |---|---|---|---|
//! | [`tokio`](self::tokio) | feature `tokio` (the default), whatever else is on | `tokio::time::Instant` (the paused clock of tokio's tests drives it) | `tokio::time` |
//! | [`smol`](self::smol) | feature `smol` without `tokio` | `std::time::Instant` | async-io's `Timer`, under any executor |
//! | [`none`](self::none) | neither | `std::time::Instant` | none: an async call does not compile ([`AsyncRuntime`]) |
//!
//! Tokio wins when both features are on: a tokio program whose dependency turns `smol` on
//! keeps tokio's timers and its paused clock. Another backend (a browser's timers on wasm32)
//! is one more module with the same items and one more arm of the choice below.
//!
//! Every backend gives: `Instant` (with `now`, `checked_add`, `saturating_duration_since`,
//! `elapsed`), [`to_std`], `sleep`, `sleep_until`, `Sleep` (a future with `deadline` and
//! `reset`, what the hedged loop re-arms), `timeout_at`, `Timeout` and `Elapsed` (an attempt
//! cut off at an instant). The task-local that carries a test scope is in `engine/scope.rs`:
//! tokio's `task_local!` under tokio, [`local`]'s otherwise.

// Compiled in every build, so that its tests run in the default one.
#[cfg_attr(feature = "tokio", allow(dead_code, unused_imports, unused_macros))]
pub(crate) mod local;

#[cfg(feature = "tokio")]
mod tokio;
#[cfg(feature = "tokio")]
pub use self::tokio::*;

#[cfg(all(feature = "smol", not(feature = "tokio")))]
mod smol;
#[cfg(all(feature = "smol", not(feature = "tokio")))]
pub use self::smol::*;

#[cfg(not(any(feature = "tokio", feature = "smol")))]
mod none;
#[cfg(not(any(feature = "tokio", feature = "smol")))]
pub use self::none::*;

/// What an async call needs: timers, which a runtime feature brings. Every type meets it when
/// `tokio` or `smol` is on, and none when neither is, so that an async `#[retry]` function or
/// a `Policy::retry` call without one is a compile error that names the features (a blocking
/// `#[retry]` function needs none and never asks).
#[diagnostic::on_unimplemented(
    message = "async retries need an async runtime's timers: turn on the `tokio` (default) or the `smol` feature of `retry-runtime`",
    label = "an async retry loop, built without a runtime feature",
    note = "`retry-runtime = {{ version = \"0.1\", features = [\"smol\"] }}` (or the default features, for tokio); a blocking `#[retry]` fn (not `async`) needs neither"
)]
pub trait AsyncRuntime {}

#[cfg(any(feature = "tokio", feature = "smol"))]
impl<T: ?Sized> AsyncRuntime for T {}
