//! The errors of one attribute, collected so that a user sees all of them at once, each with
//! the span of the offending tokens.

use proc_macro2::Span;

/// Errors collected across the whole attribute.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
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

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}
