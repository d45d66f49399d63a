//! Where `mode` and `max_attempts` come from, first match wins:
//!
//! 1. the attribute (`#[retry(mode = "adaptive", max_attempts = 5)]`);
//! 2. the environment: `RETRY_<PROFILE>_MODE` and `RETRY_<PROFILE>_MAX_ATTEMPTS` for a function
//!    with `profile = "..."` (the name upper-cased, `-` written `_`), then `RETRY_MODE` and
//!    `RETRY_MAX_ATTEMPTS`;
//! 3. the TOML file named by `RETRY_CONFIG_FILE`: its `[profile.NAME]` section, then its
//!    `[default]` section, each with the keys `mode` (a string) and `max_attempts` (an integer);
//! 4. the mode default (`standard`, 3 attempts).
//!
//! The environment and the file are read once per process, when the first `#[retry]` function
//! first runs (a profile's variables when the first function of that profile first runs). A
//! value that cannot be used is reported once, as a warning, and ignored as if it were absent;
//! nothing here panics. The file is read by [`file`], a strict parser of the TOML subset above.

use crate::policy::{DEFAULT_MAX_ATTEMPTS, Mode, Policy};
use std::ffi::OsString;
use std::sync::{Mutex, OnceLock, PoisonError};

mod file;

use file::{FileConfig, read_file};

/// The settings that may come from outside the attribute, resolved once per function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) max_attempts: u32,
}

/// A value from the environment or the config file that cannot be used: one warning, as a
/// tracing event of target `retry::config` if a subscriber takes it, else on standard error.
fn warn(message: &str) {
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "retry::config", tracing::Level::WARN) {
        tracing::warn!(target: "retry::config", "{message}");
        return;
    }
    eprintln!("warning: retry: {message}");
}

/// Resolves `mode` and `max_attempts` for a function with `policy` and `profile`.
pub(crate) fn resolve(policy: &Policy, profile: Option<&str>) -> Settings {
    static SOURCES: OnceLock<Sources> = OnceLock::new();
    let sources =
        SOURCES.get_or_init(|| Sources::load(&|name| std::env::var_os(name), &mut |w| warn(&w)));
    let layers = sources.layers(profile, &|name| std::env::var_os(name), &mut |w| warn(&w));
    settings(policy, &layers)
}

/// The attribute over the layers, in order, over the mode default.
fn settings(policy: &Policy, layers: &[Layer]) -> Settings {
    let mode = policy
        .written_mode()
        .or_else(|| layers.iter().find_map(|l| l.mode))
        .unwrap_or(Mode::Standard);
    let max_attempts = policy
        .written_max_attempts()
        .or_else(|| layers.iter().find_map(|l| l.max_attempts))
        .unwrap_or(DEFAULT_MAX_ATTEMPTS);
    Settings { mode, max_attempts }
}

/// What one source says, if anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Layer {
    pub(super) mode: Option<Mode>,
    pub(super) max_attempts: Option<u32>,
}

/// The environment and the file as read once.
struct Sources {
    env: Layer,
    file: FileConfig,
    /// `RETRY_<PROFILE>_*` of each profile asked for so far.
    profile_env: Mutex<Vec<(Box<str>, Layer)>>,
}

type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

impl Sources {
    fn load(env: Env<'_>, warn: &mut dyn FnMut(String)) -> Sources {
        let layer = env_layer("RETRY_MODE", "RETRY_MAX_ATTEMPTS", env, warn);
        let file = match env_value("RETRY_CONFIG_FILE", env, warn) {
            Some(path) => read_file(&path, warn),
            None => FileConfig::default(),
        };
        Sources {
            env: layer,
            file,
            profile_env: Mutex::new(Vec::new()),
        }
    }

    /// The layers for a function of `profile`, most specific first.
    fn layers(
        &self,
        profile: Option<&str>,
        env: Env<'_>,
        warn: &mut dyn FnMut(String),
    ) -> [Layer; 4] {
        let Some(profile) = profile else {
            return [
                Layer::default(),
                self.env,
                Layer::default(),
                self.file.default,
            ];
        };
        let profile_env = {
            // Entries are pushed whole under the lock, so a poisoned list is still consistent.
            let mut known = self
                .profile_env
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match known.iter().find(|(name, _)| **name == *profile) {
                Some((_, layer)) => *layer,
                None => {
                    let stem = env_stem(profile);
                    let layer = env_layer(
                        &format!("RETRY_{stem}_MODE"),
                        &format!("RETRY_{stem}_MAX_ATTEMPTS"),
                        env,
                        warn,
                    );
                    known.push((profile.into(), layer));
                    layer
                }
            }
        };
        [
            profile_env,
            self.env,
            self.file.profile(profile),
            self.file.default,
        ]
    }
}

/// `billing-eu` -> `BILLING_EU`.
fn env_stem(profile: &str) -> String {
    profile
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

/// A variable's value; unset, empty and all-blank values are absent.
fn env_value(name: &str, env: Env<'_>, warn: &mut dyn FnMut(String)) -> Option<String> {
    let raw = env(name)?;
    match raw.into_string() {
        Ok(s) if s.trim().is_empty() => None,
        Ok(s) => Some(s),
        Err(_) => {
            warn(format!("ignoring {name}: its value is not valid UTF-8"));
            None
        }
    }
}

fn env_layer(
    mode_var: &str,
    attempts_var: &str,
    env: Env<'_>,
    warn: &mut dyn FnMut(String),
) -> Layer {
    let mode = env_value(mode_var, env, warn).and_then(|v| {
        let mode = Mode::parse(&v);
        if mode.is_none() {
            warn(format!(
                "ignoring {mode_var}={v:?}: the mode is \"standard\" or \"adaptive\""
            ));
        }
        mode
    });
    let max_attempts = env_value(attempts_var, env, warn).and_then(|v| {
        let n = parse_attempts(v.trim());
        if n.is_none() {
            warn(format!(
                "ignoring {attempts_var}={v:?}: max_attempts is a whole number from 1 to {}",
                u32::MAX
            ));
        }
        n
    });
    Layer { mode, max_attempts }
}

/// A decimal number of attempts, >= 1.
pub(super) fn parse_attempts(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().filter(|n| *n >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn layer(mode: Option<Mode>, max_attempts: Option<u32>) -> Layer {
        Layer { mode, max_attempts }
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), OsString::from(*v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn load(vars: &[(&str, &str)], profile: Option<&str>) -> ([Layer; 4], Vec<String>) {
        let env = env(vars);
        let mut warnings = Vec::new();
        let sources = Sources::load(&env, &mut |w| warnings.push(w));
        let layers = sources.layers(profile, &env, &mut |w| warnings.push(w));
        (layers, warnings)
    }

    #[test]
    fn environment_values() {
        let (layers, warnings) = load(
            &[
                ("RETRY_MODE", " Adaptive "),
                ("RETRY_MAX_ATTEMPTS", "7"),
                ("RETRY_BILLING_EU_MODE", "standard"),
                ("RETRY_BILLING_EU_MAX_ATTEMPTS", ""),
            ],
            Some("billing-eu"),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(layers[0], layer(Some(Mode::Standard), None));
        assert_eq!(layers[1], layer(Some(Mode::Adaptive), Some(7)));
    }

    #[test]
    fn bad_environment_values_warn_once_each() {
        let (layers, warnings) = load(
            &[
                ("RETRY_MODE", "legacy"),
                ("RETRY_MAX_ATTEMPTS", "0"),
                ("RETRY_X_MAX_ATTEMPTS", "three"),
            ],
            Some("x"),
        );
        assert_eq!(layers[0], Layer::default());
        assert_eq!(layers[1], Layer::default());
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MODE=\"legacy\": the mode is \"standard\" or \"adaptive\"",
                "ignoring RETRY_MAX_ATTEMPTS=\"0\": max_attempts is a whole number from 1 to \
                 4294967295",
                "ignoring RETRY_X_MAX_ATTEMPTS=\"three\": max_attempts is a whole number from 1 \
                 to 4294967295",
            ]
        );
    }

    #[test]
    fn profile_variables_are_read_once() {
        let env = env(&[("RETRY_P_MAX_ATTEMPTS", "nope")]);
        let mut warnings = Vec::new();
        let sources = Sources::load(&env, &mut |w| warnings.push(w));
        for _ in 0..3 {
            sources.layers(Some("p"), &env, &mut |w| warnings.push(w));
        }
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_missing_file_is_one_warning() {
        let (layers, warnings) = load(
            &[("RETRY_CONFIG_FILE", "/nonexistent/retry-config.toml")],
            None,
        );
        assert_eq!(layers[3], Layer::default());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "ignoring RETRY_CONFIG_FILE=\"/nonexistent/retry-config.toml\": cannot read it ("
            ),
            "{warnings:?}"
        );
    }

    fn no_warning(w: String) {
        panic!("unexpected warning: {w}");
    }

    #[test]
    fn precedence() {
        let file = FileConfig {
            default: layer(Some(Mode::Adaptive), Some(2)),
            profiles: vec![("p".into(), layer(None, Some(6)))],
        };
        let sources = Sources {
            env: layer(None, Some(4)),
            file,
            profile_env: Mutex::new(Vec::new()),
        };
        let env = env(&[("RETRY_P_MODE", "standard")]);
        let mut warn = no_warning;
        let layers = sources.layers(Some("p"), &env, &mut warn);
        let s = settings(&Policy::new(), &layers);
        assert_eq!((s.mode, s.max_attempts), (Mode::Standard, 4));
        let s = settings(&Policy::new().max_attempts(9), &layers);
        assert_eq!((s.mode, s.max_attempts), (Mode::Standard, 9));
        let layers = sources.layers(None, &env, &mut warn);
        let s = settings(&Policy::new(), &layers);
        assert_eq!((s.mode, s.max_attempts), (Mode::Adaptive, 4));
        let s = settings(&Policy::new().mode(Mode::Standard), &[Layer::default(); 4]);
        assert_eq!(
            (s.mode, s.max_attempts),
            (Mode::Standard, DEFAULT_MAX_ATTEMPTS)
        );
    }
}
