//! Error collection: every stage records its errors here and the expansion fails once, at the
//! end, with all of them (one compile shows every misuse).

use proc_macro2::{Span, TokenStream};
use std::fmt::Display;

/// The errors found so far.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// An error at `span`.
    pub(crate) fn error(&mut self, span: Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// An error spanning the given tokens.
    pub(crate) fn error_at(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records a parse error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Whether nothing went wrong.
    pub(crate) fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The errors as `compile_error!` invocations.
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}
