//! Rules across arguments and the function they are written on, checked on [`Args`] in place:
//! `expand` reads the same values.
//!
//! The rules between values are `retry_keys`'s (`Values::problems`), the ones the runtime holds
//! the environment, the config file and a `Policy` to; each problem goes on the key it is about.
//! The rules here need the attribute's syntax or the function: idempotency, shared state,
//! `clone(...)`, and what hedging asks of the function.
//!
//! Defaults are the runtime's: a key left out is not emitted, and the runtime fills it in (where
//! only one of `initial_backoff` and `max_backoff` is written, the other's default yields to it).

use crate::args::Args;
use crate::errors::Errors;
use crate::values::{Arg, Cloned};
use proc_macro2::Span;
use retry_keys::{Mode, Place, Problem, Values};
use syn::{FnArg, Pat, Signature, Type};

/// Checks `args` against each other and against the function's signature.
pub(crate) fn check(args: &mut Args, sig: &Signature, errors: &mut Errors) {
    // The values against each other; those of hedging are reported with its other rules.
    let (hedging, others): (Vec<Problem>, Vec<Problem>) = values(args)
        .problems()
        .into_iter()
        .partition(|p| p.key().is_hedging());
    report(args, &others, errors);

    // Idempotency.
    if let (Some(i), Some(cond)) = (&args.idempotent, &args.idempotent_if) {
        errors.at(
            cond.key.span(),
            format!(
                "`idempotent_if` decides idempotency per call, so it cannot be combined with \
                 `idempotent = {}`: keep one of them",
                i.value
            ),
        );
    }

    if let (Some(k), Some(cond)) = (&args.idempotency_key, &args.idempotent_if) {
        if k.value {
            errors.at(
                cond.key.span(),
                "`idempotency_key = true` sends a key with every attempt, which makes every call \
                 safe to repeat, so `idempotent_if` has nothing to decide: keep one of them",
            );
        }
    }

    // Shared state.
    if let (Some(b), Some(p)) = (&args.bucket, &args.partition) {
        errors.at(
            b.key.span(),
            format!(
                "`bucket` names the function's own token bucket, but `partition = \"{}\"` already \
                 gives it the partition's: keep one of them",
                p.value.0.value()
            ),
        );
    }
    if let Some(l) = &args.rate_limiter {
        if !matches!(args.mode.as_ref().map(|m| m.value), Some(Mode::Adaptive)) {
            errors.at(
                l.key.span(),
                "`rate_limiter` paces sends in adaptive mode only: add `mode = \"adaptive\"`",
            );
        }
    }

    if let Some(clone) = &mut args.clone {
        check_clones(&mut clone.value.0, sig, errors);
    }
    report(args, &hedging, errors);
    check_hedging(args, sig, errors);
}

/// The values written for the keys the rules are about.
fn values(args: &Args) -> Values {
    fn value<T: Copy>(arg: &Option<Arg<T>>) -> Option<T> {
        arg.as_ref().map(|a| a.value)
    }
    Values {
        mode: value(&args.mode),
        behavior: value(&args.behavior),
        max_attempts: value(&args.max_attempts),
        initial_backoff: value(&args.initial_backoff),
        multiplier: value(&args.multiplier),
        max_backoff: value(&args.max_backoff),
        jitter: value(&args.jitter),
        attempt_timeout: value(&args.attempt_timeout),
        attempt_timeout_multiplier: value(&args.attempt_timeout_multiplier),
        max_attempt_timeout: value(&args.max_attempt_timeout),
        deadline: value(&args.deadline),
        hedge_after: value(&args.hedge_after),
        max_in_flight: value(&args.max_in_flight),
        min_hedge_after: value(&args.min_hedge_after),
        max_hedge_after: value(&args.max_hedge_after),
        hedge_budget: value(&args.hedge_budget).map(|b| b.0),
    }
}

/// Each problem on the key it is about: its identifier or its value.
fn report(args: &Args, problems: &[Problem], errors: &mut Errors) {
    for problem in problems {
        let (key, value) = args
            .spans(problem.key().attribute())
            .unwrap_or((Span::call_site(), Span::call_site()));
        let span = match problem.place() {
            Place::Key => key,
            Place::Value => value,
        };
        errors.at(span, problem.message());
    }
}

/// Hedging: the function is always idempotent, and its body can run while another attempt of
/// the same call runs (how its keys hold together is among the rules between values).
fn check_hedging(args: &Args, sig: &Signature, errors: &mut Errors) {
    let Some(hedge) = &args.hedge_after else {
        return;
    };
    let why = "hedging sends another copy of a request while the first may still reach the \
               server";
    // An idempotency key on every attempt (and every hedge) makes the copies safe.
    let keyed = args.idempotency_key.as_ref().is_some_and(|k| k.value);
    if !keyed && args.idempotent.as_ref().is_some_and(|i| !i.value) {
        errors.at(
            hedge.key.span(),
            format!(
                "{why}, so only an idempotent function can be hedged, and this one says \
                 `idempotent = false`: remove `hedge_after`, or make the request safe to repeat \
                 with an idempotency key on each attempt (`idempotency_key = true`)"
            ),
        );
    }
    if let (false, Some(cond)) = (keyed, &args.idempotent_if) {
        errors.at(
            hedge.key.span(),
            format!(
                "{why}, so only a function that is always idempotent can be hedged, and \
                 `idempotent_if = {}` says some calls are not: remove `hedge_after`, or \
                 `idempotent_if` if every call is safe to repeat",
                quote::ToTokens::to_token_stream(&cond.value)
            ),
        );
    }
    if let Some(r) = &args.retry_if_ok {
        errors.at(
            r.key.span(),
            "`retry_if_ok` repeats an attempt that answered, and `hedge_after` races copies of \
             one that has not: a function polls or hedges, not both. Keep one of them",
        );
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) if mutable_receiver(&r.kind) => {
                errors.on(
                    r,
                    "`hedge_after` runs attempts of one call at the same time, and each borrows \
                     `self`: a method taking `&mut self` cannot be hedged. Take `&self` (keep \
                     what the body changes behind a lock or an atomic), or remove `hedge_after`",
                );
            }
            FnArg::Typed(t) => {
                if let Type::Reference(r) = &*t.ty {
                    if r.mutability.is_some() {
                        let name = quote::ToTokens::to_token_stream(&t.pat);
                        errors.on(
                            t,
                            format!(
                                "`hedge_after` runs attempts of one call at the same time, and \
                                 each borrows `{name}`: a `&mut` argument cannot be shared \
                                 between them. Take a shared reference (with a lock inside if \
                                 the body changes it), or remove `hedge_after`"
                            ),
                        );
                    }
                }
            }
            FnArg::Receiver(_) => {}
        }
    }
}

/// Every name in `clone(...)` must be an owned argument of the function; notes which are `mut`.
fn check_clones(clone: &mut [Cloned], sig: &Signature, errors: &mut Errors) {
    let mut args = Vec::new();
    for input in &sig.inputs {
        if let FnArg::Typed(t) = input {
            if let Pat::Ident(p) = &*t.pat {
                args.push((p, &*t.ty));
            }
        }
    }
    for i in 0..clone.len() {
        let c = &clone[i].name;
        let arg = args.iter().find(|(p, _)| p.ident == *c);
        if c == "self" {
            errors.at(
                c.span(),
                "`self` cannot be listed in `clone(...)`: take `&self` (or `self: Arc<Self>`, \
                 which each attempt borrows) instead",
            );
        } else if clone[..i].iter().any(|earlier| earlier.name == *c) {
            errors.at(c.span(), format!("`{c}` is listed twice in `clone(...)`"));
        } else if let Some((pat, ty)) = arg {
            if let Type::Reference(_) = ty {
                errors.at(
                    c.span(),
                    format!(
                        "`{c}` is a reference, which every attempt can use as it is: remove it \
                         from `clone(...)`"
                    ),
                );
            } else {
                clone[i].mutable = pat.mutability.is_some();
            }
        } else {
            let list = args
                .iter()
                .map(|(p, _)| format!("`{}`", p.ident))
                .collect::<Vec<_>>()
                .join(", ");
            let have = if list.is_empty() {
                "the function has no named arguments".to_owned()
            } else {
                format!("its arguments are {list}")
            };
            errors.at(
                c.span(),
                format!("`clone({c})` names no argument of the function: {have}"),
            );
        }
    }
}

/// `&mut self`, or `self: &mut Self`.
fn mutable_receiver(kind: &syn::ReceiverKind) -> bool {
    match kind {
        syn::ReceiverKind::Reference(_, _, m) => m.is_some(),
        syn::ReceiverKind::Typed(_, ty) => {
            matches!(&**ty, Type::Reference(r) if r.mutability.is_some())
        }
        _ => false,
    }
}
