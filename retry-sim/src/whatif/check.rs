//! `--check EXPR`: a condition on one figure of a run, for CI. An expression is a figure, a
//! comparison and a value:
//!
//! ```text
//! tier.api.amplification <= 1.5        tier.NAME.FIGURE, or users.FIGURE
//! users.failed <= 0.1%                 a share: a percentage, or a number from 0 to 1
//! tier.db.p99 < 200ms                  a latency or a time to recover: a duration with a unit
//! users.recovery <= 5s                 `never` for a time to recover that never comes
//! tier.db.bucket_empty == 0            a count
//! ```
//!
//! The comparisons are `<`, `<=`, `>`, `>=`, `==` and `!=`. [`FIELDS`] lists the figures. A
//! check that does not parse, or names a tier or a figure the run does not have, is a problem
//! reported before anything runs, with a did-you-mean.

use super::measure::Figures;
use super::problem::{Problem, did_you_mean};

/// What a figure measures, and so how its value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Requests per user call: a number, `1.5` or `1.5x`.
    Multiple,
    /// A share: `0.1%` or `0.001`.
    Share,
    /// Seconds: a duration with a unit, `200ms`, `5s`, or `never`.
    Duration,
    /// A count: a whole number.
    Count,
}

impl Kind {
    fn example(self) -> &'static str {
        match self {
            Kind::Multiple => "a number of requests per user call, such as 1.5 or 1.5x",
            Kind::Share => "a share, such as 0.1% or 0.001",
            Kind::Duration => "a duration with a unit, such as 200ms or 5s",
            Kind::Count => "a whole number, such as 0",
        }
    }
}

/// Every figure a check can name, with its kind and what it is.
pub const FIELDS: [(&str, Kind, &str); 26] = [
    (
        "amplification",
        Kind::Multiple,
        "requests per user call over those when nothing fails (1: retries add nothing)",
    ),
    (
        "amplification_fault",
        Kind::Multiple,
        "the same over the faults' span",
    ),
    (
        "per_call",
        Kind::Multiple,
        "requests per user call (the users: attempts per call)",
    ),
    (
        "per_call_fault",
        Kind::Multiple,
        "the same over the faults' span",
    ),
    (
        "nominal",
        Kind::Multiple,
        "requests per user call when nothing fails",
    ),
    (
        "goodput",
        Kind::Share,
        "share of requests answered Ok (the users: calls that succeeded)",
    ),
    (
        "goodput_fault",
        Kind::Share,
        "the same over the faults' span",
    ),
    (
        "failed",
        Kind::Share,
        "share of requests not answered Ok (the users: calls that failed)",
    ),
    (
        "failed_fault",
        Kind::Share,
        "the same over the faults' span",
    ),
    ("p50", Kind::Duration, "median latency"),
    ("p99", Kind::Duration, "99th percentile of the latency"),
    ("p999", Kind::Duration, "99.9th percentile of the latency"),
    (
        "recovery",
        Kind::Duration,
        "time to recover after the last fault (never: not back)",
    ),
    (
        "requests",
        Kind::Count,
        "requests that arrived (the users: calls offered)",
    ),
    (
        "retries",
        Kind::Count,
        "requests that arrived as their caller's retry",
    ),
    ("throttled", Kind::Count, "requests answered 429"),
    (
        "shed",
        Kind::Count,
        "requests dropped from the queue, their deadline passed",
    ),
    (
        "told_not_to_retry",
        Kind::Count,
        "error answers saying not to retry",
    ),
    (
        "calls_failed",
        Kind::Count,
        "calls its processes made that failed",
    ),
    (
        "bucket_empty",
        Kind::Count,
        "retries the token bucket refused",
    ),
    (
        "budget_exhausted",
        Kind::Count,
        "retries the retry budget refused",
    ),
    (
        "circuit_open",
        Kind::Count,
        "retries and calls the circuit breaker refused",
    ),
    ("deadline", Kind::Count, "calls the deadline ended early"),
    ("guard", Kind::Count, "retries and calls a guard refused"),
    (
        "hint_too_long",
        Kind::Count,
        "calls ended on a server hint beyond max_backoff",
    ),
    (
        "refused",
        Kind::Count,
        "every early end: the protections' refusals and the deadline's",
    ),
];

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    const ALL: [(&'static str, Op); 6] = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];

    /// Whether `a op b`.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// A parsed check.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The expression as written.
    pub text: String,
    /// `users`, or the tier's name.
    pub subject: String,
    /// The figure.
    pub field: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// The comparison.
    pub op: Op,
    /// The value compared with, in the figure's unit (seconds, a share, a count).
    pub value: f64,
}

/// The outcome of a check on a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The check.
    pub check: Check,
    /// The figure's value (`f64::INFINITY` for a time to recover that never comes).
    pub actual: f64,
    /// Whether the check holds.
    pub passed: bool,
}

/// Parses `text` against the tiers `tiers` (the users are `users`); `faults`: whether the
/// topology has faults (a figure over the faults' span needs some).
pub fn parse(text: &str, tiers: &[&str], faults: bool) -> Result<Check, Problem> {
    let problem = |message: String| Problem {
        file: format!("--check {text}"),
        line: None,
        message,
    };
    let trimmed = text.trim();
    let Some((at, op_text, op)) = Op::ALL
        .iter()
        .filter_map(|(s, op)| trimmed.find(s).map(|i| (i, *s, *op)))
        .min_by_key(|(i, s, _)| (*i, std::cmp::Reverse(s.len())))
    else {
        return Err(problem(
            "no comparison: write FIGURE OP VALUE with OP one of <, <=, >, >=, ==, !=, such as \
             `tier.api.amplification <= 1.5`"
                .into(),
        ));
    };
    let left = trimmed[..at].trim();
    let right = trimmed[at + op_text.len()..].trim();
    if right.starts_with(['<', '>', '=']) {
        return Err(problem(format!(
            "`{op_text}{}` is not a comparison: one of <, <=, >, >=, ==, !=",
            &right[..1]
        )));
    }
    // `p99.9` is the one figure with a point in its name.
    let left = match left.strip_suffix("p99.9") {
        Some(head) => format!("{head}p999"),
        None => left.to_owned(),
    };
    let left = left.as_str();
    let parts: Vec<&str> = left.split('.').collect();
    let (subject, field) = match parts.as_slice() {
        ["users", f] => ("users".to_owned(), *f),
        ["tier", name, f] => {
            if !tiers.contains(name) {
                return Err(problem(format!(
                    "no tier `{name}`: {}",
                    did_you_mean(name, tiers)
                )));
            }
            ((*name).to_owned(), *f)
        }
        [first, ..] if tiers.contains(first) => {
            return Err(problem(format!(
                "`{left}`: a tier's figure is written tier.{left}"
            )));
        }
        _ => {
            return Err(problem(format!(
                "`{left}` is not a figure: write users.FIGURE or tier.NAME.FIGURE, such as \
                 `users.failed` or `tier.api.p99`"
            )));
        }
    };
    let names: Vec<&str> = FIELDS.iter().map(|(n, _, _)| *n).collect();
    let Some(&(field, kind, _)) = FIELDS.iter().find(|(n, _, _)| *n == field) else {
        return Err(problem(format!(
            "no figure `{field}`: {}",
            did_you_mean(field, &names)
        )));
    };
    if field.ends_with("_fault") && !faults {
        return Err(problem(format!(
            "{field} is measured over the faults' span, and the topology has no fault"
        )));
    }
    let value = value(right, field, kind).map_err(problem)?;
    Ok(Check {
        text: trimmed.to_owned(),
        subject,
        field,
        kind,
        op,
        value,
    })
}

/// `text` as a value of `field`, a figure of `kind`.
fn value(text: &str, field: &str, kind: Kind) -> Result<f64, String> {
    if text.is_empty() {
        return Err(format!(
            "no value after the comparison: {field} is {}",
            kind.example()
        ));
    }
    let wrong = || format!("`{text}`: {field} is {}", kind.example());
    let split = text
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(text.len());
    // `1e3ms`: the exponent's `e` is part of the number only when a digit follows it.
    let (number, unit) = text.split_at(split);
    let (number, unit) = if number.ends_with(['e', 'E']) {
        text.split_at(split - 1)
    } else {
        (number, unit)
    };
    let unit = unit.trim();
    match kind {
        Kind::Duration if text == "never" => return Ok(f64::INFINITY),
        Kind::Duration => {
            if unit.is_empty() {
                return Err(format!(
                    "`{text}` needs a unit: {field} is {}",
                    kind.example()
                ));
            }
            let compact = format!("{}{unit}", number.trim());
            return retry_keys::parse_duration(&compact)
                .map(|d| d.as_secs_f64())
                .map_err(|_| wrong());
        }
        _ => {}
    }
    let x: f64 = number.trim().parse().map_err(|_| wrong())?;
    if !x.is_finite() {
        return Err(wrong());
    }
    match (kind, unit) {
        (Kind::Multiple, "" | "x") => Ok(x),
        (Kind::Share, "%") => Ok(x / 100.0),
        (Kind::Share, "") => Ok(x),
        (Kind::Count, "") if x.fract() == 0.0 => Ok(x),
        (_, u) if !u.is_empty() => Err(format!(
            "`{text}`: {field} is {}; `{u}` is not its unit",
            kind.example()
        )),
        _ => Err(wrong()),
    }
}

/// The value of `check`'s figure in `figures`.
pub fn actual(check: &Check, figures: &[Figures]) -> Option<f64> {
    let f = figures.iter().find(|f| f.name == check.subject)?;
    let r = &f.refused;
    Some(match check.field {
        "amplification" => f.amplification(),
        "amplification_fault" => f.amplification_fault()?,
        "per_call" => f.per_call,
        "per_call_fault" => f.per_call_fault?,
        "nominal" => f.nominal,
        "goodput" => f.goodput,
        "goodput_fault" => f.goodput_fault?,
        "failed" => f.failed(),
        "failed_fault" => 1.0 - f.goodput_fault?,
        "p50" => f.latency.p50,
        "p99" => f.latency.p99,
        "p999" => f.latency.p999,
        "recovery" => f.recovery.unwrap_or(f64::INFINITY),
        "requests" => f.requests as f64,
        "retries" => f.retries as f64,
        "throttled" => f.throttled as f64,
        "shed" => f.shed as f64,
        "told_not_to_retry" => f.told_not_to_retry as f64,
        "calls_failed" => f.calls_failed as f64,
        "bucket_empty" => r.bucket_empty as f64,
        "budget_exhausted" => r.budget_exhausted as f64,
        "circuit_open" => (r.circuit_open + r.circuit_open_calls) as f64,
        "deadline" => r.deadline as f64,
        "guard" => r.guard as f64,
        "hint_too_long" => r.hint_too_long as f64,
        "refused" => r.total() as f64,
        _ => return None,
    })
}

/// `check` judged on `figures`.
pub fn judge(check: &Check, figures: &[Figures]) -> Verdict {
    let actual = actual(check, figures).unwrap_or(f64::NAN);
    Verdict {
        check: check.clone(),
        actual,
        passed: check.op.holds(actual, check.value),
    }
}

/// A figure's value as a check writes it (`1.23x`, `0.10%`, `200ms`, `never`, `12`).
pub fn show(kind: Kind, x: f64) -> String {
    match kind {
        Kind::Multiple => format!("{x:.3}x"),
        Kind::Share => format!("{:.4}%", 100.0 * x),
        Kind::Duration if x.is_infinite() => "never".to_owned(),
        Kind::Duration if x < 1.0 => format!("{:.1}ms", 1000.0 * x),
        Kind::Duration => format!("{x:.2}s"),
        Kind::Count => format!("{x:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIERS: [&str; 2] = ["api", "db"];

    fn ok(text: &str) -> Check {
        parse(text, &TIERS, true).unwrap()
    }

    fn err(text: &str) -> String {
        parse(text, &TIERS, true).unwrap_err().to_string()
    }

    #[test]
    fn the_examples_parse() {
        let c = ok("tier.api.amplification <= 1.5");
        assert_eq!(
            (c.subject.as_str(), c.field, c.op, c.value),
            ("api", "amplification", Op::Le, 1.5)
        );
        let c = ok("users.failed <= 0.1%");
        assert_eq!((c.field, c.value), ("failed", 0.001));
        let c = ok("tier.db.p99 < 200ms");
        assert_eq!((c.op, c.value), (Op::Lt, 0.2));
        assert_eq!(ok("users.recovery<=never").value, f64::INFINITY);
        assert_eq!(ok("tier.db.p99.9 >= 1.5s").field, "p999");
        assert_eq!(ok("tier.api.amplification != 2x").op, Op::Ne);
        assert_eq!(ok("tier.db.bucket_empty == 0").value, 0.0);
        assert_eq!(ok("users.goodput > 0.99").value, 0.99);
    }

    #[test]
    fn a_bad_check_says_what_to_write() {
        assert!(
            err("tier.api.p99 < 200").contains("`200` needs a unit: p99 is a duration"),
            "{}",
            err("tier.api.p99 < 200")
        );
        assert!(err("tier.apii.p99 < 2s").contains("no tier `apii`: did you mean `api`?"));
        assert!(err("users.amplificaton < 2").contains("did you mean `amplification`?"));
        assert!(err("api.p99 < 2s").contains("tier.api.p99"));
        assert!(err("users.failed").contains("no comparison"));
        assert!(
            err("users.failed =< 1%").contains("no figure")
                || err("users.failed =< 1%").contains("not"),
            "{}",
            err("users.failed =< 1%")
        );
        assert!(err("users.failed <= 1ms").contains("`ms` is not its unit"));
        assert!(err("users.requests == 1.5").contains("a whole number"));
        assert!(err("users.failed <").contains("no value"));
        assert!(err("users.failed <<= 1").contains("not a comparison"));
        let no_faults = parse("users.goodput_fault > 0.5", &TIERS, false).unwrap_err();
        assert!(no_faults.to_string().contains("has no fault"));
    }

    #[test]
    fn comparisons_hold_as_written() {
        assert!(Op::Le.holds(1.5, 1.5) && !Op::Lt.holds(1.5, 1.5));
        assert!(Op::Ge.holds(2.0, 1.0) && Op::Gt.holds(2.0, 1.0) && Op::Ne.holds(1.0, 2.0));
        assert!(!Op::Le.holds(f64::INFINITY, 5.0));
        assert!(!Op::Le.holds(f64::NAN, 5.0));
        assert_eq!(show(Kind::Duration, 0.2), "200.0ms");
        assert_eq!(show(Kind::Duration, f64::INFINITY), "never");
        assert_eq!(show(Kind::Share, 0.001), "0.1000%");
    }
}
