//! Parsing the attribute's `key = value` list into [`Args`], checking each value on its own.
//! Every error is collected (with the span of the offending token) instead of stopping at the
//! first, so a user sees all of them at once.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Token};

/// Every key of the attribute, with the form of its value (for error messages).
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("mode", "\"standard\" or \"adaptive\""),
    ("max_attempts", "an integer >= 1"),
    ("initial_backoff", "a duration such as \"100ms\""),
    ("multiplier", "a number >= 1.0"),
    ("max_backoff", "a duration such as \"20s\""),
    (
        "jitter",
        "\"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]",
    ),
    ("attempt_timeout", "a duration such as \"2s\""),
    ("attempt_timeout_multiplier", "a number >= 1.0"),
    ("max_attempt_timeout", "a duration such as \"10s\""),
    ("deadline", "a duration such as \"30s\""),
    (
        "retry_on",
        "a path to `fn(&E) -> bool` or `fn(&E) -> ErrorClass`",
    ),
    ("retry_after", "a path to `fn(&E) -> Option<Duration>`"),
    ("retry_if_ok", "a path to `fn(&T) -> bool`"),
    ("idempotent", "`true` or `false`"),
    ("idempotent_if", "a `bool` expression over the arguments"),
    ("partition", "a string naming a shared partition"),
    ("bucket", "a path to a `static TokenBucket`"),
    ("rate_limiter", "a path to a `static RateLimiter`"),
    ("on_retry", "a path to `fn(&RetryEvent<'_, E>)`"),
    ("profile", "a string naming a config profile"),
    ("clone", "a list of owned arguments: `clone(a, b)`"),
    ("crate", "a path to the runtime crate: `crate = ::my_retry`"),
];

/// A value as written, with the span to point errors at.
#[derive(Clone)]
pub(crate) struct Arg<T> {
    pub(crate) value: T,
    /// The key's identifier.
    pub(crate) key: Ident,
    /// The value's tokens.
    pub(crate) span: Span,
}

/// A duration in whole nanoseconds, with the text the user wrote.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Nanos(pub(crate) u64);

impl std::fmt::Display for Nanos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", std::time::Duration::from_nanos(self.0))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeArg {
    Standard,
    Adaptive,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum JitterArg {
    Full,
    Equal,
    None,
    Decorrelated,
    Fraction(f64),
}

/// The attribute's arguments, each checked on its own.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) mode: Option<Arg<ModeArg>>,
    pub(crate) max_attempts: Option<Arg<u32>>,
    pub(crate) initial_backoff: Option<Arg<Nanos>>,
    pub(crate) multiplier: Option<Arg<f64>>,
    pub(crate) max_backoff: Option<Arg<Nanos>>,
    pub(crate) jitter: Option<Arg<JitterArg>>,
    pub(crate) attempt_timeout: Option<Arg<Nanos>>,
    pub(crate) attempt_timeout_multiplier: Option<Arg<f64>>,
    pub(crate) max_attempt_timeout: Option<Arg<Nanos>>,
    pub(crate) deadline: Option<Arg<Nanos>>,
    pub(crate) retry_on: Option<Arg<ExprPath>>,
    pub(crate) retry_after: Option<Arg<ExprPath>>,
    pub(crate) retry_if_ok: Option<Arg<ExprPath>>,
    pub(crate) idempotent: Option<Arg<bool>>,
    pub(crate) idempotent_if: Option<Arg<Expr>>,
    pub(crate) partition: Option<Arg<LitStr>>,
    pub(crate) bucket: Option<Arg<ExprPath>>,
    pub(crate) rate_limiter: Option<Arg<ExprPath>>,
    pub(crate) on_retry: Option<Arg<ExprPath>>,
    pub(crate) profile: Option<Arg<LitStr>>,
    pub(crate) clone: Option<Arg<Vec<Ident>>>,
    pub(crate) krate: Option<Arg<syn::Path>>,
}

/// Errors collected across the whole attribute.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// An error on all of `tokens` (from the first token to the last, also on stable Rust).
    pub(crate) fn on(&mut self, tokens: impl quote::ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Parses the attribute's tokens. Returns what could be read and every error found.
pub(crate) fn parse(attr: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let parser = |input: ParseStream<'_>| {
        parse_list(input, &mut args, errors);
        Ok(())
    };
    if let Err(e) = parser.parse2(attr) {
        errors.push(e);
    }
    args
}

fn parse_list(input: ParseStream<'_>, args: &mut Args, errors: &mut Errors) {
    while !input.is_empty() {
        if let Err(e) = parse_entry(input, args, errors) {
            errors.push(e);
            skip_to_comma(input);
        }
        if input.is_empty() {
            break;
        }
        if let Err(e) = input.parse::<Token![,]>() {
            errors.push(syn::Error::new(
                e.span(),
                "expected `,` between the arguments of `#[retry]`",
            ));
            skip_to_comma(input);
            let _ = input.parse::<Token![,]>();
        }
    }
}

/// Skips the rest of a malformed argument, up to the next top-level comma.
fn skip_to_comma(input: ParseStream<'_>) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

fn parse_entry(input: ParseStream<'_>, args: &mut Args, errors: &mut Errors) -> syn::Result<()> {
    let key = Ident::parse_any(input).map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "expected an argument of `#[retry]` such as `max_attempts = 5`; valid keys: {}",
                key_list()
            ),
        )
    })?;
    let name = key.to_string();
    let Some(&(_, form)) = KEYS.iter().find(|(k, _)| *k == name) else {
        let msg = match suggest(&name) {
            Some(s) => format!("unknown argument `{name}`: did you mean `{s}`?"),
            None => format!(
                "unknown argument `{name}` of `#[retry]`; valid keys: {}",
                key_list()
            ),
        };
        errors.at(key.span(), msg);
        skip_to_comma(input);
        return Ok(());
    };

    if name == "clone" {
        let list = parse_clone_list(input, &key)?;
        set(&mut args.clone, list, errors);
        return Ok(());
    }

    if !input.peek(Token![=]) {
        let span = if input.is_empty() || input.peek(Token![,]) {
            key.span()
        } else {
            input.span()
        };
        return Err(syn::Error::new(
            span,
            format!("`{name}` needs a value: `{name} = ...` with {form}"),
        ));
    }
    input.parse::<Token![=]>()?;
    let expr: Expr = input
        .parse()
        .map_err(|e| syn::Error::new(e.span(), format!("`{name}` takes {form}")))?;
    let span = expr.span();
    // Each value parser reports its own errors; `None` means it did.
    let wrong = |errors: &mut Errors| {
        let msg = match &expr {
            Expr::Closure(_) => format!(
                "`{name}` takes a path to a function, not a closure: declare a `fn` and name it \
                 here ({form})"
            ),
            _ => format!("`{name}` takes {form}"),
        };
        errors.on(&expr, msg);
    };
    macro_rules! store {
        ($field:ident, $value:expr) => {
            if let Some(value) = $value {
                set(
                    &mut args.$field,
                    Arg {
                        value,
                        key: key.clone(),
                        span,
                    },
                    errors,
                );
            }
        };
    }
    macro_rules! or_wrong {
        ($value:expr) => {
            $value.or_else(|| {
                wrong(errors);
                None
            })
        };
    }
    match name.as_str() {
        "mode" => store!(mode, mode(&expr, errors)),
        "max_attempts" => store!(max_attempts, attempts(&expr, errors)),
        "initial_backoff" => store!(initial_backoff, duration(&expr, &name, errors)),
        "max_backoff" => store!(max_backoff, duration(&expr, &name, errors)),
        "attempt_timeout" => store!(attempt_timeout, duration(&expr, &name, errors)),
        "max_attempt_timeout" => store!(max_attempt_timeout, duration(&expr, &name, errors)),
        "deadline" => store!(deadline, duration(&expr, &name, errors)),
        "multiplier" => store!(multiplier, factor(&expr, &name, errors)),
        "attempt_timeout_multiplier" => {
            store!(attempt_timeout_multiplier, factor(&expr, &name, errors));
        }
        "jitter" => store!(jitter, jitter(&expr, errors)),
        "retry_on" => store!(retry_on, or_wrong!(path(&expr))),
        "retry_after" => store!(retry_after, or_wrong!(path(&expr))),
        "retry_if_ok" => store!(retry_if_ok, or_wrong!(path(&expr))),
        "on_retry" => store!(on_retry, or_wrong!(path(&expr))),
        "bucket" => store!(bucket, or_wrong!(path(&expr))),
        "rate_limiter" => store!(rate_limiter, or_wrong!(path(&expr))),
        "idempotent" => store!(idempotent, or_wrong!(bool_lit(&expr))),
        "idempotent_if" => store!(idempotent_if, Some(expr.clone())),
        "partition" => store!(partition, name_lit(&expr, "partition", errors)),
        "profile" => store!(profile, profile_lit(&expr, errors)),
        "crate" => store!(krate, or_wrong!(crate_path(&expr))),
        _ => unreachable!("every key of KEYS is handled"),
    }
    Ok(())
}

/// Stores a value, refusing a second one for the same key.
fn set<T>(slot: &mut Option<Arg<T>>, value: Arg<T>, errors: &mut Errors) {
    if let Some(first) = slot {
        errors.at(value.key.span(), format!("`{}` is given twice", first.key));
    } else {
        *slot = Some(value);
    }
}

fn parse_clone_list(input: ParseStream<'_>, key: &Ident) -> syn::Result<Arg<Vec<Ident>>> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        let names = match &value {
            Expr::Tuple(t) => t
                .elems
                .iter()
                .map(|e| e.to_token_stream().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            Expr::Array(a) => a
                .elems
                .iter()
                .map(|e| e.to_token_stream().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_token_stream().to_string(),
        };
        return Err(syn::Error::new_spanned(
            value,
            format!("`clone` takes a list in parentheses, without `=`: write `clone({names})`"),
        ));
    }
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            if input.is_empty() {
                key.span()
            } else {
                input.span()
            },
            "`clone` takes a list of owned arguments: `clone(body, headers)`",
        ));
    }
    let content;
    let paren = syn::parenthesized!(content in input);
    let idents = Punctuated::<Ident, Token![,]>::parse_terminated_with(&content, Ident::parse_any)
        .map_err(|e| {
            syn::Error::new(
                e.span(),
                "`clone` takes argument names separated by commas: `clone(body, headers)`",
            )
        })?;
    Ok(Arg {
        value: idents.into_iter().collect(),
        key: key.clone(),
        span: paren.span.join(),
    })
}

fn key_list() -> String {
    KEYS.iter()
        .map(|(k, _)| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The closest key to a misspelled one, if it is close enough to be a typo.
fn suggest(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    // A key the name begins (`retry_if` for `retry_if_ok`) beats a merely close one.
    let prefixed = KEYS
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| name.len() >= 4 && k.starts_with(&name))
        .min_by_key(|k| k.len());
    prefixed.or_else(|| {
        KEYS.iter()
            .map(|(k, _)| (*k, edit_distance(&name, k)))
            .filter(|(k, d)| *d <= (k.len() / 3).max(1))
            .min_by_key(|(_, d)| *d)
            .map(|(k, _)| k)
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn lit(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Group(g) => lit(&g.expr),
        _ => None,
    }
}

fn str_lit(expr: &Expr) -> Option<String> {
    match lit(expr)? {
        Lit::Str(s) => Some(s.value()),
        _ => None,
    }
}

fn bool_lit(expr: &Expr) -> Option<bool> {
    match lit(expr)? {
        Lit::Bool(b) => Some(b.value),
        _ => None,
    }
}

fn path(expr: &Expr) -> Option<ExprPath> {
    match expr {
        Expr::Path(p) => Some(p.clone()),
        Expr::Group(g) => path(&g.expr),
        _ => None,
    }
}

fn crate_path(expr: &Expr) -> Option<syn::Path> {
    match expr {
        Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse().ok(),
        Expr::Group(g) => crate_path(&g.expr),
        _ => None,
    }
}

fn mode(expr: &Expr, errors: &mut Errors) -> Option<ModeArg> {
    let found = str_lit(expr);
    match found.as_deref() {
        Some("standard") => Some(ModeArg::Standard),
        Some("adaptive") => Some(ModeArg::Adaptive),
        Some(other) => {
            errors.on(
                expr,
                format!("unknown mode \"{other}\": `mode` is \"standard\" or \"adaptive\""),
            );
            None
        }
        None => {
            let msg = match path(expr).and_then(|p| p.path.get_ident().map(ToString::to_string)) {
                Some(word) if word == "standard" || word == "adaptive" => {
                    format!("`mode` takes a string: write `mode = \"{word}\"`")
                }
                _ => "`mode` takes \"standard\" or \"adaptive\"".to_owned(),
            };
            errors.on(expr, msg);
            None
        }
    }
}

/// A number literal (integer or float), negative ones included, as `f64`.
fn number(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Int(i) => i.base10_parse::<f64>().ok(),
            Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => number(&u.expr).map(|v| -v),
        Expr::Group(g) => number(&g.expr),
        _ => None,
    }
}

fn attempts(expr: &Expr, errors: &mut Errors) -> Option<u32> {
    let value = match lit(expr) {
        Some(Lit::Int(i)) => i.base10_parse::<u64>().ok(),
        _ => None,
    };
    match value {
        Some(0) => {
            errors.on(
                expr,
                "`max_attempts` counts the first attempt: it must be at least 1",
            );
            None
        }
        Some(n) => match u32::try_from(n) {
            Ok(n) => Some(n),
            Err(_) => {
                errors.on(expr, "`max_attempts` is too large (at most 4294967295)");
                None
            }
        },
        None if number(expr).is_some_and(|v| v < 1.0) => {
            errors.on(
                expr,
                "`max_attempts` counts the first attempt: it must be at least 1",
            );
            None
        }
        None => {
            let msg = match str_lit(expr).map(|t| t.trim().parse::<u32>()) {
                Some(Ok(n)) => {
                    format!("`max_attempts` takes an integer: write `max_attempts = {n}`")
                }
                _ => "`max_attempts` takes an integer >= 1, such as `max_attempts = 3`".to_owned(),
            };
            errors.on(expr, msg);
            None
        }
    }
}

fn factor(expr: &Expr, name: &str, errors: &mut Errors) -> Option<f64> {
    match number(expr) {
        Some(v) if v.is_finite() && v >= 1.0 => Some(v),
        Some(v) => {
            errors.on(expr, format!("`{name}` must be a number >= 1.0, found {v}"));
            None
        }
        None => {
            let msg = match str_lit(expr).map(|t| t.trim().parse::<f64>()) {
                Some(Ok(v)) => format!("`{name}` takes a number: write `{name} = {v:?}`"),
                _ => format!("`{name}` takes a number >= 1.0, such as `{name} = 2.0`"),
            };
            errors.on(expr, msg);
            None
        }
    }
}

fn jitter(expr: &Expr, errors: &mut Errors) -> Option<JitterArg> {
    if let Some(s) = str_lit(expr) {
        return match s.as_str() {
            "full" => Some(JitterArg::Full),
            "equal" => Some(JitterArg::Equal),
            "none" => Some(JitterArg::None),
            "decorrelated" => Some(JitterArg::Decorrelated),
            _ => {
                errors.on(
                    expr,
                    format!(
                        "unknown jitter \"{s}\": `jitter` is \"full\", \"equal\", \"none\", \
                         \"decorrelated\" or a number in [0, 1]"
                    ),
                );
                None
            }
        };
    }
    match number(expr) {
        Some(j) if (0.0..=1.0).contains(&j) => Some(JitterArg::Fraction(j)),
        Some(j) => {
            errors.on(
                expr,
                format!("a jitter fraction must be in [0, 1], found {j}"),
            );
            None
        }
        None => {
            errors.on(expr,
                "`jitter` takes \"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]",
            );
            None
        }
    }
}

fn duration(expr: &Expr, name: &str, errors: &mut Errors) -> Option<Nanos> {
    let Some(text) = str_lit(expr) else {
        let hint = match number(expr) {
            Some(v) => format!(": write the unit, such as `{name} = \"{v}s\"`"),
            None => format!(", such as `{name} = \"150ms\"`"),
        };
        errors.on(expr, format!("`{name}` takes a duration string{hint}"));
        return None;
    };
    match parse_duration(&text) {
        Ok(ns) => Some(Nanos(ns)),
        Err(why) => {
            errors.on(
                expr,
                format!(
                    "`{name}` = \"{text}\": {why}; write a number and a unit, such as \"500us\", \
                     \"150ms\", \"2s\", \"1.5s\" or \"1m\" (units: ns, us, ms, s, m, h)"
                ),
            );
            None
        }
    }
}

/// Parses `"1.5s"` into nanoseconds exactly, with integer arithmetic only.
pub(crate) fn parse_duration(text: &str) -> Result<u64, &'static str> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let unit_ns: u64 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err("the unit is missing"),
        _ => return Err("unknown unit"),
    };
    let (whole, frac) = number.split_once('.').unwrap_or((&number, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err("the number is missing");
    }
    if frac.contains('.') {
        return Err("not a number");
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "not a number")?
    };
    let mut ns = whole
        .checked_mul(unit_ns)
        .ok_or("too long (at most 584 years)")?;
    let mut scale = unit_ns;
    for digit in frac.chars() {
        let d = u64::from(digit.to_digit(10).ok_or("not a number")?);
        if scale % 10 != 0 {
            if d != 0 {
                return Err("finer than a nanosecond");
            }
            continue;
        }
        scale /= 10;
        ns = ns
            .checked_add(d * scale)
            .ok_or("too long (at most 584 years)")?;
    }
    Ok(ns)
}

fn name_lit(expr: &Expr, key: &str, errors: &mut Errors) -> Option<LitStr> {
    match lit(expr) {
        Some(Lit::Str(s)) if s.value().trim().is_empty() => {
            errors.on(expr, format!("`{key}` needs a non-empty name"));
            None
        }
        Some(Lit::Str(s)) => Some(s.clone()),
        _ => {
            errors.on(
                expr,
                format!("`{key}` takes a string, such as `{key} = \"billing\"`"),
            );
            None
        }
    }
}

fn profile_lit(expr: &Expr, errors: &mut Errors) -> Option<LitStr> {
    let s = name_lit(expr, "profile", errors)?;
    let ok = s
        .value()
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Some(s)
    } else {
        errors.at(
            s.span(),
            "a `profile` name is letters, digits, `_` and `-` (it becomes part of the \
             environment variables RETRY_<PROFILE>_MODE and RETRY_<PROFILE>_MAX_ATTEMPTS)",
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("150ms"), Ok(150_000_000));
        assert_eq!(parse_duration("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("0.1s"), Ok(100_000_000));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert_eq!(parse_duration("1.25ms"), Ok(1_250_000));
        assert_eq!(parse_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration("10_000ms"), Ok(10_000_000_000));
        assert!(parse_duration("1.5ns").is_err());
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("99999999999h").is_err());
    }

    #[test]
    fn typos_get_suggestions() {
        assert_eq!(suggest("max_attempt"), Some("max_attempts"));
        assert_eq!(suggest("maxattempts"), Some("max_attempts"));
        assert_eq!(suggest("jiter"), Some("jitter"));
        assert_eq!(suggest("dealine"), Some("deadline"));
        assert_eq!(suggest("retry_if"), Some("retry_if_ok"));
        assert_eq!(suggest("banana"), None);
    }
}
