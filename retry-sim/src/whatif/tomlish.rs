//! Reading values of a TOML document parsed with its spans (`toml::de::DeTable`): numbers,
//! durations and shares as the project's files write them, each problem at its line.

use super::problem::{Problems, did_you_mean};
use std::ops::Range;
use std::time::Duration;
use toml::de::{DeTable, DeValue};

/// A TOML value with its span.
pub type Spanned<'i> = toml::Spanned<DeValue<'i>>;

/// `text` parsed with recovery: a syntax error is one problem at its line, and the rest of the
/// document is kept.
pub fn parse<'i>(text: &'i str, problems: &mut Problems<'_>) -> DeTable<'i> {
    let (doc, errors) = DeTable::parse_recoverable(text);
    for e in errors {
        let span = e.span().unwrap_or(0..0);
        problems.at(span, format!("not valid TOML: {}", e.message().trim()));
    }
    doc.into_inner()
}

/// The entries of `table` in the order of the text.
pub fn entries<'a, 'i>(table: &'a DeTable<'i>) -> Vec<(&'a str, Range<usize>, &'a Spanned<'i>)> {
    let mut out: Vec<_> = table
        .iter()
        .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
        .collect();
    out.sort_by_key(|(_, span, _)| span.start);
    out
}

/// A problem for each key of `table` not in `known`, with a did-you-mean; `what` names the
/// table in the message (`[tier.api]`).
pub fn unknown_keys(table: &DeTable<'_>, known: &[&str], what: &str, problems: &mut Problems<'_>) {
    for (name, span, _) in entries(table) {
        if !known.contains(&name) {
            problems.at(
                span,
                format!(
                    "unknown key `{name}` in {what}: {}",
                    did_you_mean(name, known)
                ),
            );
        }
    }
}

/// What a TOML value is, for a message.
pub fn kind(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a number",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The number `value` holds (an integer or a float), if any.
pub fn number(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
            .ok()
            .map(|n| n as f64),
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
        _ => None,
    }
}

/// The integer `value` holds, if it is written as one.
pub fn integer(value: &DeValue<'_>) -> Option<i64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok(),
        _ => None,
    }
}

/// Reads the value of `key` as something, or records a problem saying what it should be.
pub struct Reader<'p, 't> {
    /// Where problems go.
    pub problems: &'p mut Problems<'t>,
}

impl Reader<'_, '_> {
    fn wrong(&mut self, key: &str, value: &Spanned<'_>, expected: &str) {
        let raw = self.problems.raw(value.span());
        self.problems
            .at(value.span(), format!("{key} = {raw}: {key} is {expected}"));
    }

    /// A whole number from `least` to `most`.
    pub fn count(&mut self, key: &str, value: &Spanned<'_>, least: u64, most: u64) -> Option<u64> {
        match integer(value.get_ref()) {
            Some(n) if n >= least as i64 && n as u64 <= most => Some(n as u64),
            _ => {
                self.wrong(
                    key,
                    value,
                    &format!("a whole number from {least} to {most}"),
                );
                None
            }
        }
    }

    /// A number above zero (and finite), at most `most`.
    pub fn positive(&mut self, key: &str, value: &Spanned<'_>, most: f64) -> Option<f64> {
        match number(value.get_ref()) {
            Some(x) if x > 0.0 && x <= most && x.is_finite() => Some(x),
            _ => {
                self.wrong(key, value, &format!("a number above 0, at most {most}"));
                None
            }
        }
    }

    /// A duration written with a unit, as the attribute writes it (`"150ms"`, `"2s"`);
    /// above zero unless `zero` allows it; at most a day.
    pub fn duration(&mut self, key: &str, value: &Spanned<'_>, zero: bool) -> Option<Duration> {
        let expected = if zero {
            "a duration with a unit, such as \"10ms\" or \"2s\" (units: ns, us, ms, s, m, h)"
        } else {
            "a duration above zero with a unit, such as \"10ms\" or \"2s\" (units: ns, us, ms, s, m, h)"
        };
        match value.get_ref() {
            DeValue::String(s) => match retry_keys::parse_duration(s) {
                Ok(d) if (zero || !d.is_zero()) && d <= Duration::from_secs(86_400) => Some(d),
                _ => {
                    self.wrong(key, value, expected);
                    None
                }
            },
            DeValue::Integer(_) | DeValue::Float(_) => {
                let raw = self.problems.raw(value.span()).to_owned();
                self.problems.at(
                    value.span(),
                    format!(
                        "{key} = {raw}: {key} needs a unit: write it as a string, such as \"{raw}s\""
                    ),
                );
                None
            }
            _ => {
                self.wrong(key, value, expected);
                None
            }
        }
    }

    /// A share: a number in [0, 1] or a percentage written as a string (`"5%"`).
    pub fn share(&mut self, key: &str, value: &Spanned<'_>) -> Option<f64> {
        let x = match value.get_ref() {
            DeValue::String(s) => s
                .trim()
                .strip_suffix('%')
                .and_then(|n| n.trim().parse::<f64>().ok())
                .map(|p| p / 100.0),
            v => number(v),
        };
        match x {
            Some(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => {
                self.wrong(
                    key,
                    value,
                    "a share: a number from 0 to 1, or a percentage such as \"5%\"",
                );
                None
            }
        }
    }

    /// A string.
    pub fn string<'v>(&mut self, key: &str, value: &'v Spanned<'_>) -> Option<&'v str> {
        match value.get_ref() {
            DeValue::String(s) => Some(s.as_ref()),
            other => {
                let what = kind(other);
                self.problems.at(
                    value.span(),
                    format!("{key}: a string is wanted here, found {what}"),
                );
                None
            }
        }
    }

    /// A boolean.
    pub fn boolean(&mut self, key: &str, value: &Spanned<'_>) -> Option<bool> {
        match value.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong(key, value, "`true` or `false`");
                None
            }
        }
    }

    /// A table.
    pub fn table<'v, 'i>(&mut self, key: &str, value: &'v Spanned<'i>) -> Option<&'v DeTable<'i>> {
        match value.get_ref() {
            DeValue::Table(t) => Some(t),
            other => {
                let what = kind(other);
                self.problems.at(
                    value.span(),
                    format!("{key}: a table is wanted here, found {what}"),
                );
                None
            }
        }
    }
}
