//! A tool function's parameters: names, owned types, descriptions and defaults.

use darling::FromAttributes;
use syn::{Expr, FnArg, Ident, Pat, Receiver, ReceiverKind, Signature, Type};

use crate::docs::{doc_text, is_doc};
use crate::errors::Errors;

/// How the tool body receives an argument from the generated argument struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Moved: the parameter's type is the field's type.
    Value,
    /// Borrowed: `&str` from a `String` field, `&[T]` from `Vec<T>`, `&T` from `T`.
    Ref,
}

/// One parameter, validated.
pub struct ToolArg {
    pub ident: Ident,
    /// The type of the field in the generated argument struct (owned).
    pub field_ty: Type,
    /// The parameter's type as written, for error spans.
    pub written_ty: Type,
    pub pass: Pass,
    /// `Option<..>`: may be left out (serde gives `None`).
    pub optional: bool,
    pub desc: Option<String>,
    pub default: Option<Expr>,
    /// `#[arg(schema = ..)]`: the argument's schema, written by hand (a `serde_json::Value`).
    pub schema: Option<Expr>,
    /// `#[arg(rest)]`: receives the arguments the other parameters do not name.
    pub rest: bool,
}

/// `#[arg(...)]` on a parameter.
#[derive(Debug, Default, FromAttributes)]
#[darling(attributes(arg))]
struct ArgOptions {
    /// The argument's description.
    desc: Option<String>,
    /// The value used when the argument is left out (any expression; a string literal stays a
    /// string).
    #[darling(with = default_value, map = Some)]
    default: Option<Expr>,
    /// The argument's JSON schema, written by hand (any expression giving a `serde_json::Value`).
    #[darling(with = schema_value, map = Some)]
    schema: Option<Expr>,
    /// The parameter receives every argument the others do not name (a map).
    rest: darling::util::Flag,
}

/// `schema = <expr>`; a bare `schema` is an error that shows the expected form.
fn schema_value(meta: &syn::Meta) -> darling::Result<Expr> {
    valued(
        meta,
        "`schema` needs a value, as in `#[arg(schema = serde_json::json!({\"type\": \"string\"}))]`",
    )
}

/// The value of `name = <expr>`, or `missing` as an error at a bare `name`.
fn valued(meta: &syn::Meta, missing: &str) -> darling::Result<Expr> {
    match meta {
        syn::Meta::NameValue(nv) => Ok(nv.value.clone()),
        other => Err(darling::Error::custom(missing).with_span(other)),
    }
}

/// `default = <expr>`; a bare `default` is an error that shows the expected form.
fn default_value(meta: &syn::Meta) -> darling::Result<Expr> {
    valued(
        meta,
        "`default` needs a value, as in `#[arg(default = 3)]` or `#[arg(default = \"text\")]`",
    )
}

/// Whether the type's last path segment is `name` (`Option<T>`, `std::option::Option<T>`).
pub fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        Type::Group(group) => last_segment_is(&group.elem, name),
        Type::Paren(paren) => last_segment_is(&paren.elem, name),
        _ => false,
    }
}

pub fn parse_args(sig: &Signature) -> syn::Result<Vec<ToolArg>> {
    let mut errors = Errors::default();
    let mut args = Vec::new();
    for input in &sig.inputs {
        let FnArg::Typed(param) = input else {
            // Receivers are checked by the caller (allowed only on methods).
            continue;
        };
        let options = errors.take(ArgOptions::from_attributes(&param.attrs));
        let ident = match &*param.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                Some(pat.ident.clone())
            }
            other => {
                errors.at(
                    other,
                    "unsupported argument pattern: tool arguments must be plain names \
                     (`name: Type`), because each name is the argument's key in the JSON the model sends",
                );
                None
            }
        };
        let owned = errors.take(owned_type(&param.ty));
        if let (Some(ident), Some((field_ty, pass)), Some(options)) = (ident, owned, options) {
            let desc = options.desc.or_else(|| doc_text(&param.attrs));
            let optional = last_segment_is(&field_ty, "Option");
            let rest = options.rest.is_present();
            if rest && (options.schema.is_some() || options.default.is_some()) {
                errors.push(syn::Error::new(
                    options.rest.span(),
                    "`rest` takes the arguments no other parameter names; it has no schema or \
                     default of its own",
                ));
            }
            if rest && args.iter().any(|a: &ToolArg| a.rest) {
                errors.push(syn::Error::new(
                    options.rest.span(),
                    "only one parameter can be `#[arg(rest)]`",
                ));
            }
            args.push(ToolArg {
                ident,
                optional,
                field_ty,
                written_ty: (*param.ty).clone(),
                pass,
                desc,
                default: options.default,
                schema: options.schema,
                rest,
            });
        }
    }
    errors.finish()?;
    Ok(args)
}

/// The owned type stored in the argument struct for a parameter type, and how it is passed.
fn owned_type(ty: &Type) -> syn::Result<(Type, Pass)> {
    match ty {
        Type::Reference(reference) => {
            if let Some(mutability) = &reference.mutability {
                return Err(syn::Error::new_spanned(
                    mutability,
                    "tool arguments cannot be `&mut`: the arguments come from the model's JSON; \
                     take the value or a shared reference",
                ));
            }
            let elem = &*reference.elem;
            let owned: Type = match elem {
                Type::Path(path) if path.qself.is_none() && path.path.is_ident("str") => {
                    syn::parse_quote!(::std::string::String)
                }
                Type::Slice(slice) => {
                    let item = &slice.elem;
                    syn::parse_quote!(::std::vec::Vec<#item>)
                }
                other => other.clone(),
            };
            Ok((owned, Pass::Ref))
        }
        Type::ImplTrait(_) => Err(syn::Error::new_spanned(
            ty,
            "`impl Trait` arguments are not supported: the argument schema needs a concrete type",
        )),
        other => Ok((other.clone(), Pass::Value)),
    }
}

/// Only `&self` is accepted: tools are shared by concurrent calls.
pub fn check_receiver(receiver: &Receiver) -> syn::Result<()> {
    match &receiver.kind {
        ReceiverKind::Reference(_, _, None) => Ok(()),
        ReceiverKind::Reference(_, _, Some(_)) => Err(syn::Error::new_spanned(
            receiver,
            "tool methods take `&self`, not `&mut self`: one value serves concurrent calls; \
             keep mutable state behind a `Mutex` or an atomic",
        )),
        ReceiverKind::Value => Err(syn::Error::new_spanned(
            receiver,
            "tool methods take `&self`, not `self` by value: the value is shared by every call \
             of every tool in the impl block",
        )),
        _ => Err(syn::Error::new_spanned(
            receiver,
            "tool methods take `&self`; the tools hold the value in an `Arc` for you",
        )),
    }
}

/// Removes `#[arg]` attributes and doc comments from parameters: they are read by this macro and
/// must not reach the compiler.
pub fn strip_arg_attrs(sig: &mut Signature) {
    for input in &mut sig.inputs {
        if let FnArg::Typed(param) = input {
            param
                .attrs
                .retain(|a| !a.path().is_ident("arg") && !is_doc(a));
        }
    }
}
