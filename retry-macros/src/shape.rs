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

use crate::args::Errors;
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
}

/// The user's body inside the function, and the function's return type.
pub(crate) struct Slot<'a> {
    /// The block that runs once per attempt; the retry loop replaces it.
    pub(crate) block: &'a mut Block,
    /// The return type, with `impl Trait` replaced by `_`.
    pub(crate) ret: Type,
    /// The tokens of the return type as the user wrote them, to point type errors at.
    pub(crate) ret_span: Span,
    /// The innermost macro that expanded first, if any.
    pub(crate) wrapper: Wrapper,
}

/// Finds the user's body in `func`, or reports why `#[retry]` cannot go on it.
pub(crate) fn locate<'a>(func: &'a mut ItemFn, errors: &mut Errors) -> Option<Slot<'a>> {
    let sig = &func.sig;
    if let Some(c) = &sig.constness {
        errors.at(
            c.span,
            "`#[retry]` cannot be used on a `const fn`: retries sleep, so the function must be an \
             `async fn`",
        );
        return None;
    }
    let is_async = sig.asyncness.is_some();
    let sig_ret = match &sig.output {
        ReturnType::Type(_, ty) => Some((infer_impl_trait((**ty).clone()), ty.span())),
        ReturnType::Default => None,
    };
    let unit_error = |errors: &mut Errors, sig: &Signature| {
        errors.at(
            sig.paren_token.span.close(),
            "`#[retry]` needs a function that returns `Result<T, E>`: this one returns `()`, so \
             no attempt can fail",
        );
    };

    let search = || Search {
        is_async,
        tokio_ok: !is_async,
    };
    // Looked for twice so that the block can still be borrowed when nothing wraps it.
    let wrapped = search().block(&mut func.block).is_some();
    if wrapped {
        let found = search().block(&mut func.block).expect("found just before");
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
        return Some(Slot {
            block: found.block,
            ret,
            ret_span,
            wrapper: found.wrapper,
        });
    }
    if is_async {
        let Some((ret, ret_span)) = sig_ret else {
            unit_error(errors, &func.sig);
            return None;
        };
        if let ReturnType::Type(_, written) = &func.sig.output {
            if let Some(what) = surely_not_result(written) {
                // Aliases are left to the type system; these cannot be a `Result`.
                errors.on(
                    written,
                    format!(
                        "`#[retry]` needs a function that returns `Result<T, E>`, not {what}: \
                         the loop retries on `Err` and returns on `Ok`"
                    ),
                );
                return None;
            }
        }
        return Some(Slot {
            block: &mut func.block,
            ret,
            ret_span,
            wrapper: Wrapper::None,
        });
    }
    if let Some(output) = future_output(&func.sig.output) {
        // What `#[async_trait]` makes of a method that returns `()`, or one whose body it left
        // in a form this macro does not know.
        if is_unit(output) {
            unit_error(errors, &func.sig);
        } else {
            errors.at(
                func.sig.fn_token.span,
                "`#[retry]` found a function that returns a boxed future but not the `async` \
                 body inside it: write `#[retry]` on an `async fn` (inside `#[async_trait]` \
                 impls, on the `async fn` method)",
            );
        }
    } else {
        errors.at(
            func.sig.fn_token.span,
            "`#[retry]` works on `async fn` only: this function is not `async`; make it an \
             `async fn` (retries sleep between attempts)",
        );
    }
    None
}

/// A wrapper found in the function, with the block it runs the user's body in.
struct Found<'a> {
    block: &'a mut Block,
    /// The return type the wrapper wrote down, if it wrote one.
    ret: Option<Type>,
    wrapper: Wrapper,
}

/// Walks the places where wrapping macros put the user's body: statements, `async` blocks,
/// closures, calls and method calls, `.await`s and matches. The innermost wrapper wins.
struct Search {
    is_async: bool,
    /// `let body = async { .. };` counts as `#[tokio::test]`'s only in a plain `fn`, and only
    /// above the first one found (below it is the user's own code).
    tokio_ok: bool,
}

impl Search {
    fn block<'a>(&mut self, block: &'a mut Block) -> Option<Found<'a>> {
        if let Some(ret) = tracing_marker(block) {
            let Some(Stmt::Expr(Expr::Block(user), _)) = block.stmts.get_mut(1) else {
                unreachable!("checked by tracing_marker")
            };
            return Some(self.deepest(&mut user.block, Some(ret), Wrapper::Instrument));
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
            return Some(self.deepest(&mut body.block, None, Wrapper::Tokio));
        }
        let is_async = self.is_async;
        for stmt in &mut block.stmts {
            let found = match stmt {
                Stmt::Local(local) => {
                    if let (false, Some(ret)) = (is_async, async_trait_marker(local)) {
                        let Some(init) = &mut local.init else {
                            unreachable!("checked by async_trait_marker")
                        };
                        let Expr::Block(user) = &mut *init.expr else {
                            unreachable!("checked by async_trait_marker")
                        };
                        // Below this is the user's own code.
                        self.tokio_ok = false;
                        return Some(self.deepest(&mut user.block, Some(ret), Wrapper::AsyncTrait));
                    }
                    local
                        .init
                        .as_mut()
                        .and_then(|init| self.expr(&mut init.expr))
                }
                Stmt::Expr(expr, _) => self.expr(expr),
                Stmt::Item(_) | Stmt::Macro(_) => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    fn expr<'a>(&mut self, expr: &'a mut Expr) -> Option<Found<'a>> {
        match expr {
            Expr::Async(a) => self.block(&mut a.block),
            Expr::Block(b) => self.block(&mut b.block),
            Expr::Closure(c) => self.expr(&mut c.body),
            Expr::Await(a) => self.expr(&mut a.base),
            Expr::Paren(p) => self.expr(&mut p.expr),
            Expr::Group(g) => self.expr(&mut g.expr),
            Expr::Call(c) => {
                for arg in &mut c.args {
                    if let Some(found) = self.expr(arg) {
                        return Some(found);
                    }
                }
                self.expr(&mut c.func)
            }
            Expr::MethodCall(m) => {
                if let Some(found) = self.expr(&mut m.receiver) {
                    return Some(found);
                }
                for arg in &mut m.args {
                    if let Some(found) = self.expr(arg) {
                        return Some(found);
                    }
                }
                None
            }
            Expr::Match(m) => {
                if let Some(found) = self.expr(&mut m.expr) {
                    return Some(found);
                }
                for arm in &mut m.arms {
                    if let Some(found) = self.expr(&mut arm.body) {
                        return Some(found);
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// `block` is a wrapper's body: a wrapper nested inside it holds the user's body, else it
    /// is the user's body.
    fn deepest<'a>(
        &mut self,
        block: &'a mut Block,
        ret: Option<Type>,
        wrapper: Wrapper,
    ) -> Found<'a> {
        let tokio_ok = self.tokio_ok;
        if self.block(block).is_some() {
            self.tokio_ok = tokio_ok;
            let inner = self.block(block).expect("found just before");
            return Found {
                ret: inner.ret.or(ret),
                ..inner
            };
        }
        Found {
            block,
            ret,
            wrapper,
        }
    }
}

/// `#[tracing::instrument]`'s block: `{ if false { let __tracing_attr_fake_return: R = ..; .. }
/// { BODY } }`. Returns `R`.
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

/// `#[async_trait]`'s `let __ret: R = { BODY };`. Returns `R`.
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

/// `#[tokio::test]`'s and `#[tokio::main]`'s first statement: `let body = async { BODY };`.
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

/// A return type that cannot be a `Result` whatever the aliases in scope: a primitive, a
/// tuple, a reference, or one of the standard types users most often return instead.
fn surely_not_result(ty: &Type) -> Option<String> {
    const NOT_RESULT: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64", "Option", "Vec", "String", "Box",
    ];
    let quoted = || {
        let text = quote::ToTokens::to_token_stream(ty)
            .to_string()
            .replace(" < ", "<")
            .replace(" >", ">")
            .replace("& ", "&")
            .replace(" ,", ",");
        format!("`{text}`")
    };
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

/// `R` in `Pin<Box<dyn Future<Output = R> + ..>>`, the return type `#[async_trait]` writes.
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

/// `impl Trait` cannot be written in a `let` type: the type checker fills in `_` instead.
pub(crate) fn infer_impl_trait(ty: Type) -> Type {
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
