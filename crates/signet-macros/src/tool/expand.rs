//! Code generation for one tool: the argument struct, the cached spec and the `Tool` impl.
//!
//! The generated items live inside a `const _: () = { .. };` block (so helper names never collide
//! with the user's) that has `use <signet>::__private as __signet;` in scope.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Type};

use super::args::Pass;
use super::{Output, ToolDef};

/// Emits the `Tool` impl for `tool_ty`.
///
/// * `self_ty`: for methods, the impl block's type; `tool_ty` is then a tuple struct holding an
///   `Arc<self_ty>` and the body calls `method` on it.
/// * `call_target`: the function (or method) name to call.
/// * `suffix`: appended to helper names so that several tools can share one `const` block.
pub fn tool_impl(
    krate: &TokenStream,
    def: &ToolDef,
    tool_ty: &TokenStream,
    self_ty: Option<&Type>,
    call_target: &TokenStream,
    suffix: &str,
) -> TokenStream {
    let args_ident = format_ident!("__SignetArgs{}", suffix);
    let spec_fn = format_ident!("__signet_spec{}", suffix);
    let serde_path = format!("{}", quote!(#krate::__private::serde)).replace(' ', "");
    let name = &def.name;
    let desc = &def.desc;
    let confirm = def.confirm;
    // A tool that needs a person's approval runs only inside one (`signet::tool::approved`).
    let approval_check = confirm.then(|| quote!(#krate::tool::require_approval(#name)?;));

    let mut fields = Vec::new();
    let mut helpers = Vec::new();
    let mut schema_args = Vec::new();
    let mut call_args = Vec::new();
    for arg in &def.args {
        let ident = &arg.ident;
        let ty = &arg.field_ty;
        let arg_name = ident.to_string();
        let arg_name = arg_name.strip_prefix("r#").unwrap_or(&arg_name);
        let desc = match &arg.desc {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        let (serde_default, default_json) = match &arg.default {
            Some(expr) => {
                let default_fn = format_ident!("__signet_default{}_{}", suffix, ident);
                let default_name = default_fn.to_string();
                let value = match expr {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(_), ..
                    }) => {
                        quote_spanned!(expr.span()=> ::core::convert::From::from(#expr))
                    }
                    other => quote!(#other),
                };
                helpers.push(quote! {
                    #[allow(non_snake_case)]
                    fn #default_fn() -> #ty { #value }
                });
                (
                    quote!(#[serde(default = #default_name)]),
                    quote_spanned!(expr.span()=> __signet::default_value(#default_fn())),
                )
            }
            None => (quote!(), quote!(::core::option::Option::None)),
        };
        let required = arg.default.is_none() && !arg.optional;
        let written = &arg.written_ty;
        if arg.rest {
            fields.push(quote! { #[serde(flatten)] #ident: #ty });
            schema_args.push(quote! { let schema = schema.rest(); });
        } else {
            fields.push(quote! { #serde_default #ident: #ty });
            schema_args.push(match &arg.schema {
                Some(expr) => quote_spanned! {expr.span()=>
                    let schema = __signet::tool_arg_schema(
                        schema, #arg_name, #desc, #default_json, #required, #expr,
                    );
                },
                None => quote_spanned! {written.span()=>
                    let schema = __signet::tool_arg::<#ty>(schema, #arg_name, #desc, #default_json, #required);
                },
            });
        }
        call_args.push(match arg.pass {
            Pass::Value => quote!(__args.#ident),
            Pass::Ref => quote!(&__args.#ident),
        });
    }

    // How the body is reached: a free function, or a method on the shared value.
    let (async_call, sync_prelude, sync_call) = match self_ty {
        None => (
            quote!(#call_target(#(#call_args),*)),
            quote!(),
            quote!(#call_target(#(#call_args),*)),
        ),
        Some(_) => (
            quote!(self.0.#call_target(#(#call_args),*)),
            quote!(let __this = __signet::Arc::clone(&self.0);),
            quote!(__this.#call_target(#(#call_args),*)),
        ),
    };

    let call_body = if def.is_async {
        quote! {
            let __out = __signet::run_async(#name, #async_call).await?;
        }
    } else if def.inline {
        quote! {
            #sync_prelude
            let __out = __signet::run_inline(#name, move || #sync_call)?;
        }
    } else {
        quote! {
            #sync_prelude
            let __out = __signet::run_blocking(#name, move || #sync_call).await?;
        }
    };

    // The return value as JSON: `Result`-named types are fallible, anything else is serialized.
    let output = match &def.output {
        Output::Result(ty) => quote_spanned!(ty.span()=> __signet::result_output(#name, __out)),
        Output::Plain(ty) => quote_spanned!(ty.span()=> __signet::plain_output(#name, __out)),
        Output::Unit => quote!(__signet::plain_output(#name, __out)),
    };

    // Sync tools get a direct sync entry point; async tools use the trait's default (a runtime).
    let call_blocking = (!def.is_async).then(|| {
        quote! {
            fn call_blocking(
                &self,
                args: __signet::serde_json::Value,
            ) -> ::core::result::Result<__signet::serde_json::Value, #krate::ToolError> {
                #approval_check
                let __args: #args_ident = #spec_fn().parse_args(args)?;
                #sync_prelude
                let __out = __signet::run_inline(#name, move || #sync_call)?;
                #output
            }
        }
    });

    // A `rest` parameter takes the unknown fields; otherwise they are refused.
    let deny_unknown = (!def.args.iter().any(|a| a.rest)).then(|| quote!(, deny_unknown_fields));
    quote! {
        #[derive(__signet::serde::Deserialize)]
        #[serde(crate = #serde_path #deny_unknown)]
        #[allow(non_camel_case_types)]
        struct #args_ident {
            #(#fields,)*
        }

        #(#helpers)*

        fn #spec_fn() -> &'static #krate::ToolSpec {
            static SPEC: __signet::OnceLock<#krate::ToolSpec> = __signet::OnceLock::new();
            SPEC.get_or_init(|| {
                let schema = __signet::ArgsSchema::new();
                #(#schema_args)*
                #krate::ToolSpec::new(#name, #desc, schema.finish())
            })
        }

        #[automatically_derived]
        impl #krate::Tool for #tool_ty {
            fn spec(&self) -> &#krate::ToolSpec {
                #spec_fn()
            }

            fn call(&self, args: __signet::serde_json::Value) -> #krate::tool::ToolFuture<'_> {
                __signet::FutureExt::boxed(async move {
                    #approval_check
                    let __args: #args_ident = #spec_fn().parse_args(args)?;
                    #call_body
                    #output
                })
            }

            #call_blocking

            fn requires_confirmation(&self) -> bool {
                #confirm
            }
        }
    }
}
