//! Rules across arguments and the function they are written on; the result is the [`Model`]
//! that `expand` turns into tokens.

use crate::args::{Arg, Args, Errors, JitterArg, ModeArg, Nanos};
use proc_macro2::Span;
use syn::{Expr, ExprPath, FnArg, Ident, LitStr, Pat, Signature, Type};

const DEFAULT_INITIAL_BACKOFF: Nanos = Nanos(1_000_000_000);
const DEFAULT_MAX_BACKOFF: Nanos = Nanos(20_000_000_000);

/// The checked settings of one `#[retry]` function.
pub(crate) struct Model {
    pub(crate) krate: syn::Path,
    pub(crate) mode: Option<ModeArg>,
    pub(crate) max_attempts: Option<u32>,
    /// The backoff bounds in effect, when they differ from the runtime's defaults.
    pub(crate) initial_backoff: Option<Nanos>,
    pub(crate) max_backoff: Option<Nanos>,
    pub(crate) multiplier: Option<f64>,
    pub(crate) jitter: Option<JitterArg>,
    pub(crate) attempt_timeout: Option<Nanos>,
    pub(crate) attempt_timeout_multiplier: Option<f64>,
    pub(crate) max_attempt_timeout: Option<Nanos>,
    pub(crate) deadline: Option<Nanos>,
    /// The key that arms a timer (`attempt_timeout`, else `deadline`), to point a missing
    /// `From<TimedOut>` at.
    pub(crate) timer_key: Option<Span>,
    pub(crate) retry_on: Option<ExprPath>,
    pub(crate) retry_after: Option<ExprPath>,
    pub(crate) retry_if_ok: Option<ExprPath>,
    pub(crate) on_retry: Option<ExprPath>,
    pub(crate) idempotent: Idempotency,
    pub(crate) partition: Option<LitStr>,
    pub(crate) bucket: Option<ExprPath>,
    pub(crate) rate_limiter: Option<ExprPath>,
    pub(crate) profile: Option<LitStr>,
    pub(crate) clone: Vec<Cloned>,
}

/// An argument in `clone(...)`.
pub(crate) struct Cloned {
    pub(crate) name: Ident,
    /// Declared `mut`: each attempt's copy is mutable too.
    pub(crate) mutable: bool,
}

pub(crate) enum Idempotency {
    Always,
    Never,
    If(Expr),
}

fn value<T: Clone>(slot: Option<&Arg<T>>) -> Option<T> {
    slot.map(|s| s.value.clone())
}

/// Checks `args` against each other and against the function's signature.
pub(crate) fn check(args: Args, sig: &Signature, errors: &mut Errors) -> Model {
    // Backoff bounds, on the values in effect: a side left unwritten yields to the other.
    let (mut initial, mut max) = (None, None);
    match (&args.initial_backoff, &args.max_backoff) {
        (Some(i), Some(m)) if m.value < i.value => errors.at(
            m.span,
            format!(
                "`max_backoff` ({}) is shorter than `initial_backoff` ({}): the backoff \
                 grows from initial_backoff up to max_backoff",
                m.value, i.value
            ),
        ),
        (Some(i), None) if i.value > DEFAULT_MAX_BACKOFF => {
            initial = Some(i.value);
            max = Some(i.value);
        }
        (None, Some(m)) if m.value < DEFAULT_INITIAL_BACKOFF => {
            initial = Some(m.value);
            max = Some(m.value);
        }
        _ => {
            initial = value(args.initial_backoff.as_ref());
            max = value(args.max_backoff.as_ref());
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
    let idempotent = match (&args.idempotent, args.idempotent_if) {
        (Some(i), Some(cond)) => {
            errors.at(
                cond.key.span(),
                format!(
                    "`idempotent_if` decides idempotency per call, so it cannot be combined with \
                     `idempotent = {}`: keep one of them",
                    i.value
                ),
            );
            Idempotency::Always
        }
        (_, Some(cond)) => Idempotency::If(cond.value),
        (Some(i), None) if !i.value => Idempotency::Never,
        _ => Idempotency::Always,
    };

    // Shared state.
    if let (Some(b), Some(p)) = (&args.bucket, &args.partition) {
        errors.at(
            b.key.span(),
            format!(
                "`bucket` names the function's own token bucket, but `partition = \"{}\"` already \
                 gives it the partition's: keep one of them",
                p.value.value()
            ),
        );
    }
    if let Some(l) = &args.rate_limiter {
        if !matches!(args.mode.as_ref().map(|m| m.value), Some(ModeArg::Adaptive)) {
            errors.at(
                l.key.span(),
                "`rate_limiter` paces sends in adaptive mode only: add `mode = \"adaptive\"`",
            );
        }
    }

    let clone = check_clones(
        &args.clone.map(|c| c.value).unwrap_or_default(),
        sig,
        errors,
    );

    Model {
        krate: args
            .krate
            .map_or_else(|| syn::parse_quote!(::retry_runtime), |k| k.value),
        mode: value(args.mode.as_ref()),
        max_attempts: value(args.max_attempts.as_ref()),
        initial_backoff: initial,
        max_backoff: max,
        multiplier: value(args.multiplier.as_ref()),
        jitter: value(args.jitter.as_ref()),
        attempt_timeout: value(attempt_timeout),
        attempt_timeout_multiplier: value(args.attempt_timeout_multiplier.as_ref()),
        max_attempt_timeout: value(args.max_attempt_timeout.as_ref()),
        deadline: value(args.deadline.as_ref()),
        timer_key: attempt_timeout
            .or(args.deadline.as_ref())
            .map(|s| s.key.span()),
        retry_on: value(args.retry_on.as_ref()),
        retry_after: value(args.retry_after.as_ref()),
        retry_if_ok: value(args.retry_if_ok.as_ref()),
        on_retry: value(args.on_retry.as_ref()),
        idempotent,
        partition: value(args.partition.as_ref()),
        bucket: value(args.bucket.as_ref()),
        rate_limiter: value(args.rate_limiter.as_ref()),
        profile: value(args.profile.as_ref()),
        clone,
    }
}

/// Every name in `clone(...)` must be an owned argument of the function.
fn check_clones(clone: &[Ident], sig: &Signature, errors: &mut Errors) -> Vec<Cloned> {
    let mut args = Vec::new();
    for input in &sig.inputs {
        if let FnArg::Typed(t) = input {
            if let Pat::Ident(p) = &*t.pat {
                args.push((p, &*t.ty));
            }
        }
    }
    let mut out = Vec::new();
    for (i, c) in clone.iter().enumerate() {
        let arg = args.iter().find(|(p, _)| p.ident == *c);
        if c == "self" {
            errors.at(
                c.span(),
                "`self` cannot be listed in `clone(...)`: take `&self` (or `self: Arc<Self>`, \
                 which each attempt borrows) instead",
            );
        } else if clone[..i].contains(c) {
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
                out.push(Cloned {
                    name: c.clone(),
                    mutable: pat.mutability.is_some(),
                });
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
    out
}
