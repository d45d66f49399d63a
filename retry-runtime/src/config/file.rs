//! The config file, parsed by the `toml` crate: a `[default]` table and `[profile.NAME]`
//! tables of the keys the environment may set. Everything else in the file, and every value it
//! cannot use, is one warning with its line; the rest of the file is kept.

use super::{FileConfig, Layer, Source};
use crate::spec::Key;
use std::ops::Range;
use toml::de::{DeTable, DeValue};

pub(super) fn read_file(path: &str, warn: &mut dyn FnMut(String)) -> FileConfig {
    let unread = |why: String, warn: &mut dyn FnMut(String)| {
        let mut config = FileConfig::default();
        config.problem(format!("ignoring RETRY_CONFIG_FILE={path:?}: {why}"), warn);
        config
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return unread(format!("cannot read it ({e})"), warn),
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse(path, &text, warn),
        Err(_) => unread("it is not valid UTF-8".to_owned(), warn),
    }
}

/// Where a warning about the file belongs: to a table (which the functions that read it note),
/// or to the file as a whole (which every function notes).
#[derive(Clone, Copy)]
enum Table {
    File,
    Default,
    /// The `[profile.NAME]` table at this index of the file's profiles.
    Profile(usize),
}

/// The file's text, read into its tables.
pub(super) fn parse(path: &str, text: &str, warn: &mut dyn FnMut(String)) -> FileConfig {
    let line = |span: Range<usize>| text[..span.start.min(text.len())].matches('\n').count() + 1;
    // Warnings in the file's order (the parsed tables are in the order of their keys).
    let mut found: Vec<(usize, Table, Option<Key>, String)> = Vec::new();
    let mut at = |table: Table, span: Range<usize>, key: Option<Key>, message: String| {
        found.push((span.start, table, key, message));
    };
    // Parsed with recovery: a syntax error loses its own line, not the file. A key the
    // recovery still read on such a line (`initial_backoff = 1ms` as a string) is lost with it,
    // as the warning says.
    let (doc, errors) = DeTable::parse_recoverable(text);
    let mut broken = Vec::new();
    for e in errors {
        let span = e.span().unwrap_or(0..0);
        broken.push(line(span.clone()));
        let message = format!("not valid TOML ({})", e.message());
        at(Table::File, span, None, message);
    }
    let lost = |span: Range<usize>| {
        let (first, last) = (line(span.start..span.start), line(span.end..span.end));
        broken.iter().any(|l| (first..=last).contains(l))
    };
    let mut config = FileConfig {
        path: path.to_owned(),
        ..FileConfig::default()
    };
    let source = |span: Range<usize>, profile: Option<&str>| Source::File {
        path: path.to_owned(),
        line: line(span),
        profile: profile.map(str::to_owned),
    };
    for (name, value) in doc.get_ref() {
        match (name.get_ref().as_ref(), value.get_ref()) {
            ("default", DeValue::Table(table)) => {
                let mut at = |span, key, message| at(Table::Default, span, key, message);
                let source = |span| source(span, None);
                config.default = layer(text, table, &source, &lost, &mut at);
            }
            ("profile", DeValue::Table(profiles)) => {
                for (profile, table) in profiles {
                    let name = profile.get_ref().to_string();
                    let place = Table::Profile(config.profiles.len());
                    let mut at = |span, key, message| at(place, span, key, message);
                    let layer = match table.get_ref() {
                        DeValue::Table(t) => {
                            let source = |span| source(span, Some(&name));
                            layer(text, t, &source, &lost, &mut at)
                        }
                        _ => {
                            at(
                                table.span(),
                                None,
                                format!(
                                    "`profile.{name}` is not a table: write `[profile.{name}]`"
                                ),
                            );
                            Layer::default()
                        }
                    };
                    config.profiles.push((name, layer));
                }
            }
            // A key of the tables outside them (written before any table, or after a table's
            // header that is not TOML).
            (other, _) if Key::ALL.iter().any(|k| k.name() == other) => at(
                Table::File,
                name.span(),
                None,
                format!(
                    "`{other}` is outside any table: the file's keys go in its `[default]` table \
                     or a `[profile.NAME]` table"
                ),
            ),
            (other, _) => at(
                Table::File,
                name.span(),
                None,
                format!(
                    "`{other}` is not a setting of the file, which has a `[default]` table and \
                     `[profile.NAME]` tables"
                ),
            ),
        }
    }
    found.sort_by_key(|(start, ..)| *start);
    for (start, table, key, message) in found {
        let warning = format!("{path}:{}: {message}; ignored", line(start..start));
        match table {
            Table::File => config.problem(warning, warn),
            Table::Default => config.default.ignore(key, warning, warn),
            Table::Profile(i) => config.profiles[i].1.ignore(key, warning, warn),
        }
    }
    config
}

/// The keys of one table (`at` is told of each problem, with its key if it has one), but those
/// `lost` to a syntax error on their lines (which has its own warning).
fn layer(
    text: &str,
    table: &DeTable<'_>,
    source: &dyn Fn(Range<usize>) -> Source,
    lost: &dyn Fn(Range<usize>) -> bool,
    at: &mut dyn FnMut(Range<usize>, Option<Key>, String),
) -> Layer {
    let mut layer = Layer::default();
    for (name, value) in table {
        if lost(name.span().start..value.span().end) {
            continue;
        }
        let name_str: &str = name.get_ref().as_ref();
        let Some(key) = Key::ALL.into_iter().find(|k| k.name() == name_str) else {
            let keys: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
            let meant = match retry_keys::suggest(name_str, &keys) {
                Some(k) => format!("did you mean `{k}`? "),
                None => String::new(),
            };
            at(
                name.span(),
                None,
                format!(
                    "unknown key `{name_str}`: {meant}the keys: {}",
                    keys.join(", ")
                ),
            );
            continue;
        };
        let parsed = match value.get_ref() {
            DeValue::String(s) => key.parse(s).map_err(|e| e.to_string()),
            DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                #[allow(clippy::cast_precision_loss)] // counts and factors, far below 2^53
                Ok(n) => key.from_number(n as f64, true).map_err(|e| e.to_string()),
                Err(_) => Err(key.expected()),
            },
            DeValue::Float(f) => match f.as_str().replace('_', "").parse::<f64>() {
                Ok(x) => key.from_number(x, false).map_err(|e| e.to_string()),
                Err(_) => Err(key.expected()),
            },
            _ => Err(key.expected()),
        };
        match parsed {
            Ok(v) => layer.set(key, v, source(name.span())),
            Err(expected) => {
                let raw = text.get(value.span()).unwrap_or("?").trim();
                at(
                    value.span(),
                    Some(key),
                    format!("{name_str} = {raw}: {expected}"),
                );
            }
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Jitter, Mode, Value};
    use std::time::Duration;

    fn parse_text(text: &str) -> (FileConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let config = parse("retry.toml", text, &mut |w| warnings.push(w));
        (config, warnings)
    }

    fn value(layer: &Layer, key: Key) -> Option<Value> {
        layer.get(key).map(|(v, _)| *v)
    }

    #[test]
    fn a_full_file_with_what_toml_allows() {
        let (config, warnings) = parse_text(
            r#"
# Defaults for every function.
[default]
mode = "adaptive"
max_attempts = 5
initial_backoff = "50ms"
multiplier = 1.5
jitter = 0.25

[profile.billing]
max_attempts = 0x7          # hexadecimal
deadline = """
10s"""
"max_backoff" = 'C:\no-escapes'

[profile."eu-west"]
attempt_timeout = "2s"
profile.inline = { mode = "standard" }
"#,
        );
        let d = &config.default;
        assert_eq!(value(d, Key::Mode), Some(Value::Mode(Mode::Adaptive)));
        assert_eq!(value(d, Key::MaxAttempts), Some(Value::Count(5)));
        assert_eq!(
            value(d, Key::InitialBackoff),
            Some(Value::Duration(Duration::from_millis(50)))
        );
        assert_eq!(value(d, Key::Multiplier), Some(Value::Factor(1.5)));
        assert_eq!(
            value(d, Key::Jitter),
            Some(Value::Jitter(Jitter::Fraction(0.25)))
        );
        assert_eq!(
            d.get(Key::Mode).map(|(_, s)| s.clone()),
            Some(Source::File {
                path: "retry.toml".into(),
                line: 4,
                profile: None,
            })
        );
        assert_eq!(
            config
                .profile("billing")
                .get(Key::Deadline)
                .map(|(_, s)| s.clone()),
            Some(Source::File {
                path: "retry.toml".into(),
                line: 12,
                profile: Some("billing".into()),
            })
        );
        let billing = config.profile("billing");
        assert_eq!(value(&billing, Key::MaxAttempts), Some(Value::Count(7)));
        assert_eq!(
            value(&billing, Key::Deadline),
            Some(Value::Duration(Duration::from_secs(10)))
        );
        assert!(value(&config.profile("eu-west"), Key::AttemptTimeout).is_some());
        // A literal string is read as is; it is not a duration.
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with(
            "retry.toml:14: max_backoff = 'C:\\no-escapes': max_backoff is a duration"
        ));
        assert!(
            warnings[1].starts_with("retry.toml:18: unknown key `profile`"),
            "{warnings:?}"
        );
    }

    #[test]
    fn every_bad_part_is_one_warning_and_the_rest_is_kept() {
        let (config, warnings) = parse_text(
            r#"
[default]
mode = "legacy"
max_attempts = 3
deadline = 10
timeout = "1s"
jitter = true
max_attemps = 5

[retries]
mode = "standard"

[profile.p]
max_attempts = 2
"#,
        );
        assert_eq!(
            value(&config.default, Key::MaxAttempts),
            Some(Value::Count(3))
        );
        assert_eq!(
            value(&config.profile("p"), Key::MaxAttempts),
            Some(Value::Count(2))
        );
        assert_eq!(
            warnings,
            [
                "retry.toml:3: mode = \"legacy\": mode is \"standard\" or \"adaptive\"; ignored",
                "retry.toml:5: deadline = 10: deadline needs a unit: write it as a string, such as \
                 \"10s\"; ignored",
                "retry.toml:6: unknown key `timeout`: the keys: mode, behavior, max_attempts, \
                 initial_backoff, multiplier, max_backoff, jitter, attempt_timeout, \
                 attempt_timeout_multiplier, max_attempt_timeout, deadline, hedge_after, max_in_flight, min_hedge_after, max_hedge_after, hedge_budget; ignored",
                "retry.toml:7: jitter = true: jitter is \"full\", \"equal\", \"none\", \
                 \"decorrelated\" or a number in [0, 1]; ignored",
                "retry.toml:8: unknown key `max_attemps`: did you mean `max_attempts`? the keys: \
                 mode, behavior, max_attempts, initial_backoff, multiplier, max_backoff, jitter, \
                 attempt_timeout, attempt_timeout_multiplier, max_attempt_timeout, deadline, \
                 hedge_after, max_in_flight, min_hedge_after, max_hedge_after, hedge_budget; \
                 ignored",
                "retry.toml:10: `retries` is not a setting of the file, which has a `[default]` \
                 table and `[profile.NAME]` tables; ignored",
            ]
        );
    }

    /// A line that is not TOML is ignored whole, as its warning says, though the parser's
    /// recovery reads a value from it; a key after a table's broken header is outside any table.
    #[test]
    fn a_line_that_is_not_toml_sets_nothing() {
        let (config, warnings) = parse_text(
            "[default]\nmax_attempts = 5\ninitial_backoff = 1ms\n[profile.p\nmode = \"adaptive\"\n",
        );
        assert_eq!(
            value(&config.default, Key::MaxAttempts),
            Some(Value::Count(5))
        );
        assert_eq!(value(&config.default, Key::InitialBackoff), None);
        assert_eq!(config.profile("p"), Layer::default());
        assert!(
            warnings[0].starts_with("retry.toml:3: not valid TOML"),
            "{warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("retry.toml:4: not valid TOML")),
            "{warnings:?}"
        );
        assert_eq!(
            warnings.last().map(String::as_str),
            Some(
                "retry.toml:5: `mode` is outside any table: the file's keys go in its \
                 `[default]` table or a `[profile.NAME]` table; ignored"
            ),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_syntax_error_is_a_warning_with_its_line() {
        let (config, warnings) = parse_text("[default]\nmax_attempts = 4\nmode = \"standard\n");
        assert!(!warnings.is_empty());
        assert!(
            warnings[0].starts_with("retry.toml:3: not valid TOML"),
            "{warnings:?}"
        );
        assert_eq!(
            value(&config.default, Key::MaxAttempts),
            Some(Value::Count(4))
        );
    }

    #[test]
    fn non_ascii_text_does_not_panic() {
        let (_, warnings) = parse_text("[défaut]\nmode = \"ünknown\"\n[default]\nmode = \"✓\"\n");
        // The bare key is not TOML, and not a table of the file; the mode is not one.
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings[2].starts_with("retry.toml:4: mode = \"✓\""),
            "{warnings:?}"
        );
    }
}
