//! Collecting several compile errors and reporting them together.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Collects errors so that one compile reports every mistake, not only the first.
#[derive(Default)]
pub struct Errors {
    error: Option<syn::Error>,
}

impl Errors {
    /// Records an error.
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.error {
            Some(existing) => existing.combine(error),
            None => self.error = Some(error),
        }
    }

    /// Records an error at the span of `tokens`.
    pub fn at(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records the error of `result`, if any, and returns its value.
    pub fn take<T>(&mut self, result: Result<T, impl Into<syn::Error>>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(error.into());
                None
            }
        }
    }

    /// Whether any error was recorded.
    pub fn any(&self) -> bool {
        self.error.is_some()
    }

    /// `Ok(())` when nothing was recorded.
    pub fn finish(self) -> syn::Result<()> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// Emits `items` when expansion succeeded, otherwise the errors followed by `fallback` (items that
/// keep the rest of the user's code compiling, so the user sees one error instead of a cascade).
pub fn expand_with(result: syn::Result<TokenStream>, fallback: TokenStream) -> TokenStream {
    match result {
        Ok(tokens) => tokens,
        Err(error) => {
            let mut out = error.into_compile_error();
            out.extend(fallback);
            out
        }
    }
}
