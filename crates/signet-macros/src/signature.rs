//! `#[derive(Signature)]`: parse and validate the struct, then generate the input and output structs
//! and the `Signature` impl.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Meta, Path, Type, Visibility};

use crate::docs::{doc_text, is_doc};
use crate::errors::{Errors, expand_with};

/// `#[signature(...)]` on the struct.
#[derive(Debug, Default, FromMeta)]
struct SignatureOptions {
    /// Instructions (default: the doc comment, else DSPy's "Given the fields ..." sentence).
    instructions: Option<String>,
    /// The signature's name (default: the struct's).
    name: Option<String>,
    /// Path of the `signet` crate, when renamed.
    #[darling(rename = "crate")]
    krate: Option<Path>,
}

/// `#[input(...)]` / `#[output(...)]` on a field.
#[derive(Debug, Default, FromMeta)]
struct FieldOptions {
    /// The field's description (default: its doc comment).
    desc: Option<String>,
    /// Bounds printed with the field, as pydantic's `Field(gt=.., ge=.., ..)` in DSPy.
    gt: Option<syn::Expr>,
    ge: Option<syn::Expr>,
    lt: Option<syn::Expr>,
    le: Option<syn::Expr>,
    multiple_of: Option<syn::Expr>,
    min_length: Option<syn::Expr>,
    max_length: Option<syn::Expr>,
    /// A check of an output's value: a path to `fn(&T) -> Result<(), E>` (`E: Display`).
    check: Option<syn::Expr>,
    /// Every figure of an output comes from a tool result or the inputs.
    grounded: darling::util::Flag,
}

impl FieldOptions {
    /// The constraints, in DSPy's order, as `Variant(value)` tokens; a bound that is not a number
    /// (or a length that is not an integer literal) is an error at its span.
    fn constraints(&self) -> syn::Result<Vec<TokenStream>> {
        let bounds = [
            number_bound("Gt", "gt", &self.gt)?,
            number_bound("Ge", "ge", &self.ge)?,
            number_bound("Lt", "lt", &self.lt)?,
            number_bound("Le", "le", &self.le)?,
            length_bound("MinLength", "min_length", &self.min_length)?,
            length_bound("MaxLength", "max_length", &self.max_length)?,
            number_bound("MultipleOf", "multiple_of", &self.multiple_of)?,
        ];
        Ok(bounds.into_iter().flatten().collect())
    }
}

/// `Variant(Value::from(expr))` for a numeric bound; a literal that is not a number is an error.
fn number_bound(
    variant: &str,
    name: &str,
    value: &Option<syn::Expr>,
) -> syn::Result<Option<TokenStream>> {
    let Some(expr) = value else { return Ok(None) };
    if let syn::Expr::Lit(lit) = expr
        && !matches!(lit.lit, syn::Lit::Int(_) | syn::Lit::Float(_))
    {
        return Err(syn::Error::new_spanned(
            expr,
            format!("`{name}` takes a number, e.g. `{name} = 1`"),
        ));
    }
    let variant = format_ident!("{variant}");
    Ok(Some(
        quote!(#variant(__signet::serde_json::Value::from(#expr))),
    ))
}

/// `Variant(n)` for a length bound, which must be a non-negative integer literal.
fn length_bound(
    variant: &str,
    name: &str,
    value: &Option<syn::Expr>,
) -> syn::Result<Option<TokenStream>> {
    let Some(expr) = value else { return Ok(None) };
    let n = match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse::<u64>().ok(),
        _ => None,
    };
    let Some(n) = n else {
        return Err(syn::Error::new_spanned(
            expr,
            format!("`{name}` takes a non-negative integer, e.g. `{name} = 500`"),
        ));
    };
    let variant = format_ident!("{variant}");
    Ok(Some(quote!(#variant(#n))))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Input,
    Output,
}

struct SigField {
    ident: Ident,
    ty: Type,
    vis: Visibility,
    docs: Vec<Attribute>,
    desc: Option<String>,
    constraints: Vec<TokenStream>,
    /// `#[output(check = path)]`: the function's path.
    check: Option<Path>,
    /// `#[output(grounded)]`.
    grounded: bool,
    role: Role,
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

fn expand_derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let options = errors
        .take(parse_struct_options(&input.attrs))
        .unwrap_or_default();
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            "#[derive(Signature)] does not support generic structs",
        );
    }
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
            _ => {
                errors.at(
                    &input.ident,
                    "#[derive(Signature)] needs a struct with named fields: each field name is a \
                     field of the prompt",
                );
                Vec::new()
            }
        },
        _ => {
            errors.at(&input.ident, "#[derive(Signature)] applies to structs only");
            Vec::new()
        }
    };
    let mut sig_fields = Vec::new();
    for field in fields {
        if let Some(parsed) = errors.take(parse_field(field)) {
            sig_fields.push(parsed);
        }
    }
    if !errors.any() && !sig_fields.iter().any(|f| f.role == Role::Output) {
        errors.at(
            &input.ident,
            "a signature needs at least one `#[output]` field: the values the model must produce",
        );
    }
    errors.finish()?;
    Ok(generate(input, &options, &sig_fields))
}

fn parse_struct_options(attrs: &[Attribute]) -> syn::Result<SignatureOptions> {
    let mut options = SignatureOptions::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("signature")) {
        let list = match &attr.meta {
            Meta::List(list) => NestedMeta::parse_meta_list(list.tokens.clone())?,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "expected `#[signature(...)]`",
                ));
            }
        };
        let parsed = SignatureOptions::from_list(&list)?;
        options.instructions = parsed.instructions.or(options.instructions);
        options.name = parsed.name.or(options.name);
        options.krate = parsed.krate.or(options.krate);
    }
    Ok(options)
}

fn parse_field(field: &syn::Field) -> syn::Result<SigField> {
    let ident = field.ident.clone().expect("named fields have identifiers");
    let markers: Vec<&Attribute> = field
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("input") || a.path().is_ident("output"))
        .collect();
    let (marker, role) = match markers.as_slice() {
        [] => {
            return Err(syn::Error::new_spanned(
                &ident,
                format!(
                    "field `{ident}` is neither an input nor an output: mark it `#[input]` or \
                     `#[output]`"
                ),
            ));
        }
        [one] => {
            let role = if one.path().is_ident("input") {
                Role::Input
            } else {
                Role::Output
            };
            (*one, role)
        }
        [first, second, ..] => {
            let message = if first.path().get_ident() == second.path().get_ident() {
                format!("field `{ident}` is marked `#[{}]` twice", path_name(second))
            } else {
                format!("field `{ident}` cannot be both an input and an output")
            };
            return Err(syn::Error::new_spanned(second, message));
        }
    };
    let options = match &marker.meta {
        Meta::Path(_) => FieldOptions::default(),
        Meta::List(list) => {
            FieldOptions::from_list(&NestedMeta::parse_meta_list(list.tokens.clone())?)?
        }
        Meta::NameValue(nv) => {
            return Err(syn::Error::new_spanned(
                nv,
                format!(
                    "expected `#[{0}]` or `#[{0}(desc = \"...\")]`",
                    path_name(marker)
                ),
            ));
        }
    };
    let docs: Vec<Attribute> = field.attrs.iter().filter(|a| is_doc(a)).cloned().collect();
    let constraints = options.constraints()?;
    let check = match &options.check {
        None => None,
        Some(syn::Expr::Path(path)) if path.qself.is_none() => Some(path.path.clone()),
        Some(other) => {
            return Err(syn::Error::new_spanned(
                other,
                "`check` takes the path of a function `fn(&T) -> Result<(), E>`, e.g. \
                 `check = one_word`",
            ));
        }
    };
    if role == Role::Input {
        let span = options.check.as_ref().map(Spanned::span).or_else(|| {
            options
                .grounded
                .is_present()
                .then(|| options.grounded.span())
        });
        if let Some(span) = span {
            return Err(syn::Error::new(
                span,
                format!(
                    "`{ident}` is an input: checks apply to the outputs the model writes \
                     (`#[output(check = ..)]`, `#[output(grounded)]`)"
                ),
            ));
        }
    }
    let desc = options.desc.or_else(|| doc_text(&docs));
    Ok(SigField {
        ident,
        ty: field.ty.clone(),
        vis: field.vis.clone(),
        docs,
        desc,
        constraints,
        check,
        grounded: options.grounded.is_present(),
        role,
    })
}

fn path_name(attr: &Attribute) -> String {
    attr.path()
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn generate(input: &DeriveInput, options: &SignatureOptions, fields: &[SigField]) -> TokenStream {
    let krate = match &options.krate {
        Some(path) => quote!(#path),
        None => quote!(::signet),
    };
    let ident = &input.ident;
    let vis = &input.vis;
    let input_ident = format_ident!("{}Input", ident);
    let output_ident = format_ident!("{}Output", ident);
    let name = options.name.clone().unwrap_or_else(|| ident.to_string());
    let instructions = options
        .instructions
        .clone()
        .or_else(|| doc_text(&input.attrs));

    let part = |role: Role| fields.iter().filter(move |f| f.role == role);
    let struct_fields = |role: Role| {
        part(role).map(|f| {
            let (docs, vis, ident, ty) = (&f.docs, &f.vis, &f.ident, &f.ty);
            quote!(#(#docs)* #vis #ident: #ty)
        })
    };
    let input_fields = struct_fields(Role::Input);
    let output_fields = struct_fields(Role::Output);
    let input_names: Vec<&Ident> = part(Role::Input).map(|f| &f.ident).collect();
    let output_names: Vec<&Ident> = part(Role::Output).map(|f| &f.ident).collect();

    let with_instructions =
        instructions.map(|text| quote!(let sig = sig.with_instructions(#text);));
    let add_fields = fields.iter().map(|f| {
        let field_name = f.ident.to_string();
        let ty = &f.ty;
        let method = match f.role {
            Role::Input => quote!(with_input),
            Role::Output => quote!(with_output),
        };
        let field = quote_spanned!(ty.span()=> __signet::field_of::<#ty>(#field_name));
        let desc = f.desc.as_ref().map(|d| quote!(.with_desc(#d)));
        let constraints = f
            .constraints
            .iter()
            .map(|c| quote!(.with_constraint(#krate::signature::Constraint::#c)));
        let check = f.check.as_ref().map(|path| {
            let name = quote!(#path).to_string().replace(' ', "");
            // Through a closure, so a check of a `String` field may take `&str`.
            quote_spanned!(path.span()=>
                .with_check(#krate::signature::DeclaredCheck::typed::<#ty, _>(
                    #name,
                    |value: &#ty| #path(value),
                ))
            )
        });
        let grounded = f
            .grounded
            .then(|| quote!(.with_check(#krate::signature::DeclaredCheck::Grounded)));
        quote!(let sig = sig.#method(#field #desc #(#constraints)* #check #grounded);)
    });

    let input_doc =
        format!("The input fields of [`{ident}`] (generated by `#[derive(Signature)]`).");
    let output_doc =
        format!("The output fields of [`{ident}`] (generated by `#[derive(Signature)]`).");
    let structs = io_structs(
        &krate,
        vis,
        (&input_ident, &input_doc, quote!(#(#input_fields,)*)),
        (&output_ident, &output_doc, quote!(#(#output_fields,)*)),
    );
    quote! {
        #structs

        #[doc(hidden)]
        const _: () = {
            use #krate::__private as __signet;

            #[automatically_derived]
            impl #krate::Signature for #ident {
                type Input = #input_ident;
                type Output = #output_ident;

                fn signature() -> &'static #krate::DynSignature {
                    static SIGNATURE: __signet::OnceLock<#krate::DynSignature> =
                        __signet::OnceLock::new();
                    SIGNATURE.get_or_init(|| {
                        let sig = #krate::DynSignature::new(#name);
                        #with_instructions
                        #(#add_fields)*
                        sig
                    })
                }

                fn into_parts(self) -> (#input_ident, #output_ident) {
                    (
                        #input_ident { #(#input_names: self.#input_names,)* },
                        #output_ident { #(#output_names: self.#output_names,)* },
                    )
                }

                fn from_parts(input: #input_ident, output: #output_ident) -> Self {
                    Self {
                        #(#input_names: input.#input_names,)*
                        #(#output_names: output.#output_names,)*
                    }
                }
            }
        };
    }
}

/// On error: empty input and output structs and a stub `Signature` impl, so code that names them
/// resolves and the user sees only the real error.
fn fallback(input: &DeriveInput) -> TokenStream {
    let krate = parse_struct_options(&input.attrs)
        .ok()
        .and_then(|o| o.krate)
        .map_or_else(|| quote!(::signet), |path| quote!(#path));
    let vis = &input.vis;
    let ident = &input.ident;
    let input_ident = format_ident!("{}Input", ident);
    let output_ident = format_ident!("{}Output", ident);
    let generics_ok = input.generics.params.is_empty();
    let stub = generics_ok.then(|| {
        quote! {
            #[automatically_derived]
            impl #krate::Signature for #ident {
                type Input = #input_ident;
                type Output = #output_ident;
                fn signature() -> &'static #krate::DynSignature {
                    ::core::unreachable!("#[derive(Signature)] reported a compile error")
                }
                fn into_parts(self) -> (#input_ident, #output_ident) {
                    ::core::unreachable!("#[derive(Signature)] reported a compile error")
                }
                fn from_parts(_: #input_ident, _: #output_ident) -> Self {
                    ::core::unreachable!("#[derive(Signature)] reported a compile error")
                }
            }
        }
    });
    let structs = io_structs(
        &krate,
        vis,
        (&input_ident, "", TokenStream::new()),
        (&output_ident, "", TokenStream::new()),
    );
    quote! {
        #structs
        #stub
    }
}

/// The `{Name}Input` and `{Name}Output` structs: `(ident, doc, fields)` each, deriving `Debug`,
/// `Clone` and serde's traits (through Signet's re-export). The real expansion and the fallback
/// after an error emit them the same way.
fn io_structs(
    krate: &TokenStream,
    vis: &Visibility,
    input: (&Ident, &str, TokenStream),
    output: (&Ident, &str, TokenStream),
) -> TokenStream {
    let serde_path = format!("{}", quote!(#krate::__private::serde)).replace(' ', "");
    [input, output]
        .into_iter()
        .map(|(ident, doc, fields)| {
            let doc = (!doc.is_empty()).then(|| quote!(#[doc = #doc]));
            quote! {
                #doc
                #[derive(
                    ::core::fmt::Debug,
                    ::core::clone::Clone,
                    #krate::__private::serde::Serialize,
                    #krate::__private::serde::Deserialize,
                )]
                #[serde(crate = #serde_path)]
                #vis struct #ident {
                    #fields
                }
            }
        })
        .collect()
}
