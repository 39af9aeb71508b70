//! `#[derive(Module)]`: walk a program's predictors through its fields, with DSPy's paths.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Meta, Path};

use crate::errors::{Errors, expand_with};

/// `#[module(...)]` on the struct.
#[derive(Debug, Default, FromMeta)]
struct ModuleOptions {
    /// Path of the `signet` crate, when renamed.
    #[darling(rename = "crate")]
    krate: Option<Path>,
}

/// `#[module(...)]` on a field.
#[derive(Debug, Default, FromMeta)]
struct FieldOptions {
    /// Not a module: no predictors to walk (a lookup table, a setting).
    #[darling(default)]
    skip: bool,
}

pub fn expand(item: TokenStream) -> TokenStream {
    match syn::parse2::<DeriveInput>(item) {
        Ok(input) => {
            let fallback = fallback(&input);
            expand_with(expand_derive(&input), fallback)
        }
        Err(error) => error.into_compile_error(),
    }
}

fn options<T: FromMeta + Default>(attrs: &[Attribute]) -> syn::Result<T> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("module")) {
        let list = match &attr.meta {
            Meta::List(list) => NestedMeta::parse_meta_list(list.tokens.clone())?,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "expected `#[module(...)]`, e.g. `#[module(skip)]`",
                ));
            }
        };
        if found.is_some() {
            return Err(syn::Error::new_spanned(
                attr,
                "`#[module(...)]` is given twice",
            ));
        }
        found = Some(T::from_list(&list)?);
    }
    Ok(found.unwrap_or_default())
}

fn krate(input: &DeriveInput) -> TokenStream {
    options::<ModuleOptions>(&input.attrs)
        .ok()
        .and_then(|o| o.krate)
        .map_or_else(|| quote!(::signet), |path| quote!(#path))
}

fn expand_derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    errors.take(options::<ModuleOptions>(&input.attrs));
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(_) => {
                errors.at(
                    &input.ident,
                    "#[derive(Module)] needs named fields: a predictor's path is its field's name",
                );
                Vec::new()
            }
        },
        _ => {
            errors.at(&input.ident, "#[derive(Module)] applies to structs only");
            Vec::new()
        }
    };
    let mut walked = Vec::new();
    for field in fields {
        let Some(options) = errors.take(options::<FieldOptions>(&field.attrs)) else {
            continue;
        };
        if !options.skip {
            walked.push(field);
        }
    }
    errors.finish()?;

    let krate = krate(input);
    let ident = &input.ident;
    // A field whose type uses the struct's type parameters (`ReAct<S>`) is a module when its
    // parameters allow: say so in the impl's bounds. Other fields are checked at their type.
    let params: Vec<&syn::Ident> = input.generics.type_params().map(|p| &p.ident).collect();
    let mut generics = input.generics.clone();
    for field in &walked {
        if mentions(field.ty.to_token_stream(), &params) {
            let ty = &field.ty;
            generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote!(#ty: #krate::module::Predictors));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let krate_ref = &krate;
    // Each field is reached through one helper per borrow (`program_field`, `program_field_mut`)
    // whatever it is asked for, so a field that is not a module is reported once per borrow.
    let walk = |mutable: bool, method: &'static str| {
        walked.iter().map(move |field| {
            let krate = krate_ref;
            let name = field.ident.as_ref().expect("named").to_string();
            let member = &field.ident;
            let ty = &field.ty;
            let (reference, helper, method) = if mutable {
                (
                    quote!(&mut self.#member),
                    quote!(program_field_mut),
                    format_ident!("{method}_mut"),
                )
            } else {
                (
                    quote!(&self.#member),
                    quote!(program_field),
                    format_ident!("{method}"),
                )
            };
            // Spanned at the field's type: a type that is not a module is reported there.
            let field = quote_spanned!(ty.span()=> __signet::#helper::<#ty>(#reference));
            quote!(all.extend(#krate::module::prefixed(#name.to_owned(), #field.#method()));)
        })
    };
    let shared: Vec<TokenStream> = walk(false, "named_predictors").collect();
    let exclusive: Vec<TokenStream> = walk(true, "named_predictors").collect();
    let loops: Vec<TokenStream> = walk(false, "named_react_loops").collect();
    let loops_mut: Vec<TokenStream> = walk(true, "named_react_loops").collect();
    Ok(quote! {
        #[doc(hidden)]
        const _: () = {
            use #krate::__private as __signet;

            #[automatically_derived]
            impl #impl_generics #krate::module::Predictors for #ident #ty_generics #where_clause {
                fn named_predictors(
                    &self,
                ) -> ::std::vec::Vec<(::std::string::String, &#krate::module::DynPredict)> {
                    let mut all = ::std::vec::Vec::new();
                    #(#shared)*
                    all
                }

                fn named_predictors_mut(
                    &mut self,
                ) -> ::std::vec::Vec<(::std::string::String, &mut #krate::module::DynPredict)> {
                    let mut all = ::std::vec::Vec::new();
                    #(#exclusive)*
                    all
                }

                fn named_react_loops(
                    &self,
                ) -> ::std::vec::Vec<(::std::string::String, &#krate::module::DynReAct)> {
                    let mut all = ::std::vec::Vec::new();
                    #(#loops)*
                    all
                }

                fn named_react_loops_mut(
                    &mut self,
                ) -> ::std::vec::Vec<(::std::string::String, &mut #krate::module::DynReAct)> {
                    let mut all = ::std::vec::Vec::new();
                    #(#loops_mut)*
                    all
                }
            }
        };
    })
}

/// Whether `tokens` name one of `params`.
fn mentions(tokens: TokenStream, params: &[&syn::Ident]) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => params.iter().any(|p| **p == ident),
        proc_macro2::TokenTree::Group(group) => mentions(group.stream(), params),
        _ => false,
    })
}

/// On error: an empty `Predictors` impl, so code that uses the program still compiles and the user
/// sees only the real error.
fn fallback(input: &DeriveInput) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let krate = krate(input);
    let ident = &input.ident;
    quote! {
        #[automatically_derived]
        impl #krate::module::Predictors for #ident {
            fn named_predictors(
                &self,
            ) -> ::std::vec::Vec<(::std::string::String, &#krate::module::DynPredict)> {
                ::std::vec::Vec::new()
            }
            fn named_predictors_mut(
                &mut self,
            ) -> ::std::vec::Vec<(::std::string::String, &mut #krate::module::DynPredict)> {
                ::std::vec::Vec::new()
            }
        }
    }
}
