//! A walk over the parts of a function's body that the macro looks into: blocks, `let`s,
//! expressions and macro calls, each step a method the walker may take over.
//!
//! The macro needs three walks (the search for the user's body in `shape`, the renaming of
//! `self` in `expand`, the `impl Trait` of a return type in `shape`), and each looks at a few
//! kinds of node only. A walk of its own, written here, spares every program that uses
//! `#[retry]` the compile of syn's `visit-mut` (a generated visitor of every node of the syntax
//! tree), where tokio's macros, which share syn with it, do not need one. The walk of a body
//! ([`Walk`]) does not enter nested items, types or patterns (but for a match arm's guard), and
//! the walk of a return type ([`infer_impl_trait`]) enters types only: no walk looks for
//! anything elsewhere.

use syn::{
    Block, Expr, GenericArgument, Local, Macro, Pat, Path, PathArguments, ReturnType, Stmt, Type,
    TypeParamBound,
};

/// A walk over expressions: each method goes on into the node's parts unless the walker takes
/// it over.
pub(crate) trait Walk {
    fn block(&mut self, block: &mut Block) {
        walk_block(self, block);
    }

    fn local(&mut self, local: &mut Local) {
        walk_local(self, local);
    }

    fn expr(&mut self, expr: &mut Expr) {
        walk_expr(self, expr);
    }

    /// A path in an expression (`self`, `Self::SAFE`, `f::<T>`).
    fn path(&mut self, _path: &mut Path) {}

    /// A macro call, whose tokens are not parsed.
    fn mac(&mut self, _mac: &mut Macro) {}
}

/// The statements of `block`, in order; nested items are skipped.
pub(crate) fn walk_block<W: Walk + ?Sized>(walk: &mut W, block: &mut Block) {
    for stmt in &mut block.stmts {
        match stmt {
            Stmt::Local(local) => walk.local(local),
            Stmt::Item(_) => {}
            Stmt::Expr(expr, _) => walk.expr(expr),
            Stmt::Macro(stmt) => walk.mac(&mut stmt.mac),
        }
    }
}

/// The initializer of a `let`, and its `else` block.
pub(crate) fn walk_local<W: Walk + ?Sized>(walk: &mut W, local: &mut Local) {
    if let Some(init) = &mut local.init {
        walk.expr(&mut init.expr);
        if let Some((_, diverge)) = &mut init.diverge {
            walk.expr(diverge);
        }
    }
}

/// The expressions, blocks, paths and macro calls directly inside `expr`, in the order they are
/// written.
pub(crate) fn walk_expr<W: Walk + ?Sized>(walk: &mut W, expr: &mut Expr) {
    match expr {
        Expr::Array(e) => e.elems.iter_mut().for_each(|e| walk.expr(e)),
        Expr::Assign(e) => {
            walk.expr(&mut e.left);
            walk.expr(&mut e.right);
        }
        Expr::Async(e) => walk.block(&mut e.block),
        Expr::Await(e) => walk.expr(&mut e.base),
        Expr::Binary(e) => {
            walk.expr(&mut e.left);
            walk.expr(&mut e.right);
        }
        Expr::Block(e) => walk.block(&mut e.block),
        Expr::Break(e) => e.expr.iter_mut().for_each(|e| walk.expr(e)),
        Expr::Call(e) => {
            walk.expr(&mut e.func);
            e.args.iter_mut().for_each(|e| walk.expr(e));
        }
        Expr::Cast(e) => walk.expr(&mut e.expr),
        Expr::Closure(e) => walk.expr(&mut e.body),
        Expr::Const(e) => walk.block(&mut e.block),
        Expr::Field(e) => walk.expr(&mut e.base),
        Expr::ForLoop(e) => {
            walk.expr(&mut e.expr);
            walk.block(&mut e.body);
        }
        Expr::Group(e) => walk.expr(&mut e.expr),
        Expr::If(e) => {
            walk.expr(&mut e.cond);
            walk.block(&mut e.then_branch);
            if let Some((_, other)) = &mut e.else_branch {
                walk.expr(other);
            }
        }
        Expr::Index(e) => {
            walk.expr(&mut e.expr);
            walk.expr(&mut e.index);
        }
        Expr::Let(e) => walk.expr(&mut e.expr),
        Expr::Loop(e) => walk.block(&mut e.body),
        Expr::Macro(e) => walk.mac(&mut e.mac),
        Expr::Match(e) => {
            walk.expr(&mut e.expr);
            for arm in &mut e.arms {
                walk_guards(walk, &mut arm.pat);
                walk.expr(&mut arm.body);
            }
        }
        Expr::MethodCall(e) => {
            walk.expr(&mut e.receiver);
            e.args.iter_mut().for_each(|e| walk.expr(e));
        }
        Expr::Paren(e) => walk.expr(&mut e.expr),
        Expr::Path(e) => walk.path(&mut e.path),
        Expr::Range(e) => {
            e.start.iter_mut().for_each(|e| walk.expr(e));
            e.end.iter_mut().for_each(|e| walk.expr(e));
        }
        Expr::RawAddr(e) => walk.expr(&mut e.expr),
        Expr::Reference(e) => walk.expr(&mut e.expr),
        Expr::Repeat(e) => {
            walk.expr(&mut e.expr);
            walk.expr(&mut e.len);
        }
        Expr::Return(e) => e.expr.iter_mut().for_each(|e| walk.expr(e)),
        Expr::Struct(e) => {
            e.fields.iter_mut().for_each(|f| walk.expr(&mut f.expr));
            e.rest.iter_mut().for_each(|e| walk.expr(e));
        }
        Expr::Try(e) => walk.expr(&mut e.expr),
        Expr::TryBlock(e) => walk.block(&mut e.block),
        Expr::Tuple(e) => e.elems.iter_mut().for_each(|e| walk.expr(e)),
        Expr::Unary(e) => walk.expr(&mut e.expr),
        Expr::Unsafe(e) => walk.block(&mut e.block),
        Expr::While(e) => {
            walk.expr(&mut e.cond);
            walk.block(&mut e.body);
        }
        Expr::Yield(e) => e.expr.iter_mut().for_each(|e| walk.expr(e)),
        // Nothing inside: `continue`, `_`, a literal, tokens syn did not parse.
        _ => {}
    }
}

/// The guards in a match arm's pattern (`Some(x) if x > 0`, also inside `|` and parentheses).
fn walk_guards<W: Walk + ?Sized>(walk: &mut W, pat: &mut Pat) {
    match pat {
        Pat::Guard(p) => {
            walk_guards(walk, &mut p.pat);
            walk.expr(&mut p.guard);
        }
        Pat::Or(p) => p.cases.iter_mut().for_each(|p| walk_guards(walk, p)),
        Pat::Paren(p) => walk_guards(walk, &mut p.pat),
        _ => {}
    }
}

/// `ty` with each `impl Trait` replaced by `_`, which a `let` type cannot write and the type
/// checker fills in instead, as tracing-attributes' `ImplTraitEraser` does: wherever a type is
/// written in it (the elements of references, slices, arrays, tuples and pointers, generic
/// arguments, associated types, `Fn(..) -> ..` and `fn(..) -> ..`). Also returns whether the
/// type has `_` in it, one of them or one written. An array's length is not the type's, and is
/// left as written.
pub(crate) fn infer_impl_trait(mut ty: Type) -> (Type, bool) {
    let mut infers = false;
    infer_type(&mut ty, &mut infers);
    (ty, infers)
}

fn infer_type(ty: &mut Type, infers: &mut bool) {
    match ty {
        Type::ImplTrait(t) => {
            let span = syn::spanned::Spanned::span(&*t);
            *ty = syn::parse_quote_spanned!(span=> _);
            *infers = true;
        }
        Type::Infer(_) => *infers = true,
        Type::Array(t) => infer_type(&mut t.elem, infers),
        Type::FnPtr(t) => {
            for arg in &mut t.inputs {
                infer_type(&mut arg.ty, infers);
            }
            infer_output(&mut t.output, infers);
        }
        Type::Group(t) => infer_type(&mut t.elem, infers),
        Type::Paren(t) => infer_type(&mut t.elem, infers),
        Type::Path(t) => {
            if let Some(qself) = &mut t.qself {
                infer_type(&mut qself.ty, infers);
            }
            infer_path(&mut t.path, infers);
        }
        Type::Ptr(t) => infer_type(&mut t.elem, infers),
        Type::Reference(t) => infer_type(&mut t.elem, infers),
        Type::Slice(t) => infer_type(&mut t.elem, infers),
        Type::TraitObject(t) => infer_bounds(t.bounds.iter_mut(), infers),
        Type::Tuple(t) => t.elems.iter_mut().for_each(|t| infer_type(t, infers)),
        // Nothing inside: `!`, a macro, tokens syn did not parse.
        _ => {}
    }
}

fn infer_output(output: &mut ReturnType, infers: &mut bool) {
    if let ReturnType::Type(_, ty) = output {
        infer_type(ty, infers);
    }
}

fn infer_path(path: &mut Path, infers: &mut bool) {
    for segment in &mut path.segments {
        match &mut segment.arguments {
            PathArguments::None => {}
            PathArguments::AngleBracketed(args) => {
                for arg in &mut args.args {
                    match arg {
                        GenericArgument::Type(t) => infer_type(t, infers),
                        GenericArgument::AssocType(a) => infer_type(&mut a.ty, infers),
                        GenericArgument::Constraint(c) => {
                            infer_bounds(c.bounds.iter_mut(), infers);
                        }
                        _ => {}
                    }
                }
            }
            PathArguments::Parenthesized(args) => {
                args.inputs
                    .iter_mut()
                    .for_each(|a| infer_type(&mut a.ty, infers));
                infer_output(&mut args.output, infers);
            }
        }
    }
}

fn infer_bounds<'a>(bounds: impl Iterator<Item = &'a mut TypeParamBound>, infers: &mut bool) {
    for bound in bounds {
        if let TypeParamBound::Trait(t) = bound {
            infer_path(&mut t.path, infers);
        }
    }
}
