//! The topology file: the users, the tiers and the faults, read with every problem at once
//! (each with its line, and a did-you-mean for a name close to one that would do), then the
//! files its policies name, into a [`Plan`].
//!
//! ```toml
//! duration = "120s"        # the users offer calls for this long (60 s unless set)
//! seed = 1
//! network = "10ms"         # one hop's mean; |Normal(mean, mean / 5)| each (10 ms unless set)
//! config = "retry.toml"    # the project's config file, for `profile = ...` (RETRY_CONFIG_FILE's)
//!
//! [users]
//! clients = 1000           # processes, each with its own retry state
//! rate = 1                 # calls per second per client, Poisson; or `sequential = N` calls each
//! calls = "api"            # the tiers each call sends a request to
//! policy = { max_attempts = 3 }
//!
//! [tier.api]
//! replicas = 4
//! server_layer = true      # behind retry_runtime::tower::ServerLayer
//! calls = ["db", { tier = "cache", count = 2 }]
//! policy = { profile = "api" }
//!
//! [tier.db]
//! replicas = 2
//! latency = "5ms"          # each request's work; `latency_p99` makes it log-normal
//! capacity = 800           # requests per second a replica works through (a FIFO queue)
//!
//! [[fault]]
//! tier = "db"
//! kind = "outage"          # outage, brownout, overload, throttling, transient
//! start = "30s"
//! length = "20s"           # to the end unless set
//! replica = 0              # this replica only; every replica unless set
//! ```

use super::aws_file;
use super::config_file;
use super::model::{Edge, Fault, FaultKind, Load, Plan, PolicyPlan, Tier, Users, Work};
use super::policy::{self, Files, PolicySpec};
use super::problem::{Problem, Problems, did_you_mean};
use super::tomlish::{self, Reader, Spanned};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};

const TOP: [&str; 8] = [
    "duration",
    "seed",
    "network",
    "config",
    "aws_config",
    "users",
    "tier",
    "fault",
];
const USERS: [&str; 5] = ["clients", "rate", "sequential", "calls", "policy"];
const TIER: [&str; 8] = [
    "replicas",
    "calls",
    "policy",
    "server_layer",
    "latency",
    "latency_p99",
    "capacity",
    "throttle",
];
const FAULT: [&str; 8] = [
    "tier", "kind", "start", "length", "replica", "factor", "rate", "capacity",
];
const EDGE: [&str; 2] = ["tier", "count"];

/// The largest sizes a topology may ask for (a run of that size takes hours already).
const MAX_CLIENTS: u64 = 1_000_000;
const MAX_REPLICAS: u64 = 100_000;
const MAX_COUNT: u64 = 1_000;
const MAX_SEQUENTIAL: u64 = 100_000_000;
const MAX_RATE: f64 = 1_000_000.0;
const MAX_CAPACITY: f64 = 1e9;

/// What the command line adds to the topology.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--config FILE`: the project's config file, over the topology's `config` and
    /// `RETRY_CONFIG_FILE`.
    pub config: Option<PathBuf>,
    /// `--aws-config FILE`: the AWS shared config file, over the topology's `aws_config`,
    /// `AWS_CONFIG_FILE` and `~/.aws/config`.
    pub aws_config: Option<PathBuf>,
    /// `--policy [TIER:]KEYS`, in order: keys over every policy's (without `TIER:`) or one
    /// tier's (`users` for the users').
    pub policies: Vec<String>,
    /// `--seed N`, over the topology's.
    pub seed: Option<u64>,
    /// `--duration D` (seconds), over the topology's.
    pub duration: Option<f64>,
}

/// The environment a load reads (`RETRY_CONFIG_FILE`, `AWS_CONFIG_FILE`, `HOME`): the
/// process's, or a test's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A tier as written, before the names it uses are checked.
struct RawTier {
    name: String,
    span: Range<usize>,
    replicas: usize,
    calls: Vec<(String, Range<usize>, usize)>,
    policy: Option<PolicySpec>,
    policy_span: Option<Range<usize>>,
    server_layer: bool,
    latency: Option<f64>,
    latency_p99: Option<(f64, Range<usize>)>,
    capacity: Option<f64>,
    throttle: Option<f64>,
}

/// Reads the topology at `path` with `options`, and the files it names: the plan, and the
/// notes of what the runtime would ignore with a warning; or every problem found.
pub fn load(path: &Path, options: &Options) -> Result<(Plan, Vec<String>), Vec<Problem>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Problem {
            file: shown.clone(),
            line: None,
            message: format!("cannot read the topology: {e}"),
        }]
    })?;
    let base = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    load_str(&shown, &text, &base, options, &|name| {
        std::env::var(name).ok()
    })
}

/// [`load`] of the topology `text`, named `name` in problems, whose relative paths start at
/// `base`, under the environment `env`.
pub fn load_str(
    name: &str,
    text: &str,
    base: &Path,
    options: &Options,
    env: Env<'_>,
) -> Result<(Plan, Vec<String>), Vec<Problem>> {
    let mut problems = Problems::new(name, text);
    let doc = tomlish::parse(text, &mut problems);
    tomlish::unknown_keys(&doc, &TOP, "the topology", &mut problems);
    let mut r = Reader {
        problems: &mut problems,
    };
    let mut duration = 60.0;
    let mut seed = 1;
    let mut network = 0.010;
    let mut config_path = None;
    let mut aws_path = None;
    for (key, _, value) in tomlish::entries(&doc) {
        match key {
            "duration" => {
                if let Some(d) = r.duration(key, value, false) {
                    duration = d.as_secs_f64();
                }
            }
            "seed" => {
                if let Some(s) = r.count(key, value, 0, i64::MAX as u64) {
                    seed = s;
                }
            }
            "network" => {
                if let Some(d) = r.duration(key, value, true) {
                    network = d.as_secs_f64();
                }
            }
            "config" => config_path = r.string(key, value).map(str::to_owned),
            "aws_config" => aws_path = r.string(key, value).map(str::to_owned),
            _ => {}
        }
    }
    let users_table = doc.get("users");
    if users_table.is_none() {
        problems.at(
            0..0,
            "no [users] table: the users are who calls the first tier (`clients`, `rate` or \
             `sequential`, `calls`)",
        );
    }
    let users = users_table.and_then(|v| {
        let t = Reader {
            problems: &mut problems,
        }
        .table("users", v)?;
        Some(read_users(t, v.span(), &mut problems))
    });
    let mut tiers: Vec<RawTier> = Vec::new();
    match doc.get("tier") {
        None => problems.at(
            0..0,
            "no tier: write at least one `[tier.NAME]` table, the service the users call",
        ),
        Some(v) => {
            if let Some(t) = (Reader {
                problems: &mut problems,
            })
            .table("tier", v)
            {
                for (name, span, value) in tomlish::entries(t) {
                    let what = format!("[tier.{name}]");
                    let Some(table) = (Reader {
                        problems: &mut problems,
                    })
                    .table(&format!("tier.{name}"), value) else {
                        continue;
                    };
                    if name == "users" {
                        problems.at(
                            span.clone(),
                            "a tier cannot be named `users`: the users are [users]",
                        );
                    } else if !retry_keys::is_name(name) {
                        problems.at(
                            span.clone(),
                            format!("`{name}` is not a tier name (letters, digits, `_` and `-`)"),
                        );
                    }
                    tiers.push(read_tier(name, span, table, &what, &mut problems));
                }
            }
        }
    }
    let names: Vec<&str> = tiers.iter().map(|t| t.name.as_str()).collect();
    let index = |n: &str| names.iter().position(|x| *x == n);
    let mut faults = Vec::new();
    if let Some(v) = doc.get("fault") {
        match v.get_ref() {
            DeValue::Array(a) => {
                for f in a.iter() {
                    if let Some(t) = (Reader {
                        problems: &mut problems,
                    })
                    .table("fault", f)
                    {
                        if let Some(fault) = read_fault(t, f.span(), &tiers, &mut problems) {
                            faults.push(fault);
                        }
                    }
                }
            }
            other => problems.at(
                v.span(),
                format!(
                    "`fault` is {}: write each fault as a `[[fault]]` table",
                    tomlish::kind(other)
                ),
            ),
        }
    }
    // The names the calls use, and the shape of the graph.
    let resolve_calls = |calls: &[(String, Range<usize>, usize)], problems: &mut Problems<'_>| {
        let mut out = Vec::new();
        for (callee, span, count) in calls {
            match index(callee) {
                Some(t) => out.push(Edge {
                    tier: t,
                    count: *count,
                }),
                None => problems.at(
                    span.clone(),
                    format!("no tier `{callee}`: {}", did_you_mean(callee, &names)),
                ),
            }
        }
        out
    };
    let user_calls = users
        .as_ref()
        .map(|u| resolve_calls(&u.calls, &mut problems))
        .unwrap_or_default();
    let tier_calls: Vec<Vec<Edge>> = tiers
        .iter()
        .map(|t| resolve_calls(&t.calls, &mut problems))
        .collect();
    let users_resolved = users
        .as_ref()
        .is_some_and(|u| !u.calls.is_empty() && u.calls.len() == user_calls.len());
    shape(
        &user_calls,
        users_resolved,
        &tiers,
        &tier_calls,
        &mut problems,
    );
    for (t, calls) in tiers.iter().zip(&tier_calls) {
        if calls.is_empty() && t.calls.is_empty() {
            if let Some(span) = &t.policy_span {
                problems.at(
                    span.clone(),
                    format!(
                        "tier `{}` calls no tier, so its policy retries nothing: remove it, or \
                         give the tier `calls`",
                        t.name
                    ),
                );
            }
        }
    }
    // The command line's policies.
    let mut cli: BTreeMap<String, Vec<PolicySpec>> = BTreeMap::new();
    let mut cli_problems = Vec::new();
    for arg in &options.policies {
        let (tier, keys) = match arg.split_once(':') {
            Some((t, k)) if !t.contains('=') => (t.trim().to_owned(), k),
            _ => (String::new(), arg.as_str()),
        };
        // A problem with the tier, then those of the keys, which are read all the same.
        let problem = |message| Problem {
            file: format!("--policy {arg}"),
            line: None,
            message,
        };
        let tier_problem = if !tier.is_empty() && tier != "users" && index(&tier).is_none() {
            let mut all = vec!["users"];
            all.extend(names.iter().copied());
            Some(problem(format!(
                "no tier `{tier}`: {}",
                did_you_mean(&tier, &all)
            )))
        } else {
            index(&tier)
                .filter(|&t| tiers[t].calls.is_empty())
                .map(|t| {
                    problem(format!(
                        "tier `{}` calls no tier, so a policy of its would retry nothing",
                        tiers[t].name
                    ))
                })
        };
        match (cli_spec(arg, keys), tier_problem) {
            (Ok(spec), None) => cli.entry(tier).or_default().push(spec),
            (spec, tier_problem) => {
                cli_problems.extend(tier_problem);
                cli_problems.extend(spec.err().into_iter().flatten());
            }
        }
    }
    // The files the policies name.
    let mut files = Files {
        base: base.to_path_buf(),
        ..Files::default()
    };
    let mut file_problems = Vec::new();
    let config = match (&options.config, &config_path, env("RETRY_CONFIG_FILE")) {
        (Some(p), _, _) => Some((p.clone(), "--config".to_owned())),
        (None, Some(p), _) => Some((base.join(p), format!("`config` of {name}"))),
        (None, None, Some(p)) if !p.is_empty() => {
            Some((PathBuf::from(p), "RETRY_CONFIG_FILE".to_owned()))
        }
        _ => None,
    };
    files.config_hint = "give one with --config FILE, `config = \"FILE\"` in the topology, or \
                         RETRY_CONFIG_FILE"
        .to_owned();
    if let Some((path, how)) = config {
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let (c, p) = config_file::parse(&shown, &text);
                file_problems.extend(p);
                files.config = Some(c);
            }
            Err(e) => file_problems.push(Problem {
                file: shown,
                line: None,
                message: format!("cannot read the config file ({how}): {e}"),
            }),
        }
    }
    let wants_aws = users
        .as_ref()
        .is_some_and(|u| u.policy.as_ref().is_some_and(|p| p.aws_profile.is_some()))
        || tiers
            .iter()
            .any(|t| t.policy.as_ref().is_some_and(|p| p.aws_profile.is_some()))
        || cli.values().flatten().any(|p| p.aws_profile.is_some());
    files.aws_hint = "give one with --aws-config FILE, `aws_config = \"FILE\"` in the topology, \
                      or AWS_CONFIG_FILE"
        .to_owned();
    if wants_aws {
        let aws = match (&options.aws_config, &aws_path, env("AWS_CONFIG_FILE")) {
            (Some(p), _, _) => Some(p.clone()),
            (None, Some(p), _) => Some(base.join(p)),
            (None, None, Some(p)) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => env("HOME").map(|h| Path::new(&h).join(".aws").join("config")),
        };
        if let Some(path) = aws {
            let shown = path.display().to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let (a, p) = aws_file::parse(&shown, &text);
                    file_problems.extend(p);
                    files.aws = Some(a);
                }
                Err(e) => file_problems.push(Problem {
                    file: shown,
                    line: None,
                    message: format!("cannot read the AWS config file: {e}"),
                }),
            }
        }
    }
    // The policies, resolved.
    let mut notes = Vec::new();
    let mut policy_problems = Vec::new();
    let merged = |tier: &str| -> Option<PolicySpec> {
        let mut specs = cli
            .get("")
            .into_iter()
            .flatten()
            .chain(cli.get(tier).into_iter().flatten());
        let first = specs.next()?.clone();
        Some(specs.fold(first, |acc, s| merge(acc, s.clone())))
    };
    let mut resolve = |spec: Option<&PolicySpec>, tier: &str, what: &str| -> Option<PolicyPlan> {
        let empty = PolicySpec::default();
        let spec = spec.unwrap_or(&empty);
        let over = merged(tier);
        // A gRPC tier takes no keys from a `--policy` without a tier.
        let over = match (&spec.grpc, over) {
            (Some(_), Some(_)) if !cli.contains_key(tier) => None,
            (_, o) => o,
        };
        match policy::resolve(spec, over.as_ref(), &files, name, what, &mut notes) {
            Ok(p) => Some(p),
            Err(p) => {
                policy_problems.extend(p);
                None
            }
        }
    };
    let users_policy = users
        .as_ref()
        .and_then(|u| resolve(u.policy.as_ref(), "users", "the users"));
    let tier_policies: Vec<Option<PolicyPlan>> = tiers
        .iter()
        .zip(&tier_calls)
        .map(|(t, calls)| {
            if calls.is_empty() {
                None
            } else {
                resolve(t.policy.as_ref(), &t.name, &format!("tier {}", t.name))
            }
        })
        .collect();
    let mut all = problems.into_vec();
    all.extend(cli_problems);
    all.extend(file_problems);
    all.extend(policy_problems);
    if !all.is_empty() {
        return Err(all);
    }
    let users = users.expect("no problem: the users were read");
    let duration = options.duration.unwrap_or(duration);
    if let Load::Poisson { .. } = users.load {
        let late: Vec<String> = faults
            .iter()
            .filter(|f| f.start >= duration)
            .map(|f| {
                format!(
                    "the {} of tier {} at {} s",
                    f.kind.name(),
                    names[f.tier],
                    f.start
                )
            })
            .collect();
        if !late.is_empty() {
            return Err(vec![Problem {
                file: name.to_owned(),
                line: None,
                message: format!(
                    "{} start{} after the users stop offering calls ({duration} s): raise                      `duration`",
                    late.join(", "),
                    if late.len() == 1 { "s" } else { "" }
                ),
            }]);
        }
    }
    let plan = Plan {
        topology: name.to_owned(),
        duration,
        seed: options.seed.unwrap_or(seed),
        network,
        users: Users {
            clients: users.clients,
            load: users.load,
            policy: users_policy.expect("no problem: the users' policy resolved"),
            calls: user_calls,
        },
        tiers: tiers
            .into_iter()
            .zip(tier_calls)
            .zip(tier_policies)
            .map(|((t, calls), policy)| Tier {
                name: t.name,
                replicas: t.replicas,
                policy,
                calls,
                server_layer: t.server_layer,
                work: Work {
                    median: t.latency.unwrap_or(0.0),
                    p99: t.latency_p99.map_or(t.latency.unwrap_or(0.0), |(p, _)| p),
                },
                capacity: t.capacity,
                throttle: t.throttle,
            })
            .collect(),
        faults,
    };
    Ok((plan, notes))
}

/// `b`'s keys over `a`'s.
fn merge(mut a: PolicySpec, b: PolicySpec) -> PolicySpec {
    for (k, w) in b.keys {
        a.keys.retain(|(x, _)| *x != k);
        a.keys.push((k, w));
    }
    a.no_bucket = b.no_bucket.or(a.no_bucket);
    a.budget = b.budget.or(a.budget);
    a.breaker = b.breaker.or(a.breaker);
    a.guards = b.guards.or(a.guards);
    a.profile = b.profile.or(a.profile);
    a.aws_profile = b.aws_profile.or(a.aws_profile);
    a.grpc = b.grpc.or(a.grpc);
    a
}

/// A `--policy` argument's keys (`key = value, ...`, as a TOML inline table's inside).
fn cli_spec(arg: &str, keys: &str) -> Result<PolicySpec, Vec<Problem>> {
    let text = format!("policy = {{ {keys} }}\n");
    let label = format!("--policy {arg}");
    let mut problems = Problems::new(label.clone(), &text);
    let doc = tomlish::parse(&text, &mut problems);
    let spec = match doc.get("policy").map(toml::Spanned::get_ref) {
        Some(DeValue::Table(t)) => policy::read(t, "--policy", &mut problems),
        _ => PolicySpec::default(),
    };
    if problems.is_empty() {
        // Lines of a one-line text say nothing: the keys' places are the option.
        let mut spec = spec;
        for (_, w) in &mut spec.keys {
            w.at = label.clone();
        }
        for w in [&mut spec.profile, &mut spec.aws_profile]
            .into_iter()
            .flatten()
        {
            w.at = label.clone();
        }
        if let Some(w) = &mut spec.guards {
            w.at = label.clone();
        }
        Ok(spec)
    } else {
        Err(problems
            .into_vec()
            .into_iter()
            .map(|p| Problem { line: None, ..p })
            .collect())
    }
}

/// The users, as written.
struct RawUsers {
    clients: usize,
    load: Load,
    calls: Vec<(String, Range<usize>, usize)>,
    policy: Option<PolicySpec>,
}

fn read_users(t: &DeTable<'_>, span: Range<usize>, problems: &mut Problems<'_>) -> RawUsers {
    tomlish::unknown_keys(t, &USERS, "[users]", problems);
    let mut out = RawUsers {
        clients: 1,
        load: Load::Poisson { rate: 1.0 },
        calls: Vec::new(),
        policy: None,
    };
    let mut rate = None;
    let mut sequential = None;
    for (key, kspan, value) in tomlish::entries(t) {
        let mut r = Reader {
            problems: &mut *problems,
        };
        match key {
            "clients" => {
                if let Some(n) = r.count(key, value, 1, MAX_CLIENTS) {
                    out.clients = n as usize;
                }
            }
            "rate" => rate = r.positive(key, value, MAX_RATE).map(|x| (x, kspan)),
            "sequential" => {
                sequential = r.count(key, value, 1, MAX_SEQUENTIAL).map(|n| (n, kspan));
            }
            "calls" => out.calls = read_calls(value, problems),
            "policy" => {
                if let Some(p) = r.table(key, value) {
                    out.policy = Some(policy::read(p, "the users", problems));
                }
            }
            _ => {}
        }
    }
    match (rate, sequential) {
        (Some((rate, _)), None) => out.load = Load::Poisson { rate },
        (None, Some((calls, _))) => out.load = Load::Sequential { calls },
        (Some(_), Some((_, s))) => problems.at(
            s,
            "[users] takes `rate` (calls per second per client) or `sequential` (calls per \
             client, one after the other), not both",
        ),
        (None, None) if t.get("rate").is_none() && t.get("sequential").is_none() => problems.at(
            span.clone(),
            "[users] needs `rate` (calls per second per client, Poisson) or `sequential` (calls \
             per client, one after the other)",
        ),
        (None, None) => {}
    }
    if t.get("calls").is_none() {
        problems.at(
            span,
            "[users] needs `calls`: the tier (or tiers) each user call calls",
        );
    }
    out
}

fn read_tier(
    name: &str,
    span: Range<usize>,
    t: &DeTable<'_>,
    what: &str,
    problems: &mut Problems<'_>,
) -> RawTier {
    tomlish::unknown_keys(t, &TIER, what, problems);
    let mut out = RawTier {
        name: name.to_owned(),
        span,
        replicas: 1,
        calls: Vec::new(),
        policy: None,
        policy_span: None,
        server_layer: false,
        latency: None,
        latency_p99: None,
        capacity: None,
        throttle: None,
    };
    for (key, kspan, value) in tomlish::entries(t) {
        let mut r = Reader {
            problems: &mut *problems,
        };
        match key {
            "replicas" => {
                if let Some(n) = r.count(key, value, 1, MAX_REPLICAS) {
                    out.replicas = n as usize;
                }
            }
            "calls" => out.calls = read_calls(value, problems),
            "policy" => {
                if let Some(p) = r.table(key, value) {
                    out.policy = Some(policy::read(p, &format!("tier {name}"), problems));
                    out.policy_span = Some(kspan);
                }
            }
            "server_layer" => out.server_layer = r.boolean(key, value).unwrap_or(false),
            "latency" => out.latency = r.duration(key, value, true).map(|d| d.as_secs_f64()),
            "latency_p99" => {
                out.latency_p99 = r
                    .duration(key, value, false)
                    .map(|d| (d.as_secs_f64(), kspan));
            }
            "capacity" => out.capacity = r.positive(key, value, MAX_CAPACITY),
            "throttle" => out.throttle = r.positive(key, value, MAX_CAPACITY),
            _ => {}
        }
    }
    if let Some((p99, s)) = &out.latency_p99 {
        match out.latency {
            None | Some(0.0) => problems.at(
                s.clone(),
                "latency_p99 needs `latency`, the median it spreads from (above zero)",
            ),
            Some(median) if *p99 < median => problems.at(
                s.clone(),
                "latency_p99 is below `latency`, the median: the 99th percentile is the longer",
            ),
            _ => {}
        }
    }
    out
}

/// `calls = "a"`, `["a", "b"]` or `[{ tier = "a", count = 3 }]`: the callees with their spans
/// and counts.
fn read_calls(
    value: &Spanned<'_>,
    problems: &mut Problems<'_>,
) -> Vec<(String, Range<usize>, usize)> {
    let one =
        |v: &Spanned<'_>, problems: &mut Problems<'_>| -> Option<(String, Range<usize>, usize)> {
            match v.get_ref() {
                DeValue::String(s) => Some((s.to_string(), v.span(), 1)),
                DeValue::Table(t) => {
                    tomlish::unknown_keys(t, &EDGE, "a call", problems);
                    let mut r = Reader { problems };
                    let tier = t
                        .get("tier")
                        .and_then(|x| r.string("tier", x).map(|s| (s.to_owned(), x.span())));
                    let count = t.get("count").map_or(Some(1), |c| {
                        r.count("count", c, 1, MAX_COUNT).map(|n| n as usize)
                    });
                    if tier.is_none() && t.get("tier").is_none() {
                        r.problems.at(
                            v.span(),
                            "a call needs `tier`: { tier = \"NAME\", count = N }",
                        );
                    }
                    let (name, span) = tier?;
                    Some((name, span, count?))
                }
                other => {
                    problems.at(
                        v.span(),
                        format!(
                            "a call is a tier's name or {{ tier = \"NAME\", count = N }}, found {}",
                            tomlish::kind(other)
                        ),
                    );
                    None
                }
            }
        };
    let out: Vec<_> = match value.get_ref() {
        DeValue::Array(a) => a.iter().filter_map(|v| one(v, problems)).collect(),
        _ => one(value, problems).into_iter().collect(),
    };
    if out.is_empty() && matches!(value.get_ref(), DeValue::Array(a) if a.is_empty()) {
        problems.at(
            value.span(),
            "`calls` is empty: name the tiers called, or leave the key out",
        );
    }
    out
}

fn read_fault(
    t: &DeTable<'_>,
    span: Range<usize>,
    tiers: &[RawTier],
    problems: &mut Problems<'_>,
) -> Option<Fault> {
    tomlish::unknown_keys(t, &FAULT, "[[fault]]", problems);
    let names: Vec<&str> = tiers.iter().map(|t| t.name.as_str()).collect();
    let mut r = Reader {
        problems: &mut *problems,
    };
    let tier = match t.get("tier") {
        None => {
            r.problems
                .at(span.clone(), "a fault needs `tier`, the tier it hits");
            None
        }
        Some(v) => r.string("tier", v).and_then(|n| {
            let found = names.iter().position(|x| *x == n);
            if found.is_none() {
                let message = if n == "users" {
                    "a fault hits a tier; the users have none".to_owned()
                } else {
                    format!("no tier `{n}`: {}", did_you_mean(n, &names))
                };
                r.problems.at(v.span(), message);
            }
            found.map(|i| (i, v.span()))
        }),
    };
    let start = t.get("start").map_or(Some(0.0), |v| {
        r.duration("start", v, true).map(|d| d.as_secs_f64())
    });
    let length = t.get("length").map_or(Some(f64::INFINITY), |v| {
        r.duration("length", v, false).map(|d| d.as_secs_f64())
    });
    let replica = match t.get("replica") {
        None => Some(None),
        Some(v) => r
            .count("replica", v, 0, MAX_REPLICAS)
            .map(|n| Some(n as usize)),
    };
    if let (Some((i, _)), Some(Some(n)), Some(v)) = (&tier, &replica, t.get("replica")) {
        let replicas = tiers[*i].replicas;
        if *n >= replicas {
            r.problems.at(
                v.span(),
                format!(
                    "replica = {n}: tier `{}` has {replicas} replica{} (numbered from 0)",
                    tiers[*i].name,
                    if replicas == 1 { "" } else { "s" }
                ),
            );
        }
    }
    let kinds = FaultKind::NAMES;
    let extra = |r: &mut Reader<'_, '_>, allowed: &[&str], kind: &str| {
        for key in ["factor", "rate", "capacity"] {
            if !allowed.contains(&key) {
                if let Some(v) = t.get(key) {
                    r.problems
                        .at(v.span(), format!("a fault of kind {kind} takes no `{key}`"));
                }
            }
        }
    };
    let kind = match t.get("kind") {
        None => {
            r.problems.at(
                span.clone(),
                format!("a fault needs `kind`: {}", kinds.join(", ")),
            );
            None
        }
        Some(v) => match r.string("kind", v) {
            None => None,
            Some("outage") => {
                extra(&mut r, &[], "outage");
                Some(FaultKind::Outage)
            }
            Some("brownout") => {
                extra(&mut r, &["factor"], "brownout");
                if let Some((i, s)) = &tier {
                    if tiers[*i].latency.is_none_or(|l| l == 0.0) {
                        r.problems.at(
                            s.clone(),
                            format!(
                                "a brownout multiplies a tier's `latency`: tier `{}` has none",
                                tiers[*i].name
                            ),
                        );
                    }
                }
                let factor = t
                    .get("factor")
                    .map_or(Some(10.0), |f| r.positive("factor", f, 1e6));
                factor.map(|factor| FaultKind::Brownout { factor })
            }
            Some("overload") => {
                extra(&mut r, &["factor"], "overload");
                let factor = t
                    .get("factor")
                    .map_or(Some(0.5), |f| r.positive("factor", f, 1e6));
                if let Some((i, s)) = &tier {
                    if tiers[*i].capacity.is_none() {
                        r.problems.at(
                            s.clone(),
                            format!(
                                "an overload slows a tier's queue: tier `{}` has no `capacity`",
                                tiers[*i].name
                            ),
                        );
                    }
                }
                factor.map(|factor| FaultKind::Overload { factor })
            }
            Some("throttling") => {
                extra(&mut r, &["capacity"], "throttling");
                match t.get("capacity") {
                    None => {
                        r.problems.at(
                            v.span(),
                            "a throttling fault needs `capacity`: the requests per second above \
                             which a replica answers 429",
                        );
                        None
                    }
                    Some(c) => r
                        .positive("capacity", c, MAX_CAPACITY)
                        .map(|capacity| FaultKind::Throttling { capacity }),
                }
            }
            Some("transient") => {
                extra(&mut r, &["rate"], "transient");
                match t.get("rate") {
                    None => {
                        r.problems.at(
                            v.span(),
                            "a transient fault needs `rate`: the share of requests that fail, \
                             such as \"5%\"",
                        );
                        None
                    }
                    Some(x) => r.share("rate", x).map(|rate| FaultKind::Transient { rate }),
                }
            }
            Some(other) => {
                r.problems.at(
                    v.span(),
                    format!("no fault kind `{other}`: {}", did_you_mean(other, &kinds)),
                );
                None
            }
        },
    };
    let (tier, _) = tier?;
    let start = start?;
    Some(Fault {
        tier,
        replica: replica?,
        kind: kind?,
        start,
        end: start + length?,
    })
}

/// The problems of the graph's shape: a tier nothing calls, and a cycle of calls.
fn shape(
    users: &[Edge],
    users_resolved: bool,
    tiers: &[RawTier],
    calls: &[Vec<Edge>],
    problems: &mut Problems<'_>,
) {
    let n = tiers.len();
    let mut called = vec![false; n];
    for e in users.iter().chain(calls.iter().flatten()) {
        called[e.tier] = true;
    }
    let mut reached = vec![false; n];
    let mut stack: Vec<usize> = users.iter().map(|e| e.tier).collect();
    while let Some(t) = stack.pop() {
        if !std::mem::replace(&mut reached[t], true) {
            stack.extend(calls[t].iter().map(|e| e.tier));
        }
    }
    for (t, tier) in tiers.iter().enumerate() {
        if !called[t] {
            problems.at(
                tier.span.clone(),
                format!(
                    "tier `{}` has no clients: neither the users nor a tier calls it",
                    tier.name
                ),
            );
        } else if !reached[t] && users_resolved {
            problems.at(
                tier.span.clone(),
                format!(
                    "tier `{}` has no clients: only tiers the users never reach call it",
                    tier.name
                ),
            );
        }
    }
    // A cycle: a path of calls back to a tier on it (depth first, each tier left once done).
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; n];
    let mut reported = vec![false; n];
    for root in 0..n {
        if mark[root] != Mark::New {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = Mark::OnPath;
        while let Some((t, next)) = path.last().copied() {
            match calls[t].get(next) {
                None => {
                    mark[t] = Mark::Done;
                    path.pop();
                }
                Some(e) => {
                    if let Some(last) = path.last_mut() {
                        last.1 += 1;
                    }
                    match mark[e.tier] {
                        Mark::New => {
                            mark[e.tier] = Mark::OnPath;
                            path.push((e.tier, 0));
                        }
                        Mark::OnPath if !reported[e.tier] => {
                            let from = path.iter().position(|(x, _)| *x == e.tier).unwrap_or(0);
                            let mut cycle: Vec<&str> = path[from..]
                                .iter()
                                .map(|(x, _)| tiers[*x].name.as_str())
                                .collect();
                            cycle.push(&tiers[e.tier].name);
                            for (x, _) in &path[from..] {
                                reported[*x] = true;
                            }
                            problems.at(
                                tiers[e.tier].span.clone(),
                                format!(
                                    "the calls go round in a cycle: {} (a request would never \
                                     reach a tier that answers on its own)",
                                    cycle.join(" → ")
                                ),
                            );
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::model::PolicyPlan;
    use retry_keys::{Jitter, Mode};
    use std::time::Duration;

    /// A folder of its own under the system's temporary one, with `files` written into it.
    fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("retry-sim-topology-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        dir
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn load(text: &str, dir: &Path, options: &Options) -> Result<(Plan, Vec<String>), Vec<String>> {
        load_str("t.toml", text, dir, options, &no_env)
            .map_err(|p| p.iter().map(ToString::to_string).collect())
    }

    fn keys(p: &PolicyPlan) -> &retry_keys::Values {
        match p {
            PolicyPlan::Keys(k) => &k.values,
            PolicyPlan::Grpc(_) => panic!("a gRPC policy"),
        }
    }

    const CHAIN: &str =
        "[users]\nclients = 2\nrate = 1\ncalls = \"a\"\n\n[tier.a]\ncalls = \"b\"\n\n[tier.b]\n";

    #[test]
    fn a_small_topology_loads_with_its_defaults() {
        let (plan, notes) = load(CHAIN, Path::new("."), &Options::default()).unwrap();
        assert!(notes.is_empty());
        assert_eq!(plan.duration, 60.0);
        assert_eq!(plan.network, 0.010);
        assert_eq!(plan.users.clients, 2);
        assert_eq!(plan.tiers.len(), 2);
        assert_eq!(plan.nominal(), [1.0, 1.0]);
        assert!(plan.tiers[1].policy.is_none());
        assert_eq!(*keys(&plan.users.policy), retry_keys::Values::new());
        assert_eq!(plan.fault_window(), None);
    }

    #[test]
    fn every_problem_at_once_each_with_its_line_and_what_it_meant() {
        let text = "duraton = \"60s\"\n[users]\nclients = 0\nrate = 5\ncalls = \"gatway\"\n\
                    policy = { max_attempt = 3 }\n[tier.gateway]\ncalls = [{ tier = \"db\", cout = 2 }]\n\
                    [tier.db]\nlatency = 5\n[[fault]]\ntier = \"db\"\nkind = \"outgae\"\nreplica = 3\n";
        let problems = load(text, Path::new("."), &Options::default()).unwrap_err();
        let expect = [
            "t.toml:1: unknown key `duraton` in the topology: did you mean `duration`?",
            "t.toml:3: clients = 0: clients is a whole number from 1",
            "t.toml:5: no tier `gatway`: did you mean `gateway`?",
            "t.toml:6: unknown key `max_attempt` in the policy of the users: did you mean `max_attempts`?",
            "t.toml:7: tier `gateway` has no clients: neither the users nor a tier calls it",
            "t.toml:8: unknown key `cout` in a call: did you mean `count`?",
            "t.toml:10: latency = 5: latency needs a unit",
            "t.toml:13: no fault kind `outgae`: did you mean `outage`?",
            "t.toml:14: replica = 3: tier `db` has 1 replica (numbered from 0)",
        ];
        assert_eq!(problems.len(), expect.len(), "{problems:#?}");
        for (p, e) in problems.iter().zip(expect) {
            assert!(p.starts_with(e), "{p}\n  is not\n{e}");
        }
    }

    #[test]
    fn an_impossible_topology_names_its_tiers() {
        let cycle = "[users]\nrate = 1\ncalls = \"a\"\n[tier.a]\ncalls = \"b\"\n[tier.b]\ncalls = \"c\"\n[tier.c]\ncalls = \"a\"\n";
        let problems = load(cycle, Path::new("."), &Options::default()).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].contains("cycle: a → b → c → a"),
            "{problems:#?}"
        );
        let orphans = "[users]\nrate = 1\ncalls = \"a\"\n[tier.a]\n[tier.lonely]\ncalls = \"b\"\n[tier.b]\n[tier.c]\ncalls = \"c\"\n";
        let problems = load(orphans, Path::new("."), &Options::default()).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("tier `lonely` has no clients")),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("tier `b` has no clients: only tiers the users never reach")),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("cycle: c → c")),
            "{problems:#?}"
        );
        let no_users = "[tier.a]\n";
        let problems = load(no_users, Path::new("."), &Options::default()).unwrap_err();
        assert!(problems[0].contains("no [users] table"), "{problems:#?}");
    }

    #[test]
    fn a_policy_takes_the_command_line_then_its_keys_then_the_profile_then_default_then_aws() {
        let dir = folder(
            "precedence",
            &[
                (
                    "retry.toml",
                    "[default]\nmax_attempts = 7\njitter = \"equal\"\ninitial_backoff = \"1s\"\nattempt_timeout = \"3s\"\n\
                     [profile.api]\nmax_attempts = 5\nmode = \"standard\"\n",
                ),
                (
                    "aws",
                    "[profile p]\nretry_mode = adaptive\nmax_attempts = 9\n",
                ),
            ],
        );
        let text = format!(
            "config = \"retry.toml\"\naws_config = \"aws\"\n{CHAIN}\n[tier.a.policy]\nprofile = \"api\"\naws_profile = \"p\"\ninitial_backoff = \"200ms\"\n"
        );
        let options = Options {
            policies: vec!["a: max_attempts = 2".into()],
            ..Options::default()
        };
        let (plan, notes) = load(&text, &dir, &options).unwrap();
        let a = keys(plan.tiers[0].policy.as_ref().unwrap());
        assert_eq!(a.max_attempts, Some(2), "the command line");
        assert_eq!(
            a.initial_backoff,
            Some(Duration::from_millis(200)),
            "the topology"
        );
        assert_eq!(
            a.mode,
            Some(Mode::Standard),
            "the profile, over the AWS profile"
        );
        assert_eq!(a.jitter, Some(Jitter::Equal), "[default]");
        assert_eq!(a.attempt_timeout, None, "a timeout needs a timed policy");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("attempt_timeout = 3s is ignored for tier a")),
            "{notes:?}"
        );
        // The users have no profile: [default] alone.
        let u = keys(&plan.users.policy);
        assert_eq!(u.max_attempts, Some(7));
        // Without the profile's mode, the AWS profile's.
        let text = text.replace("profile = \"api\"\n", "");
        let (plan, _) = load(&text, &dir, &Options::default()).unwrap();
        let a = keys(plan.tiers[0].policy.as_ref().unwrap());
        assert_eq!((a.mode, a.max_attempts), (Some(Mode::Adaptive), Some(7)));
        // A policy that writes a timeout takes the file's.
        let text = text.replace("initial_backoff = \"200ms\"", "deadline = \"10s\"");
        let (plan, _) = load(&text, &dir, &Options::default()).unwrap();
        let a = keys(plan.tiers[0].policy.as_ref().unwrap());
        assert_eq!(a.attempt_timeout, Some(Duration::from_secs(3)));
    }

    #[test]
    fn the_names_a_policy_gives_must_be_found() {
        let dir = folder(
            "names",
            &[
                ("retry.toml", "[profile.api]\nmax_attempts = 5\n"),
                ("aws", "[profile prod]\nmax_attempts = 3\n"),
                (
                    "svc.json",
                    r#"{"methodConfig": [{"name": [{"service": "shop.Orders", "method": "Get"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
                ),
            ],
        );
        let text = "config = \"retry.toml\"\naws_config = \"aws\"\n[users]\nrate = 1\ncalls = \"a\"\npolicy = { profile = \"apii\" }\n\
                    [tier.a]\ncalls = \"b\"\npolicy = { aws_profile = \"prd\" }\n\
                    [tier.b]\ncalls = \"c\"\npolicy = { grpc = \"svc.json\", method = \"shop.Orders/Gett\" }\n\
                    [tier.c]\ncalls = \"d\"\npolicy = { grpc = \"svc.json\", method = \"shop.Orders/Get\", max_attempts = 2 }\n[tier.d]\n";
        let problems = load(text, &dir, &Options::default()).unwrap_err();
        let all = problems.join("\n");
        assert!(
            all.contains("t.toml:6: profile = \"apii\": the config file"),
            "{all}"
        );
        assert!(all.contains("did you mean `api`?"), "{all}");
        assert!(
            all.contains("t.toml:9: aws_profile = \"prd\": the AWS config file"),
            "{all}"
        );
        assert!(all.contains("did you mean `prod`?"), "{all}");
        assert!(
            all.contains("method = \"shop.Orders/Gett\": no methodConfig entry"),
            "{all}"
        );
        assert!(all.contains("did you mean `shop.Orders/Get`?"), "{all}");
        assert!(
            all.contains("a gRPC service config's policy takes no other key"),
            "{all}"
        );
        // A profile without a config file says where one comes from.
        let problems = load(
            "[users]\nrate = 1\ncalls = \"a\"\npolicy = { profile = \"api\" }\n[tier.a]\n",
            &dir,
            &Options::default(),
        )
        .unwrap_err();
        assert!(
            problems[0].contains("no config file to read it from (give one with --config FILE"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_grpc_policy_is_the_service_configs_alone() {
        let dir = folder(
            "grpc",
            &[(
                "svc.json",
                r#"{"methodConfig": [{"name": [{"service": "shop.Orders"}], "timeout": "2s", "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
            )],
        );
        let text =
            format!("{CHAIN}[tier.a.policy]\ngrpc = \"svc.json\"\nmethod = \"shop.Orders/Get\"\n");
        let (plan, _) = load(&text, &dir, &Options::default()).unwrap();
        let PolicyPlan::Grpc(g) = plan.tiers[0].policy.as_ref().unwrap() else {
            panic!("not a gRPC policy")
        };
        assert_eq!(
            (g.service.as_str(), g.method.as_str()),
            ("shop.Orders", "Get")
        );
        assert!(
            g.describe.contains("Retry, 4 attempts, timeout 2s"),
            "{}",
            g.describe
        );
        // A service config with problems: each, at its JSON path.
        std::fs::write(
            dir.join("svc.json"),
            r#"{"methodConfig": [{"name": [{"method": "Get"}]}]}"#,
        )
        .unwrap();
        let problems = load(&text, &dir, &Options::default()).unwrap_err();
        assert!(
            problems[0].contains("methodConfig[0].name[0]"),
            "{problems:?}"
        );
        // The command line cannot change it.
        std::fs::write(dir.join("svc.json"), r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [14]}}]}"#).unwrap();
        let options = Options {
            policies: vec!["a: max_attempts = 5".into()],
            ..Options::default()
        };
        let problems = load(&text, &dir, &options).unwrap_err();
        assert!(
            problems[0].contains("whose policy is a gRPC service config's"),
            "{problems:?}"
        );
    }

    #[test]
    fn the_command_line_is_checked_as_the_file_is() {
        let options = Options {
            policies: vec![
                "b: max_attempts = 2".into(),
                "zz: max_attempts = 2".into(),
                "jitter = \"ful\"".into(),
                "zz: max_atempts = 2".into(),
            ],
            ..Options::default()
        };
        let problems = load(CHAIN, Path::new("."), &options).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("--policy zz: max_attempts = 2: no tier `zz`")),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|p| p.starts_with(
                "--policy jitter = \"ful\": jitter = \"ful\": did you mean \"full\"?"
            )),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("--policy b: max_attempts = 2: tier `b` calls no tier")),
            "{problems:#?}"
        );
        // A policy for a tier that is not there has its keys read all the same: both mistakes.
        let mistyped: Vec<_> = problems
            .iter()
            .filter(|p| p.starts_with("--policy zz: max_atempts = 2: "))
            .collect();
        assert_eq!(mistyped.len(), 2, "{problems:#?}");
        assert!(mistyped[0].contains("no tier `zz`"), "{mistyped:#?}");
        assert!(mistyped[1].contains("max_atempts"), "{mistyped:#?}");
        assert_eq!(problems.len(), 5, "{problems:#?}");
        // Keys over every policy's.
        let options = Options {
            policies: vec!["max_attempts = 6".into(), "users: max_attempts = 1".into()],
            ..Options::default()
        };
        let (plan, _) = load(CHAIN, Path::new("."), &options).unwrap();
        assert_eq!(keys(&plan.users.policy).max_attempts, Some(1));
        assert_eq!(
            keys(plan.tiers[0].policy.as_ref().unwrap()).max_attempts,
            Some(6)
        );
    }

    #[test]
    fn incoherent_values_name_where_each_came_from() {
        let dir = folder(
            "incoherent",
            &[("retry.toml", "[default]\nmax_backoff = \"100ms\"\n")],
        );
        let text =
            format!("config = \"retry.toml\"\n{CHAIN}[tier.a.policy]\ninitial_backoff = \"1s\"\n");
        let problems = load(&text, &dir, &Options::default()).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].contains("max_backoff (100ms) is below initial_backoff (1s)"),
            "{problems:#?}"
        );
        assert!(
            problems[0].contains("retry.toml:2 [default]"),
            "{problems:#?}"
        );
    }

    #[test]
    fn faults_are_read_with_their_kinds_and_spans() {
        let text = "duration = \"100s\"\n[users]\nrate = 1\ncalls = \"a\"\n[tier.a]\nreplicas = 3\nlatency = \"1ms\"\ncapacity = 100\n\
                    [[fault]]\ntier = \"a\"\nkind = \"brownout\"\nstart = \"10s\"\nlength = \"5s\"\nreplica = 2\n\
                    [[fault]]\ntier = \"a\"\nkind = \"overload\"\nstart = \"20s\"\n\
                    [[fault]]\ntier = \"a\"\nkind = \"transient\"\nrate = \"5%\"\n\
                    [[fault]]\ntier = \"a\"\nkind = \"throttling\"\ncapacity = 10\nfactor = 2\n";
        let problems = load(text, Path::new("."), &Options::default()).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].contains("a fault of kind throttling takes no `factor`"),
            "{problems:#?}"
        );
        let (plan, _) = load(
            &text.replace("factor = 2\n", ""),
            Path::new("."),
            &Options::default(),
        )
        .unwrap();
        let f = &plan.faults;
        assert_eq!(f[0].kind, FaultKind::Brownout { factor: 10.0 });
        assert_eq!((f[0].replica, f[0].start, f[0].end), (Some(2), 10.0, 15.0));
        assert_eq!(f[1].kind, FaultKind::Overload { factor: 0.5 });
        assert_eq!(f[1].end, f64::INFINITY);
        assert_eq!(f[2].kind, FaultKind::Transient { rate: 0.05 });
        assert_eq!(f[3].kind, FaultKind::Throttling { capacity: 10.0 });
        assert!(f[0].hits(0, 2, 12.0) && !f[0].hits(0, 1, 12.0) && !f[0].hits(0, 2, 15.0));
        // A fault after the users stop.
        let late = load(
            &text.replace("factor = 2\n", ""),
            Path::new("."),
            &Options {
                duration: Some(15.0),
                ..Options::default()
            },
        );
        assert!(
            late.unwrap_err()[0]
                .contains("the overload of tier a at 20 s starts after the users stop")
        );
    }
}
