//! Where each setting of a `#[retry]` function comes from, first match wins, key by key:
//!
//! 1. the attribute (`#[retry(max_attempts = 5, deadline = "10s")]`), or a `Policy`'s builders:
//!    what the code writes always holds, as in the AWS SDKs, where a value set in code wins
//!    over the environment, which wins over the shared config file;
//! 2. the environment: `RETRY_<PROFILE>_<KEY>` for a function with `profile = "..."` (the
//!    profile upper-cased, `-` written `_`: `RETRY_BILLING_EU_MAX_ATTEMPTS`), then
//!    `RETRY_<KEY>`;
//! 3. for a function with `aws_config = true` (feature `aws-config`, off by default: without it
//!    `aws_config = true` is a compile error that names the feature), the AWS SDKs' variables:
//!    `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`, and `AWS_NEW_RETRIES_2026=true` for
//!    `behavior = "2026"`;
//! 4. the TOML file named by `RETRY_CONFIG_FILE` (feature `config-file`, off by default: without
//!    it a file named there is one warning): its `[profile.NAME]` table, then its `[default]`
//!    table;
//! 5. for a function with `aws_config = true`, the AWS shared config file (`AWS_CONFIG_FILE`,
//!    else `~/.aws/config`): `retry_mode` and `max_attempts` in the profile `AWS_PROFILE` names,
//!    else `[default]`, read as the SDKs read it (a missing `~/.aws/config` is no news; a bad
//!    value is one warning with its `path:line`; the `legacy` mode has no equivalent here and
//!    is one warning; an `AWS_PROFILE` that names no profile is one warning, and no other
//!    profile stands in);
//! 6. the default of the mode.
//!
//! | key | environment | value |
//! |---|---|---|
//! | `mode` | `RETRY_MODE` | `"standard"` or `"adaptive"` |
//! | `behavior` | `RETRY_BEHAVIOR` | `"classic"` or `"2026"` |
//! | `max_attempts` | `RETRY_MAX_ATTEMPTS` | a whole number >= 1 |
//! | `initial_backoff` | `RETRY_INITIAL_BACKOFF` | a duration such as `"100ms"` |
//! | `multiplier` | `RETRY_MULTIPLIER` | a number >= 1 |
//! | `max_backoff` | `RETRY_MAX_BACKOFF` | a duration |
//! | `jitter` | `RETRY_JITTER` | `"full"`, `"equal"`, `"none"`, `"decorrelated"` or a number in [0, 1] |
//! | `attempt_timeout` | `RETRY_ATTEMPT_TIMEOUT` | a duration above zero |
//! | `attempt_timeout_multiplier` | `RETRY_ATTEMPT_TIMEOUT_MULTIPLIER` | a number >= 1 |
//! | `max_attempt_timeout` | `RETRY_MAX_ATTEMPT_TIMEOUT` | a duration above zero |
//! | `deadline` | `RETRY_DEADLINE` | a duration above zero |
//! | `max_in_flight` | `RETRY_MAX_IN_FLIGHT` | a whole number >= 2 |
//! | `min_hedge_after`, `max_hedge_after` | `RETRY_MIN_HEDGE_AFTER`, `RETRY_MAX_HEDGE_AFTER` | a duration |
//! | `hedge_budget` | `RETRY_HEDGE_BUDGET` | a share of the calls such as `"2%"` |
//!
//! Durations are written as in the attribute: `"500us"`, `"150ms"`, `"2s"`, `"1.5s"`, `"1m"`.
//!
//! ```toml
//! [default]
//! max_attempts = 4
//! max_backoff = "5s"
//!
//! [profile.billing-eu]        # #[retry(profile = "billing-eu")]
//! mode = "adaptive"
//! attempt_timeout = "2s"
//! ```
//!
//! The file is parsed by the `toml` crate behind the `config-file` feature, which brings the
//! parser and serde into the build: `retry-runtime = { version = "0.1", features =
//! ["config-file"] }`. The environment applies either way.
//!
//! What the code writes wins: a variable or a file key that sets a key the function's
//! attribute (or a `Policy`) also writes is shadowed, and where its value differs from the
//! code's, the function warns once, naming the key, both values and where the shadowed one was
//! set, and why; `explain` shows the shadowed value beside the one in effect. To let the
//! environment set a key, leave it out of the attribute.
//!
//! The environment and the file are read once per process, when the first `#[retry]` function
//! first runs (a profile's variables when the first function of that profile first runs); each
//! function resolves its settings on its first call. A value that cannot be used is one
//! warning (a `retry::config` tracing event, or a line on standard error), with the variable,
//! or the file's line and key, and is ignored as if it were absent (a misspelt mode, jitter or
//! percentile says which one it most likely meant: `RETRY_JITTER=ful` says `did you mean
//! "full"?`). The coherence rules the attribute is held to at compile time hold for the
//! resolved values too: where a value from outside breaks one (`RETRY_MAX_BACKOFF=100ms` under
//! an attribute's `initial_backoff = "1s"`), the function warns once and ignores that value.
//! [`explain`] notes both kinds beside the values in effect, for each function that would
//! have read the value ([`Explained::notes`]). Timeouts (`attempt_timeout` and the keys that
//! shape it, `deadline`) apply from outside only to a function whose attribute sets
//! `attempt_timeout` or `deadline`: without either, its attempts run without a timer (and its
//! error type need not represent a timeout), which the warning says. Likewise the hedging
//! keys apply only to a function whose attribute writes `hedge_after`: whether its attempts may
//! run side by side is decided where its code is.
//! Nothing here panics.
//!
//! [`explain`] lists, for every function that has run, each setting that applies to it and
//! where it came from, the value from outside that each setting the code writes shadows, and
//! what was set for it from outside and ignored:
//!
//! ```text
//! get_object (profile billing-eu)
//!   mode                        adaptive   file /etc/retry.toml:6
//!   max_attempts                4          env RETRY_MAX_ATTEMPTS
//!   initial_backoff             100ms      attribute
//!   deadline                    10s        attribute; shadows 30s (env RETRY_DEADLINE)
//!   ...
//!   note: /etc/retry.toml:2: mode = "fast": mode is "standard" or "adaptive"; ignored
//! ```

use crate::spec::{KEYS, Key, Keys, Settings, Value};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

#[cfg(feature = "aws-config")]
mod aws;
mod explain;
#[cfg(feature = "config-file")]
mod file;

pub use explain::{Entry, Explained, Shadowed, explain};

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
        /// The table of the key: `Some(NAME)` for `[profile.NAME]`, `None` for `[default]`.
        profile: Option<String>,
    },
    /// The AWS shared config file (`aws_config = true`).
    AwsConfig {
        /// The file: `AWS_CONFIG_FILE`, else `~/.aws/config`.
        path: String,
        /// The line of the key (1-based).
        line: usize,
        /// The profile: `AWS_PROFILE`, else `default`.
        profile: String,
    },
    /// The default of the mode.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Attribute => f.write_str("attribute"),
            Source::Environment { variable } => write!(f, "env {variable}"),
            Source::File { path, line, .. } => write!(f, "file {path}:{line}"),
            Source::AwsConfig { path, line, .. } => write!(f, "aws config {path}:{line}"),
            Source::Default => f.write_str("default"),
        }
    }
}

impl Source {
    /// How a warning names the source of a value it ignores.
    fn describe(&self, key: Key) -> String {
        match self {
            Source::Environment { variable } => variable.clone(),
            Source::File {
                path,
                line,
                profile,
            } => match profile {
                Some(profile) => format!("{path}:{line} in [profile.{profile}]"),
                None => format!("{path}:{line} in [default]"),
            },
            Source::AwsConfig {
                path,
                line,
                profile,
            } => {
                if profile == "default" {
                    format!("{path}:{line} in [default]")
                } else {
                    format!("{path}:{line} in [profile {profile}]")
                }
            }
            Source::Attribute => format!("the attribute's {}", key.name()),
            Source::Default => format!("the default {}", key.name()),
        }
    }
}

/// What one source says of each key, if anything, and the warnings about what it said that
/// was ignored, each with its key if it had one: [`explain`] notes them for the functions that
/// read the source, but those about a key that does not apply to the function.
#[derive(Clone, Debug, Default, PartialEq)]
struct Layer {
    values: [Option<(Value, Source)>; KEYS],
    ignored: Vec<(Option<Key>, String)>,
}

impl Layer {
    /// The layer `read` makes, with each warning it gives (which goes on to `warn`) kept as
    /// something of it that was ignored, about no key in particular.
    #[cfg(feature = "aws-config")]
    fn noting(
        warn: &mut dyn FnMut(String),
        read: impl FnOnce(&mut dyn FnMut(String)) -> Layer,
    ) -> Layer {
        let mut ignored = Vec::new();
        let mut layer = read(&mut |w: String| ignored.push(w));
        for w in ignored {
            layer.ignore(None, w, warn);
        }
        layer
    }

    /// Gives the warning `w` about what the layer said of `key` (or of no key), and keeps it.
    fn ignore(&mut self, key: Option<Key>, w: String, warn: &mut dyn FnMut(String)) {
        self.ignored.push((key, w.clone()));
        warn(w);
    }

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

/// What wrote a function's keys, as a warning about a value they shadow names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writer {
    /// A `#[retry]` function's attribute.
    Attribute,
    /// A `Policy`'s builders (or the map it was read from with serde).
    Policy,
}

impl Writer {
    fn noun(self) -> &'static str {
        match self {
            Writer::Attribute => "attribute",
            Writer::Policy => "Policy",
        }
    }
}

/// Warns once per process with each text: a `Policy` built for each call resolves on each
/// call, and says what it says about its keys once.
pub(crate) fn warn_once(message: String) {
    static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    // Inserted whole under the lock: a poisoned set is still consistent.
    let new = WARNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(message.clone());
    if new {
        warn(&message);
    }
}

/// A function's resolved settings: what the engine reads on every call, and where each value
/// came from.
pub(crate) struct Resolution {
    pub(crate) settings: Settings,
    pub(crate) explained: Explained,
}

/// Resolves the settings of `function` written with `policy` (by `writer`) and `profile`;
/// `timed`: whether its attempts run under a timer (the attribute sets `attempt_timeout` or
/// `deadline`). The hedging keys apply only to a function whose attribute sets `hedge_after`
/// (whose attempts can run side by side). Runs once per function (its site keeps the result),
/// so that what it warns about costs its calls nothing. `aws_config`: the AWS SDKs' settings
/// apply too; `outside`: anything from outside the code applies at all; `guards`: the names of
/// the function's guards, in order, for [`explain`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve(
    function: &'static str,
    policy: &Keys,
    writer: Writer,
    profile: Option<&'static str>,
    timed: bool,
    aws_config: bool,
    outside: bool,
    guards: Vec<&'static str>,
) -> Resolution {
    static SOURCES: OnceLock<Sources> = OnceLock::new();
    let env = &|name: &str| std::env::var_os(name);
    let sources = SOURCES.get_or_init(|| Sources::load(env, &mut |w| warn(&w)));
    let layers = sources.layers(profile, env, &mut |w| warn(&w));
    let layers = match (outside, aws_config) {
        // The keys come from the code alone (a gRPC service config's policy).
        (false, _) => Vec::new(),
        #[cfg(feature = "aws-config")]
        (true, true) => sources.with_aws(layers, env, &mut |w| warn(&w)),
        // Without the `aws-config` feature no function asks for the AWS settings: the
        // attribute's `aws_config = true`, `Policy::aws_config` and a serde policy's
        // `aws_config` are refused where they are written.
        (true, _) => layers.to_vec(),
    };
    let resolution = resolution(
        Written {
            function,
            profile,
            keys: policy,
            writer,
        },
        &layers,
        timed,
        &mut warn_once,
    );
    let mut resolution = resolution;
    resolution.explained.guards = guards;
    if outside {
        let problems = sources.file.problems.iter().cloned();
        resolution.explained.notes.splice(0..0, problems);
    }
    explain::register(&resolution.explained);
    resolution
}

/// What one function's code wrote: its name, profile and keys, and whether an attribute or a
/// `Policy` wrote them.
struct Written<'a> {
    function: &'static str,
    profile: Option<&'static str>,
    keys: &'a Keys,
    writer: Writer,
}

/// The attribute over the layers, in order, over the mode defaults; then the coherence rules;
/// then a warning for each value from outside that the attribute shadows with another.
fn resolution(
    written: Written<'_>,
    layers: &[Layer],
    timed: bool,
    warn: &mut dyn FnMut(String),
) -> Resolution {
    let Written {
        function,
        profile,
        keys: policy,
        writer,
    } = written;
    // The keys that can take effect for the function, which `explain` lists: the hedging keys
    // only where the code writes hedge_after, the timer keys only where attempts run under a
    // timer (elsewhere a value from outside is ignored, below, and the default does nothing).
    let hedges = policy.wrote(Key::HedgeAfter);
    let applies =
        |key: Key| (hedges || !HEDGE_KEYS.contains(&key)) && (timed || !TIMER_KEYS.contains(&key));
    // What `explain` notes: the values from outside that were ignored, each with its warning
    // (those the layers' readers gave, for the keys that apply, then those of the rules
    // between keys, below).
    let mut notes: Vec<String> = layers
        .iter()
        .flat_map(|l| &l.ignored)
        .filter(|(key, _)| key.is_none_or(applies))
        .map(|(_, w)| w.clone())
        .collect();
    // What the environment or the file sets for a key the attribute writes: the value that
    // would apply without the attribute's.
    let mut shadowed: [Option<(Value, Source)>; KEYS] = Default::default();
    let mut chosen: [Option<(Value, Source)>; KEYS] = Key::ALL.map(|key| {
        let outside = layers.iter().find_map(|l| l.get(key).cloned());
        if policy.wrote(key) {
            shadowed[key as usize] = outside;
            policy.value(key).map(|v| (v, Source::Attribute))
        } else {
            outside
        }
    });
    if !hedges {
        for key in HEDGE_KEYS {
            if let Some((value, source)) = chosen[key as usize].take() {
                let (why, fix) = match writer {
                    Writer::Attribute => (
                        "it may not be idempotent, or borrow its arguments mutably",
                        "write hedge_after in the attribute",
                    ),
                    Writer::Policy => {
                        ("it may not be idempotent", "call hedge_after on the Policy")
                    }
                };
                warn(format!(
                    "ignoring {} ({} = {value}) for `{function}`: its {} does not set \
                     hedge_after, so its attempts may not run side by side ({why}); {fix} to \
                     make hedging configurable",
                    source.describe(key),
                    key.name(),
                    writer.noun(),
                ));
            }
        }
    }
    if !timed {
        for key in TIMER_KEYS {
            if let Some((value, source)) = chosen[key as usize].take() {
                let fix = match writer {
                    Writer::Attribute => "write one of them in the attribute",
                    Writer::Policy => {
                        "write one of them on the Policy in code (its error type then \
                         represents a timeout)"
                    }
                };
                warn(format!(
                    "ignoring {} ({} = {value}) for `{function}`: its {} sets neither \
                     attempt_timeout nor deadline, so its attempts run without a timer; {fix} \
                     to make the timeouts configurable",
                    source.describe(key),
                    key.name(),
                    writer.noun(),
                ));
            }
        }
    }
    let mut ignoring = |w: String| {
        notes.push(w.clone());
        warn(w);
    };
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
                    ignoring(format!(
                        "ignoring {} ({} = {value}) for `{function}`: {why}",
                        source.describe(key),
                        key.name(),
                    ));
                    chosen[key as usize] = None;
                }
            }
        }
    };
    // The attribute's values that are in effect (the coherence rules above drop only values
    // from outside) over a different value from outside.
    for key in Key::ALL {
        let (Some((value, Source::Attribute)), Some((outside, source))) =
            (&chosen[key as usize], &shadowed[key as usize])
        else {
            continue;
        };
        if value != outside {
            let (name, writer) = (key.name(), writer.noun());
            warn(format!(
                "ignoring {} ({name} = {outside}) for `{function}`: its {writer} writes {name} = \
                 {value}, which is used (the code's values take precedence over the environment \
                 and the config file, as in the AWS SDKs: code, then environment, then shared \
                 config file); leave {name} out of the {writer} to set it from outside",
                source.describe(key),
            ));
        }
    }
    let settings = Settings::of(&policy);
    let entries = Key::ALL
        .iter()
        .filter(|&&key| applies(key))
        .map(|&key| {
            let source = chosen[key as usize]
                .as_ref()
                .map_or(Source::Default, |(_, s)| s.clone());
            Entry {
                key: key.name(),
                value: settings
                    .value(key)
                    .map_or_else(|| "none".to_owned(), |v| v.to_string()),
                shadowed: shadowed[key as usize]
                    .take()
                    .filter(|_| source == Source::Attribute)
                    .map(|(value, source)| Shadowed {
                        value: value.to_string(),
                        source,
                    }),
                source,
            }
        })
        .collect();
    Resolution {
        settings,
        explained: Explained {
            function,
            profile,
            entries,
            guards: Vec::new(),
            notes,
        },
    }
}

/// The keys that shape hedging.
const HEDGE_KEYS: [Key; 5] = [
    Key::HedgeAfter,
    Key::MaxInFlight,
    Key::MinHedgeAfter,
    Key::MaxHedgeAfter,
    Key::HedgeBudget,
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

/// The AWS SDKs' settings: the variables' layer and the shared config file's (whose warnings
/// say why none of the file's values apply, if `AWS_PROFILE` names a profile that is nowhere).
#[cfg(feature = "aws-config")]
struct Aws {
    env: Layer,
    file: Layer,
}

/// The environment and the file as read once.
struct Sources {
    env: Layer,
    file: FileConfig,
    /// `RETRY_<PROFILE>_*` of each profile asked for so far.
    profile_env: Mutex<Vec<(Box<str>, Layer)>>,
    /// The AWS variables and shared config file, read when a function with `aws_config = true`
    /// first resolves.
    #[cfg(feature = "aws-config")]
    aws: OnceLock<Aws>,
}

type Around<'a> = &'a dyn Fn(&str) -> Option<OsString>;

impl Sources {
    fn load(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Sources {
        let layer = env_layer("RETRY_", env, warn);
        let mut unread = Vec::new();
        let mut file = match env_value("RETRY_CONFIG_FILE", env, &mut |w| unread.push(w)) {
            Some(path) => read_file(&path, warn),
            None => FileConfig::default(),
        };
        for w in unread {
            file.problem(w, warn);
        }
        Sources {
            env: layer,
            file,
            profile_env: Mutex::new(Vec::new()),
            #[cfg(feature = "aws-config")]
            aws: OnceLock::new(),
        }
    }

    /// `layers` with the AWS SDKs' settings in their places: the `AWS_*` variables below the
    /// `RETRY_*` ones, the shared config file below `RETRY_CONFIG_FILE`.
    #[cfg(feature = "aws-config")]
    fn with_aws(
        &self,
        layers: [Layer; 4],
        env: Around<'_>,
        warn: &mut dyn FnMut(String),
    ) -> Vec<Layer> {
        let aws = self.aws.get_or_init(|| Aws {
            env: Layer::noting(warn, |warn| aws::env_layer(env, warn)),
            file: Layer::noting(warn, |warn| aws::file_layer(env, warn)),
        });
        let [profile_env, env, file_profile, file_default] = layers;
        let layers = vec![
            profile_env,
            env,
            aws.env.clone(),
            file_profile,
            file_default,
            aws.file.clone(),
        ];
        layers
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
                    let prefix = format!("RETRY_{}_", env_stem(profile));
                    let mut layer = env_layer(&prefix, env, warn);
                    // A table meant for the profile under a name close to its own (`billing_eu`
                    // for `billing-eu`) applies to nothing: said once, with the profile.
                    if let Some(meant) = self.file.misnamed(profile) {
                        layer.ignore(None, meant, warn);
                    }
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

/// The config file's `[default]` and `[profile.NAME]` tables (each with the warnings about its
/// own values), and the warnings about the file as a whole: its name, its syntax, a table
/// that is not one of its settings.
#[derive(Debug, Default, PartialEq)]
struct FileConfig {
    /// Where it was read from.
    path: String,
    default: Layer,
    profiles: Vec<(String, Layer)>,
    problems: Vec<String>,
}

impl FileConfig {
    /// Gives the warning `w` about the file as a whole, and keeps it.
    fn problem(&mut self, w: String, warn: &mut dyn FnMut(String)) {
        self.problems.push(w.clone());
        warn(w);
    }

    /// For a profile the file has no table of, but one of a name close to its own: what to
    /// say of it.
    fn misnamed(&self, profile: &str) -> Option<String> {
        if self.profiles.iter().any(|(n, _)| n == profile) {
            return None;
        }
        let names: Vec<&str> = self.profiles.iter().map(|(n, _)| n.as_str()).collect();
        let meant = retry_keys::suggest(profile, &names)?;
        Some(format!(
            "{} has no [profile.{profile}] table for the functions of profile `{profile}`: did \
             you mean [profile.{meant}]? its values apply to a profile `{meant}`, not to \
             `{profile}`",
            self.path
        ))
    }

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
    let mut config = FileConfig::default();
    config.problem(
        format!(
            "ignoring RETRY_CONFIG_FILE={path:?}: this build of retry-runtime reads no config \
             file (its `config-file` feature is off)"
        ),
        warn,
    );
    config
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
        let mut ignored = Vec::new();
        let raw = env_value(&variable, env, &mut |w| ignored.push(w));
        match raw.map(|raw| (key.parse(&raw), raw)) {
            Some((Ok(value), _)) => layer.set(key, value, Source::Environment { variable }),
            Some((Err(expected), raw)) => {
                ignored.push(format!("ignoring {variable}={raw:?}: {expected}"));
            }
            None => {}
        }
        for w in ignored {
            layer.ignore(Some(key), w, warn);
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

    /// An environment of `vars` alone.
    pub(super) fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
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
                ("RETRY_BEHAVIOR", "2026"),
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
            Value::Behavior(crate::spec::Behavior::Aws2026),
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
    /// `tests/workspace/default_features.rs` runs this in a build of the runtime with its default
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
                ("RETRY_INITIAL_BACKOFF", "fast"),
                ("RETRY_MAX_ATTEMPTS", "0"),
                ("RETRY_X_MAX_ATTEMPTS", "three"),
                ("RETRY_DEADLINE", "10"),
                ("RETRY_JITTER", "1.5"),
            ],
            Some("x"),
        );
        // No value, and each warning kept with its key, for `explain`.
        assert_eq!(layers[0].values, Layer::default().values);
        assert_eq!(layers[1].values, Layer::default().values);
        let kept: Vec<&String> = layers
            .iter()
            .flat_map(|l| &l.ignored)
            .map(|(_, w)| w)
            .collect();
        assert_eq!(kept.len(), warnings.len());
        assert_eq!(layers[0].ignored[0].0, Some(Key::MaxAttempts));
        assert_eq!(layers[1].ignored[0].0, Some(Key::Mode));
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MODE=\"legacy\": mode is \"standard\" or \"adaptive\"",
                "ignoring RETRY_MAX_ATTEMPTS=\"0\": max_attempts is a whole number from 1 to \
                 4294967295",
                "ignoring RETRY_INITIAL_BACKOFF=\"fast\": initial_backoff is a duration with a \
                 unit, such as \"100ms\" (units: ns, us, ms, s, m, h)",
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

    fn resolve_as(
        writer: Writer,
        policy: &Keys,
        layers: &[Layer],
        timed: bool,
    ) -> (Resolution, Vec<String>) {
        let mut warnings = Vec::new();
        let written = Written {
            function: "f",
            profile: None,
            keys: policy,
            writer,
        };
        let r = resolution(written, layers, timed, &mut |w| warnings.push(w));
        (r, warnings)
    }

    fn resolve_with(policy: &Keys, layers: &[Layer], timed: bool) -> (Resolution, Vec<String>) {
        resolve_as(Writer::Attribute, policy, layers, timed)
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
                profile: None,
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
        // The file's multiplier is shadowed by the attribute's: said once.
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "ignoring retry.toml:2 in [default] (multiplier = 3) for `f`: its attribute \
                 writes multiplier = 1.5, which is used"
            ),
            "{warnings:?}"
        );
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
            sources[..5],
            [
                "mode=standard (env RETRY_P_MODE)",
                "behavior=classic (default)",
                "max_attempts=4 (env RETRY_MAX_ATTEMPTS)",
                "initial_backoff=1s (default)",
                "multiplier=1.5 (attribute)",
            ]
        );
        let shadowed = r
            .explained
            .get("multiplier")
            .unwrap()
            .shadowed
            .clone()
            .unwrap();
        assert_eq!(
            (shadowed.value.as_str(), shadowed.source.to_string()),
            ("3", "file retry.toml:2".to_owned())
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

    #[test]
    fn a_misspelt_value_says_what_it_meant() {
        let (_, warnings) = load(
            &[
                ("RETRY_MODE", "standrd"),
                ("RETRY_JITTER", "ful"),
                ("RETRY_P_HEDGE_AFTER", "p955"),
            ],
            Some("p"),
        );
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MODE=\"standrd\": did you mean \"standard\"? mode is \
                 \"standard\" or \"adaptive\"",
                "ignoring RETRY_JITTER=\"ful\": did you mean \"full\"? jitter is \"full\", \
                 \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]",
                "ignoring RETRY_P_HEDGE_AFTER=\"p955\": did you mean \"p95\"? hedge_after is a \
                 duration above zero with a unit, such as \"50ms\", or a percentile of the \
                 function's latency: \"p50\", \"p90\", \"p95\" or \"p99\"",
            ]
        );
    }

    #[test]
    fn a_value_from_outside_shadowed_by_the_attribute_is_one_warning() {
        let general = layer(
            &[
                (Key::MaxAttempts, Value::Count(1)),
                (Key::Multiplier, Value::Factor(3.0)),
                (Key::Mode, Value::Mode(Mode::Standard)),
            ],
            &env_source("RETRY_MAX_ATTEMPTS"),
        );
        let file = layer(
            &[(Key::MaxAttempts, Value::Count(9))],
            &Source::File {
                path: "retry.toml".into(),
                line: 3,
                profile: None,
            },
        );
        // The attribute writes max_attempts (shadowing a different value) and mode (the same
        // value: nothing to say); multiplier is left open and comes from outside.
        let attribute = Keys::new().max_attempts(4).mode(Mode::Standard);
        let (r, warnings) = resolve_with(&attribute, &[general, file], false);
        assert_eq!(
            warnings,
            [
                "ignoring RETRY_MAX_ATTEMPTS (max_attempts = 1) for `f`: its attribute writes \
                 max_attempts = 4, which is used (the code's values take precedence over the \
                 environment and the config file, as in the AWS SDKs: code, then environment, \
                 then shared config file); leave max_attempts out of the attribute to set it \
                 from outside"
            ]
        );
        assert_eq!(r.settings.max_attempts, 4);
        assert_eq!(r.settings.multiplier, 3.0);
        let entry = |key: &str| r.explained.get(key).unwrap().clone();
        assert_eq!(
            entry("max_attempts").shadowed,
            Some(Shadowed {
                value: "1".into(),
                source: env_source("RETRY_MAX_ATTEMPTS"),
            }),
            "the nearest value from outside"
        );
        assert_eq!(
            entry("mode").shadowed.map(|s| s.value),
            Some("standard".into())
        );
        assert_eq!(entry("multiplier").shadowed, None);
        let shown = r.explained.to_string();
        assert!(
            shown.contains(
                "max_attempts                4          attribute; shadows 1 (env \
                 RETRY_MAX_ATTEMPTS)"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("multiplier                  3          env RETRY_MAX_ATTEMPTS\n"),
            "{shown}"
        );
    }

    /// `explain` notes what it warned about and ignored from outside, for the function it
    /// explains: a bad value of a key that applies (the environment's, a table's of the file it
    /// reads), a key of the file it does not know, a value that breaks a rule between keys, and
    /// the file's own problems; not a bad value of a key that does not apply to it, nor what
    /// another profile's table says.
    #[cfg(feature = "config-file")]
    #[test]
    fn explain_notes_what_it_ignored_from_outside() {
        let dir = std::env::temp_dir().join(format!("retry-explain-notes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("retry.toml");
        std::fs::write(
            &path,
            "[default]\nmax_attempt = 5\nmultiplier = \"fast\"\n\n\
             [profile.other]\nmode = \"legacy\"\n\n[limits]\nx = 1\n",
        )
        .unwrap();
        let path = path.to_str().unwrap().to_owned();
        let env = env(&[
            ("RETRY_CONFIG_FILE", &path),
            ("RETRY_MAX_ATTEMPTS", "abc"),
            ("RETRY_DEADLINE", "10"),
            ("RETRY_INITIAL_BACKOFF", "30s"),
        ]);
        let mut warnings = Vec::new();
        let sources = Sources::load(&env, &mut |w| warnings.push(w));
        let layers = sources.layers(None, &env, &mut |w| warnings.push(w));
        // An attribute whose max_backoff is below the environment's initial_backoff.
        let keys = Keys::new().max_backoff(Duration::from_secs(2));
        let mut r = resolution(
            Written {
                function: "f",
                profile: None,
                keys: &keys,
                writer: Writer::Attribute,
            },
            &layers,
            false,
            &mut |w| warnings.push(w),
        );
        r.explained
            .notes
            .splice(0..0, sources.file.problems.iter().cloned());
        let notes = &r.explained.notes;
        let has = |text: &str| notes.iter().filter(|n| n.contains(text)).count();
        assert_eq!(
            has("`limits` is not a setting of the file"),
            1,
            "{notes:#?}"
        );
        assert_eq!(has("ignoring RETRY_MAX_ATTEMPTS=\"abc\""), 1, "{notes:#?}");
        assert_eq!(
            has("unknown key `max_attempt`: did you mean `max_attempts`?"),
            1
        );
        assert_eq!(has("multiplier = \"fast\""), 1, "{notes:#?}");
        assert_eq!(has("ignoring RETRY_INITIAL_BACKOFF"), 1, "{notes:#?}");
        // Untimed: the deadline does not apply to it; the other profile is not its own.
        assert_eq!(has("RETRY_DEADLINE"), 0, "{notes:#?}");
        assert_eq!(has("legacy"), 0, "{notes:#?}");
        assert_eq!(notes.len(), 5, "{notes:#?}");
        // Each is one of the warnings given (the file's, the environment's, the rule's).
        for note in notes {
            assert!(warnings.contains(note), "{note} not in {warnings:#?}");
        }
        // The value in effect is the default, and the note after it says why.
        assert_eq!(
            r.explained.get("max_attempts").unwrap().source,
            Source::Default
        );
        let shown = r.explained.to_string();
        assert!(
            shown.contains("\n  note: ignoring RETRY_MAX_ATTEMPTS=\"abc\": "),
            "{shown}"
        );
        // A function of the other profile is told of its table's value.
        let layers = sources.layers(Some("other"), &env, &mut |w| warnings.push(w));
        let r = resolution(
            Written {
                function: "g",
                profile: Some("other"),
                keys: &Keys::new(),
                writer: Writer::Attribute,
            },
            &layers,
            false,
            &mut |w| warnings.push(w),
        );
        assert!(
            r.explained
                .notes
                .iter()
                .any(|n| n.contains("mode = \"legacy\""))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn explain_lists_only_the_keys_that_apply() {
        let keys =
            |r: &Resolution| -> Vec<&str> { r.explained.entries.iter().map(|e| e.key).collect() };
        let common = [
            "mode",
            "behavior",
            "max_attempts",
            "initial_backoff",
            "multiplier",
            "max_backoff",
            "jitter",
        ];
        let timer = [
            "attempt_timeout",
            "attempt_timeout_multiplier",
            "max_attempt_timeout",
            "deadline",
        ];
        let hedge = [
            "hedge_after",
            "max_in_flight",
            "min_hedge_after",
            "max_hedge_after",
            "hedge_budget",
        ];
        // Neither hedged nor timed: a hedging or timer key from outside is ignored, and not
        // listed.
        let outside = layer(
            &[
                (Key::MaxInFlight, Value::Count(3)),
                (Key::Deadline, Value::Duration(MS(5000))),
            ],
            &env_source("RETRY_X"),
        );
        let (r, warnings) = resolve_with(&Keys::new(), std::slice::from_ref(&outside), false);
        assert_eq!(keys(&r), common);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert_eq!(r.explained.get("max_in_flight"), None);
        let shown = r.explained.to_string();
        assert!(
            !shown.contains("hedge") && !shown.contains("deadline"),
            "{shown}"
        );
        // Timed: the timer keys.
        let (r, _) = resolve_with(&Keys::new().deadline(MS(1000)), &[], true);
        assert_eq!(keys(&r), [&common[..], &timer[..]].concat());
        // Hedged: the hedging keys, the value from outside among them.
        let hedged = Keys::new().with(
            Key::HedgeAfter,
            Value::Hedge(crate::spec::HedgeSpec::Fixed(MS(50))),
        );
        let (r, warnings) = resolve_with(&hedged, std::slice::from_ref(&outside), false);
        assert_eq!(keys(&r), [&common[..], &hedge[..]].concat());
        assert_eq!(r.explained.get("max_in_flight").unwrap().value, "3");
        assert_eq!(r.explained.get("hedge_budget").unwrap().value, "none");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let budget = layer(
            &[(Key::HedgeBudget, Key::HedgeBudget.parse("2%").unwrap())],
            &env_source("RETRY_HEDGE_BUDGET"),
        );
        let (r, warnings) = resolve_with(&hedged, std::slice::from_ref(&budget), false);
        assert_eq!(r.explained.get("hedge_budget").unwrap().value, "2%");
        assert!(warnings.is_empty(), "{warnings:?}");
        let (r, _) = resolve_with(&hedged.attempt_timeout(MS(100)), &[], true);
        assert_eq!(r.explained.entries.len(), Key::ALL.len());
    }

    #[test]
    fn a_file_value_shadowed_by_a_policy_names_the_file_and_its_table() {
        let profile = layer(
            &[(Key::Deadline, Value::Duration(MS(30_000)))],
            &Source::File {
                path: "retry.toml".into(),
                line: 7,
                profile: Some("billing".into()),
            },
        );
        let policy = Keys::new().deadline(MS(5000));
        let (r, warnings) = resolve_as(Writer::Policy, &policy, &[profile], true);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "ignoring retry.toml:7 in [profile.billing] (deadline = 30s) for `f`: its Policy \
                 writes deadline = 5s, which is used"
            ),
            "{warnings:?}"
        );
        assert!(
            warnings[0].ends_with("leave deadline out of the Policy to set it from outside"),
            "{warnings:?}"
        );
        assert_eq!(r.settings.deadline, Some(MS(5000)));
    }
}
