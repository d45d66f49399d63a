//! The value of each key: how it is read from the attribute and checked on its own (each type's
//! [`Value`] impl), and how the expansion passes it to the runtime's builders (its [`Emit`]
//! impl). Errors go to [`Errors`] with the span of the offending tokens.

use crate::errors::Errors;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
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
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self>;

    /// Reads what follows the key: `= value` (all keys but `clone`).
    fn read(
        input: ParseStream<'_>,
        key: &Ident,
        form: &str,
        errors: &mut Errors,
    ) -> syn::Result<Option<Arg<Self>>> {
        assigned(input, key, form, errors)
    }
}

/// `= expr` after `key`, checked by `T`.
fn assigned<T: Value>(
    input: ParseStream<'_>,
    key: &Ident,
    form: &str,
    errors: &mut Errors,
) -> syn::Result<Option<Arg<T>>> {
    let name = key.to_string();
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
    Ok(T::from_expr(&expr, &name, form, errors).map(|value| Arg {
        value,
        key: key.clone(),
        span: expr.span(),
    }))
}

/// Reports a value of the wrong kind for `key`.
fn wrong<T>(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<T> {
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

/// `mode`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Standard,
    Adaptive,
}

impl Value for Mode {
    fn from_expr(expr: &Expr, _: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        let found = str_lit(expr);
        match found.as_deref() {
            Some("standard") => Some(Mode::Standard),
            Some("adaptive") => Some(Mode::Adaptive),
            Some(other) => {
                errors.on(
                    expr,
                    format!("unknown mode \"{other}\": `mode` is \"standard\" or \"adaptive\""),
                );
                None
            }
            None => {
                let msg = match path(expr).and_then(|p| p.path.get_ident().map(ToString::to_string))
                {
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
}

/// `max_attempts`: a count of attempts, the first included, at least 1.
#[derive(Clone, Copy)]
pub(crate) struct Attempts(pub(crate) u32);

impl Value for Attempts {
    fn from_expr(expr: &Expr, key: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        let value = match lit(expr) {
            Some(Lit::Int(i)) => i.base10_parse::<u64>().ok(),
            _ => None,
        };
        let too_few = format!("`{key}` counts the first attempt: it must be at least 1");
        match value {
            Some(0) => {
                errors.on(expr, too_few);
                None
            }
            Some(n) => match u32::try_from(n) {
                Ok(n) => Some(Attempts(n)),
                Err(_) => {
                    errors.on(expr, format!("`{key}` is too large (at most 4294967295)"));
                    None
                }
            },
            None if number(expr).is_some_and(|v| v < 1.0) => {
                errors.on(expr, too_few);
                None
            }
            None => {
                let msg = match str_lit(expr).map(|t| t.trim().parse::<u32>()) {
                    Some(Ok(n)) => format!("`{key}` takes an integer: write `{key} = {n}`"),
                    _ => format!("`{key}` takes an integer >= 1, such as `{key} = 3`"),
                };
                errors.on(expr, msg);
                None
            }
        }
    }
}

/// A growth factor: a finite number >= 1.0.
#[derive(Clone, Copy)]
pub(crate) struct Factor(pub(crate) f64);

impl Value for Factor {
    fn from_expr(expr: &Expr, key: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        match number(expr) {
            Some(v) if v.is_finite() && v >= 1.0 => Some(Factor(v)),
            Some(v) => {
                errors.on(expr, format!("`{key}` must be a number >= 1.0, found {v}"));
                None
            }
            None => {
                let msg = match str_lit(expr).map(|t| t.trim().parse::<f64>()) {
                    Some(Ok(v)) => format!("`{key}` takes a number: write `{key} = {v:?}`"),
                    _ => format!("`{key}` takes a number >= 1.0, such as `{key} = 2.0`"),
                };
                errors.on(expr, msg);
                None
            }
        }
    }
}

/// A duration in whole nanoseconds, written as a string with a unit.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Nanos(pub(crate) u64);

impl std::fmt::Display for Nanos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", std::time::Duration::from_nanos(self.0))
    }
}

impl Value for Nanos {
    fn from_expr(expr: &Expr, key: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        let Some(text) = str_lit(expr) else {
            let hint = match number(expr) {
                Some(v) => format!(": write the unit, such as `{key} = \"{v}s\"`"),
                None => format!(", such as `{key} = \"150ms\"`"),
            };
            errors.on(expr, format!("`{key}` takes a duration string{hint}"));
            return None;
        };
        match parse_duration(&text) {
            Ok(ns) => Some(Nanos(ns)),
            Err(why) => {
                errors.on(
                    expr,
                    format!(
                        "`{key}` = \"{text}\": {why}; write a number and a unit, such as \
                         \"500us\", \"150ms\", \"2s\", \"1.5s\" or \"1m\" (units: ns, us, ms, s, \
                         m, h)"
                    ),
                );
                None
            }
        }
    }
}

/// `jitter`.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Jitter {
    Full,
    Equal,
    None,
    Decorrelated,
    Fraction(f64),
}

impl Value for Jitter {
    fn from_expr(expr: &Expr, _: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        if let Some(s) = str_lit(expr) {
            return match s.as_str() {
                "full" => Some(Jitter::Full),
                "equal" => Some(Jitter::Equal),
                "none" => Some(Jitter::None),
                "decorrelated" => Some(Jitter::Decorrelated),
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
            Some(j) if (0.0..=1.0).contains(&j) => Some(Jitter::Fraction(j)),
            Some(j) => {
                errors.on(
                    expr,
                    format!("a jitter fraction must be in [0, 1], found {j}"),
                );
                None
            }
            None => {
                errors.on(
                    expr,
                    "`jitter` takes \"full\", \"equal\", \"none\", \"decorrelated\" or a number \
                     in [0, 1]",
                );
                None
            }
        }
    }
}

/// `hedge_after`: a fixed delay, or a percentile of the function's own latency.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum HedgeAfter {
    Fixed(Nanos),
    Percentile(u8),
}

impl Value for HedgeAfter {
    fn from_expr(expr: &Expr, key: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        let percentiles = "\"p50\", \"p90\", \"p95\" or \"p99\"";
        let Some(text) = str_lit(expr) else {
            errors.on(
                expr,
                format!(
                    "`{key}` takes a string: a duration such as `{key} = \"50ms\"`, or a \
                     percentile of the function's latency: {percentiles}"
                ),
            );
            return None;
        };
        let trimmed = text.trim();
        if let Some(n) = trimmed.strip_prefix(['p', 'P']) {
            return match n.parse::<u8>() {
                Ok(p @ (50 | 90 | 95 | 99)) => Some(HedgeAfter::Percentile(p)),
                _ => {
                    errors.on(
                        expr,
                        format!(
                            "`{key}` = \"{text}\": the percentiles are {percentiles} (\"The \
                             Tail at Scale\" hedges at the 95th)"
                        ),
                    );
                    None
                }
            };
        }
        let ns = Nanos::from_expr(expr, key, "", errors)?;
        if ns.0 == 0 {
            errors.on(
                expr,
                format!(
                    "`{key}` of zero would send every request twice at once: give the delay \
                     after which a slow attempt gets a copy, such as \"50ms\", or a percentile \
                     such as \"p95\""
                ),
            );
            return None;
        }
        Some(HedgeAfter::Fixed(ns))
    }
}

/// A function named by path, which the expansion calls.
pub(crate) struct FnPath(pub(crate) ExprPath);

impl Value for FnPath {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        path(expr)
            .map(FnPath)
            .or_else(|| wrong(expr, key, form, errors))
    }
}

/// A `static` named by path, which the runtime borrows for the program's lifetime.
pub(crate) struct Static(pub(crate) ExprPath);

impl Value for Static {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        path(expr)
            .map(Static)
            .or_else(|| wrong(expr, key, form, errors))
    }
}

/// `bucket`: a path to a `static TokenBucket`, or `"none"` (no bucket: retries bounded only by
/// the attempts, the deadline and a budget).
pub(crate) enum Bucket {
    Static(Static),
    None(proc_macro2::Span),
}

impl Value for Bucket {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        if let Some(p) = path(expr) {
            return Some(Bucket::Static(Static(p)));
        }
        match str_lit(expr) {
            Some(text) if text == "none" => Some(Bucket::None(syn::spanned::Spanned::span(expr))),
            Some(text) => {
                errors.on(
                    expr,
                    format!(
                        "`{key}` takes a path to a `static TokenBucket`, or \"none\" for no \
                         bucket; found {text:?}"
                    ),
                );
                None
            }
            None => wrong(expr, key, form, errors),
        }
    }
}

/// `budget`: a path to a `static RetryBudget`, or a share of the requests written `"20%"`
/// (that ratio, a floor of 10 retries per second, a 10 s window).
pub(crate) enum Budget {
    Static(Static),
    /// The ratio (0.2 for `"20%"`), and where it was written.
    Share(f64, proc_macro2::Span),
}

/// `"N%"` as a number of percent.
fn percent(text: &str) -> Option<f64> {
    text.trim()
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
}

impl Value for Budget {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        if let Some(p) = path(expr) {
            return Some(Budget::Static(Static(p)));
        }
        let Some(text) = str_lit(expr) else {
            return wrong(expr, key, form, errors);
        };
        match percent(&text) {
            Some(v) if v.is_finite() && v > 0.0 && v <= 100_000.0 => {
                Some(Budget::Share(v / 100.0, syn::spanned::Spanned::span(expr)))
            }
            _ => {
                errors.on(
                    expr,
                    format!(
                        "`{key}` takes a share of the requests above 0 %, such as `{key} = \"20%\"`, \
                         or a path to a `static RetryBudget`; found {text:?}"
                    ),
                );
                None
            }
        }
    }
}

/// `breaker`: a path to a `static CircuitBreaker`, or a failure ratio written `"50%"` (that
/// ratio and the breaker's other defaults).
pub(crate) enum Breaker {
    Static(Static),
    /// The ratio (0.5 for `"50%"`), and where it was written.
    Ratio(f64, proc_macro2::Span),
}

impl Value for Breaker {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        if let Some(p) = path(expr) {
            return Some(Breaker::Static(Static(p)));
        }
        let Some(text) = str_lit(expr) else {
            return wrong(expr, key, form, errors);
        };
        match percent(&text) {
            Some(v) if v.is_finite() && v > 0.0 && v <= 100.0 => {
                Some(Breaker::Ratio(v / 100.0, syn::spanned::Spanned::span(expr)))
            }
            _ => {
                errors.on(
                    expr,
                    format!(
                        "`{key}` takes the share of failed attempts that opens the breaker, \
                         above 0 % and at most 100 %, such as `{key} = \"50%\"`, or a path to a \
                         `static CircuitBreaker`; found {text:?}"
                    ),
                );
                None
            }
        }
    }
}

impl Value for bool {
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        match lit(expr) {
            Some(Lit::Bool(b)) => Some(b.value),
            _ => wrong(expr, key, form, errors),
        }
    }
}

/// `idempotent_if`: any expression; the type checker sees that it is a `bool`.
impl Value for Expr {
    fn from_expr(expr: &Expr, _: &str, _: &str, _: &mut Errors) -> Option<Self> {
        Some(expr.clone())
    }
}

/// A non-empty name.
pub(crate) struct Name(pub(crate) LitStr);

impl Value for Name {
    fn from_expr(expr: &Expr, key: &str, _: &str, errors: &mut Errors) -> Option<Self> {
        match lit(expr) {
            Some(Lit::Str(s)) if s.value().trim().is_empty() => {
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
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
        let Name(s) = Name::from_expr(expr, key, form, errors)?;
        let ok = s
            .value()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if ok {
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
    fn from_expr(expr: &Expr, key: &str, form: &str, errors: &mut Errors) -> Option<Self> {
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
        crate_path(expr).or_else(|| wrong(expr, key, form, errors))
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
    fn from_expr(expr: &Expr, _: &str, _: &str, errors: &mut Errors) -> Option<Self> {
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
        key: &Ident,
        form: &str,
        errors: &mut Errors,
    ) -> syn::Result<Option<Arg<Self>>> {
        if input.peek(Token![=]) {
            return assigned(input, key, form, errors);
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
            key: key.clone(),
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

/// A value the expansion passes to the runtime's `Policy` or `Site` builder.
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

impl Emit for Attempts {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.0.to_token_stream()
    }
}

impl Emit for Factor {
    fn tokens(&self, _: &TokenStream) -> TokenStream {
        self.0.to_token_stream()
    }
}

impl Emit for Nanos {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        let ns = self.0;
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

impl Emit for Budget {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Budget::Static(s) => {
                let path = s.tokens(p);
                quote_spanned!(s.span()=> #p::BudgetRef::Static(#path))
            }
            Budget::Share(ratio, span) => quote_spanned!(*span=> #p::BudgetRef::Share(#ratio)),
        }
    }

    fn span(&self) -> Span {
        match self {
            Budget::Static(s) => s.span(),
            Budget::Share(_, span) => *span,
        }
    }
}

impl Emit for Breaker {
    fn tokens(&self, p: &TokenStream) -> TokenStream {
        match self {
            Breaker::Static(s) => {
                let path = s.tokens(p);
                quote_spanned!(s.span()=> #p::BreakerRef::Static(#path))
            }
            Breaker::Ratio(ratio, span) => quote_spanned!(*span=> #p::BreakerRef::Ratio(#ratio)),
        }
    }

    fn span(&self) -> Span {
        match self {
            Breaker::Static(s) => s.span(),
            Breaker::Ratio(_, span) => *span,
        }
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
}
