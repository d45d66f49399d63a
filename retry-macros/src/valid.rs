//! Rules across arguments and the function they are written on, checked on [`Args`] in place:
//! `expand` reads the same values.
//!
//! Defaults are the runtime's: a key left out is not emitted, and `Policy` fills it in (where
//! only one of `initial_backoff` and `max_backoff` is written, the other's default yields to it).

use crate::args::Args;
use crate::errors::Errors;
use crate::values::{Cloned, HedgeAfter, Mode};
use syn::{FnArg, Pat, Signature, Type};

/// Checks `args` against each other and against the function's signature.
pub(crate) fn check(args: &mut Args, sig: &Signature, errors: &mut Errors) {
    // Backoff bounds, when both are written.
    if let (Some(i), Some(m)) = (&args.initial_backoff, &args.max_backoff) {
        if m.value < i.value {
            errors.at(
                m.span,
                format!(
                    "`max_backoff` ({}) is shorter than `initial_backoff` ({}): the backoff \
                     grows from initial_backoff up to max_backoff",
                    m.value, i.value
                ),
            );
        }
    }

    // Attempt timeouts.
    let attempt_timeout = args.attempt_timeout.as_ref();
    if attempt_timeout.is_none() {
        for dependent in [
            args.attempt_timeout_multiplier.as_ref().map(|s| &s.key),
            args.max_attempt_timeout.as_ref().map(|s| &s.key),
        ]
        .into_iter()
        .flatten()
        {
            errors.at(
                dependent.span(),
                format!(
                    "`{dependent}` shapes the per-attempt timeout, but `attempt_timeout` is not \
                     set: add `attempt_timeout = \"...\"`"
                ),
            );
        }
    }
    for zero in [attempt_timeout, args.deadline.as_ref()]
        .into_iter()
        .flatten()
        .filter(|s| s.value.0 == 0)
    {
        errors.at(
            zero.span,
            format!(
                "`{}` of zero would fail every call before it starts: give a positive duration \
                 or leave it out",
                zero.key
            ),
        );
    }
    if let (Some(t), Some(m)) = (attempt_timeout, &args.max_attempt_timeout) {
        if m.value < t.value {
            errors.at(
                m.span,
                format!(
                    "`max_attempt_timeout` ({}) is shorter than `attempt_timeout` ({}): it caps \
                     the attempt timeout as the multiplier grows it",
                    m.value, t.value
                ),
            );
        }
    }
    if let (Some(t), Some(d)) = (attempt_timeout, &args.deadline) {
        if t.value > d.value && d.value.0 > 0 {
            errors.at(
                t.span,
                format!(
                    "`attempt_timeout` ({}) is longer than `deadline` ({}): no attempt can run \
                     past the deadline",
                    t.value, d.value
                ),
            );
        }
    }

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
    check_hedging(args, sig, errors);
}

/// Hedging: its keys hold together, the function is always idempotent, and its body can run
/// while another attempt of the same call runs.
fn check_hedging(args: &Args, sig: &Signature, errors: &mut Errors) {
    let Some(hedge) = &args.hedge_after else {
        for key in [
            args.max_in_flight.as_ref().map(|a| &a.key),
            args.min_hedge_after.as_ref().map(|a| &a.key),
            args.max_hedge_after.as_ref().map(|a| &a.key),
        ]
        .into_iter()
        .flatten()
        {
            errors.at(
                key.span(),
                format!(
                    "`{key}` shapes hedging, but `hedge_after` is not set: add `hedge_after = \
                     \"50ms\"` (or a percentile such as \"p95\")"
                ),
            );
        }
        return;
    };
    if let Some(n) = &args.max_in_flight {
        if n.value.0 < 2 {
            errors.at(
                n.span,
                "`max_in_flight = 1` would never hedge: it counts the attempt and its hedges \
                 in flight at once, so give at least 2 (the default), or remove `hedge_after`",
            );
        }
        if let Some(m) = &args.max_attempts {
            if n.value.0 > m.value.0 {
                errors.at(
                    n.span,
                    format!(
                        "`max_in_flight` ({}) is more than `max_attempts` ({}): hedges and \
                         retries count together against max_attempts, so no more than {} \
                         attempts can ever be in flight",
                        n.value.0, m.value.0, m.value.0
                    ),
                );
            }
        }
    }
    match hedge.value {
        HedgeAfter::Fixed(_) => {
            for bound in [&args.min_hedge_after, &args.max_hedge_after]
                .into_iter()
                .flatten()
            {
                errors.at(
                    bound.key.span(),
                    format!(
                        "`{}` bounds a percentile's delay, but `hedge_after` is a fixed \
                         duration: remove it, or write `hedge_after = \"p95\"`",
                        bound.key
                    ),
                );
            }
        }
        HedgeAfter::Percentile(_) => {
            if let (Some(min), Some(max)) = (&args.min_hedge_after, &args.max_hedge_after) {
                if max.value < min.value {
                    errors.at(
                        max.span,
                        format!(
                            "`max_hedge_after` ({}) is shorter than `min_hedge_after` ({}): the \
                             percentile's delay is kept between them",
                            max.value, min.value
                        ),
                    );
                }
            }
        }
    }
    let why = "hedging sends another copy of a request while the first may still reach the \
               server";
    if args.idempotent.as_ref().is_some_and(|i| !i.value) {
        errors.at(
            hedge.key.span(),
            format!(
                "{why}, so only an idempotent function can be hedged, and this one says \
                 `idempotent = false`: remove `hedge_after`, or make the request safe to repeat \
                 (an idempotency key) and remove `idempotent = false`"
            ),
        );
    }
    if let Some(cond) = &args.idempotent_if {
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
