//! The attribute's keys, declared once in [`keys!`], and the parsing of its `key = value` list
//! into [`Args`], each value read and checked on its own by its type (`values`). Every error is
//! collected (with the span of the offending token) instead of stopping at the first, so a user
//! sees all of them at once.
//!
//! `valid` then checks the values against each other and against the function, in place, and
//! `expand` reads them: there is no other copy of the settings.

use crate::errors::Errors;
use crate::values::{
    Arg, Attempts, Breaker, Bucket, Budget, Clones, Emit, Factor, FnPath, HedgeAfter, Jitter, Mode,
    Name, Nanos, Profile, Static, Value,
};
use proc_macro2::{TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Ident, Token};

/// Declares the keys: the fields of [`Args`], [`KEYS`] (for error messages and did-you-mean),
/// the dispatch from a key to its value's parser, and the lists of the values `expand` passes
/// on to the runtime's builders.
///
/// One row per key: `field [as "key"]: ValueType, feeds, "form of the value"`, where `feeds` is
/// `Policy` or `Site` when the value goes to the builder method of the same name on the runtime's
/// `Policy` or `Site` (the value type then implements [`Emit`]), and `_` when `expand` reads it
/// itself. The order is the order of the documentation's tables and of the emitted calls.
macro_rules! keys {
    ($($field:ident $(as $key:literal)?: $ty:ty, $feeds:tt, $form:literal;)*) => {
        /// Every key of the attribute, with the form of its value (for error messages).
        pub(crate) const KEYS: &[(&str, &str)] = &[$((keys!(@key $field $($key)?), $form)),*];

        /// The attribute's arguments, each checked on its own; what was not written is `None`.
        #[derive(Default)]
        pub(crate) struct Args {
            $(pub(crate) $field: Option<Arg<$ty>>,)*
        }

        impl Args {
            /// The values for the runtime's `Policy` builder, as `(method, value)`.
            pub(crate) fn policy(&self) -> Vec<(&'static str, &dyn Emit)> {
                let mut out: Vec<(&'static str, &dyn Emit)> = Vec::new();
                $(keys!(@emit $feeds Policy self.$field, keys!(@key $field $($key)?), out);)*
                out
            }

            /// The values for the runtime's `Site` builder, as `(method, value)`.
            pub(crate) fn site(&self) -> Vec<(&'static str, &dyn Emit)> {
                let mut out: Vec<(&'static str, &dyn Emit)> = Vec::new();
                $(keys!(@emit $feeds Site self.$field, keys!(@key $field $($key)?), out);)*
                out
            }
        }

        /// Reads the value after `key` with the parser of the key's value type, and stores it;
        /// `false` if there is no such key.
        fn dispatch(
            input: ParseStream<'_>,
            key: &Ident,
            args: &mut Args,
            errors: &mut Errors,
        ) -> syn::Result<bool> {
            let name = key.to_string();
            $(
                if name == keys!(@key $field $($key)?) {
                    if let Some(value) = <$ty as Value>::read(input, key, $form, errors)? {
                        set(&mut args.$field, value, errors);
                    }
                    return Ok(true);
                }
            )*
            Ok(false)
        }
    };
    (@key $field:ident) => { stringify!($field) };
    (@key $field:ident $key:literal) => { $key };
    (@emit Policy Policy $slot:expr, $key:expr, $out:ident) => { keys!(@push $slot, $key, $out) };
    (@emit Site Site $slot:expr, $key:expr, $out:ident) => { keys!(@push $slot, $key, $out) };
    (@emit $feeds:tt $wanted:ident $slot:expr, $key:expr, $out:ident) => {};
    (@push $slot:expr, $key:expr, $out:ident) => {
        if let Some(arg) = &$slot {
            let value: &dyn Emit = &arg.value;
            $out.push(($key, value));
        }
    };
}

keys! {
    // field                        value type  feeds   form of the value, for error messages
    mode:                           Mode,       Policy, "\"standard\" or \"adaptive\"";
    max_attempts:                   Attempts,   Policy, "an integer >= 1";
    initial_backoff:                Nanos,      Policy, "a duration such as \"100ms\"";
    multiplier:                     Factor,     Policy, "a number >= 1.0";
    max_backoff:                    Nanos,      Policy, "a duration such as \"20s\"";
    jitter:                         Jitter,     Policy, "\"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]";
    attempt_timeout:                Nanos,      Policy, "a duration such as \"2s\"";
    attempt_timeout_multiplier:     Factor,     Policy, "a number >= 1.0";
    max_attempt_timeout:            Nanos,      Policy, "a duration such as \"10s\"";
    deadline:                       Nanos,      Policy, "a duration such as \"30s\"";
    retry_on:                       FnPath,     _,      "a path to `fn(&E) -> bool` or `fn(&E) -> ErrorClass`";
    retry_after:                    FnPath,     _,      "a path to `fn(&E) -> Option<Duration>`";
    retry_if_ok:                    FnPath,     _,      "a path to `fn(&T) -> bool`";
    idempotent:                     bool,       _,      "`true` or `false`";
    idempotent_if:                  Expr,       _,      "a `bool` expression over the arguments";
    partition:                      Name,       Site,   "a string naming a shared partition";
    bucket:                         Bucket,     Site,   "a path to a `static TokenBucket`, or \"none\"";
    rate_limiter:                   Static,     Site,   "a path to a `static RateLimiter`";
    budget:                         Budget,     Site,   "a share of the requests such as \"20%\", or a path to a `static RetryBudget`";
    breaker:                        Breaker,    Site,   "a failure ratio such as \"50%\", or a path to a `static CircuitBreaker`";
    hedge_after:                    HedgeAfter, _,      "a duration such as \"50ms\", or a percentile of the function's latency: \"p50\", \"p90\", \"p95\" or \"p99\"";
    max_in_flight:                  Attempts,   _,      "an integer >= 2";
    min_hedge_after:                Nanos,      _,      "a duration such as \"5ms\"";
    max_hedge_after:                Nanos,      _,      "a duration such as \"500ms\"";
    on_retry:                       FnPath,     _,      "a path to `fn(&RetryEvent<'_, E>)`";
    profile:                        Profile,    Site,   "a string naming a config profile";
    clone:                          Clones,     _,      "a list of owned arguments: `clone(a, b)`";
    krate as "crate":               syn::Path,  _,      "a path to the runtime crate: `crate = ::my_retry`";
}

impl Args {
    /// The path of the runtime crate.
    pub(crate) fn krate(&self) -> syn::Path {
        self.krate
            .as_ref()
            .map_or_else(|| syn::parse_quote!(::retry_runtime), |k| k.value.clone())
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
    if dispatch(input, &key, args, errors)? {
        return Ok(());
    }
    let name = key.to_string();
    let msg = match suggest(&name) {
        Some(s) => format!("unknown argument `{name}`: did you mean `{s}`?"),
        None => format!(
            "unknown argument `{name}` of `#[retry]`; valid keys: {}",
            key_list()
        ),
    };
    errors.at(key.span(), msg);
    skip_to_comma(input);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys named in the first column of the Markdown table whose header starts with
    /// `| key |`, in order (a cell may name several: `` `idempotent` / `idempotent_if` ``).
    fn table_keys(text: &str) -> Vec<String> {
        let mut lines = text
            .lines()
            .map(|l| l.trim().trim_start_matches("///").trim())
            .skip_while(|l| !l.starts_with("| key |"));
        assert!(lines.next().is_some(), "no table of keys");
        lines.next(); // |---|---|
        lines
            .take_while(|l| l.starts_with('|'))
            .flat_map(|row| {
                let cell = row.split('|').nth(1).unwrap_or_default();
                cell.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(|k| k.split('(').next().unwrap_or_default().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn the_documented_keys_are_the_keys() {
        let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            table_keys(include_str!("lib.rs")),
            keys,
            "the table in lib.rs"
        );
        assert_eq!(
            table_keys(include_str!("../../README.md")),
            keys,
            "the table in README.md"
        );
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
