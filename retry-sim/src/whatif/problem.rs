//! What is wrong with an input: each problem with the file (or the command-line option) it is
//! in, its line, and what to write instead; every problem of every input is collected before
//! anything runs.

use std::fmt;
use std::ops::Range;

/// One problem of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, or the command-line option (`--check`, `--policy`), the problem is in.
    pub file: String,
    /// Its line (1-based), when it is in a file of lines.
    pub line: Option<usize>,
    /// What is wrong, and what to write instead (`did you mean ...?` where a name is close to
    /// one that would do).
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// The problems of one text: its name for the messages, and the lines its spans fall on.
#[derive(Debug)]
pub struct Problems<'t> {
    file: String,
    text: &'t str,
    found: Vec<(usize, Problem)>,
}

impl<'t> Problems<'t> {
    /// No problem yet in `text`, named `file` in the messages.
    pub fn new(file: impl Into<String>, text: &'t str) -> Problems<'t> {
        Problems {
            file: file.into(),
            text,
            found: Vec::new(),
        }
    }

    /// The line (1-based) of the byte `at` of the text.
    pub fn line(&self, at: usize) -> usize {
        let at = at.min(self.text.len());
        self.text.as_bytes()[..at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// The text of `span`, trimmed (`?` if the span is not in the text).
    pub fn raw(&self, span: Range<usize>) -> &'t str {
        self.text.get(span).map_or("?", str::trim)
    }

    /// A problem at `span` of the text.
    pub fn at(&mut self, span: Range<usize>, message: impl Into<String>) {
        let line = self.line(span.start);
        self.found.push((
            span.start,
            Problem {
                file: self.file.clone(),
                line: Some(line),
                message: message.into(),
            },
        ));
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The problems found, in the order of the text.
    pub fn into_vec(mut self) -> Vec<Problem> {
        self.found.sort_by_key(|(at, _)| *at);
        self.found.into_iter().map(|(_, p)| p).collect()
    }
}

/// ` did you mean `x`?` for the name among `candidates` that `name` most likely meant, if it
/// is close to one (`retry_keys::suggest`), else nothing; then the candidates.
pub fn did_you_mean(name: &str, candidates: &[&str]) -> String {
    let meant = retry_keys::suggest(name, candidates)
        .map(|m| format!("did you mean `{m}`? "))
        .unwrap_or_default();
    if candidates.is_empty() {
        meant
    } else {
        format!(
            "{meant}({}: {})",
            one_of(candidates.len()),
            candidates.join(", ")
        )
    }
}

fn one_of(n: usize) -> &'static str {
    if n == 1 { "the only one" } else { "one of" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_come_in_the_order_of_the_text_with_their_lines() {
        let text = "a = 1\nb = 2\nc = 3\n";
        let mut p = Problems::new("t.toml", text);
        p.at(12..13, "c is wrong");
        p.at(0..1, "a is wrong");
        assert_eq!(p.raw(6..11), "b = 2");
        let v = p.into_vec();
        assert_eq!(v[0].to_string(), "t.toml:1: a is wrong");
        assert_eq!(v[1].to_string(), "t.toml:3: c is wrong");
    }

    #[test]
    fn a_close_name_is_suggested() {
        assert_eq!(
            did_you_mean("replica", &["replicas", "calls"]),
            "did you mean `replicas`? (one of: replicas, calls)"
        );
        assert_eq!(
            did_you_mean("zzz", &["replicas"]),
            "(the only one: replicas)"
        );
    }
}
