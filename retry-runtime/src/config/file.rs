//! The config file: a strict parser of the TOML subset the settings need. Comments, blank
//! lines, `[default]`, `[profile.NAME]` (or `[profile."NAME"]`), and `key = value` lines whose
//! value is a string or a decimal integer; every line it cannot use is one warning.

use super::{Layer, parse_attempts};
use crate::policy::Mode;

/// The file's `[default]` and `[profile.NAME]` sections.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct FileConfig {
    pub(super) default: Layer,
    pub(super) profiles: Vec<(String, Layer)>,
}

impl FileConfig {
    pub(super) fn profile(&self, name: &str) -> Layer {
        self.profiles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .unwrap_or_default()
    }
}

pub(super) fn read_file(path: &str, warn: &mut dyn FnMut(String)) -> FileConfig {
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
    use crate::policy::Mode;

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
}
