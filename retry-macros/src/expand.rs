//! Tokens: the user's function with its signature untouched and its body run once per attempt.

use crate::args::Args;
use crate::shape::{Ret, Slot, Wrapper};
use crate::text::compact;
use crate::values::Emit;
use crate::walk::Walk;
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use retry_keys::HedgeSpec;
use syn::spanned::Spanned;
use syn::{Block, Expr, Stmt};

/// Replaces the user's body in `slot` with the retry loop that runs it once per attempt.
pub(crate) fn expand(args: &Args, name: &str, slot: Slot<'_>) {
    slot.rewrite(|block, ret, wrapper| {
        // The body keeps its braces where the user wrote them, resolved in the expansion: as
        // the only thing in the attempt's block they would otherwise be the user's own
        // "unnecessary braces" (rustc's `unused_braces` lints a block on one line), and its
        // suggestion, which `cargo fix` applies, would take the function's braces away.
        let braces = block
            .brace_token
            .span
            .join()
            .resolved_at(Span::mixed_site());
        let body = Block {
            brace_token: syn::token::Brace(braces),
            stmts: std::mem::take(&mut block.stmts),
        };
        let tokens = retry_loop(args, name, ret, wrapper, &body);
        block.stmts = vec![Stmt::Expr(Expr::Verbatim(tokens), None)];
    });
}

/// The hedging keys, as calls of the runtime's `Keys` builder, and for a percentile or a
/// budget the `Site` builder's `.latency(...)`: the function's own estimate and budget, in a
/// `static`.
fn hedging(args: &Args, after: HedgeSpec, p: &TokenStream) -> (TokenStream, TokenStream) {
    let latency = format_ident!("__RETRY_LATENCY", span = Span::mixed_site());
    let site = match (after, &args.hedge_budget) {
        (HedgeSpec::Fixed(_), None) => quote!(),
        (HedgeSpec::Percentile(_), _) | (_, Some(_)) => quote! {
            .latency({
                static #latency: #p::Latency = #p::Latency::new();
                &#latency
            })
        },
    };
    let spec = after.tokens(p);
    let mut keys = quote!(.hedge_after(#spec));
    if let Some(n) = &args.max_in_flight {
        let n = n.value;
        keys.extend(quote!(.max_in_flight(#n)));
    }
    if let Some(d) = &args.min_hedge_after {
        let d = d.value.tokens(p);
        keys.extend(quote!(.min_hedge_after(#d)));
    }
    if let Some(d) = &args.max_hedge_after {
        let d = d.value.tokens(p);
        keys.extend(quote!(.max_hedge_after(#d)));
    }
    if let Some(share) = &args.hedge_budget {
        let share = share.value.0;
        keys.extend(quote!(.hedge_budget(#share)));
    }
    (keys, site)
}

/// `.key(value)` for each value, in order.
fn builder_calls(values: Vec<(&str, &dyn Emit)>, p: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for (key, value) in values {
        let span = value.span();
        let method = Ident::new(key, span);
        let value = value.tokens(p);
        out.extend(quote_spanned!(span=> .#method(#value)));
    }
    out
}

/// The statements that replace the body: one [`Call`] and the loop that steps it.
///
/// [`Call`]: https://docs.rs/retry-runtime
fn retry_loop(args: &Args, name: &str, ret: &Ret, wrapper: Wrapper, body: &Block) -> TokenStream {
    let k = args.krate();
    let p = quote!(#k::__private);
    let ret_span = ret.span;

    // Names the expansion introduces live at mixed-site hygiene: the body cannot see them.
    let site = format_ident!("__RETRY_SITE", span = Span::mixed_site());
    let call = format_ident!(
        "__retry_call",
        span = Span::mixed_site().located_at(ret_span)
    );
    let e = format_ident!("__retry_e", span = Span::mixed_site());
    let cond_name = format_ident!("__retry_idempotent", span = Span::mixed_site());

    // Only what the attribute writes: the defaults are the runtime's.
    let mut keys = builder_calls(args.keys(), &p);
    let mut site_options = builder_calls(args.site(), &p);
    if let Some(hedge) = &args.hedge_after {
        let (hedging_keys, site) = hedging(args, hedge.value, &p);
        keys.extend(hedging_keys);
        site_options.extend(site);
    }
    // Each guard in the order written; a `static` that is not a `Guard` is reported on its
    // path.
    for g in args.guard.iter().flat_map(|g| &g.value.0) {
        site_options.extend(quote_spanned!(g.span()=> .guard(&#g)));
    }
    // The AWS SDKs' settings are the runtime's `aws-config` feature: without it, this bound is
    // the compile error that names the feature, on the key.
    let aws_config = match &args.aws_config {
        Some(aws) if aws.value => {
            quote_spanned!(aws.key.span()=> const _: () = #p::needs_aws_config::<()>();)
        }
        _ => TokenStream::new(),
    };
    let keys = quote!(#p::Keys::new() #keys);

    // An idempotency key makes an attempt that wrote it safe to repeat: the engine retries such
    // attempts as idempotent ones, and the others as `idempotent` says, `false` unless written
    // (`valid` refuses the key beside `idempotent_if`).
    let keyed = args.idempotency_key.as_ref().is_some_and(|k| k.value);
    let idempotent = match (&args.idempotent_if, &args.idempotent) {
        (_, Some(i)) if keyed => {
            let value = i.value;
            quote!(#value)
        }
        _ if keyed => quote!(false),
        (Some(cond), _) => {
            let mut expr = cond.value.clone();
            // `#[async_trait]` renamed `self` in the body; the condition sits beside it.
            if wrapper == Wrapper::AsyncTrait {
                RenameSelf.expr(&mut expr);
            }
            quote!({ let #cond_name: bool = #expr; #cond_name })
        }
        (None, Some(i)) if !i.value => quote!(false),
        _ => quote!(true),
    };
    // What is checked against the return type (a `Result`, an error that can be classified)
    // is located at the return type, so that errors point at it; it keeps the macro's own
    // context, so lints see generated code. Located at one span, the checks that fail for the
    // same reason (`u32` is not a `Result`) are reported once.
    let at_ret = respan(p.clone(), ret_span);
    // A return type with `_` in it (from `impl Trait`) is written once only: each copy would
    // bring its own unconstrained `_`.
    let ty = &ret.ty;
    let result = quote_spanned!(ret_span=> <#ty as #at_ret::ReturnsResult>::Result);
    let (ok_of, err_of) = if ret.infers {
        (quote_spanned!(ret_span=> _), quote_spanned!(ret_span=> _))
    } else {
        (
            quote_spanned!(ret_span=> <#result as #at_ret::RetryResult>::Ok),
            quote_spanned!(ret_span=> <#result as #at_ret::RetryResult>::Err),
        )
    };

    // Whether attempts run under a timer is known here, so an untimed body is awaited in
    // place, with no timer code at all. A timed-out attempt becomes the error through
    // `From<TimedOut>`, asked at the key's span: an error type without it is told so there,
    // in the standard library's words, with nothing of the engine's between.
    let timer_key = args.attempt_timeout.as_ref().or(args.deadline.as_ref());
    // reqwest's own error can never have `From<TimedOut>` (neither the trait nor the type is
    // the runtime's or the user's): the key says what to return instead, and the function is
    // expanded untimed, so that this is the one error.
    let krate = args.krate.as_ref().map(|k| &k.value);
    let timer = match timer_key.map(|arg| arg.key.span()) {
        Some(span) if returns_reqwest_error(&ret.ty, krate) => {
            let message = format!(
                "`{}` sets a timeout, which reqwest's own `reqwest::Error` cannot represent: \
                 return `{}::reqwest::Error` (`?` converts a `reqwest::Error` into it, and it \
                 keeps the server's `Retry-After`), or an error type of your own with \
                 `From<{1}::TimedOut>`",
                args.attempt_timeout
                    .as_ref()
                    .map_or("deadline", |_| "attempt_timeout"),
                compact(&args.krate()).trim_start_matches("::"),
            );
            quote_spanned!(span=> { ::core::compile_error!(#message); #p::Untimed })
        }
        Some(span) => {
            quote_spanned!(span=> #p::Timed(::core::convert::From::from))
        }
        None => quote!(#p::Untimed),
    };
    // A function named in the attribute gets a closure whose argument type is spelled out, so
    // a wrong signature is one type error on the path, not an unsatisfied bound of the engine.
    // Without `retry_on` (or `retry_after`), the error's `Classify` impl gives the class (and
    // the hint), called in closures spelled at the return type: an error type without the
    // impl is reported there, once (both calls are at the same span), with `Classify`'s
    // message and nothing of the engine, since a closure's type asks nothing of `E` and what
    // the loop asks of it later holds whatever `E` is. (A method named as a value would carry
    // its bound into every use of the call's type, each reported again.)
    let on = |f: &syn::ExprPath| quote_spanned!(f.span()=> |#e: &#err_of| #p::into_class((#f)(#e)));
    let after = |f: &syn::ExprPath| quote_spanned!(f.span()=> |#e: &#err_of| #p::hint((#f)(#e)));
    let by_trait = |method: &str| {
        let method = Ident::new(method, ret_span);
        quote_spanned!(ret_span=> |#e: &#err_of| <#err_of as #at_ret::Classify>::#method(#e))
    };
    let classify = match (
        args.retry_on.as_ref().map(|f| &f.value.0),
        args.retry_after.as_ref().map(|f| &f.value.0),
    ) {
        (None, None) => {
            let (class, hint) = (by_trait("classify"), by_trait("retry_after"));
            quote_spanned!(ret_span=> #at_ret::Fns(#class, #hint))
        }
        (Some(c), None) => {
            let c = on(c);
            quote!(#p::Fns(#c, #p::no_hint::<#err_of>))
        }
        (Some(c), Some(a)) => {
            let (c, a) = (on(c), after(a));
            quote!(#p::Fns(#c, #a))
        }
        (None, Some(a)) => {
            let a = after(a);
            let class = by_trait("classify");
            quote!(#p::Fns(#class, #a))
        }
    };
    let repeat = match args.retry_if_ok.as_ref().map(|f| &f.value.0) {
        Some(f) => quote_spanned!(f.span()=> |#e: &#ok_of| #p::repeat((#f)(#e))),
        None => quote!(#p::never_repeat::<#ok_of>),
    };
    let on_retry = match args.on_retry.as_ref().map(|f| &f.value.0) {
        Some(f) => {
            quote_spanned!(f.span()=> |#e: &#p::RetryEvent<'_, #err_of>| (#f)(#e))
        }
        None => quote!(#p::no_hook::<#err_of>),
    };
    let clones = args.clone.iter().flat_map(|c| &c.value.0).map(|c| {
        let name = &c.name;
        if c.mutable {
            // Borrowing the argument mutably keeps its `mut` in use.
            quote_spanned! {name.span()=>
                #[allow(unused_mut, clippy::unnecessary_mut_passed)]
                let mut #name = ::core::clone::Clone::clone(&mut #name);
            }
        } else {
            quote_spanned!(name.span()=> let #name = ::core::clone::Clone::clone(&#name);)
        }
    });

    let call_type = quote_spanned!(ret_span=> #at_ret::Call<'_, #result, _, _, _>);
    // The attempt's output type is known before its body is checked, so that the body's
    // `return` and tail expressions coerce to it (`Ok(&string)` as `Result<&str, _>`) as they
    // do in the function itself.
    let ret_value = format_ident!("__retry_ret", span = Span::mixed_site());
    let pin_output = quote! {
        if let ::core::option::Option::Some(#ret_value) = ::core::option::Option::None::<#ty> {
            #[allow(unreachable_code)]
            return #ret_value;
        }
    };
    // The engine's own calls are spelled at the return type too: when `R` is not a `Result`
    // or `E` cannot be classified, their bounds fail at the same place for the same reason,
    // and the compiler reports it once.
    let new_call = quote_spanned! {ret_span=>
        #at_ret::Call::new(
            {
                #aws_config
                static #site: #p::Site = #p::Site::new(#name, #keys) #site_options;
                &#site
            },
            #idempotent,
            #timer,
            #classify,
            #repeat,
            #on_retry,
        )
    };
    // A breaker's or a guard's refusal becomes the function's error through `From<Refused>`,
    // whose absence is reported at the first of the two keys written.
    let refusing = match (&args.breaker, &args.guard) {
        (Some(b), _) => Some(b.key.span()),
        (None, Some(g)) => Some(g.key.span()),
        (None, None) => None,
    };
    let new_call = match refusing {
        Some(span) => {
            quote_spanned!(span=> #new_call.on_stop(|refused| {
                #p::RetryResult::from_err(::core::convert::From::from(refused))
            }))
        }
        None => new_call,
    };
    if wrapper == Wrapper::Blocking {
        // A plain `fn`: each attempt is a call of a closure that holds the body (`return` and
        // `?` end the attempt), and each wait blocks the thread.
        let attempt_fn = format_ident!("__retry_attempt", span = Span::mixed_site());
        let annotated = if ret.infers { quote!() } else { quote!(-> #ty) };
        let retry_loop =
            quote_spanned!(ret_span=> #at_ret::retry_loop_blocking!(#call, #attempt_fn));
        return quote! {
            #[allow(clippy::type_complexity)]
            let mut #call: #call_type = #new_call;
            #[allow(unused_mut)]
            let mut #attempt_fn = || #annotated {
                #(#clones)*
                #body
            };
            #retry_loop
        };
    }
    if args.hedge_after.is_some() {
        // A hedged function: attempts of one call run side by side, each made by a call of a
        // closure that borrows the arguments (shared, so that several can).
        let attempt_fn = format_ident!("__retry_attempt", span = Span::mixed_site());
        let clones = args.clone.iter().flat_map(|c| &c.value.0).map(|c| {
            let name = &c.name;
            let binding = if c.mutable { quote!(mut) } else { quote!() };
            quote_spanned!(name.span()=> let #binding #name = ::core::clone::Clone::clone(&#name);)
        });
        let run = quote_spanned!(ret_span=> #call.run_hedged(#attempt_fn).await);
        // The closure first: nothing then runs between the call's start and its move into
        // the hedged loop's future, which is built in place.
        return quote! {
            let #attempt_fn = #at_ret::consumed_arguments_go_in_clone(|| async {
                #pin_output
                #(#clones)*
                #body
            });
            #[allow(clippy::type_complexity)]
            let #call: #call_type = #new_call;
            #run
        };
    }
    let attempt = quote! {
        async {
            #pin_output
            #(#clones)*
            #body
        }
    };
    // The loop itself is the runtime's (`retry_loop!`, the one definition the engine's own
    // callers use too); it is named at the return type, so that the engine's bounds, when `R`
    // is not a `Result` or `E` cannot be classified, fail where the other checks do.
    let retry_loop = quote_spanned!(ret_span=> #at_ret::retry_loop!(#call, #attempt));
    // The hook's and the poll predicate's closures spell the error and success types out,
    // which clippy may find complex in a user's crate: the types are the user's own.
    quote! {
        #[allow(clippy::type_complexity)]
        let mut #call: #call_type = #new_call;
        #retry_loop
    }
}

/// Renames `self` to `__self`, as `#[async_trait]` does in the body, following async-trait's
/// `ReplaceSelf` (async-trait 0.1.92, `src/receiver.rs`): a path starting with the `self` module (`self::CONST`) stays, nested items
/// are left alone, and so are the arguments of a macro that mention `fn` (whose `self` is
/// likely another function's).
struct RenameSelf;

impl Walk for RenameSelf {
    fn path(&mut self, path: &mut syn::Path) {
        if path.segments.len() == 1 && path.segments[0].ident == "self" {
            let ident = &mut path.segments[0].ident;
            *ident = Ident::new("__self", ident.span());
        }
    }

    fn mac(&mut self, mac: &mut syn::Macro) {
        if !has_ident(mac.tokens.clone(), "fn") {
            mac.tokens = rename_self_tokens(std::mem::take(&mut mac.tokens));
        }
    }
}

/// `self` renamed in tokens that are not parsed, such as a macro's arguments.
fn rename_self_tokens(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(i) if i == "self" => TokenTree::Ident(Ident::new("__self", i.span())),
            TokenTree::Group(g) => {
                let stream = rename_self_tokens(g.stream());
                let mut inner = proc_macro2::Group::new(g.delimiter(), stream);
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect()
}

fn has_ident(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => has_ident(g.stream(), name),
        _ => false,
    })
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut inner = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                inner.set_span(span);
                tt = TokenTree::Group(inner);
            }
            tt.set_span(span);
            tt
        })
        .collect()
}

/// Whether a function returning `ty` fails with reqwest's own error, as written:
/// `Result<T, reqwest::Error>` or `reqwest::Result<T>` (see
/// [`reqwest_own_error`](crate::classify::reqwest_own_error): only the tokens are read).
fn returns_reqwest_error(ty: &syn::Type, krate: Option<&syn::Path>) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&syn::Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match (last.ident.to_string().as_str(), types.as_slice()) {
        ("Result", [_, error]) => crate::classify::reqwest_own_error(error, krate).is_some(),
        // `reqwest::Result<T>`: its error is the `Error` beside it.
        ("Result", [_]) => {
            let mut error = path.clone();
            if let Some(last) = error.path.segments.last_mut() {
                *last = syn::PathSegment::from(Ident::new("Error", last.ident.span()));
            }
            crate::classify::reqwest_own_error(&syn::Type::Path(error), krate).is_some()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;
    use syn::parse_quote;

    fn renamed(mut expr: Expr) -> String {
        RenameSelf.expr(&mut expr);
        expr.to_token_stream().to_string()
    }

    /// The renaming of async-trait 0.1.92's `ReplaceSelf`.
    #[test]
    fn self_is_renamed_as_async_trait_renames_it() {
        let cases: [(Expr, TokenStream); 8] = [
            // In a closure and in a match arm's guard, as anywhere in the condition.
            (
                parse_quote!(keys.iter().any(|k| self.has(k))),
                quote!(keys.iter().any(|k| __self.has(k))),
            ),
            (
                parse_quote!(match key {
                    Some(k) if self.has(k) => true,
                    _ => self.safe,
                }),
                quote!(match key {
                    Some(k) if __self.has(k) => true,
                    _ => __self.safe,
                }),
            ),
            (parse_quote!(self.safe), quote!(__self.safe)),
            (
                parse_quote!(self.replayable(&key) && Self::SAFE),
                quote!(__self.replayable(&key) && Self::SAFE),
            ),
            // A path that starts with the `self` module is not the receiver.
            (
                parse_quote!(self::replayable(self, self::m::LIMIT)),
                quote!(self::replayable(__self, self::m::LIMIT)),
            ),
            (parse_quote!(check!(self.safe)), quote!(check!(__self.safe))),
            // A macro that defines a `fn`, and a nested item, have a `self` of their own.
            (
                parse_quote!(call!(fn f(self) {}, self)),
                quote!(call!(fn f(self) {}, self)),
            ),
            (
                parse_quote!({
                    impl S {
                        fn f(self) -> bool {
                            self.0
                        }
                    }
                    self.f()
                }),
                quote!({
                    impl S {
                        fn f(self) -> bool {
                            self.0
                        }
                    }
                    __self.f()
                }),
            ),
        ];
        for (expr, expected) in cases {
            assert_eq!(renamed(expr), expected.to_string());
        }
    }
}
