//! Where `mode` and `max_attempts` come from: the attribute, else the mode default.

use crate::policy::{DEFAULT_MAX_ATTEMPTS, Mode, Policy};

/// The settings that may come from outside the attribute, resolved once per function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) max_attempts: u32,
}

/// Resolves `mode` and `max_attempts` for a function with `policy` and `profile`.
pub(crate) fn resolve(policy: &Policy, _profile: Option<&str>) -> Settings {
    Settings {
        mode: policy.written_mode().unwrap_or(Mode::Standard),
        max_attempts: policy
            .written_max_attempts()
            .unwrap_or(DEFAULT_MAX_ATTEMPTS),
    }
}
