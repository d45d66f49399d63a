//! Reading a service config's JSON: the walk over its values, every rule of gRFC A6 and of the
//! service config proto checked, every problem kept. The same walk reads Google's published
//! configs with the rules of Google's generated clients ([`Dialect::Google`], documented on
//! `ServiceConfig::from_google_json` in `google.rs`).

use super::codes::{self, Codes, MAX_CODE};
use super::duration::{self, Signed};
use super::error::{Problems, ServiceConfigError, shown};
use super::policy::{GrpcPolicy, HedgingRule, MethodPolicy, RetryRule, Rule};
use super::throttle::{MILLI, Throttle, thousandths};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// gRFC A6's client-side cap of `maxAttempts`: a larger value is read as this one.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// The `maxAttempts` of a Google `retryPolicy` that has none: no limit but the method's timeout.
pub(crate) const UNLIMITED_ATTEMPTS: u32 = u32::MAX;

/// The timeout of a Google `retryPolicy` without `maxAttempts` whose method config has no
/// `timeout`: gapic-generator-java's total timeout of a retry policy written without one
/// (`GapicServiceConfig.EMPTY_TIMEOUT`).
pub(crate) const GOOGLE_DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whose reading of a service config the walk follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// gRFC A6 and the service config proto, strictly: `ServiceConfig::from_json`.
    #[default]
    A6,
    /// Google's generated client libraries reading googleapis' `*_grpc_service_config.json`:
    /// `ServiceConfig::from_google_json`.
    Google,
}

/// The largest `retryThrottling.maxTokens`.
const MAX_TOKENS: u32 = 1000;

/// A gRPC service config's retry and hedging policies, read from its JSON and validated, with
/// the retry throttle its `retryThrottling` describes.
///
/// See the [module documentation](super) for what is read and how a method finds its policy.
#[derive(Debug)]
pub struct ServiceConfig {
    /// The method configs of each service by its full name (`pkg.Service`).
    services: HashMap<String, Service>,
    /// The method config of the name `{}` (empty service): every method of every service.
    default: Option<Arc<MethodPolicy>>,
    /// What a method no method config names gets.
    none: Arc<MethodPolicy>,
    /// `retryThrottling`, shared by every policy of this config.
    throttle: Option<Arc<Throttle>>,
}

/// The method configs that name one service.
#[derive(Debug, Default)]
struct Service {
    /// Named without a method: every method of the service.
    all: Option<Arc<MethodPolicy>>,
    /// Named with a method, by the method's name.
    methods: HashMap<String, Arc<MethodPolicy>>,
}

impl ServiceConfig {
    /// Reads a service config from its JSON text, checking each rule of gRFC A6 and of the
    /// service config proto.
    ///
    /// # Errors
    ///
    /// A [`ServiceConfigError`] with every problem found, if there is any: nothing is built
    /// from a config that has one. A text that is not JSON is one problem, with its line and
    /// column. A config that [`from_google_json`](ServiceConfig::from_google_json) reads (one
    /// of Google's published files, which gRFC A6's rules refuse about a quarter of) says so
    /// in its error's last line.
    pub fn from_json(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        ServiceConfig::read(json, Dialect::A6).map_err(|e| {
            if ServiceConfig::read(json, Dialect::Google).is_ok() {
                e.read_by_google_rules()
            } else {
                e
            }
        })
    }

    /// Reads a service config from its JSON text with the rules of `dialect`.
    pub(crate) fn read(json: &str, dialect: Dialect) -> Result<ServiceConfig, ServiceConfigError> {
        let root: Value = serde_json::from_str(json).map_err(|e| Problems::syntax(&e))?;
        let mut reader = Reader {
            dialect,
            ..Reader::default()
        };
        let throttle = reader.root(&root);
        if let Some(error) = reader.problems.into_error() {
            return Err(error);
        }
        Ok(ServiceConfig {
            services: reader.services,
            default: reader.default,
            none: Arc::new(MethodPolicy::none()),
            throttle: throttle.map(Arc::new),
        })
    }

    /// The policy of the method `method` of the service `service` (its full name, with its
    /// package: `"pkg.Service"`).
    ///
    /// The most specific method config that names it wins: the one naming both the service
    /// and the method, else the one naming the service alone, else the default one (the name
    /// `{}`); without any, a policy of one attempt ([`PolicyKind::None`](super::PolicyKind),
    /// no timeout). The winner is used whole: a method config without a `retryPolicy` does not
    /// take one from a less specific config. Every policy shares the config's retry throttle.
    #[must_use]
    pub fn policy(&self, service: &str, method: &str) -> GrpcPolicy {
        let found = self
            .services
            .get(service)
            .and_then(|s| s.methods.get(method).or(s.all.as_ref()))
            .or(self.default.as_ref())
            .unwrap_or(&self.none);
        GrpcPolicy::new(Arc::clone(found), self.throttle.clone())
    }
}

/// A walk over a service config's values.
#[derive(Default)]
struct Reader {
    dialect: Dialect,
    problems: Problems,
    /// Each name met, with the path where it was first met.
    seen: HashMap<(String, String), String>,
    services: HashMap<String, Service>,
    default: Option<Arc<MethodPolicy>>,
}

/// What a duration must be beside well formed.
#[derive(Clone, Copy)]
enum Bound {
    /// Above zero (the backoffs).
    Positive,
    /// Zero or more (`hedgingDelay`, `timeout`).
    NotNegative,
}

/// `obj[key]`, `null` read as absent (proto3's JSON mapping reads a `null` field as absent).
fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// A JSON number that is an integer (`4`, `-3`, and also `4.0` or `4e0`), saturating beyond
/// `i128`.
fn integer(n: &Number) -> Option<i128> {
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    let f = n.as_f64()?;
    // `as` saturates beyond i128's range, which no limit here comes near.
    (f.is_finite() && f.fract() == 0.0).then_some(f as i128)
}

impl Reader {
    /// The whole config; returns its throttle if it has a valid one.
    fn root(&mut self, root: &Value) -> Option<Throttle> {
        let Value::Object(root) = root else {
            self.problems.found("", "must be a JSON object", root);
            return None;
        };
        match field(root, "methodConfig") {
            None => {}
            Some(Value::Array(entries)) => {
                for (i, entry) in entries.iter().enumerate() {
                    self.method_config(entry, &format!("methodConfig[{i}]"));
                }
            }
            Some(other) => {
                self.problems
                    .found("methodConfig", "must be an array of method configs", other);
            }
        }
        match self.dialect {
            Dialect::A6 => field(root, "retryThrottling").and_then(|t| self.throttling(t)),
            // The generators read `methodConfig` alone.
            Dialect::Google => None,
        }
    }

    /// One entry of `methodConfig`.
    fn method_config(&mut self, entry: &Value, path: &str) {
        let Value::Object(obj) = entry else {
            self.problems.found(path, "must be an object", entry);
            return;
        };
        let names = self.names(obj, path);
        let retry = field(obj, "retryPolicy");
        let hedging = field(obj, "hedgingPolicy");
        if retry.is_some() && hedging.is_some() {
            self.problems.push(
                path,
                "must have at most one of retryPolicy and hedgingPolicy, found both",
            );
        }
        let retry = retry.map(|r| self.retry_policy(r, &format!("{path}.retryPolicy")));
        let hedging = hedging.map(|h| self.hedging_policy(h, &format!("{path}.hedgingPolicy")));
        let timeout = field(obj, "timeout")
            .map(|t| self.duration(t, &format!("{path}.timeout"), Bound::NotNegative));
        let rule = match (retry, hedging) {
            (None, None) => Rule::None,
            (Some(Some(r)), None) => Rule::Retry(r),
            (None, Some(Some(h))) => Rule::Hedging(h),
            // A problem is already kept: the config will not be built.
            _ => return,
        };
        let timeout = match timeout {
            None => None,
            Some(Some(t)) => Some(t),
            Some(None) => return,
        };
        let (rule, timeout) = match self.dialect {
            Dialect::A6 => (rule, timeout),
            Dialect::Google => google_rule(rule, timeout),
        };
        let policy = Arc::new(MethodPolicy::new(rule, timeout));
        for (service, method) in names {
            match (service.is_empty(), method.is_empty()) {
                (true, _) => self.default = Some(Arc::clone(&policy)),
                (false, true) => {
                    self.services.entry(service).or_default().all = Some(Arc::clone(&policy));
                }
                (false, false) => {
                    self.services
                        .entry(service)
                        .or_default()
                        .methods
                        .insert(method, Arc::clone(&policy));
                }
            }
        }
    }

    /// A method config's `name` list: its valid names that no earlier entry used. A method
    /// config without names applies to no method (the service config proto skips it), but its
    /// policies are still checked.
    ///
    /// Read as Google's generators read it, a name an earlier entry used is taken by this one
    /// (the last entry naming it wins), and a name without a service (`{}`, or a method alone)
    /// is skipped: they look a method up by its service and method, then by its service alone.
    fn names(&mut self, obj: &Map<String, Value>, path: &str) -> Vec<(String, String)> {
        let path = format!("{path}.name");
        let list = match field(obj, "name") {
            None => return Vec::new(),
            Some(Value::Array(list)) => list,
            Some(other) => {
                self.problems
                    .found(&path, "must be an array of names", other);
                return Vec::new();
            }
        };
        let mut names = Vec::with_capacity(list.len());
        for (j, name) in list.iter().enumerate() {
            let path = format!("{path}[{j}]");
            let Value::Object(name_obj) = name else {
                self.problems.found(
                    &path,
                    "must be an object with a \"service\" and an optional \"method\"",
                    name,
                );
                continue;
            };
            let service = self.name_part(name_obj, "service", &path);
            let method = self.name_part(name_obj, "method", &path);
            let (Some(service), Some(method)) = (service, method) else {
                continue;
            };
            if self.dialect == Dialect::Google {
                if !service.is_empty() {
                    names.push((service, method));
                }
                continue;
            }
            if service.is_empty() && !method.is_empty() {
                self.problems.push(
                    &path,
                    format!(
                        "must name a service when it names a method, found method {} \
                         without a service",
                        shown(&Value::from(method))
                    ),
                );
                continue;
            }
            let key = (service, method);
            if let Some(first) = self.seen.get(&key) {
                let message = format!(
                    "must be unique in the service config, found {} again (first at {first})",
                    described(&key)
                );
                self.problems.push(&path, message);
                continue;
            }
            self.seen.insert(key.clone(), path);
            names.push(key);
        }
        names
    }

    /// A name's `service` or `method`: absent, `null` and `""` are the same (the service
    /// config proto).
    fn name_part(&mut self, name: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match field(name, key) {
            None => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.problems
                    .found(&format!("{path}.{key}"), "must be a string", other);
                None
            }
        }
    }

    /// A `retryPolicy`, if valid.
    fn retry_policy(&mut self, v: &Value, path: &str) -> Option<RetryRule> {
        let Value::Object(obj) = v else {
            self.problems.found(path, "must be an object", v);
            return None;
        };
        if self.dialect == Dialect::Google {
            return self.google_retry_policy(obj, path);
        }
        let max_attempts = self.max_attempts(obj, path);
        let initial_backoff = self
            .required(obj, "initialBackoff", path)
            .and_then(|(v, p)| self.duration(v, &p, Bound::Positive));
        let max_backoff = self
            .required(obj, "maxBackoff", path)
            .and_then(|(v, p)| self.duration(v, &p, Bound::Positive));
        let multiplier = self
            .required(obj, "backoffMultiplier", path)
            .and_then(|(v, p)| self.positive_number(v, &p));
        let retryable = self
            .required(obj, "retryableStatusCodes", path)
            .and_then(|(v, p)| self.codes(v, &p, true));
        Some(RetryRule {
            max_attempts: max_attempts?,
            initial_backoff: initial_backoff?,
            max_backoff: max_backoff?,
            multiplier: multiplier?,
            retryable: retryable?,
        })
    }

    /// A Google `retryPolicy`'s fields: `maxAttempts` optional (0 or absent for no limit),
    /// the backoffs required with a multiplier of at least 1 and a `maxBackoff` not below
    /// `initialBackoff`, the codes optional and possibly empty, named in upper case.
    fn google_retry_policy(&mut self, obj: &Map<String, Value>, path: &str) -> Option<RetryRule> {
        let max_attempts = match field(obj, "maxAttempts") {
            None => Some(UNLIMITED_ATTEMPTS),
            Some(v) => {
                let n = v.as_number().and_then(integer);
                match n.and_then(|n| u32::try_from(n).ok()) {
                    Some(0) => Some(UNLIMITED_ATTEMPTS),
                    Some(n) => Some(n),
                    None => {
                        let p = format!("{path}.maxAttempts");
                        self.problems
                            .found(&p, "must be an integer from 0 to 4294967295", v);
                        None
                    }
                }
            }
        };
        let initial_backoff = self
            .required(obj, "initialBackoff", path)
            .and_then(|(v, p)| self.duration(v, &p, Bound::Positive));
        let max_backoff = self
            .required(obj, "maxBackoff", path)
            .and_then(|(v, p)| self.duration(v, &p, Bound::Positive));
        let max_backoff = match (initial_backoff, max_backoff) {
            (Some(initial), Some(max)) if max < initial => {
                let p = format!("{path}.maxBackoff");
                let initial_text = field(obj, "initialBackoff").map_or_else(String::new, shown);
                let found = field(obj, "maxBackoff").unwrap_or(&Value::Null);
                self.problems.found(
                    &p,
                    &format!("must not be shorter than initialBackoff ({initial_text})"),
                    found,
                );
                None
            }
            (_, max) => max,
        };
        let multiplier = self
            .required(obj, "backoffMultiplier", path)
            .and_then(|(v, p)| {
                let x = self.positive_number(v, &p)?;
                if x < 1.0 {
                    self.problems.found(&p, "must be at least 1", v);
                    return None;
                }
                Some(x)
            });
        let retryable = match field(obj, "retryableStatusCodes") {
            None => Some(Codes::EMPTY),
            Some(v) => self.codes(v, &format!("{path}.retryableStatusCodes"), false),
        };
        Some(RetryRule {
            max_attempts: max_attempts?,
            initial_backoff: initial_backoff?,
            max_backoff: max_backoff?,
            multiplier: multiplier?,
            retryable: retryable?,
        })
    }

    /// A `hedgingPolicy`, if valid. Google's generated clients do not hedge: read as they read
    /// it, a `hedgingPolicy` must be an object and is not read further (the rule returned is a
    /// placeholder of one attempt, which [`google_rule`] turns into no policy).
    fn hedging_policy(&mut self, v: &Value, path: &str) -> Option<HedgingRule> {
        let Value::Object(obj) = v else {
            self.problems.found(path, "must be an object", v);
            return None;
        };
        if self.dialect == Dialect::Google {
            return Some(HedgingRule {
                max_attempts: 1,
                delay: Duration::ZERO,
                non_fatal: Codes::EMPTY,
            });
        }
        let max_attempts = self.max_attempts(obj, path);
        let delay = match field(obj, "hedgingDelay") {
            None => Some(Duration::ZERO),
            Some(v) => self.duration(v, &format!("{path}.hedgingDelay"), Bound::NotNegative),
        };
        let non_fatal = match field(obj, "nonFatalStatusCodes") {
            None => Some(Codes::EMPTY),
            Some(v) => self.codes(v, &format!("{path}.nonFatalStatusCodes"), false),
        };
        Some(HedgingRule {
            max_attempts: max_attempts?,
            delay: delay?,
            non_fatal: non_fatal?,
        })
    }

    /// `retryThrottling`, if valid.
    fn throttling(&mut self, v: &Value) -> Option<Throttle> {
        let path = "retryThrottling";
        let Value::Object(obj) = v else {
            self.problems.found(path, "must be an object", v);
            return None;
        };
        let max_tokens = self.required(obj, "maxTokens", path).and_then(|(v, p)| {
            let n = v.as_number().and_then(integer);
            match n.and_then(|n| u32::try_from(n).ok()) {
                Some(n @ 1..=MAX_TOKENS) => Some(n),
                _ => {
                    self.problems
                        .found(&p, "must be an integer from 1 to 1000", v);
                    None
                }
            }
        });
        let token_ratio = self.required(obj, "tokenRatio", path).and_then(|(v, p)| {
            let ratio = self.positive_number(v, &p)?;
            match thousandths(ratio) {
                Some(0) | None => {
                    self.problems.found(
                        &p,
                        "must be at least 0.001 (decimals beyond the third are dropped)",
                        v,
                    );
                    None
                }
                Some(milli) => Some(milli),
            }
        });
        Some(Throttle::new(max_tokens? * MILLI, token_ratio?))
    }

    /// The value of the required field `key` of `obj`, with its path.
    fn required<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<(&'a Value, String)> {
        let path = format!("{path}.{key}");
        match field(obj, key) {
            Some(v) => Some((v, path)),
            None => {
                self.problems.missing(&path);
                None
            }
        }
    }

    /// A policy's `maxAttempts`: an integer above 1, read as 5 if larger.
    fn max_attempts(&mut self, obj: &Map<String, Value>, path: &str) -> Option<u32> {
        let (v, path) = self.required(obj, "maxAttempts", path)?;
        let Some(n) = v.as_number().and_then(integer) else {
            self.problems
                .found(&path, "must be an integer greater than 1", v);
            return None;
        };
        if n <= 1 {
            self.problems.found(&path, "must be greater than 1", v);
            return None;
        }
        Some(u32::try_from(n).map_or(MAX_ATTEMPTS, |n| n.min(MAX_ATTEMPTS)))
    }

    /// A duration string.
    fn duration(&mut self, v: &Value, path: &str, bound: Bound) -> Option<Duration> {
        let Value::String(text) = v else {
            self.problems
                .found(path, "must be a duration string such as \"0.1s\"", v);
            return None;
        };
        match (duration::parse(text), bound) {
            (Err(malformed), _) => {
                self.problems.found(path, &malformed.message(text), v);
                None
            }
            (Ok(Signed { negative, size }), Bound::Positive) if negative || size.is_zero() => {
                self.problems.found(path, "must be greater than 0", v);
                None
            }
            (Ok(Signed { negative: true, .. }), Bound::NotNegative) => {
                self.problems.found(path, "must not be negative", v);
                None
            }
            (Ok(Signed { size, .. }), _) => Some(size),
        }
    }

    /// A number above zero.
    fn positive_number(&mut self, v: &Value, path: &str) -> Option<f64> {
        let Some(x) = v.as_f64() else {
            self.problems
                .found(path, "must be a number greater than 0", v);
            return None;
        };
        if x.is_nan() || x <= 0.0 {
            self.problems.found(path, "must be greater than 0", v);
            return None;
        }
        Some(x)
    }

    /// A list of status codes; `required` lists must not be empty.
    fn codes(&mut self, v: &Value, path: &str, required: bool) -> Option<Codes> {
        let Value::Array(list) = v else {
            self.problems
                .found(path, "must be an array of status codes", v);
            return None;
        };
        if required && list.is_empty() {
            self.problems.found(path, "must not be empty", v);
            return None;
        }
        let mut set = Codes::EMPTY;
        let mut valid = true;
        for (i, code) in list.iter().enumerate() {
            match self.code(code, &format!("{path}[{i}]")) {
                Some(n) => set = set.with(n),
                None => valid = false,
            }
        }
        valid.then_some(set)
    }

    /// One status code: its name in any case (in upper case only, read as Google's generators
    /// read it), or its number.
    fn code(&mut self, v: &Value, path: &str) -> Option<u8> {
        const ANY: &str =
            "must be a status code name such as \"UNAVAILABLE\" or a number from 0 to 16";
        const UPPER: &str = "must be a status code name in upper case such as \"UNAVAILABLE\" \
                             or a number from 0 to 16";
        match v {
            Value::String(name) if self.dialect == Dialect::Google => {
                let number = codes::by_exact_name(name);
                if number.is_none() {
                    let meant = retry_keys::did_you_mean(codes::suggest(name));
                    self.problems.found(path, &format!("{meant}{UPPER}"), v);
                }
                number
            }
            Value::String(name) => {
                let number = codes::by_name(name);
                if number.is_none() {
                    let meant = retry_keys::did_you_mean(codes::suggest(name));
                    self.problems.found(path, &format!("{meant}{ANY}"), v);
                }
                number
            }
            Value::Number(n) => {
                let number = integer(n)
                    .and_then(|n| u8::try_from(n).ok())
                    .filter(|n| *n <= MAX_CODE);
                if number.is_none() {
                    self.problems
                        .found(path, "must be a status code from 0 to 16", v);
                }
                number
            }
            _ => {
                self.problems.found(path, ANY, v);
                None
            }
        }
    }
}

/// A Google method config's rule and timeout as its generated clients use them: a retry policy
/// that cannot retry (no retryable code, one attempt, or no `maxAttempts` under a `timeout` of
/// zero) is no policy, a hedging policy is no policy, and a retry policy without `maxAttempts`
/// or `timeout` is bounded by [`GOOGLE_DEFAULT_TIMEOUT`].
fn google_rule(rule: Rule, timeout: Option<Duration>) -> (Rule, Option<Duration>) {
    match rule {
        Rule::None | Rule::Hedging(_) => (Rule::None, timeout),
        Rule::Retry(r) => {
            let unlimited = r.max_attempts == UNLIMITED_ATTEMPTS;
            let retries = r.retryable != Codes::EMPTY
                && r.max_attempts > 1
                && !(unlimited && timeout == Some(Duration::ZERO));
            match (retries, timeout) {
                (false, timeout) => (Rule::None, timeout),
                (true, None) if unlimited => (rule, Some(GOOGLE_DEFAULT_TIMEOUT)),
                (true, timeout) => (rule, timeout),
            }
        }
    }
}

/// A name as a problem speaks of it.
fn described((service, method): &(String, String)) -> String {
    let quoted = |s: &str| shown(&Value::from(s));
    match (service.is_empty(), method.is_empty()) {
        (true, _) => "the default name (no service)".to_owned(),
        (false, true) => format!("service {}", quoted(service)),
        (false, false) => format!("service {} method {}", quoted(service), quoted(method)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::grpc::policy::PolicyKind;
    use ::tonic::Code;
    use serde_json::json;

    /// The problems of a config that must fail, as their `Display` writes them.
    fn problems(config: &str) -> Vec<String> {
        match ServiceConfig::from_json(config) {
            Ok(c) => panic!("{config} was accepted: {c:?}"),
            Err(e) => e.problems().iter().map(ToString::to_string).collect(),
        }
    }

    /// The one problem of a config that must fail.
    fn problem(config: &str) -> String {
        let all = problems(config);
        assert_eq!(all.len(), 1, "{config}: {all:#?}");
        all.into_iter().next().unwrap_or_default()
    }

    fn ok(config: &str) -> ServiceConfig {
        ServiceConfig::from_json(config).unwrap_or_else(|e| panic!("{config}: {e}"))
    }

    fn good_retry() -> Value {
        json!({
            "maxAttempts": 4,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"]
        })
    }

    fn good_hedging() -> Value {
        json!({
            "maxAttempts": 3,
            "hedgingDelay": "0.5s",
            "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
        })
    }

    /// `policy` with `key` set to `value` (or removed, for `None`).
    fn with(mut policy: Value, key: &str, value: Option<Value>) -> Value {
        if let Value::Object(o) = &mut policy {
            match value {
                Some(v) => o.insert(key.to_owned(), v),
                None => o.remove(key),
            };
        }
        policy
    }

    /// A config of one method config naming the service `s`, with `field: policy`.
    fn one_entry(field: &str, policy: Value) -> String {
        json!({ "methodConfig": [{ "name": [{ "service": "s" }], field: policy }] }).to_string()
    }

    fn retry_with(key: &str, value: Option<Value>) -> String {
        one_entry("retryPolicy", with(good_retry(), key, value))
    }

    fn hedging_with(key: &str, value: Option<Value>) -> String {
        one_entry("hedgingPolicy", with(good_hedging(), key, value))
    }

    fn throttling(value: Value) -> String {
        json!({ "retryThrottling": value }).to_string()
    }

    const RETRY: &str = "methodConfig[0].retryPolicy";
    const HEDGING: &str = "methodConfig[0].hedgingPolicy";

    #[test]
    fn a_full_config_is_read_exactly() {
        let config = ok(r#"{
            "loadBalancingConfig": [{ "round_robin": {} }],
            "methodConfig": [
                {
                    "name": [{ "service": "pkg.Service" }, { "service": "pkg.Other", "method": "Get" }],
                    "waitForReady": true,
                    "timeout": "1.000340012s",
                    "maxRequestMessageBytes": 1024,
                    "retryPolicy": {
                        "maxAttempts": 4,
                        "initialBackoff": "0.1s",
                        "maxBackoff": "3s",
                        "backoffMultiplier": 1.5,
                        "retryableStatusCodes": ["UNAVAILABLE", "resource_exhausted", 10],
                        "someFutureField": "ignored"
                    }
                },
                {
                    "name": [{ "service": "pkg.Service", "method": "Search" }],
                    "hedgingPolicy": {
                        "maxAttempts": 3,
                        "hedgingDelay": "0.5s",
                        "nonFatalStatusCodes": [14, "Internal"]
                    }
                }
            ],
            "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 },
            "healthCheckConfig": { "serviceName": "x" }
        }"#);
        let p = config.policy("pkg.Service", "Get");
        assert_eq!(p.kind(), PolicyKind::Retry);
        assert_eq!(p.max_attempts(), 4);
        assert_eq!(p.timeout(), Some(Duration::new(1, 340_012)));
        assert_eq!(p.initial_backoff(), Duration::from_millis(100));
        assert_eq!(p.max_backoff(), Duration::from_secs(3));
        assert_eq!(p.backoff_multiplier(), 1.5);
        assert_eq!(p.retryable_codes().bits(), 1 << 14 | 1 << 8 | 1 << 10);
        assert!(p.continues_on(Code::Aborted));
        assert!(!p.continues_on(Code::Internal));
        assert_eq!(p.hedging_delay(), Duration::ZERO);
        assert!(p.non_fatal_codes().is_empty());

        let same = config.policy("pkg.Other", "Get");
        assert_eq!(same.max_attempts(), 4);
        assert_eq!(config.policy("pkg.Other", "Put").kind(), PolicyKind::None);

        let h = config.policy("pkg.Service", "Search");
        assert_eq!(h.kind(), PolicyKind::Hedging);
        assert_eq!(h.max_attempts(), 3);
        assert_eq!(h.hedging_delay(), Duration::from_millis(500));
        assert_eq!(h.non_fatal_codes().bits(), 1 << 14 | 1 << 13);
        assert!(h.retryable_codes().is_empty());
        assert_eq!(h.timeout(), None);

        let t = p.throttle().expect("retryThrottling");
        assert_eq!(t.max_tokens(), 10_000);
        assert_eq!(t.token_ratio(), 100);
        assert_eq!(t.tokens(), 10_000);
    }

    #[test]
    fn configs_and_policies_can_be_shared_between_threads() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<ServiceConfig>();
        shared::<GrpcPolicy>();
        shared::<ServiceConfigError>();
    }

    #[test]
    fn an_empty_config_has_no_policy() {
        for empty in ["{}", r#"{"methodConfig": []}"#, r#"{"methodConfig": null}"#] {
            let c = ok(empty);
            let p = c.policy("pkg.Service", "Get");
            assert_eq!(p.kind(), PolicyKind::None, "{empty}");
            assert_eq!(p.max_attempts(), 1);
            assert_eq!(p.timeout(), None);
            assert!(p.throttle().is_none());
        }
    }

    #[test]
    fn max_attempts_must_be_an_integer_above_1() {
        let path = format!("{RETRY}.maxAttempts");
        let cases = [
            (None, "is required but missing"),
            (Some(json!(null)), "is required but missing"),
            (Some(json!(1)), "must be greater than 1, found 1"),
            (Some(json!(0)), "must be greater than 1, found 0"),
            (Some(json!(-3)), "must be greater than 1, found -3"),
            (
                Some(json!(2.5)),
                "must be an integer greater than 1, found 2.5",
            ),
            (
                Some(json!("3")),
                "must be an integer greater than 1, found \"3\"",
            ),
            (
                Some(json!(true)),
                "must be an integer greater than 1, found true",
            ),
            (
                Some(json!([3])),
                "must be an integer greater than 1, found an array",
            ),
        ];
        for (value, message) in cases {
            assert_eq!(
                problem(&retry_with("maxAttempts", value)),
                format!("{path}: {message}")
            );
        }
        let path = format!("{HEDGING}.maxAttempts");
        assert_eq!(
            problem(&hedging_with("maxAttempts", Some(json!(1)))),
            format!("{path}: must be greater than 1, found 1")
        );
        assert_eq!(
            problem(&hedging_with("maxAttempts", None)),
            format!("{path}: is required but missing")
        );
    }

    #[test]
    fn max_attempts_above_5_are_read_as_5() {
        let attempts = |v: Value| {
            let retry = ok(&retry_with("maxAttempts", Some(v.clone())));
            let hedging = ok(&hedging_with("maxAttempts", Some(v)));
            let (r, h) = (retry.policy("s", "m"), hedging.policy("s", "m"));
            assert_eq!(r.max_attempts(), h.max_attempts());
            r.max_attempts()
        };
        assert_eq!(attempts(json!(2)), 2);
        assert_eq!(attempts(json!(5)), 5);
        assert_eq!(attempts(json!(6)), 5);
        assert_eq!(attempts(json!(4_000_000_000_u64)), 5);
        assert_eq!(attempts(json!(u64::MAX)), 5);
        assert_eq!(attempts(json!(4.0)), 4, "an integer written with a point");
        assert_eq!(attempts(json!(1e300)), 5);
    }

    #[test]
    fn backoffs_must_be_durations_above_zero() {
        for key in ["initialBackoff", "maxBackoff"] {
            let path = format!("{RETRY}.{key}");
            let form = "must be a duration in seconds with an \"s\" suffix and up to 9 \
                        fractional digits, such as \"0.1s\" or \"3s\"";
            let cases = [
                (None, "is required but missing".to_owned()),
                (Some(json!(null)), "is required but missing".to_owned()),
                (
                    Some(json!(0.1)),
                    "must be a duration string such as \"0.1s\", found 0.1".to_owned(),
                ),
                (Some(json!("100ms")), format!("{form}, found \"100ms\"")),
                (Some(json!("1")), format!("{form}, found \"1\"")),
                (Some(json!("1.s")), format!("{form}, found \"1.s\"")),
                (Some(json!("1e2s")), format!("{form}, found \"1e2s\"")),
                (Some(json!(" 1s")), format!("{form}, found \" 1s\"")),
                (
                    Some(json!(".1s")),
                    "must have a digit before the decimal point, such as \"0.1s\", found \
                     \".1s\""
                        .to_owned(),
                ),
                (
                    Some(json!("0.0000000001s")),
                    "must have at most 9 fractional digits (nanoseconds), found \
                     \"0.0000000001s\""
                        .to_owned(),
                ),
                (
                    Some(json!("315576000001s")),
                    "must be at most 315576000000s, found \"315576000001s\"".to_owned(),
                ),
                (
                    Some(json!("0s")),
                    "must be greater than 0, found \"0s\"".to_owned(),
                ),
                (
                    Some(json!("0.000s")),
                    "must be greater than 0, found \"0.000s\"".to_owned(),
                ),
                (
                    Some(json!("-0.1s")),
                    "must be greater than 0, found \"-0.1s\"".to_owned(),
                ),
            ];
            for (value, message) in cases {
                assert_eq!(
                    problem(&retry_with(key, value)),
                    format!("{path}: {message}")
                );
            }
        }
        let read = |initial: &str| {
            ok(&retry_with("initialBackoff", Some(json!(initial))))
                .policy("s", "m")
                .initial_backoff()
        };
        assert_eq!(read("0.1s"), Duration::from_millis(100));
        assert_eq!(read("1.000340012s"), Duration::new(1, 340_012));
        assert_eq!(read("3s"), Duration::from_secs(3));
        assert_eq!(read("0.000000001s"), Duration::from_nanos(1));
    }

    /// A6 does not ask `maxBackoff` to be at least `initialBackoff`: the backoff is capped at
    /// `maxBackoff` from the first retry.
    #[test]
    fn max_backoff_below_initial_backoff_is_a_cap() {
        let c = ok(&retry_with("maxBackoff", Some(json!("0.05s"))));
        assert_eq!(
            c.policy("s", "m").backoff_ceiling(1),
            Duration::from_millis(50)
        );
    }

    #[test]
    fn backoff_multiplier_must_be_a_number_above_zero() {
        let path = format!("{RETRY}.backoffMultiplier");
        let cases = [
            (None, "is required but missing"),
            (Some(json!(0)), "must be greater than 0, found 0"),
            (Some(json!(0.0)), "must be greater than 0, found 0.0"),
            (Some(json!(-1.5)), "must be greater than 0, found -1.5"),
            (
                Some(json!("2")),
                "must be a number greater than 0, found \"2\"",
            ),
            (Some(json!({})), "must be a number greater than 0, found {}"),
        ];
        for (value, message) in cases {
            assert_eq!(
                problem(&retry_with("backoffMultiplier", value)),
                format!("{path}: {message}")
            );
        }
        let multiplier = |v: Value| {
            ok(&retry_with("backoffMultiplier", Some(v)))
                .policy("s", "m")
                .backoff_multiplier()
        };
        assert_eq!(multiplier(json!(0.5)), 0.5);
        assert_eq!(multiplier(json!(1e-300)), 1e-300);
        assert_eq!(multiplier(json!(3)), 3.0);
    }

    #[test]
    fn retryable_status_codes_must_be_a_non_empty_list_of_codes() {
        let path = format!("{RETRY}.retryableStatusCodes");
        let any = "must be a status code name such as \"UNAVAILABLE\" or a number from 0 to 16";
        let cases = [
            (None, "is required but missing".to_owned()),
            (Some(json!([])), "must not be empty, found []".to_owned()),
            (
                Some(json!("UNAVAILABLE")),
                "must be an array of status codes, found \"UNAVAILABLE\"".to_owned(),
            ),
            (
                Some(json!(14)),
                "must be an array of status codes, found 14".to_owned(),
            ),
        ];
        for (value, message) in cases {
            assert_eq!(
                problem(&retry_with("retryableStatusCodes", value)),
                format!("{path}: {message}")
            );
        }
        let element = [
            (
                json!("UNAVAILBLE"),
                format!("did you mean \"UNAVAILABLE\"? {any}, found \"UNAVAILBLE\""),
            ),
            (json!("RETRY"), format!("{any}, found \"RETRY\"")),
            (json!("14"), format!("{any}, found \"14\"")),
            (json!(""), format!("{any}, found \"\"")),
            (json!(true), format!("{any}, found true")),
            (json!(null), format!("{any}, found null")),
            (
                json!(17),
                "must be a status code from 0 to 16, found 17".to_owned(),
            ),
            (
                json!(-1),
                "must be a status code from 0 to 16, found -1".to_owned(),
            ),
            (
                json!(1.5),
                "must be a status code from 0 to 16, found 1.5".to_owned(),
            ),
        ];
        for (code, message) in element {
            let config = retry_with("retryableStatusCodes", Some(json!(["ABORTED", code])));
            assert_eq!(problem(&config), format!("{path}[1]: {message}"));
        }
    }

    #[test]
    fn code_names_in_any_case_and_numbers() {
        let codes = |list: Value| {
            ok(&retry_with("retryableStatusCodes", Some(list)))
                .policy("s", "m")
                .retryable_codes()
                .bits()
        };
        assert_eq!(codes(json!(["UNAVAILABLE"])), 1 << 14);
        assert_eq!(codes(json!(["unavailable"])), 1 << 14);
        assert_eq!(codes(json!(["Unavailable"])), 1 << 14);
        assert_eq!(codes(json!([14])), 1 << 14);
        assert_eq!(codes(json!([14.0])), 1 << 14);
        assert_eq!(codes(json!(["UNAVAILABLE", 14, "unavailable"])), 1 << 14);
        assert_eq!(
            codes(json!(["ok", "Cancelled", 2, "DEADLINE_EXCEEDED", 16])),
            1 | 1 << 1 | 1 << 2 | 1 << 4 | 1 << 16
        );
        let all: Vec<Value> = codes::NAMES
            .iter()
            .map(|n| json!(n.to_lowercase()))
            .collect();
        assert_eq!(codes(Value::Array(all)), (1 << 17) - 1);
    }

    #[test]
    fn hedging_delay_and_non_fatal_codes_are_optional() {
        let c = ok(&hedging_with("hedgingDelay", None));
        assert_eq!(c.policy("s", "m").hedging_delay(), Duration::ZERO);
        let c = ok(&hedging_with("nonFatalStatusCodes", None));
        let p = c.policy("s", "m");
        assert!(p.non_fatal_codes().is_empty());
        assert_eq!(p.hedging_delay(), Duration::from_millis(500));
        let c = ok(&hedging_with("nonFatalStatusCodes", Some(json!([]))));
        assert!(c.policy("s", "m").non_fatal_codes().is_empty());
        let c = ok(&hedging_with("hedgingDelay", Some(json!("0s"))));
        assert_eq!(c.policy("s", "m").hedging_delay(), Duration::ZERO);
        let c = ok(&one_entry("hedgingPolicy", json!({ "maxAttempts": 7 })));
        let p = c.policy("s", "m");
        assert_eq!(p.kind(), PolicyKind::Hedging);
        assert_eq!(p.max_attempts(), 5);
    }

    #[test]
    fn hedging_delay_and_non_fatal_codes_when_given_must_be_valid() {
        let delay = format!("{HEDGING}.hedgingDelay");
        assert_eq!(
            problem(&hedging_with("hedgingDelay", Some(json!("-1s")))),
            format!("{delay}: must not be negative, found \"-1s\"")
        );
        assert_eq!(
            problem(&hedging_with("hedgingDelay", Some(json!(0.5)))),
            format!("{delay}: must be a duration string such as \"0.1s\", found 0.5")
        );
        assert_eq!(
            problem(&hedging_with("hedgingDelay", Some(json!("500ms")))),
            format!(
                "{delay}: must be a duration in seconds with an \"s\" suffix and up to 9 \
                 fractional digits, such as \"0.1s\" or \"3s\", found \"500ms\""
            )
        );
        let codes = format!("{HEDGING}.nonFatalStatusCodes");
        assert_eq!(
            problem(&hedging_with(
                "nonFatalStatusCodes",
                Some(json!("INTERNAL"))
            )),
            format!("{codes}: must be an array of status codes, found \"INTERNAL\"")
        );
        assert_eq!(
            problem(&hedging_with("nonFatalStatusCodes", Some(json!([99])))),
            format!("{codes}[0]: must be a status code from 0 to 16, found 99")
        );
    }

    #[test]
    fn at_most_one_of_retry_and_hedging() {
        let config = json!({ "methodConfig": [{
            "name": [{ "service": "s" }],
            "retryPolicy": good_retry(),
            "hedgingPolicy": good_hedging(),
        }] });
        assert_eq!(
            problem(&config.to_string()),
            "methodConfig[0]: must have at most one of retryPolicy and hedgingPolicy, found both"
        );
        // Both are still checked.
        let config = json!({ "methodConfig": [{
            "name": [{ "service": "s" }],
            "retryPolicy": with(good_retry(), "maxAttempts", Some(json!(1))),
            "hedgingPolicy": with(good_hedging(), "maxAttempts", Some(json!(0))),
        }] });
        assert_eq!(
            problems(&config.to_string()),
            [
                "methodConfig[0]: must have at most one of retryPolicy and hedgingPolicy, found \
                 both",
                "methodConfig[0].retryPolicy.maxAttempts: must be greater than 1, found 1",
                "methodConfig[0].hedgingPolicy.maxAttempts: must be greater than 1, found 0",
            ]
        );
        // A null policy is absent.
        let config = json!({ "methodConfig": [{
            "name": [{ "service": "s" }],
            "retryPolicy": null,
            "hedgingPolicy": good_hedging(),
        }] });
        assert_eq!(
            ok(&config.to_string()).policy("s", "m").kind(),
            PolicyKind::Hedging
        );
    }

    #[test]
    fn policies_must_be_objects() {
        assert_eq!(
            problem(&one_entry("retryPolicy", json!(5))),
            "methodConfig[0].retryPolicy: must be an object, found 5"
        );
        assert_eq!(
            problem(&one_entry("hedgingPolicy", json!([]))),
            "methodConfig[0].hedgingPolicy: must be an object, found []"
        );
        assert_eq!(
            problem(&throttling(json!("10"))),
            "retryThrottling: must be an object, found \"10\""
        );
    }

    #[test]
    fn an_empty_policy_is_every_required_field_missing() {
        assert_eq!(
            problems(&one_entry("retryPolicy", json!({}))),
            [
                "methodConfig[0].retryPolicy.maxAttempts: is required but missing",
                "methodConfig[0].retryPolicy.initialBackoff: is required but missing",
                "methodConfig[0].retryPolicy.maxBackoff: is required but missing",
                "methodConfig[0].retryPolicy.backoffMultiplier: is required but missing",
                "methodConfig[0].retryPolicy.retryableStatusCodes: is required but missing",
            ]
        );
        assert_eq!(
            problems(&one_entry("hedgingPolicy", json!({}))),
            ["methodConfig[0].hedgingPolicy.maxAttempts: is required but missing"]
        );
        assert_eq!(
            problems(&throttling(json!({}))),
            [
                "retryThrottling.maxTokens: is required but missing",
                "retryThrottling.tokenRatio: is required but missing",
            ]
        );
    }

    #[test]
    fn timeout_is_a_duration_not_negative() {
        let entry = |timeout: Value| {
            json!({ "methodConfig": [{ "name": [{ "service": "s" }], "timeout": timeout }] })
                .to_string()
        };
        let c = ok(&entry(json!("2.5s")));
        let p = c.policy("s", "m");
        assert_eq!(p.timeout(), Some(Duration::from_millis(2500)));
        assert_eq!(p.kind(), PolicyKind::None);
        assert_eq!(p.max_attempts(), 1);
        assert_eq!(
            ok(&entry(json!("0s"))).policy("s", "m").timeout(),
            Some(Duration::ZERO)
        );
        assert_eq!(ok(&entry(json!(null))).policy("s", "m").timeout(), None);
        assert_eq!(
            problem(&entry(json!("-2s"))),
            "methodConfig[0].timeout: must not be negative, found \"-2s\""
        );
        assert_eq!(
            problem(&entry(json!(2))),
            "methodConfig[0].timeout: must be a duration string such as \"0.1s\", found 2"
        );
        assert_eq!(
            problem(&entry(json!("2"))),
            "methodConfig[0].timeout: must be a duration in seconds with an \"s\" suffix and \
             up to 9 fractional digits, such as \"0.1s\" or \"3s\", found \"2\""
        );
    }

    #[test]
    fn max_tokens_is_an_integer_from_1_to_1000() {
        let with_max = |max: Value| throttling(json!({ "maxTokens": max, "tokenRatio": 0.1 }));
        for bad in [
            json!(0),
            json!(1001),
            json!(-1),
            json!(10.5),
            json!("10"),
            json!(1e10),
        ] {
            assert_eq!(
                problem(&with_max(bad.clone())),
                format!(
                    "retryThrottling.maxTokens: must be an integer from 1 to 1000, found {}",
                    shown(&bad)
                )
            );
        }
        for (good, milli) in [
            (json!(1), 1000),
            (json!(1000), 1_000_000),
            (json!(10.0), 10_000),
        ] {
            let c = ok(&with_max(good));
            let p = c.policy("any", "thing");
            assert_eq!(p.throttle().map(|t| t.max_tokens()), Some(milli));
            assert_eq!(p.throttle().map(|t| t.tokens()), Some(milli), "starts full");
        }
    }

    #[test]
    fn token_ratio_is_above_zero_kept_to_three_decimals() {
        let with_ratio =
            |ratio: Value| throttling(json!({ "maxTokens": 100, "tokenRatio": ratio }));
        let cases = [
            (json!(0), "must be greater than 0, found 0"),
            (json!(-0.1), "must be greater than 0, found -0.1"),
            (
                json!("0.1"),
                "must be a number greater than 0, found \"0.1\"",
            ),
            (
                json!(0.0009),
                "must be at least 0.001 (decimals beyond the third are dropped), found 0.0009",
            ),
        ];
        for (value, message) in cases {
            assert_eq!(
                problem(&with_ratio(value)),
                format!("retryThrottling.tokenRatio: {message}")
            );
        }
        let ratio = |text: &str| {
            let c = ok(&throttling(
                serde_json::from_str(&format!(r#"{{"maxTokens": 100, "tokenRatio": {text}}}"#))
                    .expect("JSON"),
            ));
            c.policy("a", "b").throttle().map(|t| t.token_ratio())
        };
        assert_eq!(ratio("0.1"), Some(100));
        assert_eq!(ratio("0.5466"), Some(546), "A6's example");
        assert_eq!(ratio("0.001"), Some(1));
        assert_eq!(ratio("0.0019"), Some(1));
        assert_eq!(ratio("1.001"), Some(1001));
        assert_eq!(ratio("2.675"), Some(2675));
        assert_eq!(ratio("1"), Some(1000));
        assert_eq!(ratio("1e3"), Some(100_000), "capped at maxTokens");
    }

    #[test]
    fn names_follow_the_service_config_proto() {
        let entries = |names: Value| {
            json!({ "methodConfig": [{ "name": names, "timeout": "1s" }] }).to_string()
        };
        assert_eq!(
            problem(&entries(json!({ "service": "s" }))),
            "methodConfig[0].name: must be an array of names, found an object"
        );
        assert_eq!(
            problem(&entries(json!(["s"]))),
            "methodConfig[0].name[0]: must be an object with a \"service\" and an optional \
             \"method\", found \"s\""
        );
        assert_eq!(
            problem(&entries(json!([{ "service": 1 }]))),
            "methodConfig[0].name[0].service: must be a string, found 1"
        );
        assert_eq!(
            problem(&entries(json!([{ "service": "s", "method": ["m"] }]))),
            "methodConfig[0].name[0].method: must be a string, found an array"
        );
        let no_service = "methodConfig[0].name[0]: must name a service when it names a \
                          method, found method \"Get\" without a service";
        assert_eq!(problem(&entries(json!([{ "method": "Get" }]))), no_service);
        assert_eq!(
            problem(&entries(json!([{ "service": "", "method": "Get" }]))),
            no_service
        );
        assert_eq!(
            problem(&entries(json!([{ "service": null, "method": "Get" }]))),
            no_service
        );
        // "", null and absent are the same: `{}`, `{"service": ""}` are the default entry.
        for default in [
            json!({}),
            json!({ "service": "" }),
            json!({ "service": null, "method": "" }),
        ] {
            let c = ok(&entries(json!([default])));
            assert_eq!(
                c.policy("any.Service", "Any").timeout(),
                Some(Duration::from_secs(1))
            );
        }
    }

    #[test]
    fn an_entry_without_names_applies_to_nothing_but_is_checked() {
        for names in [json!([]), json!(null)] {
            let config = json!({ "methodConfig": [{ "name": names, "timeout": "1s" }] });
            let c = ok(&config.to_string());
            assert_eq!(c.policy("s", "m").timeout(), None);
        }
        let config = json!({ "methodConfig": [{ "retryPolicy": { "maxAttempts": 1 } }] });
        assert_eq!(problems(&config.to_string()).len(), 5);
    }

    #[test]
    fn each_name_once_in_the_whole_config() {
        let config = json!({ "methodConfig": [
            { "name": [{ "service": "s", "method": "m" }, { "service": "s" }, {}], "timeout": "1s" },
            { "name": [{ "service": "s", "method": "m" }], "timeout": "2s" },
            { "name": [{ "service": "s", "method": null }, { "service": "t" }], "timeout": "3s" },
            { "name": [{ "service": "" }, { "service": "t", "method": "" }], "timeout": "4s" },
        ] });
        assert_eq!(
            problems(&config.to_string()),
            [
                "methodConfig[1].name[0]: must be unique in the service config, found service \
                 \"s\" method \"m\" again (first at methodConfig[0].name[0])",
                "methodConfig[2].name[0]: must be unique in the service config, found service \
                 \"s\" again (first at methodConfig[0].name[1])",
                "methodConfig[3].name[0]: must be unique in the service config, found the \
                 default name (no service) again (first at methodConfig[0].name[2])",
                "methodConfig[3].name[1]: must be unique in the service config, found service \
                 \"t\" again (first at methodConfig[2].name[1])",
            ]
        );
        let same_entry = json!({ "methodConfig": [
            { "name": [{ "service": "s" }, { "service": "s" }], "timeout": "1s" },
        ] });
        assert_eq!(
            problem(&same_entry.to_string()),
            "methodConfig[0].name[1]: must be unique in the service config, found service \"s\" \
             again (first at methodConfig[0].name[0])"
        );
        // Names differing only in case are different names.
        let cased = json!({ "methodConfig": [
            { "name": [{ "service": "s", "method": "Get" }], "timeout": "1s" },
            { "name": [{ "service": "s", "method": "get" }], "timeout": "2s" },
        ] });
        let c = ok(&cased.to_string());
        assert_eq!(c.policy("s", "Get").timeout(), Some(Duration::from_secs(1)));
        assert_eq!(c.policy("s", "get").timeout(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn the_most_specific_entry_wins() {
        let config = ok(&json!({ "methodConfig": [
            { "name": [{}], "timeout": "1s" },
            { "name": [{ "service": "pkg.S" }], "timeout": "2s", "retryPolicy": good_retry() },
            { "name": [{ "service": "pkg.S", "method": "Foo" }], "timeout": "3s" },
            { "name": [{ "service": "pkg.T", "method": "Bar" }], "hedgingPolicy": good_hedging() },
        ] })
        .to_string());
        let timeout = |s: &str, m: &str| config.policy(s, m).timeout().map(|t| t.as_secs());
        // The method's own entry, whole: it has no retryPolicy, and takes none from its service.
        assert_eq!(timeout("pkg.S", "Foo"), Some(3));
        assert_eq!(config.policy("pkg.S", "Foo").kind(), PolicyKind::None);
        // The service's entry.
        assert_eq!(timeout("pkg.S", "Bar"), Some(2));
        assert_eq!(config.policy("pkg.S", "Bar").kind(), PolicyKind::Retry);
        // The default entry: another service, or a method of a service named only by method.
        assert_eq!(timeout("pkg.U", "Foo"), Some(1));
        assert_eq!(timeout("pkg.T", "Baz"), Some(1));
        assert_eq!(config.policy("pkg.T", "Bar").kind(), PolicyKind::Hedging);
        assert_eq!(timeout("pkg.T", "Bar"), None);
        // Matching is exact: no package guessing, no case folding.
        assert_eq!(timeout("S", "Foo"), Some(1));
        assert_eq!(timeout("pkg.S", "foo"), Some(2));

        // Without a default entry, a method nothing names has one attempt.
        let no_default = ok(&json!({ "methodConfig": [
            { "name": [{ "service": "pkg.S" }], "retryPolicy": good_retry() },
        ] })
        .to_string());
        let p = no_default.policy("pkg.U", "Foo");
        assert_eq!(p.kind(), PolicyKind::None);
        assert_eq!(p.max_attempts(), 1);
        assert_eq!(p.timeout(), None);
        assert_eq!(no_default.policy("pkg.S", "Foo").max_attempts(), 4);
    }

    #[test]
    fn every_policy_of_a_config_shares_its_throttle() {
        let text = json!({
            "methodConfig": [
                { "name": [{ "service": "a" }], "retryPolicy": good_retry() },
                { "name": [{ "service": "b" }], "hedgingPolicy": good_hedging() },
            ],
            "retryThrottling": { "maxTokens": 4, "tokenRatio": 0.5 }
        })
        .to_string();
        let config = ok(&text);
        let policies = [
            config.policy("a", "x"),
            config.policy("b", "y"),
            config.policy("c", "z"),
            config.policy("a", "x").clone(),
        ];
        let first = policies[0].throttle().expect("a throttle");
        for p in &policies {
            assert!(Arc::ptr_eq(first, p.throttle().expect("a throttle")));
        }
        // One failure seen through one method is seen by all.
        policies[1].throttle().expect("a throttle").on_failure();
        assert_eq!(policies[2].throttle().map(|t| t.tokens()), Some(3000));
        assert!(policies[0].throttle().is_some_and(|t| t.allows()));
        policies[3].throttle().expect("a throttle").on_failure();
        assert!(!policies[0].throttle().is_some_and(|t| t.allows()));

        // Another config value has a throttle of its own.
        let other = ok(&text);
        let theirs = other.policy("a", "x");
        assert!(!Arc::ptr_eq(first, theirs.throttle().expect("a throttle")));
        assert_eq!(theirs.throttle().map(|t| t.tokens()), Some(4000));
    }

    #[test]
    fn the_root_and_method_config_must_have_their_shapes() {
        for (text, found) in [
            ("[]", "[]"),
            ("5", "5"),
            ("\"x\"", "\"x\""),
            ("null", "null"),
            ("[{}]", "an array"),
        ] {
            assert_eq!(
                problem(text),
                format!("service config: must be a JSON object, found {found}")
            );
        }
        assert_eq!(
            problem(r#"{"methodConfig": {}}"#),
            "methodConfig: must be an array of method configs, found {}"
        );
        assert_eq!(
            problem(r#"{"methodConfig": [7]}"#),
            "methodConfig[0]: must be an object, found 7"
        );
        let e = ServiceConfig::from_json("[]").expect_err("not an object");
        assert_eq!(e.problems()[0].path(), "");
    }

    #[test]
    fn malformed_json_is_one_problem_with_its_place() {
        assert_eq!(
            problem("{\n  \"methodConfig\": [\n}"),
            "service config: is not valid JSON at line 3, column 1: expected value"
        );
        assert_eq!(
            problem(""),
            "service config: is not valid JSON at line 1, column 0: EOF while parsing a value"
        );
        assert_eq!(
            problem(r#"{"retryThrottling": {"maxTokens": 1e999}}"#),
            "service config: is not valid JSON at line 1, column 39: number out of range"
        );
        assert_eq!(
            problem("{} {}"),
            "service config: is not valid JSON at line 1, column 4: trailing characters"
        );
        let e = ServiceConfig::from_json("{").expect_err("not JSON");
        assert_eq!(e.problems().len(), 1);
        assert_eq!(e.problems()[0].path(), "");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let config = r#"{
            "methodConfig": [
                {
                    "name": [{ "method": "Get" }, { "service": "s" }],
                    "timeout": "forever",
                    "retryPolicy": {
                        "maxAttempts": 1,
                        "initialBackoff": "0s",
                        "maxBackoff": ".5s",
                        "backoffMultiplier": -2,
                        "retryableStatusCodes": ["UNAVAILABLE", "NOPE", 99]
                    }
                },
                {
                    "name": [{ "service": "s" }],
                    "hedgingPolicy": { "maxAttempts": "3", "hedgingDelay": "-1s" }
                },
                "oops"
            ],
            "retryThrottling": { "maxTokens": 0, "tokenRatio": 0 }
        }"#;
        let error = ServiceConfig::from_json(config).expect_err("problems");
        let listed: Vec<String> = error.problems().iter().map(ToString::to_string).collect();
        assert_eq!(
            listed,
            [
                "methodConfig[0].name[0]: must name a service when it names a method, found \
                 method \"Get\" without a service",
                "methodConfig[0].retryPolicy.maxAttempts: must be greater than 1, found 1",
                "methodConfig[0].retryPolicy.initialBackoff: must be greater than 0, found \"0s\"",
                "methodConfig[0].retryPolicy.maxBackoff: must have a digit before the decimal \
                 point, such as \"0.5s\", found \".5s\"",
                "methodConfig[0].retryPolicy.backoffMultiplier: must be greater than 0, found -2",
                "methodConfig[0].retryPolicy.retryableStatusCodes[1]: must be a status code name \
                 such as \"UNAVAILABLE\" or a number from 0 to 16, found \"NOPE\"",
                "methodConfig[0].retryPolicy.retryableStatusCodes[2]: must be a status code from \
                 0 to 16, found 99",
                "methodConfig[0].timeout: must be a duration in seconds with an \"s\" suffix and \
                 up to 9 fractional digits, such as \"0.1s\" or \"3s\", found \"forever\"",
                "methodConfig[1].name[0]: must be unique in the service config, found service \
                 \"s\" again (first at methodConfig[0].name[1])",
                "methodConfig[1].hedgingPolicy.maxAttempts: must be an integer greater than 1, \
                 found \"3\"",
                "methodConfig[1].hedgingPolicy.hedgingDelay: must not be negative, found \"-1s\"",
                "methodConfig[2]: must be an object, found \"oops\"",
                "retryThrottling.maxTokens: must be an integer from 1 to 1000, found 0",
                "retryThrottling.tokenRatio: must be greater than 0, found 0",
            ]
        );
        let text = error.to_string();
        assert!(text.starts_with("invalid gRPC service config (14 problems):\n  methodConfig[0]"));
        assert_eq!(text.lines().count(), 15);
    }

    /// A small deterministic generator (xorshift), so that a failure is reproduced by its seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % (n as u64).max(1)).unwrap_or(0)
        }
    }

    /// Reads `text` and, if it is a config, asks it for policies: nothing may panic, and an
    /// error has at least one problem.
    fn read_anything(text: &str) {
        match ServiceConfig::from_json(text) {
            Ok(c) => {
                for (s, m) in [("s", "m"), ("", ""), ("pkg.Service", "Method")] {
                    let p = c.policy(s, m);
                    for n in [0, 1, 2, 5, 64, u32::MAX] {
                        let _ = p.backoff_ceiling(n);
                    }
                    let _ = format!("{p:?}");
                }
            }
            Err(e) => {
                assert!(!e.problems().is_empty(), "{text}");
                assert!(!e.to_string().is_empty());
            }
        }
    }

    fn seeds() -> Vec<String> {
        vec![
            json!({
                "methodConfig": [
                    { "name": [{ "service": "s", "method": "m" }, {}], "timeout": "1.5s",
                      "retryPolicy": good_retry() },
                    { "name": [{ "service": "t" }], "hedgingPolicy": good_hedging() },
                ],
                "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
            })
            .to_string(),
            serde_json::to_string_pretty(&json!({
                "methodConfig": [{ "name": [{ "service": "é.Ünïcode" }],
                                   "retryPolicy": with(good_retry(), "retryableStatusCodes",
                                                       Some(json!([14, "aborted"]))) }]
            }))
            .unwrap_or_default(),
        ]
    }

    /// Every value of the seeds replaced in turn by each odd value: the walk meets every type
    /// at every place.
    #[test]
    fn from_json_never_panics_on_odd_values() {
        let odd = [
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(1),
            json!(5.5),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e308),
            json!(-1e-308),
            json!(""),
            json!("s"),
            json!("-0s"),
            json!("315576000000.999999999s"),
            json!("99999999999999999999999999s"),
            json!("x".repeat(1000)),
            json!([]),
            json!([null, {}, [], "UNAVAILABLE", 14, -1]),
            json!({}),
            json!({ "service": "s", "method": "m" }),
        ];
        fn visit(v: &mut Value, at: &mut usize, target: usize, with: &Value) -> bool {
            if *at == target {
                *v = with.clone();
                return true;
            }
            *at += 1;
            match v {
                Value::Array(a) => a.iter_mut().any(|x| visit(x, at, target, with)),
                Value::Object(o) => o.values_mut().any(|x| visit(x, at, target, with)),
                _ => false,
            }
        }
        let mut runs = 0;
        for seed in seeds() {
            let tree: Value = serde_json::from_str(&seed).expect("a seed is JSON");
            for target in 0.. {
                let mut replaced_any = false;
                for with in &odd {
                    let mut t = tree.clone();
                    if visit(&mut t, &mut 0, target, with) {
                        replaced_any = true;
                        read_anything(&t.to_string());
                        runs += 1;
                    }
                }
                if !replaced_any {
                    break;
                }
            }
        }
        assert!(runs > 800, "{runs}");
    }

    /// Texts cut, with characters deleted, inserted, replaced or repeated at random places:
    /// most are not JSON, some are configs with odd values.
    #[test]
    fn from_json_never_panics_on_mutated_text() {
        const PIECES: [&str; 24] = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            "0",
            "-",
            ".",
            "e",
            "s",
            "1e999",
            "null",
            "true",
            " ",
            "\n",
            "é",
            "\u{0}",
            "\\u0000",
            "\\ud800",
            "\"maxAttempts\":",
            "{}",
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let seeds = seeds();
        // `RETRY_FUZZ_CASES` sets the count (RELIABILITY.md reports a run of 1,000,000).
        let rounds = std::env::var("RETRY_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(20_000);
        for round in 0..rounds {
            let mut text: Vec<char> = seeds[round % seeds.len()].chars().collect();
            for _ in 0..=rng.below(4) {
                let at = rng.below(text.len() + 1);
                match rng.below(5) {
                    0 => text.truncate(at),
                    1 if at < text.len() => {
                        text.remove(at);
                    }
                    2 => {
                        let piece = PIECES[rng.below(PIECES.len())];
                        for (i, c) in piece.chars().enumerate() {
                            text.insert(at + i, c);
                        }
                    }
                    3 if at < text.len() => {
                        let piece = PIECES[rng.below(PIECES.len())];
                        text.splice(at..=at, piece.chars());
                    }
                    _ => {
                        let end = (at + rng.below(40)).min(text.len());
                        let slice: Vec<char> = text[at..end].to_vec();
                        text.splice(at..at, slice);
                    }
                }
            }
            let text: String = text.into_iter().collect();
            read_anything(&text);
        }
    }

    #[test]
    fn from_json_never_panics_on_deep_or_large_text() {
        for text in [
            "[".repeat(100_000),
            format!("{}{}", "{\"a\":".repeat(50_000), "}".repeat(50_000)),
            format!(
                "{{\"methodConfig\": [{}]}}",
                vec![r#"{"name":[{"service":"s"}]}"#; 2000].join(",")
            ),
            format!("{{\"methodConfig\": [{{\"name\": {}}}]}}", "[".repeat(200)),
        ] {
            read_anything(&text);
        }
    }
}
