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
//! nothing here panics. The file is read by a strict parser of the TOML subset above: comments,
//! blank lines, `[default]`, `[profile.NAME]` (or `[profile."NAME"]`), and `key = value` lines
//! whose value is a string or a decimal integer.

use crate::observe;
use crate::policy::{DEFAULT_MAX_ATTEMPTS, Mode, Policy};
use std::ffi::OsString;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The settings that may come from outside the attribute, resolved once per function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) max_attempts: u32,
}

/// Resolves `mode` and `max_attempts` for a function with `policy` and `profile`.
pub(crate) fn resolve(policy: &Policy, profile: Option<&str>) -> Settings {
    static SOURCES: OnceLock<Sources> = OnceLock::new();
    let sources = SOURCES.get_or_init(|| {
        Sources::load(&|name| std::env::var_os(name), &mut |w| {
            observe::config_warning(&w);
        })
    });
    let layers = sources.layers(profile, &|name| std::env::var_os(name), &mut |w| {
        observe::config_warning(&w);
    });
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
    mode: Option<Mode>,
    max_attempts: Option<u32>,
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
fn parse_attempts(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().filter(|n| *n >= 1)
}

/// The file's `[default]` and `[profile.NAME]` sections.
#[derive(Debug, Default, PartialEq, Eq)]
struct FileConfig {
    default: Layer,
    profiles: Vec<(String, Layer)>,
}

impl FileConfig {
    fn profile(&self, name: &str) -> Layer {
        self.profiles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .unwrap_or_default()
    }
}

fn read_file(path: &str, warn: &mut dyn FnMut(String)) -> FileConfig {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            warn(format!(
                "ignoring RETRY_CONFIG_FILE={path:?}: cannot read it ({e})"
            ));
            return FileConfig::default();
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse_file(&text, &mut |line, msg| {
            warn(format!("{path}:{line}: {msg}; ignored"));
        }),
        Err(_) => {
            warn(format!(
                "ignoring RETRY_CONFIG_FILE={path:?}: it is not valid UTF-8"
            ));
            FileConfig::default()
        }
    }
}

/// Which section the lines being read belong to.
enum Section {
    /// Before any header: TOML's root table, which holds nothing here.
    Root,
    Default,
    Profile(usize),
    /// A section this file format does not have, or one seen before.
    Ignored,
}

/// Parses the file's text; `warn(line, message)` hears of every line it cannot use.
fn parse_file(text: &str, warn: &mut dyn FnMut(usize, String)) -> FileConfig {
    let mut config = FileConfig::default();
    let mut section = Section::Root;
    let mut seen_default = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let mut cur = Cursor::new(raw);
        cur.skip_blank();
        if cur.at_end_of_line() {
            continue;
        }
        if cur.eat('[') {
            section = match parse_header(&mut cur) {
                Err(msg) => {
                    warn(line_no, msg);
                    Section::Ignored
                }
                Ok(Header::Default) if seen_default => {
                    warn(line_no, "[default] appears a second time".into());
                    Section::Ignored
                }
                Ok(Header::Default) => {
                    seen_default = true;
                    Section::Default
                }
                Ok(Header::Profile(name)) => {
                    if config.profiles.iter().any(|(n, _)| *n == name) {
                        warn(line_no, format!("[profile.{name}] appears a second time"));
                        Section::Ignored
                    } else {
                        config.profiles.push((name, Layer::default()));
                        Section::Profile(config.profiles.len() - 1)
                    }
                }
                Ok(Header::Other(name)) => {
                    warn(
                        line_no,
                        format!(
                            "unknown section [{name}] (the sections are [default] and \
                             [profile.NAME]), its keys are ignored too"
                        ),
                    );
                    Section::Ignored
                }
            };
            continue;
        }
        let (key, value) = match parse_key_value(&mut cur) {
            Ok(kv) => kv,
            Err(msg) => {
                warn(line_no, msg);
                continue;
            }
        };
        let layer = match section {
            Section::Ignored => continue,
            Section::Root => {
                warn(
                    line_no,
                    format!("`{key}` is outside any section (put it under [default])"),
                );
                continue;
            }
            Section::Default => &mut config.default,
            Section::Profile(i) => &mut config.profiles[i].1,
        };
        match key.as_str() {
            "mode" => {
                let mode = match &value {
                    Value::Str(s) => Mode::parse(s).ok_or_else(|| {
                        format!("mode = {s:?}: the mode is \"standard\" or \"adaptive\"")
                    }),
                    other => Err(format!(
                        "mode = {}: the mode is a string, \"standard\" or \"adaptive\"",
                        other.describe()
                    )),
                };
                match mode {
                    Ok(_) if layer.mode.is_some() => {
                        warn(
                            line_no,
                            "`mode` is set a second time in this section".into(),
                        );
                    }
                    Ok(m) => layer.mode = Some(m),
                    Err(msg) => warn(line_no, msg),
                }
            }
            "max_attempts" => {
                let n = match &value {
                    Value::Int(digits) => parse_attempts(digits).ok_or_else(|| {
                        format!(
                            "max_attempts = {digits}: max_attempts is a whole number from 1 \
                             to {}",
                            u32::MAX
                        )
                    }),
                    Value::Str(s) => Err(format!(
                        "max_attempts = {s:?}: max_attempts is an integer, written without quotes"
                    )),
                    Value::Other(raw) => Err(format!(
                        "max_attempts = {raw}: max_attempts is a whole number from 1 to {}",
                        u32::MAX
                    )),
                };
                match n {
                    Ok(_) if layer.max_attempts.is_some() => warn(
                        line_no,
                        "`max_attempts` is set a second time in this section".into(),
                    ),
                    Ok(n) => layer.max_attempts = Some(n),
                    Err(msg) => warn(line_no, msg),
                }
            }
            other => warn(
                line_no,
                format!("unknown key `{other}` (the keys are `mode` and `max_attempts`)"),
            ),
        }
    }
    config
}

enum Header {
    Default,
    Profile(String),
    Other(String),
}

/// After `[`: `default`, `profile.NAME` or another dotted name, then `]` and the end of the
/// line.
fn parse_header(cur: &mut Cursor<'_>) -> Result<Header, String> {
    if cur.peek() == Some('[') {
        return Err("arrays of tables ([[...]]) are not part of this file's format".into());
    }
    let mut parts = Vec::new();
    loop {
        cur.skip_blank();
        parts.push(cur.key_part()?);
        cur.skip_blank();
        if cur.eat('.') {
            continue;
        }
        if cur.eat(']') {
            break;
        }
        return Err("a section header is `[default]` or `[profile.NAME]`".into());
    }
    cur.expect_end()?;
    Ok(match parts.as_slice() {
        [d] if d == "default" => Header::Default,
        [p, name] if p == "profile" => Header::Profile(name.clone()),
        _ => Header::Other(parts.join(".")),
    })
}

enum Value {
    Str(String),
    /// Decimal digits, underscores removed.
    Int(String),
    Other(String),
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Value::Str(s) => format!("{s:?}"),
            Value::Int(d) => d.clone(),
            Value::Other(raw) => raw.clone(),
        }
    }
}

fn parse_key_value(cur: &mut Cursor<'_>) -> Result<(String, Value), String> {
    let key = cur.key_part()?;
    cur.skip_blank();
    if cur.peek() == Some('.') {
        return Err(format!(
            "unknown key `{key}.…` (the keys are `mode` and `max_attempts`)"
        ));
    }
    if !cur.eat('=') {
        return Err("expected `key = value`".into());
    }
    cur.skip_blank();
    let value = match cur.peek() {
        Some('"') => {
            if cur.rest().starts_with("\"\"\"") {
                return Err("multi-line strings are not part of this file's format".into());
            }
            Value::Str(cur.quoted('"')?)
        }
        Some('\'') => {
            if cur.rest().starts_with("'''") {
                return Err("multi-line strings are not part of this file's format".into());
            }
            Value::Str(cur.quoted('\'')?)
        }
        Some(_) => {
            let raw = cur.bare_value();
            match integer(raw) {
                Some(digits) => Value::Int(digits),
                None => Value::Other(raw.to_string()),
            }
        }
        None => return Err(format!("`{key} =` has no value")),
    };
    cur.expect_end()?;
    Ok((key, value))
}

/// A TOML decimal integer: an optional `+`, digits with single `_` between them, no leading
/// zero. Returns the digits; `None` for anything else (floats, negatives, hex, booleans...).
fn integer(raw: &str) -> Option<String> {
    let body = raw.strip_prefix('+').unwrap_or(raw);
    let bytes = body.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.first().is_some_and(u8::is_ascii_digit)
        && bytes.last().is_some_and(u8::is_ascii_digit)
        && bytes.iter().all(|b| b.is_ascii_digit() || *b == b'_')
        && !body.contains("__")
        && !(bytes.len() > 1 && bytes[0] == b'0');
    ok.then(|| body.replace('_', ""))
}

/// Reads one line.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(line: &'a str) -> Self {
        Cursor { rest: line }
    }

    fn rest(&self) -> &'a str {
        self.rest
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn skip_blank(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// Only blanks, maybe a comment, or a stray carriage return remain.
    fn at_end_of_line(&self) -> bool {
        let r = self.rest.trim_start_matches([' ', '\t', '\r']);
        r.is_empty() || r.starts_with('#')
    }

    fn expect_end(&mut self) -> Result<(), String> {
        if self.at_end_of_line() {
            Ok(())
        } else {
            Err(format!(
                "unexpected `{}` at the end of the line",
                self.rest.trim()
            ))
        }
    }

    /// A bare key (`A-Za-z0-9_-`) or a quoted one.
    fn key_part(&mut self) -> Result<String, String> {
        match self.peek() {
            Some('"') => self.quoted('"'),
            Some('\'') => self.quoted('\''),
            _ => {
                let end = self
                    .rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(self.rest.len());
                if end == 0 {
                    return Err(format!(
                        "expected a name, found `{}`",
                        self.rest.trim_end_matches('\r')
                    ));
                }
                let (key, rest) = self.rest.split_at(end);
                self.rest = rest;
                Ok(key.to_string())
            }
        }
    }

    /// A one-line string between `quote`s. Escapes are not part of this format: a value with a
    /// backslash in a `"` string is refused rather than misread.
    fn quoted(&mut self, quote: char) -> Result<String, String> {
        self.eat(quote);
        let Some(end) = self.rest.find(quote) else {
            return Err("a string is not closed on its line".into());
        };
        let (s, rest) = self.rest.split_at(end);
        if quote == '"' && s.contains('\\') {
            return Err(format!(
                "escape sequences are not part of this file's format (in \"{s}\")"
            ));
        }
        self.rest = &rest[quote.len_utf8()..];
        Ok(s.to_string())
    }

    /// An unquoted value: up to blanks or a comment.
    fn bare_value(&mut self) -> &'a str {
        let end = self
            .rest
            .find([' ', '\t', '#', '\r'])
            .unwrap_or(self.rest.len());
        let (v, rest) = self.rest.split_at(end);
        self.rest = rest;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(text: &str) -> (FileConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let config = parse_file(text, &mut |line, msg| {
            warnings.push(format!("{line}: {msg}"))
        });
        (config, warnings)
    }

    fn layer(mode: Option<Mode>, max_attempts: Option<u32>) -> Layer {
        Layer { mode, max_attempts }
    }

    #[test]
    fn a_full_file() {
        let (config, warnings) = parse(
            "# retries of the billing service\n\
             [default]\n\
             mode = \"standard\"   # the AWS default\n\
             max_attempts = 4\n\
             \n\
             [profile.billing]\n\
             mode = 'adaptive'\n\
             \n\
             [ profile . \"search-eu\" ]\r\n\
             max_attempts = +1_0\r\n",
        );
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(config.default, layer(Some(Mode::Standard), Some(4)));
        assert_eq!(config.profile("billing"), layer(Some(Mode::Adaptive), None));
        assert_eq!(config.profile("search-eu"), layer(None, Some(10)));
        assert_eq!(config.profile("other"), Layer::default());
    }

    #[test]
    fn every_bad_line_is_one_warning_and_the_rest_is_kept() {
        let (config, warnings) = parse(
            "mode = \"adaptive\"\n\
             [default]\n\
             max_attempts = 0\n\
             max_attempts = -2\n\
             max_attempts = \"5\"\n\
             max_attempts = 5.0\n\
             max_attempts = 4294967296\n\
             max_attempts = 007\n\
             mode = \"turbo\"\n\
             mode = adaptive\n\
             mode = \"adaptive\n\
             mode = \"a\\\"b\"\n\
             retry_mode = \"adaptive\"\n\
             max_attempts = 6 7\n\
             max_attempts\n\
             = 3\n\
             max_attempts = 6\n\
             max_attempts = 7\n\
             [profile]\n\
             mode = \"adaptive\"\n\
             [[profile.x]]\n\
             [profile.a.b]\n\
             [profile.billing\n\
             [default]\n\
             max_attempts = 9\n\
             [profile.billing]\n\
             mode = \"\"\"adaptive\"\"\"\n\
             mode = \"Adaptive\"\n",
        );
        assert_eq!(config.default, layer(None, Some(6)));
        assert_eq!(config.profile("billing"), layer(Some(Mode::Adaptive), None));
        let expected = [
            "1: `mode` is outside any section (put it under [default])",
            "3: max_attempts = 0: max_attempts is a whole number from 1 to 4294967295",
            "4: max_attempts = -2: max_attempts is a whole number from 1 to 4294967295",
            "5: max_attempts = \"5\": max_attempts is an integer, written without quotes",
            "6: max_attempts = 5.0: max_attempts is a whole number from 1 to 4294967295",
            "7: max_attempts = 4294967296: max_attempts is a whole number from 1 to 4294967295",
            "8: max_attempts = 007: max_attempts is a whole number from 1 to 4294967295",
            "9: mode = \"turbo\": the mode is \"standard\" or \"adaptive\"",
            "10: mode = adaptive: the mode is a string, \"standard\" or \"adaptive\"",
            "11: a string is not closed on its line",
            "12: escape sequences are not part of this file's format (in \"a\\\")",
            "13: unknown key `retry_mode` (the keys are `mode` and `max_attempts`)",
            "14: unexpected `7` at the end of the line",
            "15: expected `key = value`",
            "16: expected a name, found `= 3`",
            "18: `max_attempts` is set a second time in this section",
            "19: unknown section [profile] (the sections are [default] and [profile.NAME]), \
             its keys are ignored too",
            "21: arrays of tables ([[...]]) are not part of this file's format",
            "22: unknown section [profile.a.b] (the sections are [default] and \
             [profile.NAME]), its keys are ignored too",
            "23: a section header is `[default]` or `[profile.NAME]`",
            "24: [default] appears a second time",
            "27: multi-line strings are not part of this file's format",
        ];
        assert_eq!(warnings, expected);
    }

    #[test]
    fn a_repeated_profile_section_is_ignored() {
        let (config, warnings) =
            parse("[profile.a]\nmax_attempts = 2\n[profile.a]\nmax_attempts = 3\n");
        assert_eq!(config.profile("a"), layer(None, Some(2)));
        assert_eq!(warnings, ["3: [profile.a] appears a second time"]);
    }

    #[test]
    fn non_ascii_text_does_not_panic() {
        let (config, warnings) = parse("[défaut]\nmode = \"é\"\n[profile.é]\nmode = 'ü'\nñ = 1\n");
        assert_eq!(config.profiles.len(), 0);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
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
