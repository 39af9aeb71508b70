//! Procedural macros for [Signet](https://docs.rs/signet): `#[tool]`, `#[derive(Signature)]` and
//! `#[derive(Module)]`.
//!
//! Use them through the `signet` crate, which re-exports both and documents them; this crate holds
//! only the code generation. Every misuse is reported as a `syn::Error` on the offending span, and
//! the output on error still contains fallback items so that one mistake gives one error.

mod docs;
mod errors;
mod module;
mod signature;
mod tool;

use proc_macro::TokenStream;

/// Turns a function, or the `#[tool]` methods of an `impl` block, into Signet tools.
/// See `signet::tool` for the full documentation.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Derives `signet::Signature` for a struct whose fields are marked `#[input]` or `#[output]`.
/// See `signet::Signature` for the full documentation.
#[proc_macro_derive(Signature, attributes(input, output, signature))]
pub fn derive_signature(item: TokenStream) -> TokenStream {
    signature::expand(item.into()).into()
}

/// Derives `signet::module::Predictors` for a program struct whose fields are modules: each
/// field's predictors under the field's name (`#[module(skip)]` on fields that are not modules).
/// See `signet::module::Module` for the full documentation.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(item: TokenStream) -> TokenStream {
    module::expand(item.into()).into()
}
