//! The attribute's keys and the parsing of its `key = value` list into [`Args`], each value read
//! and checked on its own by its type (`values`). Every error is collected (with the span of the
//! offending token) instead of stopping at the first, so a user sees all of them at once.
//!
//! The keys, their order and the forms of their values are `retry_keys`'s table
//! ([`AttributeKey`]); [`keys!`] gives each a field of [`Args`] and a value type, and does not
//! build unless every key of the table has one. `valid` then checks the values against each other
//! and against the function, in place, and `expand` reads them: there is no other copy of the
//! settings.

use crate::errors::{Errors, skip_to_comma};
use crate::values::{
    Arg, Breaker, Bucket, Budget, Clones, Emit, FnPath, GuardList, HedgeBudget, Name, Profile,
    Static, Value,
};
use proc_macro2::{Span, TokenStream};
use retry_keys::{AttributeKey, Behavior, HedgeSpec, Jitter, Mode};
use std::time::Duration;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Ident, Token};

/// Declares a field of [`Args`] and a value type for each key of the table, the dispatch from a
/// key to its value's parser, and the lists of the values `expand` passes on to the runtime's
/// builders.
///
/// One row per key: `field: ValueType, feeds, AttributeKey`, where `feeds` is `Keys` or `Site`
/// when the value goes to the builder method named as the key on the runtime's `Keys` or `Site`
/// (the value type then implements [`Emit`]), and `_` when `expand` reads it itself. The rows
/// are in the table's order, which is the order of the emitted calls.
macro_rules! keys {
    ($($field:ident: $ty:ty, $feeds:tt, $key:ident;)*) => {
        /// The attribute's arguments, each checked on its own; what was not written is `None`.
        #[derive(Default)]
        pub(crate) struct Args {
            $(pub(crate) $field: Option<Arg<$ty>>,)*
        }

        /// The keys of the rows, in their order.
        #[cfg(test)]
        const ROWS: &[AttributeKey] = &[$(AttributeKey::$key),*];

        impl Args {
            /// The values for the runtime's `Keys` builder, as `(method, value)`.
            pub(crate) fn keys(&self) -> Vec<(&'static str, &dyn Emit)> {
                let mut out: Vec<(&'static str, &dyn Emit)> = Vec::new();
                $(keys!(@emit $feeds Keys self.$field, AttributeKey::$key.name(), out);)*
                out
            }

            /// The values for the runtime's `Site` builder, as `(method, value)`.
            pub(crate) fn site(&self) -> Vec<(&'static str, &dyn Emit)> {
                let mut out: Vec<(&'static str, &dyn Emit)> = Vec::new();
                $(keys!(@emit $feeds Site self.$field, AttributeKey::$key.name(), out);)*
                out
            }

            /// Where `key` is written, if it is: the key's identifier and the value's tokens.
            pub(crate) fn spans(&self, key: AttributeKey) -> Option<(Span, Span)> {
                match key {
                    $(AttributeKey::$key => self.$field.as_ref().map(|a| (a.key.span(), a.span)),)*
                }
            }
        }

        /// Reads the value after `ident`, the identifier of `key`, with the parser of the key's
        /// value type, and stores it.
        fn dispatch(
            input: ParseStream<'_>,
            ident: &Ident,
            key: AttributeKey,
            args: &mut Args,
            errors: &mut Errors,
        ) -> syn::Result<()> {
            match key {
                $(AttributeKey::$key => {
                    if let Some(value) = <$ty as Value>::read(input, ident, key, errors)? {
                        set(&mut args.$field, value, errors);
                    }
                })*
            }
            Ok(())
        }
    };
    (@emit Keys Keys $slot:expr, $key:expr, $out:ident) => { keys!(@push $slot, $key, $out) };
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
    // field                        value type  feeds   key
    mode:                           Mode,       Keys,   Mode;
    behavior:                       Behavior,   Keys,   Behavior;
    max_attempts:                   u32,        Keys,   MaxAttempts;
    initial_backoff:                Duration,   Keys,   InitialBackoff;
    multiplier:                     f64,        Keys,   Multiplier;
    max_backoff:                    Duration,   Keys,   MaxBackoff;
    jitter:                         Jitter,     Keys,   Jitter;
    attempt_timeout:                Duration,   Keys,   AttemptTimeout;
    attempt_timeout_multiplier:     f64,        Keys,   AttemptTimeoutMultiplier;
    max_attempt_timeout:            Duration,   Keys,   MaxAttemptTimeout;
    deadline:                       Duration,   Keys,   Deadline;
    retry_on:                       FnPath,     _,      RetryOn;
    retry_after:                    FnPath,     _,      RetryAfter;
    retry_if_ok:                    FnPath,     _,      RetryIfOk;
    idempotent:                     bool,       _,      Idempotent;
    idempotent_if:                  Expr,       _,      IdempotentIf;
    idempotency_key:                bool,       Site,   IdempotencyKey;
    long_polling:                   bool,       Site,   LongPolling;
    partition:                      Name,       Site,   Partition;
    bucket:                         Bucket,     Site,   Bucket;
    rate_limiter:                   Static,     Site,   RateLimiter;
    budget:                         Budget,     Site,   Budget;
    breaker:                        Breaker,    Site,   Breaker;
    guard:                          GuardList,  _,      Guard;
    hedge_after:                    HedgeSpec,  _,      HedgeAfter;
    max_in_flight:                  u32,        _,      MaxInFlight;
    min_hedge_after:                Duration,   _,      MinHedgeAfter;
    max_hedge_after:                Duration,   _,      MaxHedgeAfter;
    hedge_budget:                   HedgeBudget, _,     HedgeBudget;
    on_retry:                       FnPath,     _,      OnRetry;
    profile:                        Profile,    Site,   Profile;
    aws_config:                     bool,       Site,   AwsConfig;
    clone:                          Clones,     _,      Clone;
    krate:                          syn::Path,  _,      Crate;
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

fn parse_entry(input: ParseStream<'_>, args: &mut Args, errors: &mut Errors) -> syn::Result<()> {
    let ident = Ident::parse_any(input).map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "expected an argument of `#[retry]` such as `max_attempts = 5`; valid keys: {}",
                key_list()
            ),
        )
    })?;
    let name = ident.to_string();
    if let Some(key) = AttributeKey::from_name(&name) {
        return dispatch(input, &ident, key, args, errors);
    }
    let msg = match AttributeKey::suggest(&name) {
        Some(s) => format!("unknown argument `{name}`: did you mean `{}`?", s.name()),
        None => format!(
            "unknown argument `{name}` of `#[retry]`; valid keys: {}",
            key_list()
        ),
    };
    errors.at(ident.span(), msg);
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
    AttributeKey::ALL
        .iter()
        .map(|k| format!("`{}`", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
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
        let keys: Vec<&str> = AttributeKey::ALL.iter().map(|k| k.name()).collect();
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

    /// The builder calls are emitted in the order of the table.
    #[test]
    fn the_rows_are_in_the_order_of_the_table() {
        assert_eq!(ROWS, AttributeKey::ALL);
    }
}
