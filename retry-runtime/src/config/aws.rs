//! The AWS SDKs' own retry settings, for a function with `aws_config = true`: the variables
//! `AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS` and `AWS_NEW_RETRIES_2026`, and the keys `retry_mode`
//! and `max_attempts` of the shared config file (`AWS_CONFIG_FILE`, else `~/.aws/config`) in
//! the profile `AWS_PROFILE` names (else `default`), as the AWS SDKs and Tools reference guide
//! describes them ("Retry behavior"). The file is the AWS CLI's INI format: `[default]` or
//! `[profile NAME]` sections of `key = value` lines, `#` and `;` comments, and indented
//! sub-settings (which are not retry settings, and are skipped).

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
/// `~/.aws/config` is no news.
pub(super) fn file_layer(env: Around<'_>, warn: &mut dyn FnMut(String)) -> Layer {
    let (path, named) = match env_value("AWS_CONFIG_FILE", env, warn) {
        Some(path) => (path, true),
        None => {
            let home = env_value("HOME", env, warn).or_else(|| env_value("USERPROFILE", env, warn));
            match home {
                Some(home) => (
                    std::path::Path::new(&home)
                        .join(".aws")
                        .join("config")
                        .to_string_lossy()
                        .into_owned(),
                    false,
                ),
                None => return Layer::default(),
            }
        }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => return Layer::default(),
        Err(e) => {
            warn(format!("ignoring the AWS config file {path}: {e}"));
            return Layer::default();
        }
    };
    let profile = env_value("AWS_PROFILE", env, warn).unwrap_or_else(|| "default".to_string());
    parse(&text, &path, &profile, warn)
}

/// The retry settings of `profile` in the shared config file's `text`.
pub(super) fn parse(text: &str, path: &str, profile: &str, warn: &mut dyn FnMut(String)) -> Layer {
    let mut layer = Layer::default();
    // Whether the lines are in the profile's section.
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        // Sub-settings (`s3 =` then indented lines) and continuation lines are indented.
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split(']').next().unwrap_or_default().trim();
            inside = if profile == "default" {
                name == "default" || is_profile(name, "default")
            } else {
                is_profile(name, profile)
            };
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), strip_comment(value).trim());
        let source = || Source::AwsConfig {
            path: path.to_string(),
            line: number,
            profile: profile.to_string(),
        };
        let mut why = |what: &str| {
            warn(format!("{path}:{number}: {key} = {value}: {what}; ignored"));
        };
        match key {
            "retry_mode" => {
                if let Some(v) = retry_mode(value, &mut why) {
                    layer.set(Key::Mode, v, source());
                }
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

/// `[profile NAME]` for `name`.
fn is_profile(section: &str, name: &str) -> bool {
    section
        .strip_prefix("profile")
        .is_some_and(|rest| rest.starts_with([' ', '\t']) && rest.trim() == name)
}

/// A value without its comment: `#` or `;` after a blank starts one.
fn strip_comment(value: &str) -> &str {
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'#' || b == b';') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return &value[..i];
        }
    }
    value
}

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
