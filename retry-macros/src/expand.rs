//! Tokens: the user's function with its signature untouched and its body run once per attempt.

use crate::args::{JitterArg, ModeArg, Nanos};
use crate::shape::{Slot, Wrapper};
use crate::valid::{Idempotency, Model};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, Expr, Stmt, Type};

/// Replaces the user's body in `slot` with the retry loop that runs it once per attempt.
pub(crate) fn expand(model: &Model, name: &str, slot: Slot<'_>) {
    let Slot {
        block,
        ret,
        ret_span,
        wrapper,
    } = slot;
    let body = Block {
        brace_token: block.brace_token,
        stmts: std::mem::take(&mut block.stmts),
    };
    let tokens = retry_loop(model, name, &ret, ret_span, wrapper, &body);
    block.stmts = vec![Stmt::Expr(Expr::Verbatim(tokens), None)];
}

/// The statements that replace the body: one [`Call`] and the loop that steps it.
///
/// [`Call`]: https://docs.rs/retry-runtime
fn retry_loop(
    model: &Model,
    name: &str,
    ret: &Type,
    ret_span: Span,
    wrapper: Wrapper,
    body: &Block,
) -> TokenStream {
    let k = &model.krate;
    let p = quote!(#k::__private);

    // Names the expansion introduces live at mixed-site hygiene: the body cannot see them.
    let site = format_ident!("__RETRY_SITE", span = Span::mixed_site());
    let call = format_ident!(
        "__retry_call",
        span = Span::mixed_site().located_at(ret_span)
    );
    let out = format_ident!("__retry_out", span = Span::mixed_site());
    let delay = format_ident!("__retry_delay", span = Span::mixed_site());
    let settled = format_ident!("__retry_settled", span = Span::mixed_site());
    let label = syn::Lifetime::new("'__retry", Span::mixed_site());
    let e = format_ident!("__retry_e", span = Span::mixed_site());
    let cond = format_ident!("__retry_idempotent", span = Span::mixed_site());

    let policy = policy(model, &p);
    let site_options = site_options(model);

    let idempotent = match &model.idempotent {
        Idempotency::Always => quote!(true),
        Idempotency::Never => quote!(false),
        Idempotency::If(expr) => {
            // `#[async_trait]` renamed `self` in the body; the condition sits beside it.
            let expr = if wrapper == Wrapper::AsyncTrait {
                rename_self(expr.to_token_stream())
            } else {
                expr.to_token_stream()
            };
            quote!({ let #cond: bool = #expr; #cond })
        }
    };
    // What is checked against the return type (a `Result`, an error that can be classified)
    // is located at the return type, so that errors point at it; it keeps the macro's own
    // context, so lints see generated code. Located at one span, the checks that fail for the
    // same reason (`u32` is not a `Result`) are reported once.
    let at_ret = respan(p.clone(), ret_span);
    // A return type with `_` in it (from `impl Trait`) is written once only: each copy would
    // bring its own unconstrained `_`.
    let result = quote_spanned!(ret_span=> <#ret as #at_ret::ReturnsResult>::Result);
    let (ok_of, err_of) = if has_infer(ret.to_token_stream()) {
        (quote!(_), quote!(_))
    } else {
        (
            quote_spanned!(ret_span=> <#result as #at_ret::RetryResult>::Ok),
            quote_spanned!(ret_span=> <#result as #at_ret::RetryResult>::Err),
        )
    };

    // Whether attempts run under a timer is known here, so an untimed body is awaited in
    // place, with no wrapping future; a timed one goes through the engine's timer.
    let (timer, run) = match model.timer_key {
        Some(span) => {
            let at_key = respan(p.clone(), span);
            (
                quote_spanned!(span=> #p::Timed(#at_key::timed_out)),
                quote!(timed),
            )
        }
        None => (quote!(#p::Untimed), quote!(attempt)),
    };
    // A function named in the attribute gets a closure whose argument type is spelled out, so
    // a wrong signature is one type error on the path, not an unsatisfied bound of the engine.
    // Without `retry_on`, the error's `Classify` impl gives both the class and the hint, from
    // one function, so that a missing impl is one error.
    let by_trait = format_ident!("__retry_by_trait", span = Span::mixed_site());
    let classify_by_trait = match &model.retry_on {
        Some(_) => quote!(),
        None => quote_spanned!(ret_span=> let #by_trait = #at_ret::by_trait::<#err_of>();),
    };
    let classify = match &model.retry_on {
        Some(f) => quote_spanned!(f.span()=> |#e: &#err_of| #p::into_class((#f)(#e))),
        None => quote!(#by_trait.0),
    };
    let hint = match (&model.retry_after, &model.retry_on) {
        (Some(f), _) => quote_spanned!(f.span()=> |#e: &#err_of| #p::hint((#f)(#e))),
        (None, Some(_)) => quote!(#p::no_hint::<#err_of>),
        (None, None) => quote!(#by_trait.1),
    };
    let repeat = match &model.retry_if_ok {
        Some(f) => quote_spanned!(f.span()=> |#e: &#ok_of| #p::repeat((#f)(#e))),
        None => quote!(#p::never_repeat::<#ok_of>),
    };
    let on_retry = match &model.on_retry {
        Some(f) => {
            quote_spanned!(f.span()=> |#e: &#p::RetryEvent<'_, #err_of>| (#f)(#e))
        }
        None => quote!(#p::no_hook::<#err_of>),
    };
    let clones = model.clone.iter().map(|c| {
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

    let call_type = quote_spanned!(ret_span=> #at_ret::Call<'_, #result, _, _, _, _, _>);
    // The attempt's output type is known before its body is checked, so that the body's
    // `return` and tail expressions coerce to it (`Ok(&string)` as `Result<&str, _>`) as they
    // do in the function itself.
    let ret_value = format_ident!("__retry_ret", span = Span::mixed_site());
    let pin_output = quote! {
        if let ::core::option::Option::Some(#ret_value) = ::core::option::Option::None::<#ret> {
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
                static #site: #p::Site = #p::Site::new(#name, #policy) #site_options;
                &#site
            },
            #idempotent,
            #timer,
            #classify,
            #hint,
            #repeat,
            #on_retry,
        )
    };
    let attempt = quote! {
        async {
            #pin_output
            #(#clones)*
            #body
        }
    };
    let run_attempt = quote_spanned!(ret_span=> #call.#run(#attempt).await);
    let finish = quote_spanned!(ret_span=> #call.finish(#out));
    // The hot path: no send token outside adaptive mode, the body awaited, `finish` returning
    // a first-attempt success. `settle` decides everything else. Every wait (a send token in adaptive mode, the backoff, a bucket's refill) is a sleep
    // awaited here, in the function's own future, after a synchronous decision of the engine:
    // the future holds one timer at a time and no future of the engine.
    quote! {
        #classify_by_trait
        let mut #call: #call_type = #new_call;
        #label: loop {
            if #call.adaptive() {
                loop {
                    match #call.send_token() {
                        #p::SendToken::Go => break,
                        #p::SendToken::Wait(#delay) => #p::sleep(#delay).await,
                        #p::SendToken::Return(#out) => break #label #out,
                    }
                }
            }
            let #out = #run_attempt;
            let mut #settled = match #finish {
                #p::ControlFlow::Break(#out) => break #label #out,
                #p::ControlFlow::Continue(#out) => #call.settle(#out),
            };
            loop {
                match #settled {
                    #p::Settled::Return(#out) => break #label #out,
                    #p::Settled::Retry => break,
                    #p::Settled::Sleep(#delay) => {
                        #p::sleep(#delay).await;
                        break;
                    }
                    #p::Settled::Wait(#delay) => {
                        #p::sleep(#delay).await;
                        #settled = #call.resume();
                    }
                }
            }
        }
    }
}

/// `self` as `#[async_trait]` renames it in the body, `__self`.
fn rename_self(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(i) if i == "self" => {
                TokenTree::Ident(proc_macro2::Ident::new("__self", i.span()))
            }
            TokenTree::Group(g) => {
                let mut inner = proc_macro2::Group::new(g.delimiter(), rename_self(g.stream()));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect()
}

/// The `const` policy: only what the attribute changes from the defaults.
fn policy(m: &Model, p: &TokenStream) -> TokenStream {
    let mut out = quote!(#p::Policy::new());
    let dur = |n: Nanos| {
        let ns = n.0;
        quote!(#p::Duration::from_nanos(#ns))
    };
    if let Some(mode) = m.mode {
        let mode = match mode {
            ModeArg::Standard => quote!(#p::Mode::Standard),
            ModeArg::Adaptive => quote!(#p::Mode::Adaptive),
        };
        out.extend(quote!(.mode(#mode)));
    }
    if let Some(n) = m.max_attempts {
        out.extend(quote!(.max_attempts(#n)));
    }
    if let Some(d) = m.initial_backoff {
        let d = dur(d);
        out.extend(quote!(.initial_backoff(#d)));
    }
    if let Some(x) = m.multiplier {
        out.extend(quote!(.multiplier(#x)));
    }
    if let Some(d) = m.max_backoff {
        let d = dur(d);
        out.extend(quote!(.max_backoff(#d)));
    }
    if let Some(j) = m.jitter {
        let j = match j {
            JitterArg::Full => quote!(#p::Jitter::Full),
            JitterArg::Equal => quote!(#p::Jitter::Equal),
            JitterArg::None => quote!(#p::Jitter::None),
            JitterArg::Decorrelated => quote!(#p::Jitter::Decorrelated),
            JitterArg::Fraction(f) => quote!(#p::Jitter::Fraction(#f)),
        };
        out.extend(quote!(.jitter(#j)));
    }
    if let Some(d) = m.attempt_timeout {
        let d = dur(d);
        out.extend(quote!(.attempt_timeout(#d)));
    }
    if let Some(x) = m.attempt_timeout_multiplier {
        out.extend(quote!(.attempt_timeout_multiplier(#x)));
    }
    if let Some(d) = m.max_attempt_timeout {
        let d = dur(d);
        out.extend(quote!(.max_attempt_timeout(#d)));
    }
    if let Some(d) = m.deadline {
        let d = dur(d);
        out.extend(quote!(.deadline(#d)));
    }
    out
}

fn site_options(m: &Model) -> TokenStream {
    let mut out = TokenStream::new();
    if let Some(name) = &m.partition {
        out.extend(quote!(.partition(#name)));
    }
    if let Some(b) = &m.bucket {
        out.extend(quote_spanned!(b.span()=> .bucket(&#b)));
    }
    if let Some(l) = &m.rate_limiter {
        out.extend(quote_spanned!(l.span()=> .rate_limiter(&#l)));
    }
    if let Some(profile) = &m.profile {
        out.extend(quote!(.profile(#profile)));
    }
    out
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

/// Whether a type has `_` in it.
fn has_infer(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == "_",
        TokenTree::Group(g) => has_infer(g.stream()),
        _ => false,
    })
}
