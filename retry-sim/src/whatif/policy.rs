//! A tier's retry policy as the user writes it, and as it is resolved from the user's files.
//!
//! In the topology a policy is a table (`policy = { ... }`) of:
//!
//! - the keys of `#[retry(...)]` that the environment and the config file may set
//!   (`retry_keys::Key`: `mode`, `max_attempts`, `initial_backoff`, ..., `attempt_timeout`,
//!   `deadline`, `hedge_after`, ...), their values written as the config file writes them;
//! - `bucket = "none"`, `budget = "N%"` and `breaker = "N%"`, as the attribute writes them;
//! - `guard = [...]`: the crate's guards, each a table naming its kind with its constructor's
//!   argument, and its options (`{ bulkhead = 4, max_wait = "50ms" }`; the kinds are
//!   `GUARDS`), made by each process for itself;
//! - `profile = "NAME"`: the keys it leaves out come from the config file's
//!   `[profile.NAME]`, then its `[default]` (without `profile`, from `[default]` alone), as
//!   the runtime resolves a `#[retry(profile = "NAME")]` function's;
//! - `aws_profile = "NAME"`: then from `retry_mode` and `max_attempts` of that profile of the
//!   AWS shared config file, as for `aws_config = true`;
//! - or `grpc = "FILE.json"` with `method = "pkg.Service/Method"` (and `google = true` for
//!   Google's published configs): the policy a gRPC service config gives that method, alone.
//!
//! The keys written in the policy (and on the command line, `--policy`, above them) are the
//! attribute's: they win over the files, and, as in the runtime, a file's timeout applies only
//! to a policy that writes `attempt_timeout` or `deadline`, and its hedging keys only to one
//! that writes `hedge_after`.

use super::aws_file::{self, AwsFile};
use super::config_file::{self, ConfigFile};
use super::model::{GrpcPlan, GuardPlan, KeysPlan, PolicyPlan};
use super::problem::{Problem, Problems, did_you_mean};
use super::tomlish::{self, Reader};
use retry_keys::{AttributeKey, Key, Problem as Incoherence, Value, Values};
use retry_runtime::__private::Keys;
use std::fmt::Write as _;
use std::time::Duration;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The names a policy table takes besides the settable keys.
const OWN: [&str; 9] = [
    "bucket",
    "budget",
    "breaker",
    "guard",
    "profile",
    "aws_profile",
    "grpc",
    "method",
    "google",
];

/// Every name a policy table takes.
pub fn names() -> Vec<&'static str> {
    Key::ALL.iter().map(|k| k.name()).chain(OWN).collect()
}

/// A value written in a policy table, with its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Written<T> {
    /// The value.
    pub value: T,
    /// Where: the file (or option) and line.
    pub at: String,
}

/// A gRPC service config named by a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcRef {
    /// The file, as written (relative to the topology's folder).
    pub path: Written<String>,
    /// `pkg.Service/Method`.
    pub method: Option<Written<String>>,
    /// Read as Google's published configs are.
    pub google: bool,
}

/// A policy as written: in the topology, or on the command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySpec {
    /// The settable keys written.
    pub keys: Vec<(Key, Written<Value>)>,
    /// `bucket = "none"`.
    pub no_bucket: Option<Written<()>>,
    /// `budget = "N%"`.
    pub budget: Option<Written<f64>>,
    /// `breaker = "N%"`.
    pub breaker: Option<Written<f64>>,
    /// `guard = [...]`.
    pub guards: Option<Written<Vec<GuardPlan>>>,
    /// `profile = "NAME"`.
    pub profile: Option<Written<String>>,
    /// `aws_profile = "NAME"`.
    pub aws_profile: Option<Written<String>>,
    /// `grpc = "FILE"`.
    pub grpc: Option<GrpcRef>,
}

impl PolicySpec {
    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        *self == PolicySpec::default()
    }

    /// The value written for `key`.
    fn get(&self, key: Key) -> Option<&Written<Value>> {
        self.keys.iter().find(|(k, _)| *k == key).map(|(_, w)| w)
    }
}

/// Reads the policy `table`, its problems going to `problems` (`what` names it in them:
/// `tier.api`).
pub fn read(table: &DeTable<'_>, what: &str, problems: &mut Problems<'_>) -> PolicySpec {
    let mut spec = PolicySpec::default();
    let names = names();
    let mut method = None;
    let mut google = None;
    let mut grpc = None;
    for (name, span, value) in tomlish::entries(table) {
        let at = format!("{}", problems.line(span.start));
        let mut r = Reader {
            problems: &mut *problems,
        };
        if let Some(key) = Key::from_name(name) {
            match config_file::value_of(key, value.get_ref()) {
                Ok(v) => spec.keys.push((key, Written { value: v, at })),
                Err(why) => {
                    let raw = r.problems.raw(value.span()).to_owned();
                    r.problems
                        .at(value.span(), format!("{name} = {raw}: {why}"));
                }
            }
            continue;
        }
        match name {
            "bucket" => {
                if let Some(s) = r.string(name, value) {
                    if s == "none" {
                        spec.no_bucket = Some(Written { value: (), at });
                    } else {
                        r.problems.at(
                            value.span(),
                            format!(
                                "bucket = {s:?}: the simulation takes \"none\" (no retry token \
                                 bucket); without the key, each process has the standard bucket"
                            ),
                        );
                    }
                }
            }
            "budget" => {
                if let Some(s) = r.string(name, value) {
                    match retry_keys::parse_budget_share(s) {
                        Some(x) => spec.budget = Some(Written { value: x, at }),
                        None => r.problems.at(
                            value.span(),
                            format!("budget = {s:?}: a share of the requests such as \"20%\""),
                        ),
                    }
                }
            }
            "breaker" => {
                if let Some(s) = r.string(name, value) {
                    match retry_keys::parse_failure_ratio(s) {
                        Some(x) => spec.breaker = Some(Written { value: x, at }),
                        None => r.problems.at(
                            value.span(),
                            format!(
                                "breaker = {s:?}: a failure ratio such as \"50%\" (above 0%, at \
                                 most 100%)"
                            ),
                        ),
                    }
                }
            }
            "guard" => {
                if let Some(guards) = guards(&mut r, value) {
                    spec.guards = Some(Written { value: guards, at });
                }
            }
            "profile" | "aws_profile" => {
                if let Some(s) = r.string(name, value) {
                    let ok = if name == "profile" {
                        retry_keys::is_profile_name(s)
                    } else {
                        !s.trim().is_empty()
                    };
                    if !ok {
                        r.problems.at(
                            value.span(),
                            format!(
                                "{name} = {s:?}: not a profile name (letters, digits, `_` and `-`)"
                            ),
                        );
                    } else if name == "profile" {
                        spec.profile = Some(Written {
                            value: s.to_owned(),
                            at,
                        });
                    } else {
                        spec.aws_profile = Some(Written {
                            value: s.trim().to_owned(),
                            at,
                        });
                    }
                }
            }
            "grpc" => {
                if let Some(s) = r.string(name, value) {
                    grpc = Some(Written {
                        value: s.to_owned(),
                        at,
                    });
                }
            }
            "method" => {
                if let Some(s) = r.string(name, value) {
                    if s.split_once('/')
                        .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())
                    {
                        method = Some((
                            Written {
                                value: s.to_owned(),
                                at,
                            },
                            span,
                        ));
                    } else {
                        r.problems.at(
                            value.span(),
                            format!(
                                "method = {s:?}: a gRPC method is written \"package.Service/Method\""
                            ),
                        );
                    }
                }
            }
            "google" => google = r.boolean(name, value).map(|g| (g, span)),
            other => {
                let why = match AttributeKey::from_name(other) {
                    Some(_) => format!(
                        "`{other}` is a key of `#[retry]` that a simulated process does not take \
                         (it runs the policy's keys, its bucket, budget, breaker and guards)"
                    ),
                    None => format!(
                        "unknown key `{other}` in the policy of {what}: {}",
                        did_you_mean(other, &names)
                    ),
                };
                r.problems.at(span, why);
            }
        }
    }
    match grpc {
        Some(path) => {
            if method.is_none() {
                let span = table_span(table);
                problems.at(
                    span,
                    format!(
                        "the policy of {what}: grpc = {:?} needs `method = \"package.Service/Method\"`, \
                         the method whose policy the tier runs",
                        path.value
                    ),
                );
            }
            let others = spec.keys.len()
                + usize::from(spec.no_bucket.is_some())
                + usize::from(spec.budget.is_some())
                + usize::from(spec.breaker.is_some())
                + usize::from(spec.guards.is_some())
                + usize::from(spec.profile.is_some())
                + usize::from(spec.aws_profile.is_some());
            if others > 0 {
                problems.at(
                    table_span(table),
                    format!(
                        "the policy of {what}: a gRPC service config's policy takes no other key (the \
                         service config writes the attempts, the backoff, the timeout and the \
                         throttling)"
                    ),
                );
            }
            spec.grpc = Some(GrpcRef {
                path,
                method: method.map(|(m, _)| m),
                google: google.is_some_and(|(g, _)| g),
            });
        }
        None => {
            for (name, found) in [
                ("method", method.map(|(_, s)| s)),
                ("google", google.map(|(_, s)| s)),
            ] {
                if let Some(span) = found {
                    problems.at(
                        span,
                        format!(
                            "`{name}` goes with `grpc = \"FILE.json\"`, which the policy lacks"
                        ),
                    );
                }
            }
        }
    }
    spec
}

/// The guards a policy's `guard = [...]` takes, each named by its kind's key, with the options
/// it takes beside it.
const GUARDS: [(&str, &[&str]); 5] = [
    ("bulkhead", &["max_wait"]),
    ("concurrency_budget", &["min_concurrency"]),
    ("adaptive_throttle", &["window", "first_attempts"]),
    ("adaptive_concurrency", &[]),
    ("quota", &["per", "burst", "max_wait"]),
];

/// `guard = [...]`: a list of guards, each a table naming its kind (`{ bulkhead = 4 }`). `None`
/// if any of it is wrong (its problems recorded).
fn guards(r: &mut Reader<'_, '_>, value: &Spanned<DeValue<'_>>) -> Option<Vec<GuardPlan>> {
    let DeValue::Array(items) = value.get_ref() else {
        let raw = r.problems.raw(value.span()).to_owned();
        r.problems.at(
            value.span(),
            format!(
                "guard = {raw}: guard is a list of guards, such as \
                 [{{ bulkhead = 4 }}, {{ quota = 100, max_wait = \"200ms\" }}]"
            ),
        );
        return None;
    };
    let mut plans = Vec::new();
    let mut wrong = false;
    for item in items {
        let plan = match item.get_ref() {
            DeValue::Table(table) => guard(r, table, item.span()),
            _ => {
                let raw = r.problems.raw(item.span()).to_owned();
                r.problems.at(
                    item.span(),
                    format!(
                        "guard = [.., {raw}, ..]: a guard is a table naming its kind, such as \
                         {{ bulkhead = 4 }} (kinds: {})",
                        kinds().join(", ")
                    ),
                );
                None
            }
        };
        match plan {
            Some(plan) => plans.push(plan),
            None => wrong = true,
        }
    }
    (!wrong).then_some(plans)
}

/// The kinds of guard.
fn kinds() -> Vec<&'static str> {
    GUARDS.iter().map(|(kind, _)| *kind).collect()
}

/// One guard of `guard = [...]`: its kind's key and value, and its options.
fn guard(
    r: &mut Reader<'_, '_>,
    table: &DeTable<'_>,
    span: std::ops::Range<usize>,
) -> Option<GuardPlan> {
    let entries = tomlish::entries(table);
    let named: Vec<_> = entries
        .iter()
        .filter_map(|(name, _, value)| {
            GUARDS
                .iter()
                .find(|(kind, _)| kind == name)
                .map(|(kind, options)| (*kind, *options, *value))
        })
        .collect();
    let (kind, options, size) = match named.as_slice() {
        [one] => *one,
        [] => {
            let first = entries.first().map_or("", |(name, _, _)| *name);
            r.problems.at(
                span,
                format!(
                    "a guard is named by its kind: {}",
                    did_you_mean(first, &kinds())
                ),
            );
            return None;
        }
        [a, b, ..] => {
            r.problems.at(
                span,
                format!(
                    "one guard per table: `{}` and `{}` are two, written \
                     [{{ {} = .. }}, {{ {} = .. }}]",
                    a.0, b.0, a.0, b.0
                ),
            );
            return None;
        }
    };
    let mut wrong = false;
    for (name, at, _) in &entries {
        if *name != kind && !options.contains(name) {
            let why = if options.is_empty() {
                "it takes none".to_owned()
            } else {
                did_you_mean(name, options)
            };
            r.problems.at(
                at.clone(),
                format!("`{name}` is not an option of `{kind}`: {why}"),
            );
            wrong = true;
        }
    }
    let option = |name: &str| {
        entries
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, _, value)| *value)
    };
    let duration = |r: &mut Reader<'_, '_>, name: &str, wrong: &mut bool| -> Option<Duration> {
        let value = option(name)?;
        let d = r.duration(name, value, false);
        *wrong |= d.is_none();
        d
    };
    let plan = match kind {
        "bulkhead" => {
            let n = r.count(kind, size, 1, 1_000_000);
            let max_wait = duration(r, "max_wait", &mut wrong);
            GuardPlan::Bulkhead {
                max_concurrent: n? as u32,
                max_wait,
            }
        }
        "concurrency_budget" => {
            let ratio = r.share(kind, size);
            let min_concurrency =
                option("min_concurrency").map(|v| r.count("min_concurrency", v, 0, 1_000_000));
            GuardPlan::ConcurrencyBudget {
                ratio: ratio?,
                min_concurrency: match min_concurrency {
                    Some(n) => Some(n? as u32),
                    None => None,
                },
            }
        }
        "adaptive_throttle" => {
            let k = r.positive(kind, size, 1_000.0);
            let window = duration(r, "window", &mut wrong);
            let first = option("first_attempts").map(|v| r.boolean("first_attempts", v));
            GuardPlan::AdaptiveThrottle {
                k: k?,
                window,
                first_attempts: match first {
                    Some(b) => b?,
                    None => false,
                },
            }
        }
        "adaptive_concurrency" => {
            if r.boolean(kind, size)? {
                GuardPlan::AdaptiveConcurrency
            } else {
                r.problems.at(
                    span,
                    "adaptive_concurrency = false: write the guard as \
                     { adaptive_concurrency = true }, or leave it out",
                );
                return None;
            }
        }
        _ => {
            let n = r.count(kind, size, 1, 1_000_000_000);
            let per = duration(r, "per", &mut wrong);
            let burst = option("burst").map(|v| r.count("burst", v, 1, 1_000_000_000));
            let max_wait = duration(r, "max_wait", &mut wrong);
            GuardPlan::Quota {
                n: n? as u32,
                per: per.unwrap_or(Duration::from_secs(1)),
                burst: match burst {
                    Some(b) => Some(b? as u32),
                    None => None,
                },
                max_wait,
            }
        }
    };
    (!wrong).then_some(plan)
}

/// The span of the first entry of `table` (where a problem of the whole table is reported).
fn table_span(table: &DeTable<'_>) -> std::ops::Range<usize> {
    tomlish::entries(table)
        .first()
        .map_or(0..0, |(_, span, _)| span.clone())
}

/// The files a policy may name, once read.
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// The project's config file (`RETRY_CONFIG_FILE`'s TOML).
    pub config: Option<ConfigFile>,
    /// How the config file was chosen, for a problem about a profile without one.
    pub config_hint: String,
    /// The AWS shared config file.
    pub aws: Option<AwsFile>,
    /// How the AWS file was chosen.
    pub aws_hint: String,
    /// The folder the topology's relative paths start from.
    pub base: std::path::PathBuf,
}

/// Where a key's value came from, for the policy's description and its problems.
#[derive(Debug, Clone)]
struct From {
    value: Value,
    source: String,
}

/// The policy `spec` (under `cli`, the command line's keys for the tier, if any) resolved
/// against `files`: a plan, or its problems. `file` names the topology in them, `what` the
/// tier; `notes` gets what the runtime would warn about and ignore.
pub fn resolve(
    spec: &PolicySpec,
    cli: Option<&PolicySpec>,
    files: &Files,
    file: &str,
    what: &str,
    notes: &mut Vec<String>,
) -> Result<PolicyPlan, Vec<Problem>> {
    let problem = |at: &str, message: String| Problem {
        file: if at.starts_with("--") {
            at.to_owned()
        } else {
            file.to_owned()
        },
        line: at.parse().ok(),
        message,
    };
    let mut problems = Vec::new();
    if let Some(g) = &spec.grpc {
        if let Some(cli) = cli.filter(|c| !c.is_empty()) {
            let at = cli.keys.first().map_or("--policy", |(_, w)| w.at.as_str());
            problems.push(problem(
                at,
                format!(
                    "--policy sets keys of {what}, whose policy is a gRPC service config's \
                     ({}): edit the service config instead",
                    g.path.value
                ),
            ));
        }
        return match grpc(g, files, file) {
            Ok(plan) if problems.is_empty() => Ok(PolicyPlan::Grpc(plan)),
            Ok(_) => Err(problems),
            Err(more) => {
                problems.extend(more);
                Err(problems)
            }
        };
    }
    if let Some(g) = cli.and_then(|c| c.grpc.as_ref()) {
        problems.push(problem(
            &g.path.at,
            "--policy cannot name a gRPC service config: write it in the topology".into(),
        ));
    }
    let empty = PolicySpec::default();
    let cli = cli.unwrap_or(&empty);
    // The attribute's keys: the command line's over the topology's.
    let written = |key: Key| cli.get(key).or_else(|| spec.get(key));
    let place = |w: &Written<Value>| {
        if w.at.starts_with("--") {
            w.at.clone()
        } else {
            format!("{file}:{}", w.at)
        }
    };
    let pick =
        |a: &Option<Written<String>>, b: &Option<Written<String>>| a.clone().or_else(|| b.clone());
    let profile = pick(&cli.profile, &spec.profile);
    let aws_profile = pick(&cli.aws_profile, &spec.aws_profile);
    let mut chosen: Vec<(Key, From)> = Vec::new();
    for key in Key::ALL {
        if let Some(w) = written(key) {
            chosen.push((
                key,
                From {
                    value: w.value,
                    source: place(w),
                },
            ));
        }
    }
    let wrote = |key: Key| written(key).is_some();
    let timed = wrote(Key::AttemptTimeout) || wrote(Key::Deadline);
    let hedged = wrote(Key::HedgeAfter);
    // What the files say of the keys the attribute leaves out, in the runtime's order.
    let mut outside: Vec<(Key, From)> = Vec::new();
    match (&profile, &files.config) {
        (Some(p), None) => problems.push(problem(
            &p.at,
            format!(
                "profile = {:?}: no config file to read it from ({})",
                p.value, files.config_hint
            ),
        )),
        (Some(p), Some(config)) if config.profile(&p.value).is_none() => {
            problems.push(problem(
                &p.at,
                format!(
                    "profile = {:?}: the config file {} has no [profile.{}]: {}",
                    p.value,
                    config.path,
                    p.value,
                    did_you_mean(&p.value, &config.names())
                ),
            ));
        }
        _ => {}
    }
    if let Some(config) = &files.config {
        let tables = profile
            .as_ref()
            .and_then(|p| config.profile(&p.value))
            .into_iter()
            .chain([&config.default]);
        for table in tables {
            let name = match &table.profile {
                Some(p) => format!("[profile.{p}]"),
                None => "[default]".to_owned(),
            };
            for (key, set) in &table.keys {
                outside.push((
                    *key,
                    From {
                        value: set.value,
                        source: format!("{}:{} {name}", config.path, set.line),
                    },
                ));
            }
        }
    }
    if let Some(p) = &aws_profile {
        match &files.aws {
            None => problems.push(problem(
                &p.at,
                format!(
                    "aws_profile = {:?}: no AWS config file to read it from ({})",
                    p.value, files.aws_hint
                ),
            )),
            Some(aws) => match aws.profile(&p.value) {
                None => problems.push(problem(&p.at, aws_file::missing(aws, &p.value))),
                Some(found) => {
                    for (key, set) in [
                        (Key::Mode, found.mode),
                        (Key::MaxAttempts, found.max_attempts),
                    ] {
                        if let Some(set) = set {
                            outside.push((
                                key,
                                From {
                                    value: set.value,
                                    source: format!(
                                        "{}:{} [profile {}]",
                                        aws.path, set.line, found.name
                                    ),
                                },
                            ));
                        }
                    }
                }
            },
        }
    }
    for (key, from) in outside {
        if chosen.iter().any(|(k, _)| *k == key) {
            continue;
        }
        if key.is_timer() && !timed {
            notes.push(format!(
                "{}: {} = {} is ignored for {what}, as the runtime ignores it for a function \
                 whose attribute writes neither attempt_timeout nor deadline",
                from.source,
                key.name(),
                from.value
            ));
            continue;
        }
        if key.is_hedging() && !hedged {
            notes.push(format!(
                "{}: {} = {} is ignored for {what}, as the runtime ignores it for a function \
                 whose attribute does not write hedge_after",
                from.source,
                key.name(),
                from.value
            ));
            continue;
        }
        chosen.push((key, from));
    }
    let mut values = Values::new();
    for (key, from) in &chosen {
        values.set(*key, from.value);
    }
    let source_of = |key: Key| {
        chosen
            .iter()
            .find(|(k, _)| *k == key)
            .map_or_else(|| "default".to_owned(), |(_, f)| f.source.clone())
    };
    for p in values.problems() {
        if matches!(p, Incoherence::BoundWithFixedDelay(_)) {
            continue;
        }
        let keys: Vec<String> = p
            .keys()
            .map(|k| format!("{} from {}", k.name(), source_of(k)))
            .collect();
        let at = chosen
            .iter()
            .find(|(k, _)| *k == p.key())
            .map(|(_, f)| f.source.clone())
            .unwrap_or_default();
        let at = at
            .strip_prefix(&format!("{file}:"))
            .unwrap_or("")
            .to_owned();
        problems.push(problem(
            &at,
            format!(
                "the policy of {what}: {} ({})",
                p.sentence(),
                keys.join(", ")
            ),
        ));
    }
    let (no_bucket, budget, breaker) = (
        cli.no_bucket.as_ref().or(spec.no_bucket.as_ref()),
        cli.budget.as_ref().or(spec.budget.as_ref()),
        cli.breaker.as_ref().or(spec.breaker.as_ref()),
    );
    let guards = cli.guards.as_ref().or(spec.guards.as_ref());
    if !problems.is_empty() {
        return Err(problems);
    }
    chosen.sort_by_key(|(k, _)| *k as usize);
    let mut describe = String::new();
    for (key, from) in &chosen {
        let _ = write!(
            describe,
            "{} = {} ({}); ",
            key.name(),
            from.value,
            from.source
        );
    }
    if no_bucket.is_some() {
        describe.push_str("bucket = \"none\"; ");
    }
    if let Some(b) = budget {
        let _ = write!(describe, "budget = \"{}%\"; ", b.value * 100.0);
    }
    if let Some(b) = breaker {
        let _ = write!(describe, "breaker = \"{}%\"; ", b.value * 100.0);
    }
    if let Some(g) = guards {
        let written: Vec<String> = g.value.iter().map(GuardPlan::describe).collect();
        let _ = write!(describe, "guard = [{}]; ", written.join(", "));
    }
    describe.push_str(if chosen.is_empty() {
        "the defaults"
    } else {
        "the rest default"
    });
    Ok(PolicyPlan::Keys(KeysPlan {
        values,
        no_bucket: no_bucket.is_some(),
        budget: budget.map(|b| b.value),
        breaker: breaker.map(|b| b.value),
        guards: guards.map(|g| g.value.clone()).unwrap_or_default(),
        describe,
    }))
}

/// The policy of a gRPC service config's method, checked: the file read and valid, the method
/// named by an entry of it.
fn grpc(g: &GrpcRef, files: &Files, file: &str) -> Result<GrpcPlan, Vec<Problem>> {
    let at = |message: String| Problem {
        file: file.to_owned(),
        line: g.path.at.parse().ok(),
        message,
    };
    let path = files.base.join(&g.path.value);
    let json = std::fs::read_to_string(&path).map_err(|e| {
        vec![at(format!(
            "grpc = {:?}: cannot read {}: {e}",
            g.path.value,
            path.display()
        ))]
    })?;
    let shown = path.display().to_string();
    let read = if g.google {
        retry_runtime::grpc::ServiceConfig::from_google_json(&json)
    } else {
        retry_runtime::grpc::ServiceConfig::from_json(&json)
    };
    let config = read.map_err(|e| {
        e.problems()
            .iter()
            .map(|p| Problem {
                file: shown.clone(),
                line: None,
                message: p.to_string(),
            })
            .collect::<Vec<_>>()
    })?;
    let Some(method) = &g.method else {
        return Err(Vec::new());
    };
    let (service, name) = method.value.split_once('/').unwrap_or(("", ""));
    let named = names_in(&json);
    let found = named.iter().any(|(s, m)| {
        (s.is_empty() && m.is_empty()) || (s == service && (m.is_empty() || m == name))
    });
    if !found {
        let listed: Vec<String> = named
            .iter()
            .map(|(s, m)| {
                if m.is_empty() {
                    format!("{s}/*")
                } else {
                    format!("{s}/{m}")
                }
            })
            .collect();
        let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
        return Err(vec![Problem {
            file: file.to_owned(),
            line: method.at.parse().ok(),
            message: format!(
                "method = {:?}: no methodConfig entry of {} names it (its calls would make one \
                 attempt): {}",
                method.value,
                shown,
                did_you_mean(&method.value, &listed)
            ),
        }]);
    }
    let policy = config.policy(service, name);
    Ok(GrpcPlan {
        json,
        google: g.google,
        service: service.to_owned(),
        method: name.to_owned(),
        describe: format!(
            "gRPC {}/{} of {} ({:?}, {} attempts{})",
            service,
            name,
            g.path.value,
            policy.kind(),
            policy.max_attempts(),
            policy
                .timeout()
                .map(|t| format!(", timeout {t:?}"))
                .unwrap_or_default(),
        ),
    })
}

/// The names (`service`, `method`; empty when absent) of a service config's `methodConfig`
/// entries.
fn names_in(json: &str) -> Vec<(String, String)> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return Vec::new();
    };
    let field = |n: &serde_json::Value, k: &str| {
        n.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    v.get("methodConfig")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(serde_json::Value::as_array))
        .flatten()
        .map(|n| (field(n, "service"), field(n, "method")))
        .collect()
}

/// The engine's keys of `values`, every key written: the values given, and the defaults of
/// the rest (the backoff's bounds as the runtime derives one from the other), so that nothing
/// from the environment of the simulation changes them. Timeouts and hedging only where
/// `values` has them.
pub fn keys_of(values: &Values) -> Keys {
    let (initial, max) = values.backoff_bounds();
    let mut keys = Keys::new()
        .mode(values.mode.unwrap_or(retry_keys::DEFAULT_MODE))
        .behavior(values.behavior.unwrap_or(retry_keys::DEFAULT_BEHAVIOR))
        .max_attempts(
            values
                .max_attempts
                .unwrap_or(retry_keys::DEFAULT_MAX_ATTEMPTS),
        )
        .initial_backoff(initial)
        .max_backoff(max)
        .multiplier(values.multiplier.unwrap_or(retry_keys::DEFAULT_MULTIPLIER))
        .jitter(values.jitter.unwrap_or(retry_keys::DEFAULT_JITTER));
    if let Some(t) = values.attempt_timeout {
        keys = keys.attempt_timeout(t).attempt_timeout_multiplier(
            values
                .attempt_timeout_multiplier
                .unwrap_or(retry_keys::DEFAULT_ATTEMPT_TIMEOUT_MULTIPLIER),
        );
        if let Some(m) = values.max_attempt_timeout {
            keys = keys.max_attempt_timeout(m);
        }
    }
    if let Some(d) = values.deadline {
        keys = keys.deadline(d);
    }
    if let Some(h) = values.hedge_after {
        keys = keys
            .hedge_after(h)
            .max_in_flight(
                values
                    .max_in_flight
                    .unwrap_or(retry_keys::DEFAULT_MAX_IN_FLIGHT),
            )
            .min_hedge_after(
                values
                    .min_hedge_after
                    .unwrap_or(retry_keys::DEFAULT_MIN_HEDGE_AFTER),
            )
            .max_hedge_after(
                values
                    .max_hedge_after
                    .unwrap_or(retry_keys::DEFAULT_MAX_HEDGE_AFTER),
            );
        if let Some(share) = values.hedge_budget {
            keys = keys.hedge_budget(share);
        }
    }
    keys
}
