//! The project's config file, the TOML that `RETRY_CONFIG_FILE` names: a `[default]` table and
//! `[profile.NAME]` tables of the keys the environment may set (`retry_keys::Key`). Read as the
//! runtime reads it (`retry-runtime/src/config/file.rs`: a profile's key over the `[default]`
//! table's, key by key), except that what the runtime would ignore with a warning is a
//! problem here, so that a simulation never runs a policy other than the one the file means.

use super::problem::{Problem, Problems, did_you_mean};
use super::tomlish::{self, Reader};
use retry_keys::{Key, Value};
use toml::de::{DeTable, DeValue};

/// A value of the file and its line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Set {
    /// The value.
    pub value: Value,
    /// Its line (1-based).
    pub line: usize,
}

/// One table of the file: the keys it sets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// `Some(NAME)` for `[profile.NAME]`, `None` for `[default]`.
    pub profile: Option<String>,
    /// The keys set, each once (the last value written wins, as TOML forbids a repeat).
    pub keys: Vec<(Key, Set)>,
}

impl Table {
    /// The value the table sets for `key`.
    pub fn get(&self, key: Key) -> Option<Set> {
        self.keys.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    }
}

/// The file: its path as given, its `[default]` table and its profiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigFile {
    /// The path, as the option or the topology names it.
    pub path: String,
    /// `[default]`.
    pub default: Table,
    /// `[profile.NAME]`, in the order of the file.
    pub profiles: Vec<Table>,
}

impl ConfigFile {
    /// The profile named `name`.
    pub fn profile(&self, name: &str) -> Option<&Table> {
        self.profiles
            .iter()
            .find(|t| t.profile.as_deref() == Some(name))
    }

    /// The profiles' names, in the order of the file.
    pub fn names(&self) -> Vec<&str> {
        self.profiles
            .iter()
            .filter_map(|t| t.profile.as_deref())
            .collect()
    }
}

/// Reads `text`, the file `path`: the file, and every problem of it.
pub fn parse(path: &str, text: &str) -> (ConfigFile, Vec<Problem>) {
    let mut problems = Problems::new(path, text);
    let doc = tomlish::parse(text, &mut problems);
    let mut file = ConfigFile {
        path: path.to_owned(),
        ..ConfigFile::default()
    };
    for (name, span, value) in tomlish::entries(&doc) {
        match (name, value.get_ref()) {
            ("default", DeValue::Table(t)) => {
                file.default = table(t, None, &mut problems);
            }
            ("profile", DeValue::Table(profiles)) => {
                for (profile, pspan, value) in tomlish::entries(profiles) {
                    let Some(t) = (Reader {
                        problems: &mut problems,
                    })
                    .table(&format!("profile.{profile}"), value) else {
                        continue;
                    };
                    if !retry_keys::is_profile_name(profile) {
                        problems.at(
                            pspan,
                            format!(
                                "`{profile}` is not a profile name (letters, digits, `_` and `-`)"
                            ),
                        );
                    }
                    let t = table(t, Some(profile), &mut problems);
                    file.profiles.push(t);
                }
            }
            ("default" | "profile", other) => problems.at(
                value.span(),
                format!(
                    "`{name}` is {}: write `[default]` or `[profile.NAME]`",
                    tomlish::kind(other)
                ),
            ),
            (other, _) => problems.at(
                span,
                format!(
                    "`{other}` is not a setting of the file, which has a `[default]` table and \
                     `[profile.NAME]` tables{}",
                    key_hint(other)
                ),
            ),
        }
    }
    (file, problems.into_vec())
}

/// For a key written outside any table: where it goes.
fn key_hint(name: &str) -> String {
    if Key::from_name(name).is_some() {
        format!(" (write `{name}` under `[default]` or a profile)")
    } else {
        String::new()
    }
}

/// The keys of one table.
fn table(t: &DeTable<'_>, profile: Option<&str>, problems: &mut Problems<'_>) -> Table {
    let names: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
    let mut out = Table {
        profile: profile.map(str::to_owned),
        keys: Vec::new(),
    };
    for (name, span, value) in tomlish::entries(t) {
        let Some(key) = Key::from_name(name) else {
            problems.at(
                span,
                format!("unknown key `{name}`: {}", did_you_mean(name, &names)),
            );
            continue;
        };
        match value_of(key, value.get_ref()) {
            Ok(v) => out.keys.push((
                key,
                Set {
                    value: v,
                    line: problems.line(span.start),
                },
            )),
            Err(why) => {
                let raw = problems.raw(value.span()).to_owned();
                problems.at(value.span(), format!("{name} = {raw}: {why}"));
            }
        }
    }
    out
}

/// `value` read as `key`'s, as the runtime reads the file and the environment: a string by
/// `Key::parse`, a number by `Key::from_number` (a misspelt name says what it meant).
pub fn value_of(key: Key, value: &DeValue<'_>) -> Result<Value, String> {
    match value {
        DeValue::String(s) => key.parse(s).map_err(|e| e.to_string()),
        DeValue::Integer(_) => match tomlish::integer(value) {
            Some(n) => key.from_number(n as f64, true).map_err(|e| e.to_string()),
            None => Err(key.expected()),
        },
        DeValue::Float(_) => match tomlish::number(value) {
            Some(x) => key.from_number(x, false).map_err(|e| e.to_string()),
            None => Err(key.expected()),
        },
        _ => Err(key.expected()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retry_keys::Mode;
    use std::time::Duration;

    #[test]
    fn the_default_table_and_the_profiles_with_their_lines() {
        let (file, problems) = parse(
            "retry.toml",
            "[default]\nmax_attempts = 4\n\n[profile.api]\nmode = \"adaptive\"\ninitial_backoff = \"100ms\"\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            file.default.get(Key::MaxAttempts),
            Some(Set {
                value: Value::Count(4),
                line: 2
            })
        );
        let api = file.profile("api").unwrap();
        assert_eq!(
            api.get(Key::Mode).unwrap().value,
            Value::Mode(Mode::Adaptive)
        );
        assert_eq!(
            api.get(Key::InitialBackoff).unwrap().value,
            Value::Duration(Duration::from_millis(100))
        );
        assert_eq!(api.get(Key::InitialBackoff).unwrap().line, 6);
        assert_eq!(file.names(), ["api"]);
    }

    #[test]
    fn every_problem_of_the_file_at_once_with_its_line() {
        let (_, problems) = parse(
            "retry.toml",
            "max_attempts = 3\n[default]\nmax_atempts = 4\njitter = \"ful\"\n[profile.api]\ninitial_backoff = 5\n[nope]\n",
        );
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 5, "{text:#?}");
        assert!(
            text[0].starts_with("retry.toml:1: `max_attempts` is not a setting"),
            "{text:#?}"
        );
        assert!(text[0].contains("under `[default]`"));
        assert!(
            text[1].starts_with(
                "retry.toml:3: unknown key `max_atempts`: did you mean `max_attempts`?"
            ),
            "{text:#?}"
        );
        assert!(
            text[2].starts_with("retry.toml:4: jitter = \"ful\": did you mean \"full\"?"),
            "{text:#?}"
        );
        assert!(
            text[3].starts_with("retry.toml:6: initial_backoff = 5: initial_backoff needs a unit"),
            "{text:#?}"
        );
        assert!(
            text[4].starts_with("retry.toml:7: `nope` is not a setting"),
            "{text:#?}"
        );
    }
}
