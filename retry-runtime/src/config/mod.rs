//! Where each setting of a `#[retry]` function comes from, first match wins, key by key:
//!
//! 1. the attribute (`#[retry(max_attempts = 5, deadline = "10s")]`);
//! 2. the environment: `RETRY_<PROFILE>_<KEY>` for a function with `profile = "..."` (the
//!    profile upper-cased, `-` written `_`), then `RETRY_<KEY>`;
//! 3. the TOML file named by `RETRY_CONFIG_FILE` (feature `config-file`, off by default: without
//!    it a file named there is one warning): its `[profile.NAME]` table, then its `[default]`
//!    table;
//! 4. the default of the mode.
//!
//! | key | environment | value |
//! |---|---|---|
//! | `mode` | `RETRY_MODE` | `"standard"` or `"adaptive"` |
//! | `max_attempts` | `RETRY_MAX_ATTEMPTS` | a whole number >= 1 |
//! | `initial_backoff` | `RETRY_INITIAL_BACKOFF` | a duration such as `"100ms"` |
//! | `multiplier` | `RETRY_MULTIPLIER` | a number >= 1 |
//! | `max_backoff` | `RETRY_MAX_BACKOFF` | a duration |
//! | `jitter` | `RETRY_JITTER` | `"full"`, `"equal"`, `"none"`, `"decorrelated"` or a number in [0, 1] |
//! | `attempt_timeout` | `RETRY_ATTEMPT_TIMEOUT` | a duration above zero |
//! | `attempt_timeout_multiplier` | `RETRY_ATTEMPT_TIMEOUT_MULTIPLIER` | a number >= 1 |
//! | `max_attempt_timeout` | `RETRY_MAX_ATTEMPT_TIMEOUT` | a duration above zero |
//! | `deadline` | `RETRY_DEADLINE` | a duration above zero |
//!
//! Durations are written as in the attribute: `"500us"`, `"150ms"`, `"2s"`, `"1.5s"`, `"1m"`.
//!
//! The environment and the file are read once per process, when the first `#[retry]` function
//! first runs (a profile's variables when the first function of that profile first runs); each
//! function resolves its settings on its first call. A value that cannot be used is one
//! warning, with the variable, or the file's line and key, and is ignored as if it were
//! absent. The coherence rules the attribute is held to at compile time hold for the resolved
//! values too: where a value from outside breaks one (`RETRY_MAX_BACKOFF=100ms` under an
//! attribute's `initial_backoff = "1s"`), the function warns once and ignores that value.
//! Timeouts (`attempt_timeout` and the keys that shape it, `deadline`) apply from outside only
//! to a function whose attribute sets `attempt_timeout` or `deadline`: without either, its
//! attempts run without a timer (and its error type need not represent a timeout), which the
//! warning says. Nothing here panics.
//!
//! [`explain`] lists, for every function that has run, each setting and where it came from.

use crate::spec::{KEYS, Key, Keys, Settings, Value};
use std::ffi::OsString;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

mod explain;
#[cfg(feature = "config-file")]
mod file;

pub use explain::{Entry, Explained, explain};

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The function's `#[retry(...)]` attribute.
    Attribute,
    /// An environment variable.
    Environment {
        /// Its name, such as `RETRY_BILLING_MAX_ATTEMPTS`.
        variable: String,
    },
    /// The config file.
    File {
        /// The file, as `RETRY_CONFIG_FILE` names it.
        path: String,
        /// The line of the key (1-based).
        line: usize,
    },
    /// The default of the mode.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Attribute => f.write_str("attribute"),
            Source::Environment { variable } => write!(f, "env {variable}"),
            Source::File { path, line } => write!(f, "file {path}:{line}"),
            Source::Default => f.write_str("default"),
        }
    }
}

impl Source {
    /// How a warning names the source of a value it ignores.
    fn describe(&self, key: Key) -> String {
        match self {
            Source::Environment { variable } => variable.clone(),
            Source::File { path, line } => format!("{path}:{line}: {}", key.name()),
            Source::Attribute => format!("the attribute's {}", key.name()),
            Source::Default => format!("the default {}", key.name()),
        }
    }
}

/// What one source says of each key, if anything.
#[derive(Clone, Debug, Default, PartialEq)]
struct Layer {
    values: [Option<(Value, Source)>; KEYS],
}

impl Layer {
    fn get(&self, key: Key) -> Option<&(Value, Source)> {
        self.values[key as usize].as_ref()
    }

    fn set(&mut self, key: Key, value: Value, source: Source) {
        self.values[key as usize] = Some((value, source));
    }
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

/// A function's resolved settings: what the engine reads on every call, and where each value
/// came from.
pub(crate) struct Resolution {
    pub(crate) settings: Settings,
    pub(crate) explained: Explained,
}

/// Resolves the settings of `function` written with `policy` and `profile`; `timed`: whether
/// its attempts run under a timer (the attribute sets `attempt_timeout` or `deadline`). The
/// hedging keys apply only to a function whose attribute sets `hedge_after` (whose attempts can
/// run side by side).
pub(crate) fn resolve(
    function: &'static str,
    policy: &Keys,
    profile: Option<&'static str>,
    timed: bool,
) -> Resolution {
    static SOURCES: OnceLock<Sources> = OnceLock::new();
    let sources =
        SOURCES.get_or_init(|| Sources::load(&|name| std::env::var_os(name), &mut |w| warn(&w)));
    let layers = sources.layers(profile, &|name| std::env::var_os(name), &mut |w| warn(&w));
    let resolution = resolution(function, profile, policy, &layers, timed, &mut |w| warn(&w));
    explain::register(&resolution.explained);
    resolution
}

/// The attribute over the layers, in order, over the mode defaults; then the coherence rules.
fn resolution(
    function: &'static str,
    profile: Option<&'static str>,
    policy: &Keys,
    layers: &[Layer],
    timed: bool,
    warn: &mut dyn FnMut(String),
) -> Resolution {
    let mut chosen: [Option<(Value, Source)>; KEYS] = Key::ALL.map(|key| {
        if policy.wrote(key) {
            policy.value(key).map(|v| (v, Source::Attribute))
        } else {
            layers.iter().find_map(|l| l.get(key).cloned())
        }
    });
    if !policy.wrote(Key::HedgeAfter) {
        for key in HEDGE_KEYS {
            if let Some((value, source)) = chosen[key as usize].take() {
                warn(format!(
                    "ignoring {} ({} = {value}) for `{function}`: its attribute does not set \
                     hedge_after, so its attempts may not run side by side (it may not be \
                     idempotent, or borrow its arguments mutably); write hedge_after in the \
                     attribute to make hedging configurable",
                    source.describe(key),
                    key.name(),
                ));
            }
        }
    }
    if !timed {
        for key in TIMER_KEYS {
            if let Some((value, source)) = chosen[key as usize].take() {
                warn(format!(
                    "ignoring {} ({} = {value}) for `{function}`: its attribute sets neither \
                     attempt_timeout nor deadline, so its attempts run without a timer; write \
                     one of them in the attribute to make the timeouts configurable",
                    source.describe(key),
                    key.name(),
                ));
            }
        }
    }
    let policy = loop {
        let policy = build(&chosen);
        // The first rule broken by a value from outside (a rule that only the attribute's own
        // values break was reported at compile time).
        let outside = |key: &Key| {
            chosen[*key as usize]
                .as_ref()
                .is_some_and(|(_, source)| *source != Source::Attribute)
        };
        let Some((keys, why)) = policy
            .incoherences()
            .into_iter()
            .find(|(keys, _)| keys.iter().any(outside))
        else {
            break policy;
        };
        for key in keys {
            if let Some((value, source)) = &chosen[key as usize] {
                if *source != Source::Attribute {
                    warn(format!(
                        "ignoring {} ({} = {value}) for `{function}`: {why}",
                        source.describe(key),
                        key.name(),
                    ));
                    chosen[key as usize] = None;
                }
            }
        }
    };
    let settings = Settings::of(&policy);
    let entries = Key::ALL
        .iter()
        .map(|&key| Entry {
            key: key.name(),
            value: settings
                .value(key)
                .map_or_else(|| "none".to_owned(), |v| v.to_string()),
            source: chosen[key as usize]
                .as_ref()
                .map_or(Source::Default, |(_, s)| s.clone()),
        })
        .collect();
    Resolution {
        settings,
        explained: Explained {
            function,
            profile,
            entries,
        },
    }
}

/// The keys that shape hedging.
const HEDGE_KEYS: [Key; 4] = [
    Key::HedgeAfter,
    Key::MaxInFlight,
    Key::MinHedgeAfter,
    Key::MaxHedgeAfter,
];

/// The keys that shape an attempt's timer.
const TIMER_KEYS: [Key; 4] = [
    Key::AttemptTimeout,
    Key::AttemptTimeoutMultiplier,
    Key::MaxAttemptTimeout,
    Key::Deadline,
];

/// The policy of the chosen values, each set by its builder (so that a backoff bound set alone
/// moves the other's default, as in the attribute).
fn build(chosen: &[Option<(Value, Source)>; KEYS]) -> Keys {
    Key::ALL
        .iter()
        .zip(chosen)
        .fold(Keys::new(), |p, (&key, value)| match value {
            Some((v, _)) => p.with(key, *v),
            None => p,
        })
}

/// The environment and the file as read once.
struct Sources {
    env: Layer,
    file: FileConfig,
    /// `RETRY_<PROFILE>_*` of each profile asked for so far.
    profile_env: Mutex<Vec<(Box<str>, Layer)>>,
}

type Around<'a> = &'a dyn Fn(&str) -> Option<OsString>;

impl Sources {
    fn load(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Sources {
        let layer = env_layer("RETRY_", env, warn);
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
        env: Around<'_>,
        warn: &mut dyn FnMut(String),
    ) -> [Layer; 4] {
        let Some(profile) = profile else {
            return [
                Layer::default(),
                self.env.clone(),
                Layer::default(),
                self.file.default.clone(),
            ];
        };
        let profile_env = {
            // Entries are pushed whole under the lock, so a poisoned list is still consistent.
            let mut known = self
                .profile_env
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match known.iter().find(|(name, _)| **name == *profile) {
                Some((_, layer)) => layer.clone(),
                None => {
                    let layer = env_layer(&format!("RETRY_{}_", env_stem(profile)), env, warn);
                    known.push((profile.into(), layer.clone()));
                    layer
                }
            }
        };
        [
            profile_env,
            self.env.clone(),
            self.file.profile(profile),
            self.file.default.clone(),
        ]
    }
}

/// The config file's `[default]` and `[profile.NAME]` tables.
#[derive(Debug, Default, PartialEq)]
struct FileConfig {
    default: Layer,
    profiles: Vec<(String, Layer)>,
}

impl FileConfig {
    fn profile(&self, name: &str) -> Layer {
        self.profiles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    }
}

#[cfg(feature = "config-file")]
use file::read_file;

/// Without the `config-file` feature the file is not read: one warning says so.
#[cfg(not(feature = "config-file"))]
fn read_file(path: &str, warn: &mut dyn FnMut(String)) -> FileConfig {
    warn(format!(
        "ignoring RETRY_CONFIG_FILE={path:?}: this build of retry-runtime reads no config file \
         (its `config-file` feature is off)"
    ));
    FileConfig::default()
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
fn env_value(name: &str, env: Around<'_>, warn: &mut dyn FnMut(String)) -> Option<String> {
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

/// Every key's variable under `prefix` (`RETRY_`, `RETRY_BILLING_`).
fn env_layer(prefix: &str, env: Around<'_>, warn: &mut dyn FnMut(String)) -> Layer {
    let mut layer = Layer::default();
    for key in Key::ALL {
        let variable = format!("{prefix}{}", key.name().to_ascii_uppercase());
        let Some(raw) = env_value(&variable, env, warn) else {
            continue;
        };
        match key.parse(&raw) {
            Ok(value) => layer.set(key, value, Source::Environment { variable }),
            Err(expected) => warn(format!("ignoring {variable}={raw:?}: {expected}")),
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Mode;
    use std::collections::HashMap;
    use std::time::Duration;

    const MS: fn(u64) -> Duration = Duration::from_millis;

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

    fn value(layer: &Layer, key: Key) -> Option<Value> {
        layer.get(key).map(|(v, _)| *v)
    }

    #[test]
    fn every_key_from_the_environment() {
        let (layers, warnings) = load(
            &[
                ("RETRY_MODE", " Adaptive "),
                ("RETRY_MAX_ATTEMPTS", "7"),
                ("RETRY_INITIAL_BACKOFF", "50ms"),
                ("RETRY_MULTIPLIER", "1.5"),
                ("RETRY_MAX_BACKOFF", "2s"),
                ("RETRY_JITTER", "0.25"),
                ("RETRY_ATTEMPT_TIMEOUT", "1.5s"),
                ("RETRY_ATTEMPT_TIMEOUT_MULTIPLIER", "2"),
                ("RETRY_MAX_ATTEMPT_TIMEOUT", "3s"),
                ("RETRY_DEADLINE", "1m"),
                ("RETRY_BILLING_EU_MODE", "standard"),
                ("RETRY_BILLING_EU_MAX_ATTEMPTS", ""),
            ],
            Some("billing-eu"),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            value(&layers[0], Key::Mode),
            Some(Value::Mode(Mode::Standard))
        );
        assert_eq!(value(&layers[0], Key::MaxAttempts), None);
        let general = &layers[1];
        let expected = [
            Value::Mode(Mode::Adaptive),
            Value::Count(7),
            Value::Duration(MS(50)),
            Value::Factor(1.5),
            Value::Duration(MS(2000)),
            Value::Jitter(crate::spec::Jitter::Fraction(0.25)),
            Value::Duration(MS(1500)),
            Value::Factor(2.0),
            Value::Duration(MS(3000)),
            Value::Duration(MS(60_000)),
        ];
        for (key, want) in Key::ALL.into_iter().zip(expected) {
            assert_eq!(value(general, key), Some(want), "{}", key.name());
        }
        assert_eq!(
            general.get(Key::Deadline).map(|(_, s)| s.clone()),
            Some(Source::Environment {
                variable: "RETRY_DEADLINE".into()
            })
        );
    }

    /// Without the `config-file` feature (off by default) the file named by `RETRY_CONFIG_FILE`
    /// is not read: one warning says so, and the environment still applies.
    /// `tests/engine_default_features.rs` runs this in a build of the runtime with its default
    /// features, as the workspace's own tests turn the feature on.
    #[cfg(not(feature = "config-file"))]
    #[test]
    fn without_the_config_file_feature_a_named_file_is_one_warning() {
        let (layers, warnings) = load(
            &[
                ("RETRY_CONFIG_FILE", "/etc/retry.toml"),
                ("RETRY_MAX_ATTEMPTS", "4"),
            ],
            Some("billing"),
        );
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_CONFIG_FILE=\"/etc/retry.toml\": this build of retry-runtime reads \
                 no config file (its `config-file` feature is off)"
            ]
        );
        assert_eq!(value(&layers[1], Key::MaxAttempts), Some(Value::Count(4)));
        assert_eq!(layers[2], Layer::default());
        assert_eq!(layers[3], Layer::default());
    }

    #[test]
    fn bad_environment_values_warn_once_each() {
        let (layers, warnings) = load(
            &[
                ("RETRY_MODE", "legacy"),
                ("RETRY_MAX_ATTEMPTS", "0"),
                ("RETRY_X_MAX_ATTEMPTS", "three"),
                ("RETRY_DEADLINE", "10"),
                ("RETRY_JITTER", "1.5"),
            ],
            Some("x"),
        );
        assert_eq!(layers[0], Layer::default());
        assert_eq!(layers[1], Layer::default());
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MODE=\"legacy\": mode is \"standard\" or \"adaptive\"",
                "ignoring RETRY_MAX_ATTEMPTS=\"0\": max_attempts is a whole number from 1 to \
                 4294967295",
                "ignoring RETRY_JITTER=\"1.5\": jitter is \"full\", \"equal\", \"none\", \
                 \"decorrelated\" or a number in [0, 1]",
                "ignoring RETRY_DEADLINE=\"10\": deadline is a duration above zero with a unit, \
                 such as \"10s\" (units: ns, us, ms, s, m, h)",
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

    fn layer(values: &[(Key, Value)], source: &Source) -> Layer {
        let mut layer = Layer::default();
        for &(key, value) in values {
            layer.set(key, value, source.clone());
        }
        layer
    }

    fn env_source(variable: &str) -> Source {
        Source::Environment {
            variable: variable.into(),
        }
    }

    fn resolve_with(policy: &Keys, layers: &[Layer], timed: bool) -> (Resolution, Vec<String>) {
        let mut warnings = Vec::new();
        let r = resolution("f", None, policy, layers, timed, &mut |w| warnings.push(w));
        (r, warnings)
    }

    #[test]
    fn precedence_key_by_key() {
        let file = layer(
            &[
                (Key::Mode, Value::Mode(Mode::Adaptive)),
                (Key::MaxAttempts, Value::Count(2)),
                (Key::Multiplier, Value::Factor(3.0)),
            ],
            &Source::File {
                path: "retry.toml".into(),
                line: 2,
            },
        );
        let general = layer(
            &[(Key::MaxAttempts, Value::Count(4))],
            &env_source("RETRY_MAX_ATTEMPTS"),
        );
        let profile = layer(
            &[(Key::Mode, Value::Mode(Mode::Standard))],
            &env_source("RETRY_P_MODE"),
        );
        let layers = [profile, general, Layer::default(), file];
        let (r, warnings) = resolve_with(&Keys::new().multiplier(1.5), &layers, false);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            (r.settings.mode, r.settings.max_attempts),
            (Mode::Standard, 4)
        );
        assert_eq!(r.settings.multiplier, 1.5, "the attribute wins");
        let sources: Vec<String> = r
            .explained
            .entries
            .iter()
            .map(|e| format!("{}={} ({})", e.key, e.value, e.source))
            .collect();
        assert_eq!(
            sources[..4],
            [
                "mode=standard (env RETRY_P_MODE)",
                "max_attempts=4 (env RETRY_MAX_ATTEMPTS)",
                "initial_backoff=1s (default)",
                "multiplier=1.5 (attribute)",
            ]
        );
    }

    #[test]
    fn an_incoherent_value_from_outside_is_one_warning_and_ignored() {
        let general = layer(
            &[(Key::MaxBackoff, Value::Duration(MS(100)))],
            &env_source("RETRY_MAX_BACKOFF"),
        );
        let attribute = Keys::new().initial_backoff(MS(500));
        let (r, warnings) = resolve_with(&attribute, &[general], false);
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MAX_BACKOFF (max_backoff = 100ms) for `f`: max_backoff would be \
              below initial_backoff"
            ]
        );
        assert_eq!(
            (r.settings.initial_backoff, r.settings.max_backoff),
            (MS(500), Duration::from_secs(20))
        );

        // Set alone from outside, a bound moves the other's default, as in the attribute.
        let general = layer(
            &[(Key::MaxBackoff, Value::Duration(MS(100)))],
            &env_source("RETRY_MAX_BACKOFF"),
        );
        let (r, warnings) = resolve_with(&Keys::new(), &[general], false);
        assert!(warnings.is_empty());
        assert_eq!(
            (r.settings.initial_backoff, r.settings.max_backoff),
            (MS(100), MS(100))
        );
    }

    #[test]
    fn timeouts_from_outside_hold_to_the_rules_of_the_attribute() {
        let general = layer(
            &[
                (Key::AttemptTimeout, Value::Duration(MS(5000))),
                (Key::MaxAttemptTimeout, Value::Duration(MS(8000))),
            ],
            &env_source("RETRY_X"),
        );
        // Longer than the attribute's deadline: ignored, and max_attempt_timeout with it (it
        // shapes a timeout that is no longer set).
        let (r, warnings) = resolve_with(&Keys::new().deadline(MS(2000)), &[general], true);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("attempt_timeout would be longer than deadline"));
        assert!(warnings[1].contains("it shapes attempt_timeout, which is not set"));
        assert_eq!(r.settings.attempt_timeout, None);
        assert_eq!(r.settings.max_attempt_timeout, None);
        assert_eq!(r.settings.deadline, Some(MS(2000)));
    }

    #[test]
    fn timeouts_from_outside_need_a_timed_function() {
        let general = layer(
            &[(Key::Deadline, Value::Duration(MS(5000)))],
            &env_source("RETRY_DEADLINE"),
        );
        let (r, warnings) = resolve_with(&Keys::new(), std::slice::from_ref(&general), false);
        assert_eq!(r.settings.deadline, None);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "ignoring RETRY_DEADLINE (deadline = 5s) for `f`: its attribute sets neither \
                 attempt_timeout nor deadline"
            ),
            "{warnings:?}"
        );
        let (r, warnings) = resolve_with(&Keys::new().attempt_timeout(MS(100)), &[general], true);
        assert!(warnings.is_empty());
        assert_eq!(r.settings.deadline, Some(MS(5000)));
    }
}
