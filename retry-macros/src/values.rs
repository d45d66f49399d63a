//! The value of each key: how it is read from the attribute and checked on its own (each type's
//! [`Value`] impl), and how the expansion passes it to the runtime's builders (its [`Emit`]
//! impl). Errors go to [`Errors`] with the span of the offending tokens.
//!
//! What a value may be is `retry_keys`'s: the forms of the keys, the parsers of the strings
//! (durations, modes, jitters, hedge delays, shares) and the checks of each value on its own
//! (`Key::check`), whose messages these errors are. What is here is the attribute's syntax:
//! which literals a key takes, and what to write instead of another one.

use crate::errors::Errors;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use retry_keys::{
    self as keys, AttributeKey, Behavior, HedgeError, HedgeSpec, Jitter, Mode, Problem,
};
use std::time::Duration;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Token};

/// A value as written, with the span to point errors at.
pub(crate) struct Arg<T> {
    pub(crate) value: T,
    /// The key's identifier.
    pub(crate) key: Ident,
    /// The value's tokens.
    pub(crate) span: Span,
}

/// How a key's value is read from the attribute and checked on its own.
pub(crate) trait Value: Sized {
    /// The value written as `key = expr`, or `None` once what is wrong with it is reported.
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self>;

    /// Reads what follows the key's identifier `ident`: `= value` (all keys but `clone`).
    fn read(
        input: ParseStream<'_>,
        ident: &Ident,
        key: AttributeKey,
        errors: &mut Errors,
    ) -> syn::Result<Option<Arg<Self>>> {
        assigned(input, ident, key, errors)
    }
}

/// `= expr` after `ident`, checked by `T`.
fn assigned<T: Value>(
    input: ParseStream<'_>,
    ident: &Ident,
    key: AttributeKey,
    errors: &mut Errors,
) -> syn::Result<Option<Arg<T>>> {
    let (name, form) = (key.name(), key.describe());
    if !input.peek(Token![=]) {
        let span = if input.is_empty() || input.peek(Token![,]) {
            ident.span()
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
    Ok(T::from_expr(&expr, key, errors).map(|value| Arg {
        value,
        key: ident.clone(),
        span: expr.span(),
    }))
}

/// Reports a value of the wrong kind for `key`.
fn wrong<T>(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<T> {
    let (key, form) = (key.name(), key.describe());
    let msg = match expr {
        Expr::Closure(_) => format!(
            "`{key}` takes a path to a function, not a closure: declare a `fn` and name it here \
             ({form})"
        ),
        _ => format!("`{key}` takes {form}"),
    };
    errors.on(expr, msg);
    None
}

/// `value` of `key` if it holds on its own (`Key::check`), else `None` once the problem is
/// reported on `expr`.
fn checked<T>(
    value: T,
    as_value: keys::Value,
    key: AttributeKey,
    expr: &Expr,
    errors: &mut Errors,
) -> Option<T> {
    match key.settable().and_then(|k| k.check(&as_value)) {
        Some(problem) => {
            errors.on(expr, problem.message());
            None
        }
        None => Some(value),
    }
}

/// `mode`.
impl Value for Mode {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        named(
            expr,
            key,
            errors,
            "mode",
            "\"standard\" or \"adaptive\"",
            keys::parse_mode,
        )
    }
}

/// `behavior`.
impl Value for Behavior {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        named(
            expr,
            key,
            errors,
            "behavior",
            "\"classic\" or \"2026\"",
            keys::parse_behavior,
        )
    }
}

/// A value written as one of a few names (`forms`, as the errors list them), read by `parse`:
/// an unknown name is an error with the one it most likely meant, and a name written without
/// quotes (`mode = adaptive`, `behavior = 2026`) an error saying to quote it.
fn named<T>(
    expr: &Expr,
    key: AttributeKey,
    errors: &mut Errors,
    noun: &str,
    forms: &str,
    parse: fn(&str) -> Result<T, keys::UnknownName>,
) -> Option<T> {
    let name = key.name();
    if let Some(text) = str_lit(expr) {
        return match parse(&text) {
            Ok(value) => Some(value),
            Err(unknown) => {
                errors.on(
                    expr,
                    format!(
                        "unknown {noun} \"{text}\": {}`{name}` is {forms}",
                        keys::did_you_mean(unknown.meant)
                    ),
                );
                None
            }
        };
    }
    let word = match lit(expr) {
        Some(Lit::Int(i)) => Some(i.base10_digits().to_string()),
        _ => path(expr).and_then(|p| p.path.get_ident().map(ToString::to_string)),
    };
    let msg = match word {
        Some(word) if parse(&word).is_ok() => {
            format!("`{name}` takes a string: write `{name} = \"{word}\"`")
        }
        _ => format!("`{name}` takes {forms}"),
    };
    errors.on(expr, msg);
    None
}

/// `max_attempts`, `max_in_flight`: a count of attempts, the first included.
impl Value for u32 {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let value = match lit(expr) {
            Some(Lit::Int(i)) => i.base10_parse::<u64>().ok(),
            _ => None,
        };
        let too_few = |errors: &mut Errors| {
            if let Some(key) = key.settable() {
                errors.on(expr, Problem::ZeroCount(key).message());
            }
            None
        };
        match value {
            Some(n) => match u32::try_from(n) {
                Ok(n) => checked(n, keys::Value::Count(n), key, expr, errors),
                Err(_) => {
                    errors.on(expr, format!("`{name}` is too large (at most 4294967295)"));
                    None
                }
            },
            None if number(expr).is_some_and(|v| v < 1.0) => too_few(errors),
            None => {
                let msg = match str_lit(expr).map(|t| t.trim().parse::<u32>()) {
                    Some(Ok(n)) => format!("`{name}` takes an integer: write `{name} = {n}`"),
                    _ => format!("`{name}` takes an integer >= 1, such as `{name} = 3`"),
                };
                errors.on(expr, msg);
                None
            }
        }
    }
}

/// `multiplier`, `attempt_timeout_multiplier`: a growth factor.
impl Value for f64 {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        if let Some(v) = number(expr) {
            return checked(v, keys::Value::Factor(v), key, expr, errors);
        }
        let msg = match str_lit(expr).and_then(|t| keys::parse_factor(&t)) {
            Some(v) => format!("`{name}` takes a number: write `{name} = {v:?}`"),
            None => format!("`{name}` takes a number >= 1.0, such as `{name} = 2.0`"),
        };
        errors.on(expr, msg);
        None
    }
}

/// A duration, written as a string with a unit.
impl Value for Duration {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let Some(text) = str_lit(expr) else {
            let hint = match number(expr) {
                Some(v) => format!(": write the unit, such as `{name} = \"{v}s\"`"),
                None => format!(", such as `{name} = \"150ms\"`"),
            };
            errors.on(expr, format!("`{name}` takes a duration string{hint}"));
            return None;
        };
        match keys::parse_duration(&text) {
            Ok(d) => Some(d),
            Err(why) => {
                errors.on(expr, bad_duration(key, &text, why));
                None
            }
        }
    }
}

/// What is wrong with the duration `text` written for `key`, and how to write one.
fn bad_duration(key: AttributeKey, text: &str, why: impl std::fmt::Display) -> String {
    format!(
        "`{}` = \"{text}\": {why}; write a number and a unit, such as \"500us\", \"150ms\", \
         \"2s\", \"1.5s\" or \"1m\" (units: ns, us, ms, s, m, h)",
        key.name()
    )
}

/// `jitter`.
impl Value for Jitter {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let jitter = if let Some(text) = str_lit(expr) {
            match keys::parse_jitter(&text) {
                Ok(jitter) => jitter,
                Err(unknown) => {
                    errors.on(
                        expr,
                        format!(
                            "unknown jitter \"{text}\": {}`{name}` is \"full\", \"equal\", \
                             \"none\", \"decorrelated\" or a number in [0, 1]",
                            keys::did_you_mean(unknown.meant)
                        ),
                    );
                    return None;
                }
            }
        } else if let Some(fraction) = number(expr) {
            Jitter::Fraction(fraction)
        } else {
            errors.on(
                expr,
                format!(
                    "`{name}` takes \"full\", \"equal\", \"none\", \"decorrelated\" or a number \
                     in [0, 1]"
                ),
            );
            return None;
        };
        checked(jitter, keys::Value::Jitter(jitter), key, expr, errors)
    }
}

/// `hedge_after`: a fixed delay, or a percentile of the function's own latency.
impl Value for HedgeSpec {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let Some(text) = str_lit(expr) else {
            errors.on(
                expr,
                format!(
                    "`{name}` takes a string: a duration such as `{name} = \"50ms\"`, or a \
                     percentile of the function's latency: \"p50\", \"p90\", \"p95\" or \"p99\""
                ),
            );
            return None;
        };
        match keys::parse_hedge(&text) {
            Ok(spec) => checked(spec, keys::Value::Hedge(spec), key, expr, errors),
            Err(HedgeError::Duration(why)) => {
                errors.on(expr, bad_duration(key, &text, why));
                None
            }
            Err(why @ HedgeError::Percentile { .. }) => {
                errors.on(expr, format!("`{name}` = \"{text}\": {why}"));
                None
            }
        }
    }
}

/// `hedge_budget`: a share of the calls, written `"2%"`, as a ratio (0.02).
#[derive(Clone, Copy)]
pub(crate) struct HedgeBudget(pub(crate) f64);

impl Value for HedgeBudget {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let share = str_lit(expr).as_deref().and_then(keys::parse_hedge_budget);
        if let Some(share) = share {
            return Some(HedgeBudget(share));
        }
        let hint = match number(expr) {
            Some(v) => format!(": write it with its %, such as `{name} = \"{v}%\"`"),
            None => format!(", such as `{name} = \"2%\"`"),
        };
        errors.on(
            expr,
            format!("`{name}` takes a share of the calls above 0 % and at most 100 %{hint}"),
        );
        None
    }
}

/// A function named by path, which the expansion calls.
pub(crate) struct FnPath(pub(crate) ExprPath);

impl Value for FnPath {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        path(expr).map(FnPath).or_else(|| wrong(expr, key, errors))
    }
}

/// A `static` named by path, which the runtime borrows for the program's lifetime.
pub(crate) struct Static(pub(crate) ExprPath);

impl Value for Static {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        path(expr).map(Static).or_else(|| wrong(expr, key, errors))
    }
}

/// `guard`: the `static`s that implement `Guard`, in the order they are asked.
pub(crate) struct GuardList(pub(crate) Vec<ExprPath>);

/// The most guards a function takes (the runtime's list holds this many).
const MAX_GUARDS: usize = 8;

impl Value for GuardList {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let name = key.name();
        let Expr::Array(list) = expr else {
            return path(expr)
                .map(|p| GuardList(vec![p]))
                .or_else(|| wrong(expr, key, errors));
        };
        if list.elems.is_empty() {
            errors.on(
                expr,
                format!(
                    "`{name} = []` names no guard: name one (`{name} = G`) or leave the key out"
                ),
            );
            return None;
        }
        let mut paths: Vec<ExprPath> = Vec::new();
        let mut ok = true;
        for (i, elem) in list.elems.iter().enumerate() {
            let Some(p) = path(elem) else {
                errors.on(
                    elem,
                    format!("`{name}` lists paths to `static`s that implement `Guard`, such as `[BULKHEAD, THROTTLE]`"),
                );
                ok = false;
                continue;
            };
            if i == MAX_GUARDS {
                errors.on(elem, format!("`{name}` takes at most {MAX_GUARDS} guards"));
                ok = false;
            }
            let text = crate::text::compact(&p);
            if paths.iter().any(|q| crate::text::compact(q) == text) {
                errors.on(
                    elem,
                    format!(
                        "`{text}` is listed twice in `{name}`: each guard is asked once per attempt"
                    ),
                );
                ok = false;
            }
            paths.push(p);
        }
        ok.then_some(GuardList(paths))
    }
}

/// `bucket`: a path to a `static TokenBucket`, or `"none"` (no bucket: retries bounded only by
/// the attempts, the deadline and a budget).
pub(crate) enum Bucket {
    Static(Static),
    None(proc_macro2::Span),
}

impl Value for Bucket {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        if let Some(p) = path(expr) {
            return Some(Bucket::Static(Static(p)));
        }
        match str_lit(expr) {
            Some(text) if text == "none" => Some(Bucket::None(syn::spanned::Spanned::span(expr))),
            Some(text) => {
                errors.on(
                    expr,
                    format!(
                        "`{}` takes a path to a `static TokenBucket`, or \"none\" for no bucket; \
                         found {text:?}",
                        key.name()
                    ),
                );
                None
            }
            None => wrong(expr, key, errors),
        }
    }
}

/// `budget` and `breaker`: a path to a user's `static`, or a share written `"NN%"` ([`Share`]
/// says which, how it is read and what the runtime calls it).
pub(crate) enum StaticOr<S> {
    Static(Static),
    /// The share as a ratio (0.2 for `"20%"`), and where it was written.
    Share(f64, proc_macro2::Span, core::marker::PhantomData<S>),
}

/// What a `"NN%"` value of a key means.
pub(crate) trait Share {
    /// The value as a ratio, if it is one this key takes.
    fn parse(text: &str) -> Option<f64>;
    /// What the key takes, for the error on a value it does not (`name`: the key's name).
    fn expected(name: &str) -> String;
    /// The runtime's enum for the key's value, and its variant for a share.
    const REF: &'static str;
    const SHARE: &'static str;
}

/// `budget`: a share of the requests (that ratio, a floor of 10 retries per second, a 10 s
/// window), or a `static RetryBudget`.
pub(crate) enum BudgetShare {}

impl Share for BudgetShare {
    fn parse(text: &str) -> Option<f64> {
        keys::parse_budget_share(text)
    }
    fn expected(name: &str) -> String {
        format!(
            "`{name}` takes a share of the requests above 0 %, such as `{name} = \"20%\"`, or a \
             path to a `static RetryBudget`"
        )
    }
    const REF: &'static str = "BudgetRef";
    const SHARE: &'static str = "Share";
}

/// `breaker`: the failure ratio that opens it (with the breaker's other defaults), or a
/// `static CircuitBreaker`.
pub(crate) enum BreakerRatio {}

impl Share for BreakerRatio {
    fn parse(text: &str) -> Option<f64> {
        keys::parse_failure_ratio(text)
    }
    fn expected(name: &str) -> String {
        format!(
            "`{name}` takes the share of failed attempts that opens the breaker, above 0 % and \
             at most 100 %, such as `{name} = \"50%\"`, or a path to a `static CircuitBreaker`"
        )
    }
    const REF: &'static str = "BreakerRef";
    const SHARE: &'static str = "Ratio";
}

pub(crate) type Budget = StaticOr<BudgetShare>;
pub(crate) type Breaker = StaticOr<BreakerRatio>;

impl<S: Share> Value for StaticOr<S> {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        if let Some(p) = path(expr) {
            return Some(StaticOr::Static(Static(p)));
        }
        let Some(text) = str_lit(expr) else {
            return wrong(expr, key, errors);
        };
        if let Some(ratio) = S::parse(&text) {
            let span = syn::spanned::Spanned::span(expr);
            return Some(StaticOr::Share(ratio, span, core::marker::PhantomData));
        }
        errors.on(expr, format!("{}; found {text:?}", S::expected(key.name())));
        None
    }
}

impl Value for bool {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        match lit(expr) {
            Some(Lit::Bool(b)) => Some(b.value),
            _ => wrong(expr, key, errors),
        }
    }
}

/// `idempotent_if`: any expression; the type checker sees that it is a `bool`.
impl Value for Expr {
    fn from_expr(expr: &Expr, _: AttributeKey, _: &mut Errors) -> Option<Self> {
        Some(expr.clone())
    }
}

/// A non-empty name.
pub(crate) struct Name(pub(crate) LitStr);

impl Value for Name {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let key = key.name();
        match lit(expr) {
            Some(Lit::Str(s)) if !keys::is_name(&s.value()) => {
                errors.on(expr, format!("`{key}` needs a non-empty name"));
                None
            }
            Some(Lit::Str(s)) => Some(Name(s.clone())),
            _ => {
                errors.on(
                    expr,
                    format!("`{key}` takes a string, such as `{key} = \"billing\"`"),
                );
                None
            }
        }
    }
}

/// `profile`: a name that is also part of environment variables' names.
pub(crate) struct Profile(pub(crate) LitStr);

impl Value for Profile {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let Name(s) = Name::from_expr(expr, key, errors)?;
        if keys::is_profile_name(&s.value()) {
            Some(Profile(s))
        } else {
            errors.at(
                s.span(),
                "a `profile` name is letters, digits, `_` and `-` (it becomes part of the \
                 environment variables RETRY_<PROFILE>_MODE and RETRY_<PROFILE>_MAX_ATTEMPTS)",
            );
            None
        }
    }
}

/// `crate`: a path, also written as a string.
impl Value for syn::Path {
    fn from_expr(expr: &Expr, key: AttributeKey, errors: &mut Errors) -> Option<Self> {
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
        crate_path(expr).or_else(|| wrong(expr, key, errors))
    }
}

/// `clone(a, b)`: owned arguments each attempt gets its own copy of.
pub(crate) struct Clones(pub(crate) Vec<Cloned>);

/// An argument in `clone(...)`.
pub(crate) struct Cloned {
    pub(crate) name: Ident,
    /// Declared `mut`, so each attempt's copy is mutable too (set by `valid`).
    pub(crate) mutable: bool,
}

impl Value for Clones {
    /// `clone = ...`: the list is written without `=`.
    fn from_expr(expr: &Expr, _: AttributeKey, errors: &mut Errors) -> Option<Self> {
        let names = match expr {
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
        errors.on(
            expr,
            format!("`clone` takes a list in parentheses, without `=`: write `clone({names})`"),
        );
        None
    }

    fn read(
        input: ParseStream<'_>,
        ident: &Ident,
        key: AttributeKey,
        errors: &mut Errors,
    ) -> syn::Result<Option<Arg<Self>>> {
        if input.peek(Token![=]) {
            return assigned(input, ident, key, errors);
        }
        if !input.peek(syn::token::Paren) {
            return Err(syn::Error::new(
                if input.is_empty() {
                    ident.span()
                } else {
                    input.span()
                },
                "`clone` takes a list of owned arguments: `clone(body, headers)`",
            ));
        }
        let content;
        let paren = syn::parenthesized!(content in input);
        let idents =
            Punctuated::<Ident, Token![,]>::parse_terminated_with(&content, Ident::parse_any)
                .map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`clone` takes argument names separated by commas: `clone(body, headers)`",
                    )
                })?;
        let names = idents.into_iter().map(|name| Cloned {
            name,
            mutable: false,
        });
        Ok(Some(Arg {
            value: Clones(names.collect()),
            key: ident.clone(),
            span: paren.span.join(),
        }))
    }
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

fn path(expr: &Expr) -> Option<ExprPath> {
    match expr {
        Expr::Path(p) => Some(p.clone()),
        Expr::Group(g) => path(&g.expr),
        _ => None,
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

/// A value the expansion passes to the runtime's `Keys` or `Site` builder.
pub(crate) trait Emit {
    /// The value's tokens; `p` is the path of the runtime's `__private` module.
    fn tokens(&self, p: &TokenStream) -> TokenStream;

    /// Where the builder call is located: the call site, unless type errors are to point at the
    /// value as written.
    fn span(&self) -> Span {
        Span::call_site()
    }
}

impl Emit for Mode {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Mode::Standard => quote!(#p::Mode::Standard),
            Mode::Adaptive => quote!(#p::Mode::Adaptive),
        }
    }
}

impl Emit for Behavior {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Behavior::Classic => quote!(#p::Behavior::Classic),
            Behavior::Aws2026 => quote!(#p::Behavior::Aws2026),
        }
    }
}

impl Emit for bool {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        quote!(#self)
    }
}

impl Emit for u32 {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.to_token_stream()
    }
}

impl Emit for f64 {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.to_token_stream()
    }
}

/// In whole nanoseconds, which the parser guarantees fit a `u64`.
impl Emit for Duration {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        let ns = u64::try_from(self.as_nanos()).unwrap_or(u64::MAX);
        quote!(#p::Duration::from_nanos(#ns))
    }
}

impl Emit for Jitter {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Jitter::Full => quote!(#p::Jitter::Full),
            Jitter::Equal => quote!(#p::Jitter::Equal),
            Jitter::None => quote!(#p::Jitter::None),
            Jitter::Decorrelated => quote!(#p::Jitter::Decorrelated),
            Jitter::Fraction(f) => quote!(#p::Jitter::Fraction(#f)),
        }
    }
}

impl Emit for HedgeSpec {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            HedgeSpec::Fixed(d) => {
                let d = d.tokens(p);
                quote!(#p::HedgeSpec::Fixed(#d))
            }
            HedgeSpec::Percentile(q) => quote!(#p::HedgeSpec::Percentile(#q)),
        }
    }
}

impl Emit for Name {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.0.to_token_stream()
    }
}

impl Emit for Profile {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.0.to_token_stream()
    }
}

impl Emit for Static {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        let path = &self.0;
        quote_spanned!(self.span()=> &#path)
    }

    /// A `static` of the wrong type is reported on its path.
    fn span(&self) -> Span {
        self.0.span()
    }
}

impl Emit for Bucket {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Bucket::Static(s) => s.tokens(p),
            Bucket::None(span) => quote_spanned! {*span=>
                {
                    static __RETRY_NO_BUCKET: #p::TokenBucket = #p::TokenBucket::unlimited();
                    &__RETRY_NO_BUCKET
                }
            },
        }
    }

    fn span(&self) -> Span {
        match self {
            Bucket::Static(s) => s.span(),
            Bucket::None(span) => *span,
        }
    }
}

impl<S: Share> Emit for StaticOr<S> {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        let span = self.span();
        let kind = Ident::new(S::REF, span);
        match self {
            StaticOr::Static(s) => {
                let path = s.tokens(p);
                quote_spanned!(span=> #p::#kind::Static(#path))
            }
            StaticOr::Share(ratio, _, _) => {
                let share = Ident::new(S::SHARE, span);
                quote_spanned!(span=> #p::#kind::#share(#ratio))
            }
        }
    }

    fn span(&self) -> Span {
        match self {
            StaticOr::Static(s) => s.span(),
            StaticOr::Share(_, span, _) => *span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    /// Reads `expr` as the value of `key`: the value, or the messages of its errors.
    fn read<T: Value>(key: AttributeKey, expr: Expr) -> Result<T, Vec<String>> {
        let mut errors = Errors::default();
        let value = T::from_expr(&expr, key, &mut errors);
        match (value, errors.into_result()) {
            (Some(v), Ok(())) => Ok(v),
            (None, Err(e)) => Err(e.into_iter().map(|e| e.to_string()).collect()),
            (Some(_), Err(_)) | (None, Ok(())) => panic!("a value or an error, not both"),
        }
    }

    #[test]
    fn durations_are_read_exactly() {
        let d = |expr| read::<Duration>(AttributeKey::Deadline, expr);
        assert_eq!(d(parse_quote!("1.5s")), Ok(Duration::from_millis(1500)));
        assert_eq!(d(parse_quote!("10_000ms")), Ok(Duration::from_secs(10)));
        assert_eq!(
            d(parse_quote!("1.5ns")),
            Err(vec![
                "`deadline` = \"1.5ns\": finer than a nanosecond; write a number and a unit, \
                 such as \"500us\", \"150ms\", \"2s\", \"1.5s\" or \"1m\" (units: ns, us, ms, s, \
                 m, h)"
                    .to_owned()
            ])
        );
        assert_eq!(
            d(parse_quote!(5)),
            Err(vec![
                "`deadline` takes a duration string: write the unit, such as `deadline = \"5s\"`"
                    .to_owned()
            ])
        );
        let ns = Duration::from_nanos(1_500_000_000).tokens(&quote!(p));
        assert_eq!(
            ns.to_string(),
            "p :: Duration :: from_nanos (1500000000u64)"
        );
    }

    #[test]
    fn values_are_checked_on_their_own() {
        assert_eq!(
            read::<u32>(AttributeKey::MaxAttempts, parse_quote!(0)).unwrap_err(),
            ["`max_attempts` counts the first attempt: it must be at least 1"]
        );
        assert_eq!(
            read::<u32>(AttributeKey::MaxInFlight, parse_quote!(-1)).unwrap_err(),
            ["`max_in_flight` counts the first attempt: it must be at least 1"]
        );
        assert_eq!(
            read::<u32>(AttributeKey::MaxInFlight, parse_quote!(1)),
            Ok(1)
        );
        assert_eq!(
            read::<f64>(AttributeKey::Multiplier, parse_quote!(0.5)).unwrap_err(),
            ["`multiplier` must be a number >= 1.0, found 0.5"]
        );
        assert_eq!(
            read::<Jitter>(AttributeKey::Jitter, parse_quote!("1.5")).unwrap_err(),
            ["a jitter fraction must be in [0, 1], found 1.5"]
        );
        assert_eq!(
            read::<Jitter>(AttributeKey::Jitter, parse_quote!("0.5")),
            Ok(Jitter::Fraction(0.5))
        );
        assert_eq!(
            read::<HedgeSpec>(AttributeKey::HedgeAfter, parse_quote!("P42")).unwrap_err(),
            [
                "`hedge_after` = \"P42\": the percentiles are \"p50\", \"p90\", \"p95\" or \
                 \"p99\" (\"The Tail at Scale\" hedges at the 95th)"
            ]
        );
        assert_eq!(
            read::<Mode>(AttributeKey::Mode, parse_quote!("Adaptive")),
            Ok(Mode::Adaptive)
        );
    }

    #[test]
    fn misspelt_values_say_what_they_meant() {
        assert_eq!(
            read::<Mode>(AttributeKey::Mode, parse_quote!("standrd")).unwrap_err(),
            [
                "unknown mode \"standrd\": did you mean \"standard\"? `mode` is \"standard\" or \
                 \"adaptive\""
            ]
        );
        assert_eq!(
            read::<Mode>(AttributeKey::Mode, parse_quote!("fast")).unwrap_err(),
            ["unknown mode \"fast\": `mode` is \"standard\" or \"adaptive\""]
        );
        assert_eq!(
            read::<Jitter>(AttributeKey::Jitter, parse_quote!("ful")).unwrap_err(),
            [
                "unknown jitter \"ful\": did you mean \"full\"? `jitter` is \"full\", \"equal\", \
                 \"none\", \"decorrelated\" or a number in [0, 1]"
            ]
        );
        for text in ["p955", "95th"] {
            assert_eq!(
                read::<HedgeSpec>(AttributeKey::HedgeAfter, parse_quote!(#text)).unwrap_err(),
                [format!(
                    "`hedge_after` = \"{text}\": did you mean \"p95\"? the percentiles are \
                     \"p50\", \"p90\", \"p95\" or \"p99\" (\"The Tail at Scale\" hedges at the \
                     95th)"
                )]
            );
        }
    }
}
