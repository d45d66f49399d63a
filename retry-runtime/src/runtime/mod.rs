//! The runtime seam: the clock the engine reads and the timers it sleeps on, chosen at compile
//! time by target and feature, each item a re-export or a thin `#[inline]` wrapper of the
//! chosen backend's own, so that a backend costs nothing beyond its timers.
//!
//! | backend | chosen when | `Instant` | timers |
//! |---|---|---|---|
//! | [`wasm`](self::wasm) | target `wasm32-unknown-unknown`, whatever the features | `web_time::Instant` (`performance.now()`) | the JS host's `setTimeout` (a browser's or Node's) |
//! | [`tokio`](self::tokio) | feature `tokio` (the default), whatever else is on | `tokio::time::Instant` (the paused clock of tokio's tests drives it) | `tokio::time` |
//! | [`smol`](self::smol) | feature `smol` without `tokio` | `std::time::Instant` | async-io's `Timer`, under any executor |
//! | [`none`](self::none) | neither | `std::time::Instant` | none: an async call does not compile ([`AsyncRuntime`]) |
//!
//! The target comes first: on `wasm32-unknown-unknown` neither tokio's timers nor async-io's
//! exist, so the `tokio` and `smol` features change nothing there (their dependencies are
//! declared for the other targets only, so not even built). Elsewhere tokio wins when both
//! features are on: a tokio program whose dependency turns `smol` on keeps tokio's timers and
//! its paused clock.
//!
//! Every backend gives: `Instant` (with `now`, `checked_add`, `saturating_duration_since`,
//! `elapsed`), [`to_public`] (an instant as the public API gives it, [`PublicInstant`]),
//! `sleep`, `sleep_until`, `Sleep` (a future with `deadline` and `reset`, what the hedged loop
//! re-arms), `timeout_at`, `Timeout` and `Elapsed` (an attempt cut off at an instant); and,
//! here for the native targets and in `wasm` for the browser, [`system_now`] and
//! [`thread_sleep`] (a blocking function's wait). The task-local that carries a test scope is
//! in `engine/scope.rs`: tokio's `task_local!` under tokio, [`local`]'s otherwise.

// Compiled in every build, so that its tests run in the default one.
#[cfg_attr(
    all(
        feature = "tokio",
        not(all(target_arch = "wasm32", target_os = "unknown"))
    ),
    allow(dead_code, unused_imports, unused_macros)
)]
pub(crate) mod local;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod wasm;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use self::wasm::*;

#[cfg(all(
    feature = "tokio",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
mod tokio;
#[cfg(all(
    feature = "tokio",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
pub use self::tokio::*;

#[cfg(all(
    feature = "smol",
    not(feature = "tokio"),
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
mod smol;
#[cfg(all(
    feature = "smol",
    not(feature = "tokio"),
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
pub use self::smol::*;

#[cfg(not(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
)))]
mod none;
#[cfg(not(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
)))]
pub use self::none::*;

/// The instants of the public API ([`Attempt::cutoff`](crate::Attempt::cutoff),
/// [`Attempt::deadline`](crate::Attempt::deadline)), exported as `retry_runtime::Instant`:
/// `std::time::Instant` on native targets (under tokio, what
/// `tokio::time::Instant::into_std` gives), `web_time::Instant` on `wasm32-unknown-unknown`,
/// where `std`'s clock panics.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub type PublicInstant = std::time::Instant;
/// The instants of the public API ([`Attempt::cutoff`](crate::Attempt::cutoff),
/// [`Attempt::deadline`](crate::Attempt::deadline)), exported as `retry_runtime::Instant`:
/// `std::time::Instant` on native targets (under tokio, what
/// `tokio::time::Instant::into_std` gives), `web_time::Instant` on `wasm32-unknown-unknown`,
/// where `std`'s clock panics.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub type PublicInstant = web_time::Instant;

/// The wall clock (`Retry-After` dates, the `amz-sdk-request` header's `ttl`).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
#[must_use]
pub fn system_now() -> std::time::SystemTime {
    std::time::SystemTime::now()
}

/// A blocking function's wait between attempts.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use std::thread::sleep as thread_sleep;

/// What an async call needs: timers, which a runtime feature brings (or the target, on
/// `wasm32-unknown-unknown`). Every type meets it when `tokio` or `smol` is on, or on that
/// target, and none otherwise, so that an async `#[retry]` function or a `Policy::retry` call
/// without one is a compile error that names the features (a blocking `#[retry]` function
/// needs none and never asks).
#[diagnostic::on_unimplemented(
    message = "async retries need an async runtime's timers: turn on the `tokio` (default) or the `smol` feature of `retry-runtime`",
    label = "an async retry loop, built without a runtime feature",
    note = "`retry-runtime = {{ version = \"0.1\", default-features = false, features = [\"smol\"] }}` (or `[\"tokio\"]`, which the default features are); a blocking `#[retry]` fn (not `async`) needs neither"
)]
pub trait AsyncRuntime {}

/// Whether a wait of `wait` from `now` reaches `deadline` (a wait past the end of
/// representable time does).
pub(crate) fn reaches(deadline: Instant, now: Instant, wait: std::time::Duration) -> bool {
    now.checked_add(wait).is_none_or(|t| t >= deadline)
}

#[cfg(any(
    feature = "tokio",
    feature = "smol",
    all(target_arch = "wasm32", target_os = "unknown")
))]
impl<T: ?Sized> AsyncRuntime for T {}
