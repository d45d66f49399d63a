//! What is wrong with a service config: every problem found, each with its JSON path.

use serde_json::Value;
use std::fmt;

/// A service config that cannot be used, with every problem found in it.
///
/// Its `Display` lists each problem as `JSON path: what is wrong, found what was written`:
///
/// ```text
/// invalid gRPC service config (2 problems):
///   methodConfig[0].retryPolicy.maxAttempts: must be greater than 1, found 1
///   retryThrottling.tokenRatio: is required but missing
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceConfigError {
    problems: Vec<Problem>,
    /// The config is one `ServiceConfig::from_google_json` reads.
    google: bool,
}

/// One problem of a [`ServiceConfigError`]: where it is in the JSON and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    path: String,
    message: String,
}

impl ServiceConfigError {
    /// Every problem found, in the order the config was read (`methodConfig` entries in order,
    /// then `retryThrottling`). Never empty.
    #[must_use]
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The error of a config that Google's generated clients read as it is (see
    /// `ServiceConfig::from_google_json`): its `Display` says so.
    pub(crate) fn read_by_google_rules(mut self) -> Self {
        self.google = true;
        self
    }
}

impl Problem {
    /// The JSON path of the value the problem is about (`methodConfig[0].retryPolicy.maxAttempts`):
    /// keys joined by `.`, array indices in brackets; empty for the whole text (a text that is
    /// not JSON, or not a JSON object).
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong, and what was found (`must be greater than 1, found 1`).
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// `path: message`, or `service config: message` for the whole text.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "service config"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

impl fmt::Display for ServiceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "invalid gRPC service config: {one}")?,
            all => {
                write!(f, "invalid gRPC service config ({} problems):", all.len())?;
                for p in all {
                    write!(f, "\n  {p}")?;
                }
            }
        }
        if self.google {
            write!(
                f,
                "\n  (Google's generated clients read it as it is, as they read googleapis' \
                 published *_grpc_service_config.json files: ServiceConfig::from_google_json \
                 reads it so)"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ServiceConfigError {}

/// The problems found so far while reading a config.
#[derive(Default)]
pub(crate) struct Problems(Vec<Problem>);

impl Problems {
    /// A problem at `path`.
    pub(crate) fn push(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(Problem {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// A problem at `path` about the value `found`: `message, found <value>`.
    pub(crate) fn found(&mut self, path: &str, message: &str, found: &Value) {
        self.push(path, format!("{message}, found {}", shown(found)));
    }

    /// A required value that is absent (or `null`, which proto3's JSON reads as absent).
    pub(crate) fn missing(&mut self, path: &str) {
        self.push(path, "is required but missing");
    }

    /// The error, if a problem was found.
    pub(crate) fn into_error(self) -> Option<ServiceConfigError> {
        (!self.0.is_empty()).then_some(ServiceConfigError {
            problems: self.0,
            google: false,
        })
    }

    /// A text that is not JSON: one problem, with its line and column.
    pub(crate) fn syntax(e: &serde_json::Error) -> ServiceConfigError {
        // serde_json's message ends with its place; the place is said first here.
        let text = e.to_string();
        let place = format!(" at line {} column {}", e.line(), e.column());
        let what = text.strip_suffix(&place).unwrap_or(&text);
        let mut p = Problems::default();
        p.push(
            "",
            format!(
                "is not valid JSON at line {}, column {}: {what}",
                e.line(),
                e.column()
            ),
        );
        ServiceConfigError {
            problems: p.0,
            google: false,
        }
    }
}

/// The longest text of a value a message shows.
const SHOWN: usize = 60;

/// A value as a message shows it: scalars as written in JSON (a long string cut short), an
/// empty array or object as `[]` or `{}`, others by their kind.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let mut cut: String = s.chars().take(SHOWN).collect();
            if cut.len() < s.len() {
                cut.push_str("...");
            }
            serde_json::to_string(&cut).unwrap_or_else(|_| format!("{cut:?}"))
        }
        Value::Array(a) if a.is_empty() => "[]".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(o) if o.is_empty() => "{}".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_shown_as_written_or_by_kind() {
        let v = |s: &str| serde_json::from_str::<Value>(s).expect("JSON");
        assert_eq!(shown(&v("null")), "null");
        assert_eq!(shown(&v("true")), "true");
        assert_eq!(shown(&v("1")), "1");
        assert_eq!(shown(&v("-2.5")), "-2.5");
        assert_eq!(shown(&v(r#""a\"b""#)), r#""a\"b""#);
        assert_eq!(shown(&v("[]")), "[]");
        assert_eq!(shown(&v("[1]")), "an array");
        assert_eq!(shown(&v("{}")), "{}");
        assert_eq!(shown(&v(r#"{"a":1}"#)), "an object");
        let long = format!("\"{}\"", "x".repeat(100));
        assert_eq!(shown(&v(&long)), format!("\"{}...\"", "x".repeat(60)));
        let accents = format!("\"{}\"", "é".repeat(60));
        assert_eq!(shown(&v(&accents)), accents, "60 characters are not cut");
    }

    #[test]
    fn one_problem_is_one_line() {
        let mut p = Problems::default();
        p.found("a.b", "must be greater than 1", &Value::from(1));
        let e = p.into_error().expect("a problem");
        assert_eq!(
            e.to_string(),
            "invalid gRPC service config: a.b: must be greater than 1, found 1"
        );
        assert_eq!(e.problems()[0].path(), "a.b");
        assert_eq!(e.problems()[0].message(), "must be greater than 1, found 1");
    }

    #[test]
    fn several_problems_are_one_line_each() {
        let mut p = Problems::default();
        p.missing("x");
        p.push("", "must be a JSON object, found []");
        let e = p.into_error().expect("problems");
        assert_eq!(
            e.to_string(),
            "invalid gRPC service config (2 problems):\n  x: is required but missing\n  \
             service config: must be a JSON object, found []"
        );
        assert!(Problems::default().into_error().is_none());
    }
}
