//! The errors of one attribute (or one derive), collected so that a user sees all of them at
//! once, each with the span of the offending tokens.

use proc_macro2::Span;

/// Errors collected across the whole attribute, and how many.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>, usize);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        self.1 += 1;
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// An error on all of `tokens` (from the first token to the last, also on stable Rust).
    pub(crate) fn on(&mut self, tokens: impl quote::ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    /// How many errors were pushed so far.
    pub(crate) fn count(&self) -> usize {
        self.1
    }

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Skips the rest of a malformed item of an attribute's list (`#[retry(...)]`,
/// `#[classify(...)]`), up to the next top-level comma, so that the items after it are still
/// read and their errors reported with its own.
pub(crate) fn skip_to_comma(input: syn::parse::ParseStream<'_>) {
    while !input.is_empty() && !input.peek(syn::Token![,]) {
        if input.parse::<proc_macro2::TokenTree>().is_err() {
            break;
        }
    }
}
