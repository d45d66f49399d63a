//! The AWS shared config file (`~/.aws/config`), for a tier whose policy names an AWS profile:
//! its `retry_mode` and `max_attempts`, read by the rules the runtime reads them by for a
//! function with `aws_config = true` (`retry-runtime/src/config/aws.rs`, after the AWS SDKs'
//! parser): `#` and `;` start comments, `[profile NAME]` and `[default]` open profiles,
//! `[profile default]` replaces `[default]`, sections of one name merge, keys are read in lower
//! case, an indented line continues the value above it, the last value of a key wins, other
//! sections (`[sso-session x]`, `[services x]`) are skipped. A line the SDKs reject, a value
//! that cannot be used and the `legacy` mode (no equivalent in the runtime) are problems here.

use super::problem::{Problem, did_you_mean};
use retry_keys::{Key, Mode, Value};

/// A value of the file and its line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Set {
    /// `Value::Mode` for `retry_mode`, `Value::Count` for `max_attempts`.
    pub value: Value,
    /// Its line (1-based).
    pub line: usize,
}

/// One profile's retry settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// Its name (`default` for `[default]` or `[profile default]`).
    pub name: String,
    /// `retry_mode`.
    pub mode: Option<Set>,
    /// `max_attempts`.
    pub max_attempts: Option<Set>,
}

/// The file's profiles, in the order of their first section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AwsFile {
    /// The path, as given.
    pub path: String,
    /// The profiles.
    pub profiles: Vec<Profile>,
}

impl AwsFile {
    /// The profile named `name`.
    pub fn profile(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The profiles' names.
    pub fn names(&self) -> Vec<&str> {
        self.profiles.iter().map(|p| p.name.as_str()).collect()
    }
}

const BLANK: [char; 2] = [' ', '\t'];

/// `line` without its blanks around and its comment (which must follow a blank in a value).
fn prepare(line: &str, after_blank: bool) -> &str {
    let line = line.trim_matches(BLANK);
    let mut blank = false;
    for (i, c) in line.char_indices() {
        if (c == '#' || c == ';') && (blank || !after_blank) {
            return line[..i].trim_matches(BLANK);
        }
        blank = c.is_whitespace();
    }
    line
}

/// Whether `name` is a profile or property name: `[A-Za-z0-9_\-/.%@:+]+`.
fn identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-/.%@:+".contains(c))
}

/// What a section header names: a profile, or a section that is none.
enum Header {
    Profile(String),
    Default,
    Other,
}

fn header(inside: &str) -> Header {
    let name = inside.trim_matches(BLANK);
    match name.split_once(BLANK) {
        Some((prefix, rest)) if prefix == "profile" && identifier(rest.trim()) => {
            Header::Profile(rest.trim().to_owned())
        }
        Some(_) => Header::Other,
        None if name == "default" => Header::Default,
        None => Header::Other,
    }
}

/// One section as written: its header, and its properties `(key, value, line)`.
struct Section {
    header: Header,
    properties: Vec<(String, String, usize)>,
}

/// Reads `text`, the file `path`: its profiles' retry settings, and every problem of it.
pub fn parse(path: &str, text: &str) -> (AwsFile, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut reject = |line: usize, message: &str| {
        problems.push(Problem {
            file: path.to_owned(),
            line: Some(line),
            message: format!("{message} (the AWS SDKs reject the whole file for it)"),
        });
    };
    let mut sections: Vec<Section> = Vec::new();
    // Whether the next lines belong to the last section (`Some(false)`: they follow a header
    // that is not closed, and are skipped with it; `None`: before the first section), and the
    // property a continuation line continues.
    let mut open: Option<bool> = None;
    let mut last: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim_matches(BLANK).is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with('[') {
            let inside = prepare(line, false)
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'));
            match inside {
                Some(name) => {
                    sections.push(Section {
                        header: header(name),
                        properties: Vec::new(),
                    });
                    open = Some(true);
                }
                None => {
                    reject(
                        number,
                        "a section header must end with `]` (its lines are skipped with it)",
                    );
                    open = Some(false);
                }
            }
            last = None;
            continue;
        }
        let section = match (open, sections.last_mut()) {
            (Some(true), Some(section)) => section,
            (Some(false), _) => continue,
            _ => {
                reject(number, "a property outside any section");
                continue;
            }
        };
        if line.starts_with(BLANK) {
            match last {
                Some(index) => {
                    let value = &mut section.properties[index].1;
                    value.push('\n');
                    value.push_str(line.trim_matches(BLANK));
                }
                None => reject(number, "a continuation line without a property above it"),
            }
            continue;
        }
        let Some((key, value)) = prepare(line, true).split_once('=') else {
            reject(number, "expected `key = value`");
            last = None;
            continue;
        };
        let key = key.trim_matches(BLANK).to_ascii_lowercase();
        if key.is_empty() {
            reject(number, "a property without a name");
            last = None;
            continue;
        }
        let value = value.trim_matches(BLANK).to_owned();
        last = match section.properties.iter().position(|p| p.0 == key) {
            Some(index) => {
                section.properties[index] = (key, value, number);
                Some(index)
            }
            None => {
                section.properties.push((key, value, number));
                Some(section.properties.len() - 1)
            }
        };
    }
    let prefixed_default = sections
        .iter()
        .any(|s| matches!(&s.header, Header::Profile(n) if n == "default"));
    let mut file = AwsFile {
        path: path.to_owned(),
        profiles: Vec::new(),
    };
    for section in sections {
        let name = match section.header {
            Header::Profile(name) => name,
            Header::Default if !prefixed_default => "default".to_owned(),
            Header::Default | Header::Other => continue,
        };
        let index = match file.profiles.iter().position(|p| p.name == name) {
            Some(i) => i,
            None => {
                file.profiles.push(Profile {
                    name,
                    ..Profile::default()
                });
                file.profiles.len() - 1
            }
        };
        let profile = &mut file.profiles[index];
        for (key, value, line) in section.properties {
            let mut wrong = |why: &str| {
                problems.push(Problem {
                    file: path.to_owned(),
                    line: Some(line),
                    message: format!("{key} = {}: {why}", value.replace('\n', "\\n")),
                });
            };
            match key.as_str() {
                "retry_mode" => match Mode::parse(&value) {
                    Some(mode) => {
                        profile.mode = Some(Set {
                            value: Value::Mode(mode),
                            line,
                        });
                    }
                    None if value.trim().eq_ignore_ascii_case("legacy") => wrong(
                        "the legacy mode has no equivalent in the runtime; \"standard\" or \
                         \"adaptive\"",
                    ),
                    None => wrong("retry_mode is \"standard\", \"adaptive\" or \"legacy\""),
                },
                "max_attempts" if value.contains('\n') => {
                    wrong("a value continued on the next line is not a number");
                }
                "max_attempts" => match Key::MaxAttempts.parse(&value) {
                    Ok(v) => profile.max_attempts = Some(Set { value: v, line }),
                    Err(e) => wrong(&e.to_string()),
                },
                _ => {}
            }
        }
    }
    (file, problems)
}

/// The problem of a policy naming `name`, a profile the file does not have.
pub fn missing(file: &AwsFile, name: &str) -> String {
    format!(
        "aws_profile = \"{name}\": the AWS config file {} has no profile `{name}`: {}",
        file.path,
        did_you_mean(name, &file.names())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_as_the_sdks_read_them() {
        let text = "[default]\nretry_mode = standard\n\n[profile prod] # the fleet\nretry_mode = adaptive ; tuned\nmax_attempts = 5\n[sso-session x]\nmax_attempts = 9\n[profile prod]\nMAX_ATTEMPTS = 6\n";
        let (file, problems) = parse("config", text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(file.names(), ["default", "prod"]);
        let prod = file.profile("prod").unwrap();
        assert_eq!(prod.mode.unwrap().value, Value::Mode(Mode::Adaptive));
        assert_eq!(
            prod.max_attempts,
            Some(Set {
                value: Value::Count(6),
                line: 10
            })
        );
        assert_eq!(file.profile("default").unwrap().mode.unwrap().line, 2);
    }

    #[test]
    fn profile_default_replaces_default() {
        let (file, _) = parse(
            "config",
            "[default]\nmax_attempts = 2\n[profile default]\nretry_mode = adaptive\n",
        );
        let d = file.profile("default").unwrap();
        assert_eq!(d.max_attempts, None);
        assert!(d.mode.is_some());
    }

    #[test]
    fn bad_lines_and_values_are_problems_with_their_lines() {
        let (_, problems) = parse(
            "config",
            "max_attempts = 3\n[profile a\nx = 1\n[profile b]\nretry_mode = legacy\nmax_attempts = zero\nnovalue\n",
        );
        let lines: Vec<Option<usize>> = problems.iter().map(|p| p.line).collect();
        assert_eq!(
            lines,
            [Some(1), Some(2), Some(7), Some(5), Some(6)],
            "{problems:#?}"
        );
        assert!(
            problems[3]
                .message
                .contains("legacy mode has no equivalent")
        );
        assert_eq!(
            missing(
                &AwsFile {
                    path: "c".into(),
                    profiles: vec![Profile {
                        name: "prod".into(),
                        ..Profile::default()
                    }]
                },
                "prd"
            ),
            "aws_profile = \"prd\": the AWS config file c has no profile `prd`: did you mean `prod`? (the only one: prod)"
        );
    }
}
