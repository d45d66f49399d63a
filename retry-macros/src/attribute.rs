//! The attribute as a whole: the item under it read as a function, its arguments parsed and
//! checked, its body found and rewritten; or the function as written with every error.

use crate::errors::Errors;
use crate::{args, expand, shape, valid};
use quote::ToTokens;
use syn::spanned::Spanned;

/// The expansion of `#[retry(attr)]` on `item`.
pub(crate) fn expand(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => return with_errors(item.clone(), &not_a_function(item, e)),
    };
    let mut errors = Errors::default();
    let mut args = args::parse(attr, &mut errors);
    valid::check(&mut args, &func.sig, &mut errors);
    let name = func.sig.ident.to_string();
    let slot = shape::locate(&mut func, &mut errors);
    if let (Some(slot), Some(timeout)) = (&slot, &args.attempt_timeout) {
        if slot.wrapper == shape::Wrapper::Blocking {
            errors.at(
                timeout.key.span(),
                "`attempt_timeout` cannot cut off a blocking function: a plain `fn` runs on its \
                 thread until it returns. Give the call itself a timeout (a socket or client \
                 timeout), use `deadline` (checked between attempts), or make the function an \
                 `async fn`",
            );
        }
    }
    if let (Some(slot), Some(hedge)) = (&slot, &args.hedge_after) {
        if slot.wrapper == shape::Wrapper::Blocking {
            errors.at(
                hedge.key.span(),
                "`hedge_after` runs a copy of a slow attempt beside it, which a plain `fn` \
                 cannot do on its one thread: make the function an `async fn`, or remove \
                 `hedge_after`",
            );
        }
    }
    match (errors.into_result(), slot) {
        (Ok(()), Some(slot)) => {
            expand::expand(&args, &name, slot);
            func.into_token_stream()
        }
        (Err(e), _) => with_errors(item, &e),
        (Ok(()), None) => unreachable!("`locate` reports why it found no body"),
    }
}

/// Why the item under `#[retry]` is not a function it can rewrite.
fn not_a_function(item: proc_macro2::TokenStream, parse_error: syn::Error) -> syn::Error {
    if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
        if f.default.is_none() {
            return syn::Error::new(
                f.sig.fn_token.span,
                "`#[retry]` needs the function's body: a trait method without a default body has \
                 nothing to retry; write `#[retry]` on the method in each `impl`",
            );
        }
    }
    let (span, what) = match syn::parse2::<syn::Item>(item) {
        Ok(syn::Item::Impl(i)) => (
            i.impl_token.span,
            "`#[retry]` goes on each function to retry, not on an `impl` block: write it on the \
             methods (inside `#[async_trait]` impls too)",
        ),
        Ok(syn::Item::Trait(t)) => (
            t.trait_token.span,
            "`#[retry]` goes on each function to retry, not on a `trait`: write it on the \
             methods of the impls, or on default methods",
        ),
        Ok(other) => (
            other.span(),
            "`#[retry]` goes on a function (`async fn`, or a plain `fn` retried by blocking) that \
             returns `Result<T, E>`",
        ),
        Err(_) => {
            return syn::Error::new(
                parse_error.span(),
                format!("`#[retry]` goes on a function with a body: {parse_error}"),
            );
        }
    };
    syn::Error::new(span, what)
}
/// The function as written, so the rest of the crate still type-checks, plus the errors.
fn with_errors(item: proc_macro2::TokenStream, errors: &syn::Error) -> proc_macro2::TokenStream {
    let mut out = errors.to_compile_error();
    out.extend(item);
    out
}
