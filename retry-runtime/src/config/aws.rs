//! The AWS SDKs' own retry settings, for a function with `aws_config = true`: the variables
//! `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS` and `AWS_NEW_RETRIES_2026`, and the keys `retry_mode`
//! and `max_attempts` of the shared config file (`AWS_CONFIG_FILE`, else `~/.aws/config`) in
//! the profile `AWS_PROFILE` names (else `default`), as the AWS SDKs and Tools Reference Guide
//! describes them ("Retry behavior",
//! <https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html>; the file's
//! format: <https://docs.aws.amazon.com/sdkref/latest/guide/file-format.html>). The file is read
//! as the SDKs read it, by the rules written out below, before the reader.

use super::{Around, Layer, Source, env_value};
use crate::spec::{Behavior, Key, Mode, Value};

/// What the AWS variables say: `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`, `AWS_NEW_RETRIES_2026`.
pub(super) fn env_layer(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Layer {
    let mut layer = Layer::default();
    let mut set = |key: Key, variable: &str, value: Option<Value>| {
        if let Some(value) = value {
            let variable = variable.to_string();
            layer.set(key, value, Source::Environment { variable });
        }
    };
    if let Some(raw) = env_value("AWS_RETRY_MODE", env, warn) {
        set(
            Key::Mode,
            "AWS_RETRY_MODE",
            retry_mode(&raw, &mut |why| {
                warn(format!("ignoring AWS_RETRY_MODE={raw:?}: {why}"));
            }),
        );
    }
    if let Some(raw) = env_value("AWS_MAX_ATTEMPTS", env, warn) {
        set(
            Key::MaxAttempts,
            "AWS_MAX_ATTEMPTS",
            max_attempts(&raw, &mut |why| {
                warn(format!("ignoring AWS_MAX_ATTEMPTS={raw:?}: {why}"));
            }),
        );
    }
    // The environment only: no SDK reads it from the shared config file.
    if let Some(raw) = env_value("AWS_NEW_RETRIES_2026", env, warn) {
        let behavior = if raw.trim().eq_ignore_ascii_case("true") {
            Some(Behavior::Aws2026)
        } else if raw.trim().eq_ignore_ascii_case("false") {
            Some(Behavior::Classic)
        } else {
            warn(format!(
                "ignoring AWS_NEW_RETRIES_2026={raw:?}: it is \"true\" or \"false\""
            ));
            None
        };
        set(
            Key::Behavior,
            "AWS_NEW_RETRIES_2026",
            behavior.map(Value::Behavior),
        );
    }
    layer
}

/// `retry_mode`: `standard` or `adaptive` (`legacy`, the SDKs' oldest mode, has no equivalent
/// here).
fn retry_mode(raw: &str, why: &mut dyn FnMut(&str)) -> Option<Value> {
    match Mode::parse(raw) {
        Some(mode) => Some(Value::Mode(mode)),
        None if raw.trim().eq_ignore_ascii_case("legacy") => {
            why("the legacy mode has no equivalent here; \"standard\" or \"adaptive\"");
            None
        }
        None => {
            why("retry_mode is \"standard\", \"adaptive\" or \"legacy\"");
            None
        }
    }
}

/// `max_attempts`: a whole number from 1.
fn max_attempts(raw: &str, why: &mut dyn FnMut(&str)) -> Option<Value> {
    match Key::MaxAttempts.parse(raw) {
        Ok(value) => Some(value),
        Err(expected) => {
            why(&expected.to_string());
            None
        }
    }
}

/// What the shared config file says in the profile `AWS_PROFILE` names (else `default`). A
/// file named by `AWS_CONFIG_FILE` that cannot be read is one warning; a missing
/// `~/.aws/config` is no news, unless `AWS_PROFILE` names a profile, which then is nowhere
/// (one warning, which a function's [`explain`](super::explain) notes: why none of the file's
/// values apply).
pub(super) fn file_layer(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Layer {
    let (path, named) = match env_value("AWS_CONFIG_FILE", env, warn) {
        Some(path) => (path, true),
        None => match home(env, warn) {
            Some(home) => (in_home(&home, "config"), false),
            None => return Layer::default(),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            warn(format!("ignoring the AWS config file {path}: {e}"));
            return Layer::default();
        }
    };
    let chosen = env_value("AWS_PROFILE", env, warn);
    let profile = chosen.as_deref().unwrap_or("default");
    let profiles = match &text {
        Some(text) => read(text, &path, warn),
        None => Profiles::default(),
    };
    if profiles.get(profile).is_none() {
        // The default profile is optional; a profile named in `AWS_PROFILE` is not. The AWS
        // SDKs read the named profile alone, with no fallback to `[default]`: the SDK for Rust
        // looks a key up in the selected profile only (aws-runtime `EnvConfigSections::get`),
        // and its profile credentials provider fails with "could not find source profile"
        // (aws-config `profile::credentials::repr::resolve_chain`).
        if profile != "default" && !in_credentials_file(env, profile, warn) {
            warn(missing_profile(&profiles, &path, text.is_some(), profile));
        }
        return Layer::default();
    }
    layer(&profiles, &path, profile, warn)
}

/// The home directory: `HOME`, else `USERPROFILE`.
fn home(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Option<String> {
    env_value("HOME", env, warn).or_else(|| env_value("USERPROFILE", env, warn))
}

/// `home`'s `.aws/NAME`.
fn in_home(home: &str, name: &str) -> String {
    std::path::Path::new(home)
        .join(".aws")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The warning for an `AWS_PROFILE` that names no profile: which file was read, the profiles
/// it has, that no profile's settings apply in its place, and, where the file has `[NAME]`
/// without the `profile` prefix, how to write it.
fn missing_profile(profiles: &Profiles, path: &str, exists: bool, name: &str) -> String {
    let mut message = format!("AWS_PROFILE={name:?} names no profile of ");
    if exists {
        message.push_str(&format!("the AWS config file {path} ("));
        if profiles.profiles.is_empty() {
            message.push_str("it has none)");
        } else {
            let names: Vec<&str> = profiles.profiles.iter().map(|p| p.name.as_str()).collect();
            message.push_str(&format!("its profiles: {})", names.join(", ")));
        }
    } else {
        message.push_str(&format!("the AWS config files (there is no {path})"));
    }
    message.push_str(
        " nor of the shared credentials file: no profile's retry_mode or max_attempts apply, \
         not even [default]'s (the AWS SDKs read the named profile alone)",
    );
    if let Some((_, line)) = profiles.unprefixed.iter().find(|(n, _)| n == name) {
        message.push_str(&format!(
            "; line {line}'s [{name}] is not a profile of the config file, where one is written \
             [profile {name}]"
        ));
    }
    message
}

/// Whether the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
/// `~/.aws/credentials`) has a profile `name`, which the AWS SDKs merge into the config file's
/// profiles. Only its section lines are read: the file holds secrets, and its keys are none of
/// the retry settings' business. A file that cannot be read has no profiles.
fn in_credentials_file(env: Around<'_>, name: &str, warn: &mut dyn FnMut(String)) -> bool {
    let path = match env_value("AWS_SHARED_CREDENTIALS_FILE", env, warn) {
        Some(path) => path,
        None => match home(env, warn) {
            Some(home) => in_home(&home, "credentials"),
            None => return false,
        },
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .filter(|line| line.starts_with('['))
        .any(|line| {
            let inside = prepare(line, false)
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'));
            // In the credentials file a profile is `[NAME]`, without the prefix.
            match inside.map(header) {
                Some(Header::Default) => name == "default",
                Some(Header::Unprefixed(found)) => found == name && identifier(&found),
                _ => false,
            }
        })
}

/// The retry settings of `profile` in the shared config file's `text`.
#[cfg(test)]
fn parse(text: &str, path: &str, profile: &str, warn: &mut dyn FnMut(String)) -> Layer {
    let profiles = read(text, path, warn);
    layer(&profiles, path, profile, warn)
}

/// The retry settings of `profile` in `profiles`, read from the file `path`.
fn layer(profiles: &Profiles, path: &str, profile: &str, warn: &mut dyn FnMut(String)) -> Layer {
    let mut layer = Layer::default();
    if profile == "default" {
        for p in &profiles.ignored_default {
            if matches!(p.key.as_str(), "retry_mode" | "max_attempts") {
                warn(format!(
                    "{path}:{}: {} in [default] is not read: the file also has [profile \
                     default], which the AWS SDKs read in its place",
                    p.line, p.key
                ));
            }
        }
    }
    let Some(found) = profiles.get(profile) else {
        return layer;
    };
    for Property { key, value, line } in &found.properties {
        let source = || Source::AwsConfig {
            path: path.to_string(),
            line: *line,
            profile: profile.to_string(),
        };
        let shown = value.replace('\n', "\\n");
        let mut why = |what: &str| {
            warn(format!("{path}:{line}: {key} = {shown}: {what}; ignored"));
        };
        match key.as_str() {
            "retry_mode" => {
                if let Some(v) = retry_mode(value, &mut why) {
                    layer.set(Key::Mode, v, source());
                }
            }
            // The AWS SDKs read the value as it is (the SDK for Rust: `str::parse::<u32>`), so
            // a value continued on the next line is no number, though its parts may be.
            "max_attempts" if value.contains('\n') => {
                why("a value continued on the next line is not a number");
            }
            "max_attempts" => {
                if let Some(v) = max_attempts(value, &mut why) {
                    layer.set(Key::MaxAttempts, v, source());
                }
            }
            _ => {}
        }
    }
    layer
}

// The shared config file, read as the AWS SDKs read it: the rules of the SDKs' shared
// profile-parser conformance suite (smithy-rs
// `aws/rust-runtime/aws-runtime/test-data/profile-parser-tests.json`, run by `suite.rs`) and of
// the SDK for Rust's parser (`aws-runtime/src/env_config/{parse,normalize}.rs`), which it
// follows line by line:
//
// - a line blank but for spaces and tabs, or starting with `#` or `;`, is skipped;
// - a line starting with `[` opens a section: `[profile NAME]` (a space or tab after `profile`,
//   NAME made of letters, digits and `_-/.%@:+`), or `[default]`; `[profile default]` replaces
//   every `[default]`; sections of the same name merge; any other section (`[sso-session x]`,
//   `[services x]`, `[NAME]`, `[profile in valid]`) is no profile, and its lines are skipped;
//   `#` or `;` anywhere after the `]` starts a comment;
// - a line starting with a space or a tab continues the value of the property above it (with a
//   line break; a property whose value is empty has sub-properties, `key = value` lines);
// - any other line is `key = value`: the key is read in lower case, and is ignored unless made
//   of the name characters; the value runs to the end of the line or to a `#` or `;` that
//   follows a blank; the last value of a key wins.
//
// Where the SDKs reject the whole file (a section not closed by `]`, a property outside a
// section or without `=` or a name, a continuation without a property), the line is one
// warning and the rest of the file is kept.

/// The blanks that the file's syntax trims: spaces and tabs only.
const BLANK: [char; 2] = [' ', '\t'];
const COMMENT: [char; 2] = ['#', ';'];

/// The profiles of a shared config file.
#[derive(Debug, Default, PartialEq)]
struct Profiles {
    /// In the order of their first section.
    profiles: Vec<Profile>,
    /// `[NAME]` sections without the `profile` prefix: not profiles in the config file.
    unprefixed: Vec<(String, usize)>,
    /// The properties of `[default]` sections, which `[profile default]` replaces.
    ignored_default: Vec<Property>,
}

impl Profiles {
    fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }
}

#[derive(Debug, PartialEq)]
struct Profile {
    name: String,
    properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq)]
struct Property {
    /// In lower case.
    key: String,
    /// Continuation lines joined with `\n`.
    value: String,
    /// The line of the key (1-based).
    line: usize,
}

/// What a section line names.
#[derive(Debug, PartialEq)]
enum Header {
    /// `[profile NAME]`.
    Profile(String),
    /// `[default]`.
    Default,
    /// `[NAME]`.
    Unprefixed(String),
    /// Anything else: `[sso-session NAME]`, `[services NAME]`, an invalid name.
    Other,
}

/// The section that `name`, the text between the brackets, opens.
fn header(name: &str) -> Header {
    // Trimmed as the SDK for Rust trims them (`str::trim`, after the split at a blank).
    let name = name.trim_matches(BLANK);
    match name.split_once(BLANK) {
        Some((prefix, rest)) => {
            let rest = rest.trim();
            if prefix.trim() == "profile" && identifier(rest) {
                Header::Profile(rest.to_string())
            } else {
                Header::Other
            }
        }
        None if name.trim() == "default" => Header::Default,
        None => Header::Unprefixed(name.trim().to_string()),
    }
}

/// Whether `name` is a valid profile or property name: `[A-Za-z0-9_\-/.%@:+]+`.
fn identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-/.%@:+".contains(c))
}

/// `line` without its blanks around and its comment: one starts at a `#` or `;`, which must
/// follow a blank where `after_blank` (in a property's value, `a#b` is a value).
fn prepare(line: &str, after_blank: bool) -> &str {
    let line = line.trim_matches(BLANK);
    let mut blank = false;
    for (i, c) in line.char_indices() {
        if COMMENT.contains(&c) && (blank || !after_blank) {
            return line[..i].trim_matches(BLANK);
        }
        blank = c.is_whitespace();
    }
    line
}

/// Why a line is not `key = value`.
enum Malformed {
    NoEquals,
    NoName,
}

impl Malformed {
    /// The AWS SDK for Rust's message, for a `what` (`property`, `sub-property`).
    fn message(&self, what: &str) -> String {
        match self {
            Malformed::NoEquals => format!("Expected an '=' sign defining a {what}"),
            Malformed::NoName if what == "property" => "Property did not have a name".into(),
            Malformed::NoName => "Sub-property did not have a name".into(),
        }
    }
}

/// `key = value`: the key in lower case, the value trimmed.
fn property_line(line: &str) -> Result<(String, &str), Malformed> {
    let (key, value) = prepare(line, true)
        .split_once('=')
        .ok_or(Malformed::NoEquals)?;
    let key = key.trim_matches(BLANK);
    if key.is_empty() {
        return Err(Malformed::NoName);
    }
    Ok((key.to_ascii_lowercase(), value.trim_matches(BLANK)))
}

/// One section as written, before the sections are merged into profiles.
struct Section {
    header: Header,
    line: usize,
    properties: Vec<Property>,
}

/// Where the reader is.
#[derive(Clone, Copy)]
enum At {
    /// Before the first section.
    Start,
    /// In a section whose lines are skipped (its header is not closed).
    Skipped,
    /// In the last section read; `property`: the index of the property the next
    /// continuation line continues, and whether it has sub-properties.
    Section {
        property: Option<(usize, bool)>,
        /// The last property line was malformed: its continuation lines go with it.
        skipping: bool,
    },
}

/// The profiles of the shared config file's `text`; `path` names it in warnings.
fn read(text: &str, path: &str, warn: &mut dyn FnMut(String)) -> Profiles {
    let mut sections: Vec<Section> = Vec::new();
    let mut at = At::Start;
    let mut reject = |number: usize, message: &str| {
        warn(format!(
            "{path}:{number}: {message}; the line is ignored (the AWS SDKs reject the whole file \
             for it)"
        ));
    };
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim_matches(BLANK).is_empty() || line.starts_with(COMMENT) {
            continue;
        }
        if line.starts_with('[') {
            let inside = prepare(line, false)
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'));
            at = match inside {
                Some(name) => {
                    sections.push(Section {
                        header: header(name),
                        line: number,
                        properties: Vec::new(),
                    });
                    At::Section {
                        property: None,
                        skipping: false,
                    }
                }
                None => {
                    reject(
                        number,
                        "Profile definition must end with ']' (the lines up to the next section \
                         are ignored too)",
                    );
                    At::Skipped
                }
            };
            continue;
        }
        let continuation = line.starts_with(BLANK);
        let (section, property, skipping) = match (at, sections.last_mut()) {
            (At::Start, _) | (At::Section { .. }, None) => {
                reject(number, "Expected a profile definition");
                continue;
            }
            (At::Skipped, _) => continue,
            (At::Section { property, skipping }, Some(section)) => (section, property, skipping),
        };
        if continuation {
            if skipping {
                continue;
            }
            let Some((index, sub)) = property else {
                reject(number, "Expected a property definition, found continuation");
                continue;
            };
            if sub {
                if let Err(e) = property_line(line) {
                    reject(number, &e.message("sub-property"));
                    continue;
                }
            }
            let value = &mut section.properties[index].value;
            value.push('\n');
            value.push_str(line.trim_matches(BLANK));
            continue;
        }
        match property_line(line) {
            Ok((key, value)) => {
                let property = Property {
                    key,
                    value: value.to_string(),
                    line: number,
                };
                let sub = value.is_empty();
                let index = match section
                    .properties
                    .iter()
                    .position(|p| p.key == property.key)
                {
                    Some(index) => {
                        section.properties[index] = property;
                        index
                    }
                    None => {
                        section.properties.push(property);
                        section.properties.len() - 1
                    }
                };
                at = At::Section {
                    property: Some((index, sub)),
                    skipping: false,
                };
            }
            Err(e) => {
                reject(number, &e.message("property"));
                at = At::Section {
                    property: None,
                    skipping: true,
                };
            }
        }
    }
    merge(sections)
}

/// The sections merged into profiles: `[profile default]` over `[default]`, sections of the
/// same name in one, the last value of a key kept, and the properties with invalid names left
/// out.
fn merge(sections: Vec<Section>) -> Profiles {
    let prefixed_default = sections
        .iter()
        .any(|s| matches!(&s.header, Header::Profile(n) if n == "default"));
    let mut profiles = Profiles::default();
    for section in sections {
        let name = match section.header {
            Header::Profile(name) => name,
            Header::Default if prefixed_default => {
                profiles.ignored_default.extend(section.properties);
                continue;
            }
            Header::Default => "default".to_string(),
            Header::Unprefixed(name) => {
                profiles.unprefixed.push((name, section.line));
                continue;
            }
            Header::Other => continue,
        };
        let index = match profiles.profiles.iter().position(|p| p.name == name) {
            Some(index) => index,
            None => {
                profiles.profiles.push(Profile {
                    name,
                    properties: Vec::new(),
                });
                profiles.profiles.len() - 1
            }
        };
        let properties = &mut profiles.profiles[index].properties;
        for property in section.properties {
            if !identifier(&property.key) {
                continue;
            }
            match properties.iter_mut().find(|p| p.key == property.key) {
                Some(p) => *p = property,
                None => properties.push(property),
            }
        }
    }
    profiles
}

#[cfg(test)]
mod suite;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::env;

    fn get(layer: &Layer, key: Key) -> Option<(Value, String)> {
        layer.get(key).map(|(v, s)| (*v, s.to_string()))
    }

    #[test]
    fn the_aws_variables() {
        let mut warnings = Vec::new();
        let layer = env_layer(
            &env(&[
                ("AWS_RETRY_MODE", "Adaptive"),
                ("AWS_MAX_ATTEMPTS", "5"),
                ("AWS_NEW_RETRIES_2026", "TRUE"),
            ]),
            &mut |w| warnings.push(w),
        );
        assert_eq!(
            get(&layer, Key::Mode),
            Some((Value::Mode(Mode::Adaptive), "env AWS_RETRY_MODE".into()))
        );
        assert_eq!(
            get(&layer, Key::MaxAttempts),
            Some((Value::Count(5), "env AWS_MAX_ATTEMPTS".into()))
        );
        assert_eq!(
            get(&layer, Key::Behavior),
            Some((
                Value::Behavior(Behavior::Aws2026),
                "env AWS_NEW_RETRIES_2026".into()
            ))
        );
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn bad_aws_variables_are_one_warning_each() {
        let mut warnings = Vec::new();
        let layer = env_layer(
            &env(&[
                ("AWS_RETRY_MODE", "legacy"),
                ("AWS_MAX_ATTEMPTS", "0"),
                ("AWS_NEW_RETRIES_2026", "yes"),
            ]),
            &mut |w| warnings.push(w),
        );
        assert_eq!(layer, Layer::default());
        assert_eq!(
            warnings,
            [
                "ignoring AWS_RETRY_MODE=\"legacy\": the legacy mode has no equivalent here; \
                 \"standard\" or \"adaptive\"",
                "ignoring AWS_MAX_ATTEMPTS=\"0\": max_attempts is a whole number from 1 to \
                 4294967295",
                "ignoring AWS_NEW_RETRIES_2026=\"yes\": it is \"true\" or \"false\"",
            ]
        );
        let mut warnings = Vec::new();
        let off = env_layer(&env(&[("AWS_NEW_RETRIES_2026", "false")]), &mut |w| {
            warnings.push(w);
        });
        assert_eq!(
            get(&off, Key::Behavior).map(|(v, _)| v),
            Some(Value::Behavior(Behavior::Classic))
        );
        assert!(warnings.is_empty());
    }

    const CONFIG: &str = "\
# AWS CLI config
[default]
region = eu-west-1
retry_mode = standard
max_attempts = 4 # four

[profile billing]
retry_mode = adaptive
s3 =
  max_attempts = 99
max_attempts = 6

[sso-session corp]
max_attempts = 8
";

    #[test]
    fn the_shared_config_file_in_the_chosen_profile() {
        let mut warnings = Vec::new();
        let default = parse(CONFIG, "/home/me/.aws/config", "default", &mut |w| {
            warnings.push(w)
        });
        assert_eq!(
            get(&default, Key::Mode),
            Some((
                Value::Mode(Mode::Standard),
                "aws config /home/me/.aws/config:4".into()
            ))
        );
        assert_eq!(
            get(&default, Key::MaxAttempts),
            Some((Value::Count(4), "aws config /home/me/.aws/config:5".into()))
        );
        let billing = parse(CONFIG, "cfg", "billing", &mut |w| warnings.push(w));
        assert_eq!(
            get(&billing, Key::Mode).map(|(v, _)| v),
            Some(Value::Mode(Mode::Adaptive))
        );
        // The indented `max_attempts` is s3's sub-setting; the profile's own is on line 11.
        assert_eq!(
            get(&billing, Key::MaxAttempts),
            Some((Value::Count(6), "aws config cfg:11".into()))
        );
        let none = parse(CONFIG, "cfg", "corp", &mut |w| warnings.push(w));
        assert_eq!(none, Layer::default());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_bad_value_in_the_file_is_one_warning_with_its_line() {
        let mut warnings = Vec::new();
        let layer = parse(
            "[profile default]\nretry_mode = turbo\nmax_attempts = many\n",
            "cfg",
            "default",
            &mut |w| warnings.push(w),
        );
        assert_eq!(layer, Layer::default());
        assert_eq!(
            warnings,
            [
                "cfg:2: retry_mode = turbo: retry_mode is \"standard\", \"adaptive\" or \
                 \"legacy\"; ignored",
                "cfg:3: max_attempts = many: max_attempts is a whole number from 1 to \
                 4294967295; ignored",
            ]
        );
    }

    #[test]
    fn the_file_is_found_from_the_environment() {
        let dir = std::env::temp_dir().join(format!("retry-aws-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        let path = dir.join(".aws").join("config");
        std::fs::write(&path, CONFIG).unwrap();
        let home = dir.to_string_lossy().into_owned();
        let mut warnings = Vec::new();
        let layer = file_layer(
            &env(&[("HOME", &home), ("AWS_PROFILE", "billing")]),
            &mut |w| warnings.push(w),
        );
        assert_eq!(
            get(&layer, Key::MaxAttempts).map(|(v, _)| v),
            Some(Value::Count(6))
        );
        // A missing default file is no news; a missing named one is a warning.
        let missing = dir.join("nowhere").to_string_lossy().into_owned();
        let layer = file_layer(&env(&[("HOME", &missing)]), &mut |w| warnings.push(w));
        assert_eq!(layer, Layer::default());
        assert!(warnings.is_empty(), "{warnings:?}");
        let named = dir.join("missing-config").to_string_lossy().into_owned();
        let layer = file_layer(&env(&[("AWS_CONFIG_FILE", &named)]), &mut |w| {
            warnings.push(w);
        });
        assert_eq!(layer, Layer::default());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(&format!("ignoring the AWS config file {named}: ")),
            "{warnings:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_in_any_case_and_continued_values() {
        let mut warnings = Vec::new();
        let text = "[profile p]\nRetry_Mode = Adaptive\nMAX_ATTEMPTS = 5\n\n[profile q]\nmax_attempts = 3\n  4\n";
        let p = parse(text, "cfg", "p", &mut |w| warnings.push(w));
        assert_eq!(
            get(&p, Key::Mode).map(|(v, _)| v),
            Some(Value::Mode(Mode::Adaptive))
        );
        assert_eq!(
            get(&p, Key::MaxAttempts),
            Some((Value::Count(5), "aws config cfg:3".into()))
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // `3` continued by `4` is the value "3\n4", which is no number.
        let q = parse(text, "cfg", "q", &mut |w| warnings.push(w));
        assert_eq!(q, Layer::default());
        assert_eq!(
            warnings,
            [
                "cfg:6: max_attempts = 3\\n4: a value continued on the next line is not a number; \
                 ignored"
            ]
        );
    }

    #[test]
    fn the_last_value_of_a_key_wins_even_when_it_is_bad() {
        let mut warnings = Vec::new();
        let text = "[profile p]\nmax_attempts = 5\n[profile p]\nmax_attempts = five\n";
        let layer = parse(text, "cfg", "p", &mut |w| warnings.push(w));
        // The SDKs read `five`, and reject it: the earlier 5 is not read either.
        assert_eq!(layer, Layer::default());
        assert_eq!(
            warnings,
            [
                "cfg:4: max_attempts = five: max_attempts is a whole number from 1 to 4294967295; \
              ignored"
            ]
        );
    }

    #[test]
    fn profile_default_replaces_default() {
        let mut warnings = Vec::new();
        let text = "[default]\nmax_attempts = 9\nregion = eu-west-1\n\n[profile default]\n\
                    retry_mode = adaptive\n";
        let layer = parse(text, "cfg", "default", &mut |w| warnings.push(w));
        assert_eq!(get(&layer, Key::MaxAttempts), None);
        assert_eq!(
            get(&layer, Key::Mode).map(|(v, _)| v),
            Some(Value::Mode(Mode::Adaptive))
        );
        assert_eq!(
            warnings,
            [
                "cfg:2: max_attempts in [default] is not read: the file also has [profile default], \
              which the AWS SDKs read in its place"
            ]
        );
        // Another profile's reader has nothing to say of it.
        let mut warnings = Vec::new();
        parse(text, "cfg", "other", &mut |w| warnings.push(w));
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_line_the_sdks_reject_is_one_warning_and_the_rest_is_kept() {
        let mut warnings = Vec::new();
        let text = "\
max_attempts = 9
[profile ops]
retry_mode = adaptive
max_attempts : 3
  continued
[profile broken
max_attempts = 7
[default]
 orphan
max_attempts = 2
";
        let ops = parse(text, "cfg", "ops", &mut |w| warnings.push(w));
        assert_eq!(
            get(&ops, Key::Mode).map(|(v, _)| v),
            Some(Value::Mode(Mode::Adaptive))
        );
        assert_eq!(get(&ops, Key::MaxAttempts), None);
        let rejected = |line: usize, what: &str| {
            format!(
                "cfg:{line}: {what}; the line is ignored (the AWS SDKs reject the whole file for it)"
            )
        };
        assert_eq!(
            warnings,
            [
                rejected(1, "Expected a profile definition"),
                rejected(4, "Expected an '=' sign defining a property"),
                rejected(
                    6,
                    "Profile definition must end with ']' (the lines up to the next section are \
                     ignored too)"
                ),
                rejected(9, "Expected a property definition, found continuation"),
            ]
        );
        let default = parse(text, "cfg", "default", &mut |_| {});
        assert_eq!(
            get(&default, Key::MaxAttempts),
            Some((Value::Count(2), "aws config cfg:10".into()))
        );
        // The lines of the unclosed section belong to no profile.
        assert_eq!(parse(text, "cfg", "broken", &mut |_| {}), Layer::default());
    }

    /// A home directory for one test, holding `.aws/config` and `.aws/credentials` if given.
    fn home(case: &str, config: Option<&str>, credentials: Option<&str>) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("retry-aws-{case}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        for (name, text) in [("config", config), ("credentials", credentials)] {
            if let Some(text) = text {
                std::fs::write(dir.join(".aws").join(name), text).unwrap();
            }
        }
        dir
    }

    #[test]
    fn an_aws_profile_that_names_no_profile_is_one_warning() {
        let dir = home(
            "missing-profile",
            Some("[default]\nmax_attempts = 9\n[ops]\nmax_attempts = 4\n[profile billing]\n"),
            Some("[keys-only]\naws_access_key_id = x\n"),
        );
        let home = dir.to_string_lossy().into_owned();
        let config = dir
            .join(".aws")
            .join("config")
            .to_string_lossy()
            .into_owned();
        let read = |profile: &str| {
            let mut warnings = Vec::new();
            let layer = file_layer(
                &env(&[("HOME", &home), ("AWS_PROFILE", profile)]),
                &mut |w| warnings.push(w),
            );
            (layer, warnings)
        };
        // No fallback to [default]: its max_attempts = 9 is not read.
        let (layer, warnings) = read("ops");
        assert_eq!(layer, Layer::default());
        assert_eq!(
            warnings,
            [format!(
                "AWS_PROFILE=\"ops\" names no profile of the AWS config file {config} (its \
                 profiles: default, billing) nor of the shared credentials file: no profile's \
                 retry_mode or max_attempts apply, not even [default]'s (the AWS SDKs read the \
                 named profile alone); line 3's [ops] is not a profile of the config file, where \
                 one is written [profile ops]"
            )]
        );
        // A profile of the credentials file alone exists: it sets no retry settings here.
        let (layer, warnings) = read("keys-only");
        assert_eq!(layer, Layer::default());
        assert!(warnings.is_empty(), "{warnings:?}");
        // A profile without retry settings is no news.
        let (_, warnings) = read("billing");
        assert!(warnings.is_empty(), "{warnings:?}");
        std::fs::remove_dir_all(&dir).unwrap();

        // Without any file, a named profile is nowhere; the default profile is optional.
        let dir = self::home("no-files", None, None);
        let home = dir.to_string_lossy().into_owned();
        let config = dir
            .join(".aws")
            .join("config")
            .to_string_lossy()
            .into_owned();
        let mut warnings = Vec::new();
        let layer = file_layer(&env(&[("HOME", &home), ("AWS_PROFILE", "ops")]), &mut |w| {
            warnings.push(w)
        });
        assert_eq!(layer, Layer::default());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!(
                "AWS_PROFILE=\"ops\" names no profile of the AWS config files (there is no \
                 {config}) nor of the shared credentials file"
            )),
            "{warnings:?}"
        );
        let mut warnings = Vec::new();
        file_layer(
            &env(&[("HOME", &home), ("AWS_PROFILE", "default")]),
            &mut |w| warnings.push(w),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The reader never panics, whatever the file holds: mutations of real configs (cut,
    /// deleted, inserted and repeated pieces), each read for three profiles. `RETRY_FUZZ_CASES`
    /// sets the count (RELIABILITY.md reports a run of 1,000,000).
    #[test]
    fn the_reader_never_panics_on_mutated_files() {
        const PIECES: [&str; 16] = [
            "[",
            "]",
            "=",
            "#",
            ";",
            " ",
            "\t",
            "\n",
            "\r\n",
            "profile",
            "default",
            "retry_mode",
            "max_attempts",
            "\u{0}",
            "é",
            "99999999999999999999",
        ];
        let seeds = [
            CONFIG,
            "[default]\nretry_mode=adaptive\n",
            "[profile p]\r\nmax_attempts = 2 ; two\r\n[profile  p ]\nretry_mode =\n",
        ];
        let rounds: usize = std::env::var("RETRY_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(20_000);
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut below = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            usize::try_from(x % (n as u64).max(1)).unwrap_or(0)
        };
        let mut kept = 0usize;
        for round in 0..rounds {
            let mut text: Vec<char> = seeds[round % seeds.len()].chars().collect();
            for _ in 0..=below(4) {
                let at = below(text.len() + 1);
                match below(4) {
                    0 => text.truncate(at),
                    1 if at < text.len() => {
                        text.remove(at);
                    }
                    2 => {
                        let piece = PIECES[below(PIECES.len())];
                        for (i, c) in piece.chars().enumerate() {
                            text.insert(at + i, c);
                        }
                    }
                    _ => {
                        let end = (at + below(30)).min(text.len());
                        let slice: Vec<char> = text[at..end].to_vec();
                        text.splice(at..at, slice);
                    }
                }
            }
            let text: String = text.into_iter().collect();
            for profile in ["default", "billing", "p"] {
                let layer = parse(&text, "cfg", profile, &mut |_| {});
                kept += usize::from(layer != Layer::default());
            }
        }
        // Mutations keep some settings readable: the reader does not give up on a whole file.
        assert!(rounds < 100 || kept > 0, "{kept}");
    }
}
