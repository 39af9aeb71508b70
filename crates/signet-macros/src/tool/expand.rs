//! Code generation for one tool: the argument struct, the cached spec and the `Tool` impl.
//!
//! The generated items live inside a `const _: () = { .. };` block (so helper names never collide
//! with the user's) that has `use <signet>::__private as __signet;` in scope.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Type};

use super::ToolDef;
use super::args::Pass;

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
    let schemars_path = format!("{}", quote!(#krate::__private::schemars)).replace(' ', "");
    let name = &def.name;
    let desc = &def.desc;
    let confirm = def.confirm;

    let mut fields = Vec::new();
    let mut helpers = Vec::new();
    let mut checks = Vec::new();
    let mut call_args = Vec::new();
    for arg in &def.args {
        let ident = &arg.ident;
        let ty = &arg.field_ty;
        let doc = arg.desc.as_ref().map(|d| quote!(#[doc = #d]));
        let default = arg.default.as_ref().map(|expr| {
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
            quote!(#[serde(default = #default_name)])
        });
        fields.push(quote! { #doc #default #ident: #ty });
        let written = &arg.written_ty;
        checks.push(quote_spanned! {written.span()=>
            const _: () = __signet::assert_tool_argument::<#ty>();
        });
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

    // Sync tools get a direct sync entry point; async tools use the trait's default (a runtime).
    let call_blocking = (!def.is_async).then(|| {
        quote! {
            fn call_blocking(
                &self,
                args: __signet::serde_json::Value,
            ) -> ::core::result::Result<__signet::serde_json::Value, #krate::ToolError> {
                #[allow(unused_imports)]
                use __signet::{PlainKind as _, ResultKind as _};
                let __args: #args_ident = #spec_fn().parse_args(args)?;
                #sync_prelude
                let __out = __signet::run_inline(#name, move || #sync_call)?;
                (&__out).tool_return_kind().convert(#name, __out)
            }
        }
    });

    quote! {
        #(#checks)*

        #[derive(__signet::serde::Deserialize, __signet::schemars::JsonSchema)]
        #[serde(crate = #serde_path, deny_unknown_fields)]
        #[schemars(crate = #schemars_path)]
        #[allow(non_camel_case_types)]
        struct #args_ident {
            #(#fields,)*
        }

        #(#helpers)*

        fn #spec_fn() -> &'static #krate::ToolSpec {
            static SPEC: __signet::OnceLock<#krate::ToolSpec> = __signet::OnceLock::new();
            SPEC.get_or_init(|| #krate::ToolSpec::for_args::<#args_ident>(#name, #desc))
        }

        impl #krate::Tool for #tool_ty {
            fn spec(&self) -> &#krate::ToolSpec {
                #spec_fn()
            }

            fn call(&self, args: __signet::serde_json::Value) -> #krate::tool::ToolFuture<'_> {
                #[allow(unused_imports)]
                use __signet::{PlainKind as _, ResultKind as _};
                __signet::FutureExt::boxed(async move {
                    let __args: #args_ident = #spec_fn().parse_args(args)?;
                    #call_body
                    (&__out).tool_return_kind().convert(#name, __out)
                })
            }

            #call_blocking

            fn requires_confirmation(&self) -> bool {
                #confirm
            }
        }
    }
}
