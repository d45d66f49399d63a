//! Where the user's body is, and what the function returns.
//!
//! `#[retry]` usually sees the `async fn` as written, and its body is the function's block. When
//! another attribute macro expanded first, the body has moved into what that macro wrote:
//!
//! - `#[async_trait]` (on the `impl` or `trait`, so always first) turns the method into a plain
//!   `fn` returning `Pin<Box<dyn Future<Output = R>>>` whose block is
//!   `Box::pin(async move { ..; let __ret: R = { BODY }; __ret })`;
//! - `#[tracing::instrument]` written above `#[retry]` keeps the `async fn` and moves the body
//!   into `async move { if false { let __tracing_attr_fake_return: R = loop {}; .. } { BODY } }`,
//!   which it runs inside its span (in a plain `fn`, it wraps the block the same way);
//! - `#[tokio::test]` or `#[tokio::main]` written above `#[retry]` turns the function into a
//!   plain `fn` whose first statement is `let body = async { BODY };`.
//!
//! They nest (`#[instrument]` inside an `#[async_trait]` impl, `#[tokio::test]` above
//! `#[instrument]`): the innermost wrapper holds the user's body, and that is where the retry
//! loop goes, so the arguments have already been moved where those macros put them and each
//! attempt borrows them there.
//!
//! These shapes, and the names those macros generate that this module matches (tracing's
//! `__tracing_attr_fake_return`, async-trait's `__ret` and its `self` renamed `__self`, tokio's
//! `body`), are those written by async-trait 0.1.92, tracing-attributes 0.1.31 and tokio-macros
//! 2.7.2; the test `wrappers_of_known_versions` holds their output for each shape. Other versions
//! that write the same shapes work as well.

use crate::errors::Errors;
use crate::text;
use crate::walk::{self, Walk, infer_impl_trait};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{
    Block, Expr, GenericArgument, ItemFn, Pat, PathArguments, ReturnType, Signature, Stmt, Type,
    TypeParamBound,
};

/// The macro that expanded before `#[retry]` and holds the user's body.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wrapper {
    /// The function as written.
    None,
    /// `#[async_trait]`: `self` is renamed `__self` in the body.
    AsyncTrait,
    /// `#[tracing::instrument]`.
    Instrument,
    /// `#[tokio::test]` or `#[tokio::main]`.
    Tokio,
    /// None: the function is a plain `fn`, retried by blocking the thread between attempts.
    Blocking,
}

/// Where the user's body is in the function, and what the function returns.
pub(crate) struct Slot<'a> {
    func: &'a mut ItemFn,
    pub(crate) ret: Ret,
    /// The innermost macro that expanded first, if any.
    pub(crate) wrapper: Wrapper,
}

/// The function's return type, as the retry loop names it.
pub(crate) struct Ret {
    /// The return type, with `impl Trait` replaced by `_`.
    pub(crate) ty: Type,
    /// `ty` has `_` in it.
    pub(crate) infers: bool,
    /// The tokens of the return type as the user wrote them, to point type errors at.
    pub(crate) span: Span,
}

impl Slot<'_> {
    /// Hands the block that runs once per attempt to `rewrite`, which replaces it with the retry
    /// loop.
    pub(crate) fn rewrite(self, rewrite: impl FnOnce(&mut Block, &Ret, Wrapper)) {
        let Slot { func, ret, wrapper } = self;
        let rewrite = |block: &mut Block| rewrite(block, &ret, wrapper);
        let mut search = Search::new(func.sig.asyncness.is_some(), Some(rewrite));
        search.block(&mut func.block);
        // Nothing wraps the body: it is the function's block.
        if let Some(rewrite) = search.rewrite.take() {
            rewrite(&mut func.block);
        }
    }
}

/// Finds the user's body in `func`, or reports why `#[retry]` cannot go on it.
pub(crate) fn locate<'a>(func: &'a mut ItemFn, errors: &mut Errors) -> Option<Slot<'a>> {
    let sig = &func.sig;
    if let Some(c) = &sig.constness {
        errors.at(
            c.span,
            "`#[retry]` cannot be used on a `const fn`: retries sleep, so the function must be an \
             `async fn` or a plain `fn`",
        );
        return None;
    }
    let is_async = sig.asyncness.is_some();
    let sig_ret = match &sig.output {
        ReturnType::Type(_, ty) => Some(((**ty).clone(), ty.span())),
        ReturnType::Default => None,
    };
    let unit_error = |errors: &mut Errors, sig: &Signature| {
        errors.at(
            sig.paren_token.span.close(),
            "`#[retry]` needs a function that returns `Result<T, E>`: this one returns `()`, so \
             no attempt can fail",
        );
    };

    let mut search = Search::new(is_async, None::<fn(&mut Block)>);
    search.block(&mut func.block);
    let (ret, ret_span, wrapper) = if let Some(found) = search.found {
        let (ret, ret_span) = match found.ret {
            Some(ret) => {
                let span = ret.span();
                (ret, span)
            }
            None => match sig_ret {
                Some(r) => r,
                None => {
                    unit_error(errors, &func.sig);
                    return None;
                }
            },
        };
        if is_unit(&ret) {
            unit_error(errors, &func.sig);
            return None;
        }
        (ret, ret_span, found.wrapper)
    } else if is_async || future_output(&func.sig.output).is_none() {
        // An `async fn` as written, or a plain `fn`: a blocking function, retried with the
        // same loop between `std::thread::sleep`s.
        let Some((ret, ret_span)) = sig_ret else {
            unit_error(errors, &func.sig);
            return None;
        };
        if !is_async {
            if let Some(output) = impl_future(&ret) {
                not_async(&func.sig, output, errors);
                return None;
            }
        }
        if let Some(what) = surely_not_result(&ret) {
            // Aliases are left to the type system; these cannot be a `Result`.
            let message = if is_async {
                format!(
                    "`#[retry]` needs a function that returns `Result<T, E>`, not {what}: the \
                     loop retries on `Err` and returns on `Ok`"
                )
            } else {
                format!(
                    "`#[retry]` takes an `async fn`, or a plain `fn` (retried by blocking its \
                     thread), that returns `Result<T, E>`: this `fn` returns {what}, and the \
                     loop retries on `Err` and returns on `Ok`"
                )
            };
            errors.on(&ret, message);
            return None;
        }
        let wrapper = if is_async {
            Wrapper::None
        } else {
            Wrapper::Blocking
        };
        (ret, ret_span, wrapper)
    } else {
        // What `#[async_trait]` makes of a method that returns `()`, or one whose body it
        // left in a form this macro does not know.
        if future_output(&func.sig.output).is_some_and(is_unit) {
            unit_error(errors, &func.sig);
        } else {
            errors.at(
                func.sig.fn_token.span,
                "`#[retry]` found a function that returns a boxed future but not the `async` \
                 body inside it: write `#[retry]` on an `async fn` (inside `#[async_trait]` \
                 impls, on the `async fn` method)",
            );
        }
        return None;
    };
    let (ty, infers) = infer_impl_trait(ret);
    Some(Slot {
        func,
        ret: Ret {
            ty,
            infers,
            span: ret_span,
        },
        wrapper,
    })
}

/// The innermost wrapper found in the function.
struct Found {
    /// The return type a wrapper wrote down, if one did.
    ret: Option<Type>,
    wrapper: Wrapper,
}

/// Walks the function's block for the wrappers' marks, down to the innermost wrapper, whose
/// block it hands to `rewrite`. Nested items are not searched, and neither is anything after the
/// first wrapper found at a level.
struct Search<F> {
    is_async: bool,
    /// `let body = async { .. };` counts as `#[tokio::test]`'s only in a plain `fn`, and only
    /// above the first one found (below it is the user's own code).
    tokio_ok: bool,
    found: Option<Found>,
    /// Wrappers found so far.
    count: usize,
    /// The innermost wrapper is found: the rest is not searched.
    done: bool,
    rewrite: Option<F>,
}

impl<F: FnOnce(&mut Block)> Search<F> {
    fn new(is_async: bool, rewrite: Option<F>) -> Self {
        Search {
            is_async,
            tokio_ok: !is_async,
            found: None,
            count: 0,
            done: false,
            rewrite,
        }
    }

    /// `block` is a wrapper's body: a wrapper nested inside it holds the user's body, else it
    /// is the user's body.
    fn enter(&mut self, block: &mut Block, ret: Option<Type>, wrapper: Wrapper) {
        // An inner wrapper that writes no return type keeps the outer one's.
        let ret = ret.or_else(|| self.found.take().and_then(|outer| outer.ret));
        self.found = Some(Found { ret, wrapper });
        self.count += 1;
        let count = self.count;
        self.block(block);
        if self.count == count {
            if let Some(rewrite) = self.rewrite.take() {
                rewrite(block);
            }
        }
        self.done = true;
    }
}

impl<F: FnOnce(&mut Block)> Walk for Search<F> {
    fn block(&mut self, block: &mut Block) {
        if self.done {
            return;
        }
        if let Some(ret) = tracing_marker(block) {
            let Some(Stmt::Expr(Expr::Block(user), _)) = block.stmts.get_mut(1) else {
                unreachable!("checked by tracing_marker")
            };
            return self.enter(&mut user.block, Some(ret), Wrapper::Instrument);
        }
        if self.tokio_ok && tokio_marker(block) {
            let Some(Stmt::Local(local)) = block.stmts.first_mut() else {
                unreachable!("checked by tokio_marker")
            };
            let Some(init) = &mut local.init else {
                unreachable!("checked by tokio_marker")
            };
            let Expr::Async(body) = &mut *init.expr else {
                unreachable!("checked by tokio_marker")
            };
            self.tokio_ok = false;
            return self.enter(&mut body.block, None, Wrapper::Tokio);
        }
        walk::walk_block(self, block);
    }

    fn local(&mut self, local: &mut syn::Local) {
        if self.done {
            return;
        }
        if let (false, Some(ret)) = (self.is_async, async_trait_marker(local)) {
            let Some(init) = &mut local.init else {
                unreachable!("checked by async_trait_marker")
            };
            let Expr::Block(user) = &mut *init.expr else {
                unreachable!("checked by async_trait_marker")
            };
            // Below this is the user's own code.
            self.tokio_ok = false;
            return self.enter(&mut user.block, Some(ret), Wrapper::AsyncTrait);
        }
        walk::walk_local(self, local);
    }

    fn expr(&mut self, expr: &mut Expr) {
        if !self.done {
            walk::walk_expr(self, expr);
        }
    }
}

/// `#[tracing::instrument]`'s block: `{ if false { let __tracing_attr_fake_return: R = ..; .. }
/// { BODY } }` (tracing-attributes 0.1.31; inside an `#[async_trait]` method it writes no such
/// block, and async-trait's marks are found instead). Returns `R`.
fn tracing_marker(block: &Block) -> Option<Type> {
    let [
        Stmt::Expr(Expr::If(fake), _),
        Stmt::Expr(Expr::Block(_), None),
    ] = &block.stmts[..]
    else {
        return None;
    };
    fake.then_branch.stmts.iter().find_map(|stmt| match stmt {
        Stmt::Local(local) => match &local.pat {
            Pat::Type(t) if is_ident(&t.pat, "__tracing_attr_fake_return") => Some((*t.ty).clone()),
            _ => None,
        },
        _ => None,
    })
}

/// `#[async_trait]`'s `let __ret: R = { BODY };` (async-trait 0.1.92, which also renames `self`
/// to `__self` in `BODY`). Returns `R`.
fn async_trait_marker(local: &syn::Local) -> Option<Type> {
    let init = local.init.as_ref()?;
    if init.diverge.is_some() || !matches!(*init.expr, Expr::Block(_)) {
        return None;
    }
    match &local.pat {
        Pat::Type(t) if is_ident(&t.pat, "__ret") => Some((*t.ty).clone()),
        _ => None,
    }
}

/// `#[tokio::test]`'s and `#[tokio::main]`'s first statement: `let body = async { BODY };`
/// (tokio-macros 2.7.2).
fn tokio_marker(block: &Block) -> bool {
    let Some(Stmt::Local(local)) = block.stmts.first() else {
        return false;
    };
    let Some(init) = &local.init else {
        return false;
    };
    is_ident(&local.pat, "body")
        && init.diverge.is_none()
        && matches!(&*init.expr, Expr::Async(a) if a.capture.is_none())
}

fn is_ident(pat: &Pat, name: &str) -> bool {
    matches!(pat, Pat::Ident(p) if p.ident == name && p.subpat.is_none())
}

/// For `impl Future<Output = R>` (or `impl Future`), `Some(Some(R))` (or `Some(None)`): the
/// return type of a `fn` that returns a future in place of being an `async fn`.
fn impl_future(ty: &Type) -> Option<Option<&Type>> {
    let bounds = match ty {
        Type::Paren(p) => return impl_future(&p.elem),
        Type::Group(g) => return impl_future(&g.elem),
        Type::ImplTrait(t) => &t.bounds,
        _ => return None,
    };
    bounds.iter().find_map(|bound| {
        let TypeParamBound::Trait(t) = bound else {
            return None;
        };
        let seg = t.path.segments.last()?;
        if seg.ident != "Future" {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &seg.arguments else {
            return Some(None);
        };
        Some(args.args.iter().find_map(|arg| match arg {
            GenericArgument::AssocType(a) if a.ident == "Output" => Some(&a.ty),
            _ => None,
        }))
    })
}

/// The error for a `fn` that returns `impl Future`: `#[retry]` rewrites the body of an `async
/// fn`, so the fix is to write one, returning what the future returns.
fn not_async(sig: &Signature, output: Option<&Type>, errors: &mut Errors) {
    let name = &sig.ident;
    let fn_token = &sig.fn_token;
    let ret = &sig.output;
    let at = quote::quote!(#fn_token #ret);
    let message = match output {
        Some(output) if surely_not_result(output).is_none() => format!(
            "`#[retry]` takes an `async fn`: write `async fn {name}(..) -> {}` in place of a \
             `fn` that returns `impl Future` (a plain `fn` that returns `Result<T, E>` is \
             retried too, blocking its thread)",
            text::compact(output)
        ),
        Some(output) => format!(
            "`#[retry]` takes an `async fn` that returns `Result<T, E>`: write `async fn \
             {name}(..) -> Result<T, E>` in place of a `fn` that returns `impl Future<Output = \
             {}>`; the loop retries on `Err` and returns on `Ok`",
            text::compact(output)
        ),
        None => format!(
            "`#[retry]` takes an `async fn`: write `async fn {name}(..) -> Result<T, E>` in \
             place of a `fn` that returns `impl Future`"
        ),
    };
    errors.on(at, message);
}

/// A return type that cannot be a `Result` whatever the aliases in scope: a primitive, a
/// tuple, a reference, or one of the standard types users most often return instead.
fn surely_not_result(ty: &Type) -> Option<String> {
    const NOT_RESULT: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64", "Option", "Vec", "String", "Box",
    ];
    let quoted = || format!("`{}`", text::compact(ty));
    match ty {
        Type::Paren(p) => surely_not_result(&p.elem),
        Type::Group(g) => surely_not_result(&g.elem),
        Type::Tuple(_)
        | Type::Reference(_)
        | Type::Array(_)
        | Type::Slice(_)
        | Type::Ptr(_)
        | Type::Never(_)
        | Type::FnPtr(_)
        | Type::TraitObject(_)
        | Type::ImplTrait(_) => Some(quoted()),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let std_path = p.path.segments.len() == 1
                || p.path
                    .segments
                    .first()
                    .is_some_and(|s| s.ident == "std" || s.ident == "core");
            (std_path && NOT_RESULT.iter().any(|n| last.ident == n)).then(quoted)
        }
        _ => None,
    }
}

fn is_unit(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Paren(p) => is_unit(&p.elem),
        Type::Group(g) => is_unit(&g.elem),
        _ => false,
    }
}

/// `R` in `Pin<Box<dyn Future<Output = R> + ..>>`, the return type `#[async_trait]` writes
/// (async-trait 0.1.92).
fn future_output(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let pin = last_generic(ty, "Pin")?;
    let boxed = last_generic(pin, "Box")?;
    let Type::TraitObject(object) = boxed else {
        return None;
    };
    object.bounds.iter().find_map(|bound| {
        let TypeParamBound::Trait(t) = bound else {
            return None;
        };
        let seg = t.path.segments.last()?;
        let PathArguments::AngleBracketed(args) = &seg.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            GenericArgument::AssocType(a) if seg.ident == "Future" && a.ident == "Output" => {
                Some(&a.ty)
            }
            _ => None,
        })
    })
}

/// `T` in `...::name<T>`.
fn last_generic<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    /// The output of the wrapping macros recorded in `tests/wrapped/`, one file per version:
    /// async-trait 0.1.92, tracing-attributes 0.1.31, tokio-macros 2.7.2. For each function:
    /// the wrapper `locate` finds, the return type the loop names, and that the block it hands
    /// over is the user's.
    #[test]
    fn wrappers_of_known_versions() {
        let files = [
            include_str!("../tests/wrapped/async-trait-0.1.92.rs"),
            include_str!("../tests/wrapped/tracing-attributes-0.1.31.rs"),
            include_str!("../tests/wrapped/tokio-macros-2.7.2.rs"),
        ];
        let expected = [
            (
                "method",
                Wrapper::AsyncTrait,
                "Result<u32, E>",
                "{ user_body(x) }",
            ),
            (
                "instrumented",
                Wrapper::Instrument,
                "Result<u32, E>",
                "{ user_body(x) }",
            ),
            (
                "instrumented_impl_trait",
                Wrapper::Instrument,
                "Result<_, E>",
                "{ user_body(x) }",
            ),
            (
                "instrumented_method",
                Wrapper::AsyncTrait,
                "Result<u32, E>",
                "{ user_body(x) }",
            ),
            ("test", Wrapper::Tokio, "Result<(), E>", "{ user_body() }"),
            ("main", Wrapper::Tokio, "Result<(), E>", "{ user_body() }"),
            (
                "test_above_instrument",
                Wrapper::Tokio,
                "Result<(), E>",
                "{ user_body() }",
            ),
            (
                "instrument_above_test",
                Wrapper::Instrument,
                "Result<(), E>",
                "{ user_body() }",
            ),
        ];
        let tokens = |s: &str| s.parse::<proc_macro2::TokenStream>().unwrap().to_string();
        let mut seen = Vec::new();
        for file in files {
            let file: syn::File = syn::parse_str(file).expect("a recorded output parses");
            for item in file.items {
                let syn::Item::Fn(mut func) = item else {
                    panic!("only functions are recorded")
                };
                let name = func.sig.ident.to_string();
                let &(_, wrapper, ret, body) = expected
                    .iter()
                    .find(|(n, ..)| *n == name)
                    .unwrap_or_else(|| panic!("`{name}` has no expectation"));
                let mut errors = Errors::default();
                let slot = locate(&mut func, &mut errors);
                assert!(errors.into_result().is_ok(), "{name}");
                let slot = slot.unwrap_or_else(|| panic!("{name}: no body found"));
                assert_eq!(slot.wrapper, wrapper, "{name}");
                assert_eq!(
                    slot.ret.ty.to_token_stream().to_string(),
                    tokens(ret),
                    "{name}"
                );
                assert_eq!(slot.ret.infers, ret.contains('_'), "{name}");
                let mut handed = String::new();
                slot.rewrite(|block, _, _| handed = block.to_token_stream().to_string());
                assert_eq!(handed, tokens(body), "{name}");
                seen.push(name);
            }
        }
        assert_eq!(seen.len(), expected.len(), "every shape is recorded");
    }

    #[test]
    fn impl_trait_becomes_inferred() {
        let cases: [(Type, &str, bool); 6] = [
            (
                syn::parse_quote!(Result<Box<dyn Iterator<Item = impl Sized>>, E>),
                "Result < Box < dyn Iterator < Item = _ > > , E >",
                true,
            ),
            (
                syn::parse_quote!(Result<(fn(u8) -> impl Sized, <impl Sized as T>::X), E>),
                "Result < (fn (u8) -> _ , < _ as T > :: X) , E >",
                true,
            ),
            (
                syn::parse_quote!(Result<impl Iterator<Item = u8> + 'a, E>),
                "Result < _ , E >",
                true,
            ),
            (
                syn::parse_quote!(Result<(&'a [impl Sized], u8), E>),
                "Result < (& 'a [_] , u8) , E >",
                true,
            ),
            (
                syn::parse_quote!(Result<Vec<u8>, E>),
                "Result < Vec < u8 > , E >",
                false,
            ),
            (
                syn::parse_quote!(Result<[u8; { 3 }], E>),
                "Result < [u8 ; { 3 }] , E >",
                false,
            ),
        ];
        for (ty, expected, infers) in cases {
            let (ty, found) = infer_impl_trait(ty);
            assert_eq!(ty.to_token_stream().to_string(), expected);
            assert_eq!(found, infers, "{expected}");
        }
    }
}
