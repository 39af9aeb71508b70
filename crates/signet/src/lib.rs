//! # Signet
//!
//! The user guide (getting started, tutorials, how-to pages and reference) is in the repository:
//! <https://github.com/signet-rs/signet/tree/main/docs>.
//!
//! Typed, fast, tool-using language-model programs in Rust, in the style of Python's DSPy: declare
//! *what* a step does with a typed [`Signature`], give it [`Tool`]s, and let modules do the prompting,
//! parsing and tool loop.
//!
//! This crate is the runtime and the facade: it re-exports the `#[tool]` attribute and the
//! `#[derive(Signature)]` macro from `signet-macros` (feature `derive`, on by default), so a program
//! depends on `signet` alone.
//!
//! | module | what |
//! |---|---|
//! | [`tool`](mod@tool) | the [`Tool`] trait, `#[tool]`'s runtime, closure tools, argument validation |
//! | [`signature`] | typed and run-time signatures, DSPy type names, the field vocabulary (`Fields`, `History`, `Tools`, `ToolCalls`) |
//! | [`lm`] | the [`Lm`](lm::Lm) trait, requests and completions, the OpenAI-compatible client, retries, cache, history |
//! | [`media`] | images and audio as field values (`Image`, `Audio`), a message's content parts |
//! | [`embed`] | the [`Embedder`](embed::Embedder) trait, the OpenAI-compatible embeddings client, a vector index, a retrieval tool |
//! | [`adapter`] | the Chat, JSON and XML formats (DSPy-identical prompts), native function calling |
//! | [`journal`] | where a run's effects (LM and tool calls) are recorded and replayed, for durable runs |
//! | [`trace`] | what a run did, call by call, for optimizers and debugging |
//! | [`structured`] | a schema-valid value from any LM (native tool → JSON mode → text) |
//! | [`module`] | `Predict`, `ChainOfThought`, `ReAct`, programs, saved programs in DSPy's format |
//! | [`data`] | examples and datasets, DSPy's seeded shuffles |
//! | [`evaluate`] | `Evaluate`: a program over a dev set, scored by a metric |
//! | [`optimize`] | the optimizers: few-shot, random search, KNN, GEPA, MIPROv2 |
//! | [`testing`] | test doubles: a scripted LM, scripted replies in any format, an LM from a function |
//! | [`schema`], [`blocking`], [`fs_atomic`] | schema helpers; calling async code from sync code; atomic file writes |
//!
//! ```
//! use signet::{Signature, Tool, tool};
//!
//! /// Look up the favourite colour of a person by name.
//! #[tool]
//! fn lookup(name: String) -> String {
//!     if name == "Ada" { "green".into() } else { "unknown".into() }
//! }
//!
//! /// Answer questions about people.
//! #[derive(Signature)]
//! struct Ask {
//!     #[input]
//!     question: String,
//!     #[output]
//!     answer: String,
//! }
//!
//! assert_eq!(LookupTool.call_blocking(serde_json::json!({"name": "Ada"})).unwrap(), "green");
//! assert_eq!(Ask::signature().outputs()[0].name(), "answer");
//! ```

#![warn(unreachable_pub)]

pub mod adapted;
pub mod adapter;
pub mod blocking;
pub mod child_env;
pub mod data;
pub mod embed;
mod error;
pub mod evaluate;
pub mod fs_atomic;
#[cfg(feature = "http")]
pub mod http;
pub mod journal;
pub mod lm;
pub mod media;
pub mod module;
pub mod optimize;
mod python;
pub mod schema;
mod shared;
pub mod signature;
pub mod structured;
pub mod telemetry;
pub mod testing;
pub mod tool;
pub mod trace;

pub use error::{Error, JsonError};

/// The schemars version Signet's schemas come from (1.x — a type deriving `JsonSchema` from 0.8
/// does not implement this one): derive `signet::schemars::JsonSchema` with
/// `#[schemars(crate = "signet::schemars")]`, or depend on `schemars = "1"`.
pub use schemars;
/// The serde version Signet's derives and field types use (1.x): derive `signet::serde::Serialize`
/// and `Deserialize` with `#[serde(crate = "signet::serde")]` to need no serde dependency of your
/// own.
pub use serde;
/// The serde_json version of Signet's values.
pub use serde_json;
pub use signature::{DynSignature, Field, Signature, SignatureError};
pub use tool::{Tool, ToolBox, ToolError, ToolSpec};

/// `#[tool]`: turn a function, or the `#[tool]` methods of an `impl` block, into [`Tool`]s.
///
/// On a free `fn` or `async fn` it keeps the function as written and adds a unit struct named after
/// it in `PascalCase` with a `Tool` suffix (`fn get_weather` -> `GetWeatherTool`) that implements
/// [`Tool`]. On an `impl` block it implements [`ToolBox`] for the type, with one tool per method
/// marked `#[tool]` (methods take `&self`; the tools share the value through an `Arc`).
///
/// What is generated, at compile time:
/// * the name (the function's, or `#[tool(name = "...")]`) and description (the doc comment, or
///   `#[tool(desc = "...")]`);
/// * each argument's description, from `#[arg(desc = "...")]` or a doc comment on the parameter;
/// * the argument schema (schemars): `Option<T>` and `#[arg(default = expr)]` arguments are
///   optional, unknown arguments are rejected (`additionalProperties: false`), nested types are
///   inlined;
/// * validation of incoming JSON (jsonschema) with errors naming the argument, the expected type
///   and the value received; deserialization; and dispatch: `async fn`s are awaited, sync functions
///   run on tokio's blocking pool (`#[tool(inline)]` runs a cheap one in place);
/// * return values: any `T: Serialize`, or `Result<T, E>` with `E: Display` (an `Err` becomes
///   [`ToolError::Failed`]).
///
/// Options: `name = "..."`, `desc = "..."`, `inline` (sync only), `confirm` (ask a person first),
/// `crate = "path"` (when `signet` is renamed).
///
/// ```
/// use signet::{Tool, tool};
///
/// /// Search the corpus for documents.
/// #[tool(name = "web_search")]
/// async fn search(
///     #[arg(desc = "The search query")] query: String,
///     #[arg(default = 3)] k: u32,
///     filters: Option<Vec<String>>,
/// ) -> Result<Vec<String>, std::io::Error> {
///     Ok(vec![query; k as usize])
/// }
///
/// let schema = SearchTool.args_schema();
/// assert_eq!(schema["required"], serde_json::json!(["query"]));
/// assert_eq!(schema["properties"]["k"]["default"], 3);
/// assert_eq!(SearchTool.name(), "web_search");
/// ```
#[cfg(feature = "derive")]
pub use signet_macros::tool;

/// `#[derive(Signature)]`: a typed signature from a struct whose fields are marked `#[input]` or
/// `#[output]`.
///
/// Generates `{Name}Input` and `{Name}Output` structs (same visibility, each field's doc comment
/// kept; both derive `Debug`, `Clone` and serde's traits) and implements
/// [`Signature`]: instructions from the struct's doc comment (DSPy's default sentence when absent),
/// each field's description from `#[input(desc = "...")]` or its doc comment, its DSPy type name and
/// JSON schema from its Rust type.
///
/// Why three structs: a module takes exactly its inputs and returns exactly its outputs, so each is
/// its own type; the struct you write holds both, which is what a complete example (a demo) is.
///
/// ```
/// use signet::Signature;
///
/// #[derive(Signature)]
/// struct Classify {
///     #[input(desc = "The sentence to classify")]
///     sentence: String,
///     #[output]
///     sentiment: Sentiment,
///     #[output]
///     confidence: f64,
/// }
///
/// #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #[serde(rename_all = "lowercase")]
/// enum Sentiment { Positive, Negative, Neutral }
///
/// let sig = Classify::signature();
/// assert_eq!(sig.outputs()[0].type_name(), "Literal['positive', 'negative', 'neutral']");
/// assert_eq!(sig.instructions(), "Given the fields `sentence`, produce the fields `sentiment`, `confidence`.");
/// let out = ClassifyOutput { sentiment: Sentiment::Positive, confidence: 0.9 };
/// assert_eq!(serde_json::to_value(&out).unwrap()["sentiment"], "positive");
/// ```
#[cfg(feature = "derive")]
pub use signet_macros::Signature;

/// `#[derive(Module)]`: the predictors of a program struct, walked through its fields, with DSPy's
/// paths (`field`, `field.predict`, `field[0]`, `field['key']`); fields that are not modules are
/// marked `#[module(skip)]`. It implements [`module::Predictors`]; write the program's `call` in an
/// `impl` of [`module::Module`] (see there for an example).
#[cfg(feature = "derive")]
pub use signet_macros::Module;

/// The names most programs need, and only those: `use signet::prelude::*;`.
///
/// Signatures and tools (the traits and their macros), the modules and what a ReAct run reports,
/// the LM trait with the OpenAI-compatible and Anthropic clients and its options, the adapters,
/// the optimizers' trait (whose `compile` GEPA, MIPROv2 and the random search are called by), and
/// the errors.
/// Test doubles, run-time signatures and lower-level types stay in their modules.
pub mod prelude {
    pub use crate::Error;
    pub use crate::adapter::{ChatAdapter, JsonAdapter, XmlAdapter};
    #[cfg(feature = "anthropic")]
    pub use crate::lm::AnthropicLm;
    #[cfg(feature = "openai")]
    pub use crate::lm::OpenAiLm;
    pub use crate::lm::{Lm, LmOptions};
    pub use crate::media::{Audio, Image};
    pub use crate::module::{
        ChainOfThought, Limits, Observation, Predict, ReAct, ReActError, ReActEvent, ReActMode,
    };
    pub use crate::module::{Module, Predictors};
    pub use crate::optimize::Optimizer;
    pub use crate::signature::Signature;
    pub use crate::tool::{Tool, ToolBox, ToolError};
    #[cfg(feature = "derive")]
    pub use signet_macros::{Module, Signature, tool};
}

/// Items used by macro-generated code. Not a public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::signature::field_of;
    pub use crate::tool::ArgsSchema;
    pub use crate::tool::dispatch::{run_async, run_blocking, run_inline};
    pub use crate::tool::returns::{plain_output, result_output};
    pub use futures::FutureExt;
    pub use futures::future::BoxFuture;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::sync::{Arc, OnceLock};

    /// Types that can be tool arguments: every type with a JSON schema (deserialization is checked
    /// by serde's own derive, with its own message).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool argument: it does not implement `schemars::JsonSchema`",
        label = "this argument's type has no JSON schema",
        note = "add `#[derive(schemars::JsonSchema, serde::Deserialize)]` to `{Self}` (schemars 1.x, re-exported as `signet::schemars`), or write the argument's schema by hand: `#[arg(schema = serde_json::json!({{..}}))]`"
    )]
    pub trait ToolArgument: schemars::JsonSchema {}
    impl<T: schemars::JsonSchema + ?Sized> ToolArgument for T {}

    /// Adds argument `name` of type `T` to `schema` (the generated call is spanned at the argument's
    /// type, so a type without a schema is reported there).
    pub fn tool_arg<T: ToolArgument + ?Sized>(
        schema: crate::tool::ArgsSchema,
        name: &str,
        desc: Option<&str>,
        default: Option<serde_json::Value>,
        required: bool,
    ) -> crate::tool::ArgsSchema {
        schema.arg::<T>(name, desc, default, required)
    }

    /// Adds argument `name` with a schema written by hand (`#[arg(schema = ..)]`).
    pub fn tool_arg_schema(
        schema: crate::tool::ArgsSchema,
        name: &str,
        desc: Option<&str>,
        default: Option<serde_json::Value>,
        required: bool,
        written: serde_json::Value,
    ) -> crate::tool::ArgsSchema {
        schema.arg_with_schema(name, desc, default, required, written)
    }

    /// Types that can be the default of a tool argument: the default is shown to the model in the
    /// schema, so it must serialize.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the default of a tool argument: it does not implement `serde::Serialize`",
        label = "the default value is shown to the model in the argument schema",
        note = "add `#[derive(serde::Serialize)]` to `{Self}`"
    )]
    pub trait DefaultArgument: serde::Serialize {}
    impl<T: serde::Serialize> DefaultArgument for T {}

    /// A default argument value as JSON (shown to the model in the schema).
    pub fn default_value<T: DefaultArgument>(value: T) -> Option<serde_json::Value> {
        serde_json::to_value(value).ok()
    }

    /// Types that can be fields of a `#[derive(Module)]` program: modules (and lists, maps and
    /// options of them).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not a module, so `#[derive(Module)]` cannot walk its predictors",
        label = "not a module",
        note = "mark fields that hold no predictors `#[module(skip)]`"
    )]
    pub trait ProgramField: crate::module::Predictors {}
    impl<T: crate::module::Predictors> ProgramField for T {}

    /// A program's field, as the module it must be.
    pub fn program_field<T: ProgramField>(field: &T) -> &dyn crate::module::Predictors {
        field
    }

    /// A program's field, as the module it must be, to change.
    pub fn program_field_mut<T: ProgramField>(field: &mut T) -> &mut dyn crate::module::Predictors {
        field
    }
}
