//! Tokens: the user's function with its signature untouched and its body run once per attempt.

use crate::args::{JitterArg, ModeArg, Nanos};
use crate::valid::{Idempotency, Model};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericArgument, ItemFn, PathArguments, ReturnType, Type};

/// The function with its body replaced by the retry loop.
pub(crate) fn expand(model: &Model, func: &ItemFn) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
        ..
    } = func;
    let k = &model.krate;
    let p = quote!(#k::__private);
    let (ret, ret_span) = match &sig.output {
        ReturnType::Type(_, ty) => (infer_impl_trait((**ty).clone()), ty.span()),
        ReturnType::Default => (syn::parse_quote!(()), sig.span()),
    };

    // Names the expansion introduces live at mixed-site hygiene: the body cannot see them.
    let site = format_ident!("__RETRY_SITE", span = Span::mixed_site());
    let call = format_ident!("__retry_call", span = Span::mixed_site());
    let out = format_ident!("__retry_out", span = Span::mixed_site());
    let e = format_ident!("__retry_e", span = Span::mixed_site());

    let name = sig.ident.to_string();
    let policy = policy(model, &p);
    let site_options = site_options(model);

    let idempotent = match &model.idempotent {
        Idempotency::Always => quote!(true),
        Idempotency::Never => quote!(false),
        Idempotency::If(cond) => quote_spanned!(cond.span()=> { let __cond: bool = #cond; __cond }),
    };
    // Whether attempts run under a timer is known here, so an untimed body is awaited in
    // place, with no wrapping future.
    let (timer, run) = match model.timer_key {
        Some(span) => (quote_spanned!(span=> #p::Timed), quote!(timed)),
        None => (quote!(#p::Untimed), quote!(attempt)),
    };
    let classify = match &model.retry_on {
        Some(f) => quote_spanned!(f.span()=> |#e: &_| #p::into_class((#f)(#e))),
        None => quote_spanned!(ret_span=> #p::classify_by_trait),
    };
    let hint = match (&model.retry_after, &model.retry_on) {
        (Some(f), _) => quote_spanned!(f.span()=> |#e: &_| #p::hint((#f)(#e))),
        (None, Some(_)) => quote!(#p::no_hint),
        (None, None) => quote_spanned!(ret_span=> #p::hint_by_trait),
    };
    let repeat = match &model.retry_if_ok {
        Some(f) => quote_spanned!(f.span()=> |#e: &_| #p::repeat((#f)(#e))),
        None => quote!(#p::never_repeat),
    };
    let on_retry = match &model.on_retry {
        Some(f) => quote_spanned!(f.span()=> |#e: &_| (#f)(#e)),
        None => quote!(#p::no_hook),
    };
    // The body's statements, not its block: a block as the async block's only expression
    // would trip `unused_braces` on the user's own braces.
    let stmts = &block.stmts;
    let clones = model
        .clone
        .iter()
        .map(|c| quote_spanned!(c.span()=> let #c = ::core::clone::Clone::clone(&#c);));

    let call_type = quote_spanned!(ret_span=> #p::Call<'_, #ret, _, _, _, _, _>);
    quote! {
        #(#attrs)*
        #vis #sig {
            let mut #call: #call_type = #p::Call::new(
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
            );
            loop {
                if #call.adaptive() {
                    if let #p::ControlFlow::Break(#out) = #call.send_token().await {
                        return #out;
                    }
                }
                let #out = #call.#run(async {
                    #(#clones)*
                    #(#stmts)*
                }).await;
                match #call.finish(#out) {
                    #p::ControlFlow::Break(#out) => return #out,
                    #p::ControlFlow::Continue(#out) => {
                        if let #p::ControlFlow::Break(#out) = #call.settle(#out).await {
                            return #out;
                        }
                    }
                }
            }
        }
    }
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

/// `impl Trait` cannot be written in a `let` type: the type checker fills in `_` instead.
fn infer_impl_trait(ty: Type) -> Type {
    match ty {
        Type::ImplTrait(t) => {
            let span = t.span();
            syn::parse_quote_spanned!(span=> _)
        }
        Type::Reference(mut r) => {
            *r.elem = infer_impl_trait(*r.elem);
            Type::Reference(r)
        }
        Type::Paren(mut p) => {
            *p.elem = infer_impl_trait(*p.elem);
            Type::Paren(p)
        }
        Type::Group(mut g) => {
            *g.elem = infer_impl_trait(*g.elem);
            Type::Group(g)
        }
        Type::Slice(mut s) => {
            *s.elem = infer_impl_trait(*s.elem);
            Type::Slice(s)
        }
        Type::Array(mut a) => {
            *a.elem = infer_impl_trait(*a.elem);
            Type::Array(a)
        }
        Type::Ptr(mut p) => {
            *p.elem = infer_impl_trait(*p.elem);
            Type::Ptr(p)
        }
        Type::Tuple(mut t) => {
            t.elems = t.elems.into_iter().map(infer_impl_trait).collect();
            Type::Tuple(t)
        }
        Type::Path(mut p) => {
            for seg in &mut p.path.segments {
                if let PathArguments::AngleBracketed(args) = &mut seg.arguments {
                    for arg in &mut args.args {
                        if let GenericArgument::Type(t) = arg {
                            *t = infer_impl_trait(t.clone());
                        }
                    }
                }
            }
            Type::Path(p)
        }
        other => other,
    }
}
