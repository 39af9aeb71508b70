//! Adapters turn a signature, demos and inputs into messages, and the model's reply back into
//! typed field values. Formats follow Python DSPy 3.4.1 byte for byte (the prompt templates are
//! DSPy's, kept in one private module credited to DSPy, MIT licence).
//!
//! * [`ChatAdapter`]: `[[ ## field ## ]]` markers; falls back once to JSON on an unparseable reply.
//! * [`JsonAdapter`]: one JSON object; structured outputs when the LM supports them.
//! * [`XmlAdapter`]: `<field>` tags, nested XML for lists, maps and structs.
//!
//! [`crate::adapted::run`] performs one adapted call: format, send, parse, with the fallbacks made
//! explicit, logged and counted in [`Usage`](crate::lm::Usage).

mod chat;
pub(crate) mod field_stream;
mod json;
pub(crate) mod media;
pub(crate) mod native;
pub(crate) mod templates;
pub(crate) mod two_step;
#[doc(hidden)]
pub mod value;
mod xml;

use serde_json::{Map, Value, json};

pub use crate::signature::{Fields, History, ToolCallRecord, ToolCalls, Tools};
pub use chat::ChatAdapter;
pub use json::JsonAdapter;
pub use two_step::TwoStepAdapter;
pub use xml::XmlAdapter;

/// The XML format's assistant message (outputs as tags), for scripted replies.
pub(crate) fn xml_assistant_message(signature: &DynSignature, outputs: &Fields) -> String {
    xml::assistant_message(signature, outputs, None)
}

use crate::lm::{Capabilities, LmRequest, Message};
use crate::signature::{DynSignature, Field};

/// Which adapter produced a prompt or read a reply; printed as DSPy's class name.
///
/// ```
/// use signet::adapter::{Adapter, AdapterName, JsonAdapter};
/// assert_eq!(JsonAdapter::new().name(), AdapterName::Json);
/// assert_eq!(AdapterName::Json.to_string(), "JSONAdapter");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AdapterName {
    /// [`ChatAdapter`].
    Chat,
    /// [`JsonAdapter`].
    Json,
    /// [`XmlAdapter`].
    Xml,
    /// [`TwoStepAdapter`].
    TwoStep,
    /// An adapter of your own, by its name.
    Other(&'static str),
}

impl std::fmt::Display for AdapterName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AdapterName::Chat => "ChatAdapter",
            AdapterName::Json => "JSONAdapter",
            AdapterName::Xml => "XMLAdapter",
            AdapterName::TwoStep => "TwoStepAdapter",
            AdapterName::Other(name) => name,
        })
    }
}

/// A format for talking to a model about a signature. `Arc<A>` and `Box<A>` of any adapter
/// (`Arc<dyn Adapter>` included) are adapters too.
pub trait Adapter: Send + Sync + std::fmt::Debug {
    /// The adapter's name (DSPy's class name when printed), used in errors and logs.
    fn name(&self) -> AdapterName;

    /// Whether the reply text opens each output field with a marker line of its own
    /// (`[[ ## answer ## ]]`), so that a streamed reply can be split into its fields as it arrives.
    fn marks_fields(&self) -> bool {
        false
    }

    /// The messages for one call: system message, demos, and the user message with the inputs.
    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message>;

    /// Reads the output fields from the reply text.
    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError>;

    /// Sets request options the format needs (such as `response_format`) for a call of
    /// `signature` with `inputs` to an LM with these capabilities. Most formats depend on the
    /// signature alone; [`JsonAdapter::constrained`] also uses the tools input to tie each tool
    /// call of a `ToolCalls` output to its function's argument schema. The default sets nothing.
    fn configure(
        &self,
        signature: &DynSignature,
        inputs: &Fields,
        request: &mut LmRequest,
        capabilities: Capabilities,
    ) {
        let _ = (signature, inputs, request, capabilities);
    }

    /// `values` rendered as a user message renders text (`str`) inputs, in order (ReAct renders
    /// its trajectory this way, as DSPy does).
    fn render_text_fields(&self, values: &Fields) -> String {
        templates::text_blocks(values)
    }

    /// Whether [`render_text_fields`](Adapter::render_text_fields) writes each field as a
    /// `[[ ## name ## ]]` block, joined by blank lines and trimmed (the default rendering): then
    /// ReAct keeps its trajectory's text between a run's calls and writes only the new steps. The
    /// default is `false`; an adapter that keeps the default rendering may say `true`.
    fn renders_text_blocks(&self) -> bool {
        false
    }

    /// Whether tools are sent natively (`tools=`) for signatures with a `ToolCalls` output, when the LM
    /// supports function calling.
    fn native_function_calling(&self) -> bool {
        false
    }

    /// The `parallel_tool_calls` sent with native tools (DSPy's adapter argument of that name);
    /// when set, `tool_choice` is `auto` too. `None` (the default) sends neither. ReAct's native
    /// loop and `Predict` with tools send this setting, `true` when it is `None`.
    fn parallel_tool_calls(&self) -> Option<bool> {
        None
    }

    /// The adapter to retry with, once, when the reply to a call of `signature` with `inputs`
    /// cannot be parsed (the Chat and XML adapters: the JSON adapter; [`JsonAdapter::constrained`]
    /// with bounds: itself under tighter bounds, for a `ToolCalls` output). The default: none.
    fn fallback(&self, signature: &DynSignature, inputs: &Fields) -> Option<Box<dyn Adapter>> {
        let _ = (signature, inputs);
        None
    }

    /// The model that reads replies in this format, when [`parse`](Self::parse) cannot
    /// ([`TwoStepAdapter`]'s extraction model): modules give it the reply and read its outputs.
    /// The default: none, replies are read with `parse`.
    fn extraction(&self) -> Option<&std::sync::Arc<dyn crate::lm::Lm>> {
        None
    }
}

/// Why a reply could not be read. Never a silent `null`: every variant names what is missing or
/// wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Some output fields were not found in the reply.
    #[error(
        "{adapter} could not find the output fields {missing:?} in the LM response (found {found:?}); response: {}",
        excerpt(response)
    )]
    MissingFields {
        /// The adapter.
        adapter: AdapterName,
        /// Output fields not found.
        missing: Vec<String>,
        /// Output fields found.
        found: Vec<String>,
        /// The reply text.
        response: String,
    },
    /// A field was found but its value does not fit its type.
    #[error(
        "{adapter}: output field `{field}` has value {value:?}, which is not a valid {expected}: {reason}"
    )]
    InvalidField {
        /// The adapter.
        adapter: AdapterName,
        /// The field.
        field: String,
        /// The text (or JSON) found for it.
        value: String,
        /// The field's type name.
        expected: String,
        /// Why it does not fit.
        reason: String,
    },
    /// The reply holds no JSON object (JSON format).
    #[error(
        "{adapter}: the LM response is not a JSON object: {}",
        excerpt(response)
    )]
    NotAnObject {
        /// The adapter.
        adapter: AdapterName,
        /// The reply text.
        response: String,
    },
    /// The reply is not well-formed (XML format).
    #[error(
        "{adapter}: the LM response is not well-formed: {message}; response: {}",
        excerpt(response)
    )]
    Malformed {
        /// The adapter.
        adapter: AdapterName,
        /// What the reader reported.
        message: String,
        /// The reply text.
        response: String,
    },
    /// The model that reads a reply in this format ([`TwoStepAdapter`]'s extraction model) could
    /// not find the outputs in it.
    #[error(
        "{adapter} could not read the outputs from the model's answer: {reason}; answer: {}",
        excerpt(response)
    )]
    Extraction {
        /// The adapter.
        adapter: AdapterName,
        /// The main model's answer.
        response: String,
        /// Why (the extraction's own parse error).
        reason: String,
    },
    /// The reply had neither text nor tool calls.
    #[error("{adapter}: the LM returned an empty response")]
    EmptyResponse {
        /// The adapter.
        adapter: AdapterName,
    },
}

/// A reply as an error message shows it: quoted, and cut after 400 characters with a note of how
/// much was left out (the error's `response` field keeps all of it).
fn excerpt(response: &str) -> String {
    const SHOWN: usize = 400;
    let total = response.chars().count();
    if total <= SHOWN {
        return format!("{response:?}");
    }
    let start: String = response.chars().take(SHOWN).collect();
    format!("{start:?} ... ({} more characters)", total - SHOWN)
}

/// Shared and boxed adapters (`Arc<dyn Adapter>`, `Box<A>`) are adapters themselves: every
/// method is forwarded.
macro_rules! forward_adapter {
    ($($pointer:ident)::+) => {
        impl<A: Adapter + ?Sized> Adapter for $($pointer)::+<A> {
            fn name(&self) -> AdapterName {
                (**self).name()
            }
            fn marks_fields(&self) -> bool {
                (**self).marks_fields()
            }
            fn format(
                &self,
                signature: &DynSignature,
                demos: &[Fields],
                inputs: &Fields,
            ) -> Vec<Message> {
                (**self).format(signature, demos, inputs)
            }
            fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
                (**self).parse(signature, text)
            }
            fn configure(
                &self,
                signature: &DynSignature,
                inputs: &Fields,
                request: &mut LmRequest,
                capabilities: Capabilities,
            ) {
                (**self).configure(signature, inputs, request, capabilities)
            }
            fn fallback(
                &self,
                signature: &DynSignature,
                inputs: &Fields,
            ) -> Option<Box<dyn Adapter>> {
                (**self).fallback(signature, inputs)
            }
            fn extraction(&self) -> Option<&std::sync::Arc<dyn crate::lm::Lm>> {
                (**self).extraction()
            }

            fn native_function_calling(&self) -> bool {
                (**self).native_function_calling()
            }
            fn parallel_tool_calls(&self) -> Option<bool> {
                (**self).parallel_tool_calls()
            }
            fn render_text_fields(&self, values: &Fields) -> String {
                (**self).render_text_fields(values)
            }
            fn renders_text_blocks(&self) -> bool {
                (**self).renders_text_blocks()
            }
        }
    };
}
forward_adapter!(Box);
forward_adapter!(std::sync::Arc);

/// `adapter` as the shared handle modules keep (an `Arc<dyn Adapter>` is kept as it is).
pub(crate) fn shared<A: Adapter + 'static>(adapter: A) -> std::sync::Arc<dyn Adapter> {
    crate::shared::share(adapter, |a| {
        std::sync::Arc::new(a) as std::sync::Arc<dyn Adapter>
    })
}

/// The three renderings a message format is made of; [`format_messages`] assembles them the way
/// DSPy's `Adapter.format` does.
pub(crate) struct Format {
    /// A name for the format (the key under which a signature caches its system message).
    pub name: &'static str,
    /// The system message for a signature.
    pub system: fn(&DynSignature) -> String,
    /// A user message with input values, a prefix, and (for the main request) the output
    /// requirements.
    pub user: fn(&DynSignature, &Fields, &str, bool) -> String,
    /// An assistant message with output values (`missing` stands in for absent ones).
    pub assistant: fn(&DynSignature, &Fields, Option<&str>) -> String,
}

/// System message, demos, conversation history (when the signature has a `History` input), then
/// the current request.
pub(crate) fn format_messages(
    render: &Format,
    signature: &DynSignature,
    demos: &[Fields],
    inputs: &Fields,
    native: bool,
) -> Vec<Message> {
    let system = signature.rendered(render.name, render.system);
    // The system message, a user and an assistant message per demo, and the question.
    let mut messages = Vec::with_capacity(2 + 2 * demos.len());
    messages.push(Message::system(crate::lm::Content::prompt(system)));
    messages.extend(format_demos(render, signature, demos));
    let history = signature
        .inputs()
        .iter()
        .find(|f| f.kind() == crate::signature::FieldKind::History);
    let current = match history {
        Some(field) => {
            let without = signature.without_field(field.name());
            let turns = match inputs.get(field.name()) {
                Some(Value::Object(history)) => history.get("messages").and_then(Value::as_array),
                Some(Value::Array(turns)) => Some(turns),
                _ => None,
            };
            for turn in turns.into_iter().flatten().filter_map(Value::as_object) {
                // A turn with inputs repeats the format reminder, as the request it records did.
                let had_inputs = without.inputs().iter().any(|f| turn.contains_key(f.name()));
                let user = (render.user)(&without, turn, "", had_inputs);
                if !user.is_empty() {
                    messages.push(Message::user(user));
                }
                if let Some((name, calls)) = history_tool_calls(turn) {
                    history_tool_turn(render, &without, turn, name, calls, native, &mut messages);
                    continue;
                }
                messages.push(Message::assistant((render.assistant)(&without, turn, None)));
            }
            (render.user)(&without, inputs, "", true)
        }
        None => (render.user)(signature, inputs, "", true),
    };
    if !current.is_empty() {
        messages.push(Message::user(current));
    }
    for message in &mut messages {
        if message.role == crate::lm::Role::User
            && let Some(content) = media::split(&message.content)
        {
            message.content = content;
        }
    }
    messages
}

/// The first value of a history turn that holds tool calls (an object with `tool_calls`), as DSPy's
/// `_tool_calls_from_message` finds it.
fn history_tool_calls(turn: &Fields) -> Option<(&str, &Map<String, Value>)> {
    turn.iter().find_map(|(name, value)| match value {
        Value::Object(calls) if calls.contains_key("tool_calls") => Some((name.as_str(), calls)),
        _ => None,
    })
}

/// A history turn with tool calls, as DSPy renders it: natively (an assistant message with
/// `tool_calls`, then one `tool` message per result) when the adapter uses native function calling,
/// otherwise the calls in the assistant message and their results in a user message
/// (`tool_call_results`).
fn history_tool_turn(
    render: &Format,
    signature: &DynSignature,
    turn: &Fields,
    field: &str,
    calls: &Map<String, Value>,
    native: bool,
    messages: &mut Vec<Message>,
) {
    let call_list: Vec<&Value> = calls
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let mut results: Option<Vec<&Value>> = calls
        .get("tool_call_results")
        .and_then(Value::as_array)
        .map(|r| r.iter().collect());
    if native {
        let mut content_signature = signature.clone();
        for output in signature.outputs() {
            let absent = turn.get(output.name()).is_none_or(Value::is_null);
            if output.kind() == crate::signature::FieldKind::ToolCalls || absent {
                content_signature = content_signature.without_field(output.name());
            }
        }
        let content = if content_signature.outputs().is_empty() {
            String::new()
        } else {
            (render.assistant)(&content_signature, turn, None)
        };
        if let Some(found) = &results {
            let call_ids: Vec<Option<&str>> = call_list.iter().map(|c| c["id"].as_str()).collect();
            let result_ids: Vec<Option<&str>> =
                found.iter().map(|r| r["call_id"].as_str()).collect();
            if call_ids != result_ids || call_ids.iter().any(|id| id.is_none_or(str::is_empty)) {
                results = None;
            }
        }
        if !content.is_empty() || results.is_some() {
            let mut assistant = Message::assistant(content);
            if results.is_some() {
                assistant.tool_calls = call_list
                    .iter()
                    .map(|c| {
                        crate::lm::ToolCall::new(
                            c["id"].as_str().unwrap_or_default(),
                            c["name"].as_str().unwrap_or_default(),
                            crate::python::json_dumps(&c["args"], None),
                        )
                    })
                    .collect();
            }
            messages.push(assistant);
        }
        for result in results.into_iter().flatten() {
            let content = match &result["value"] {
                Value::String(text) => text.clone(),
                other => crate::python::json_dumps(other, None),
            };
            messages.push(Message::tool_result(
                result["call_id"].as_str().unwrap_or_default(),
                content,
            ));
        }
        return;
    }
    let mut values = turn.clone();
    if results.is_some() {
        // The calls as the model wrote them; their results follow in a message of their own.
        let without_results: Vec<Value> = call_list
            .iter()
            .map(|c| json!({"name": c["name"], "args": c["args"]}))
            .collect();
        values.insert(field.to_owned(), json!({"tool_calls": without_results}));
    }
    let assistant = (render.assistant)(signature, &values, None);
    if !assistant.is_empty() {
        messages.push(Message::assistant(assistant));
    }
    if let Some(results) = results {
        let results: Vec<Value> = results
            .iter()
            .map(|r| {
                json!({"call_id": r["call_id"], "name": r["name"], "value": r["value"],
                       "is_error": r["is_error"].as_bool().unwrap_or(false)})
            })
            .collect();
        let results_signature = DynSignature::new("ToolCallResults").with_input(
            Field::from_schema("tool_call_results", json!({"type": "object"}))
                .with_type_name("ToolCallResults"),
        );
        let mut values = Fields::new();
        values.insert(
            "tool_call_results".to_owned(),
            json!({ "tool_call_results": results }),
        );
        messages.push(Message::user((render.user)(
            &results_signature,
            &values,
            "",
            false,
        )));
    }
}

/// Demos as user/assistant message pairs: incomplete demos (some fields missing, but at least one
/// input and one output) first with a note, then complete ones; demos with no input or no output
/// are skipped.
fn format_demos(render: &Format, signature: &DynSignature, demos: &[Fields]) -> Vec<Message> {
    let present = |demo: &Fields, name: &str| demo.get(name).is_some_and(|v| !v.is_null());
    let mut complete = Vec::new();
    let mut incomplete = Vec::new();
    for demo in demos {
        let all = signature
            .inputs()
            .iter()
            .chain(signature.outputs())
            .all(|f| present(demo, f.name()));
        let has_input = signature
            .inputs()
            .iter()
            .any(|f| demo.contains_key(f.name()));
        let has_output = signature
            .outputs()
            .iter()
            .any(|f| demo.contains_key(f.name()));
        if all {
            complete.push(demo);
        } else if has_input && has_output {
            incomplete.push(demo);
        }
    }
    let mut messages = Vec::new();
    for demo in incomplete {
        messages.push(Message::user((render.user)(
            signature,
            demo,
            templates::INCOMPLETE_DEMO_PREFIX,
            false,
        )));
        messages.push(Message::assistant((render.assistant)(
            signature,
            demo,
            Some(templates::MISSING_FIELD),
        )));
    }
    for demo in complete {
        messages.push(Message::user((render.user)(signature, demo, "", false)));
        messages.push(Message::assistant((render.assistant)(
            signature, demo, None,
        )));
    }
    messages
}

/// Whether a value of this schema may be None (DSPy's `annotation_allows_none`): a `null` type, or
/// a union with a `null` branch.
pub(crate) fn allows_none(schema: &Value) -> bool {
    crate::schema::admits_type(schema, "null")
}

/// All outputs parsed, or [`ParseError::MissingFields`].
pub(crate) fn check_complete(
    adapter: AdapterName,
    signature: &DynSignature,
    fields: Fields,
    response: &str,
) -> Result<Fields, ParseError> {
    let outputs = signature.outputs();
    if fields.len() == outputs.len() && fields.keys().zip(outputs).all(|(k, f)| k == f.name()) {
        // Every output, in signature order: nothing to add or reorder.
        return Ok(fields);
    }
    let mut fields = fields;
    // DSPy's `apply_output_field_defaults`: a missing output whose type admits None
    // (`Optional[int]`, `str | None`) is None rather than missing.
    for f in signature.outputs() {
        if !fields.contains_key(f.name()) && allows_none(f.schema()) {
            fields.insert(f.name().to_owned(), Value::Null);
        }
    }
    let missing: Vec<String> = signature
        .outputs()
        .iter()
        .filter(|f| !fields.contains_key(f.name()))
        .map(|f| f.name().to_owned())
        .collect();
    if missing.is_empty() {
        // Outputs in signature order.
        let mut ordered = Map::new();
        for f in signature.outputs() {
            if let Some(v) = fields.remove(f.name()) {
                ordered.insert(f.name().to_owned(), v);
            }
        }
        return Ok(ordered);
    }
    Err(ParseError::MissingFields {
        adapter,
        missing,
        found: fields.keys().cloned().collect(),
        response: response.to_owned(),
    })
}
