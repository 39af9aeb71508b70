//! Replies a scripted LM writes as actions — call a tool, finish, answer — rendered at call time in
//! whatever format the request asks for, so one script serves every adapter and mode.

use serde_json::{Map, Value, json};

use crate::adapter::templates;
use crate::lm::{Completion, LmRequest, ResponseFormat, Role, ToolCall};
use crate::signature::{DynSignature, Field};

/// What a scripted model does on one call, independent of the format it must write it in
/// ([`ScriptedLm::replies`](super::ScriptedLm::replies)).
///
/// At call time the reply is rendered for the request it answers:
///
/// * a request that offers tools natively gets tool calls (ids `call_<n>`) — or, when it also
///   constrains the reply with a schema (a model behind
///   [`ConstrainedToolCalls`](crate::lm::ConstrainedToolCalls)), the JSON list of calls that wrapper
///   reads;
/// * otherwise the reply is text in the request's format — the Chat adapter's
///   `[[ ## field ## ]]` sections, the JSON adapter's object (constrained or not), or the XML
///   adapter's tags — for the output fields the request's system message lists. A tool call is a
///   ReAct step (`next_thought`, `next_tool_name`, `next_tool_args`); an answer without the
///   `reasoning` a chain-of-thought step asks for gets a placeholder one.
///
/// ```
/// use serde_json::json;
/// use signet::testing::{ScriptedLm, ScriptedReply};
/// use signet::prelude::*;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
///
/// /// Answer with the tools.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: i64 }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // The same script, in the Chat format and in the constrained JSON format.
/// let adapters: [std::sync::Arc<dyn signet::adapter::Adapter>; 2] =
///     [std::sync::Arc::new(ChatAdapter::new()), std::sync::Arc::new(JsonAdapter::constrained())];
/// for adapter in adapters {
///     let lm = ScriptedLm::replies([
///         ScriptedReply::tool("add", json!({"a": 2, "b": 3})).thought("Add them."),
///         ScriptedReply::finish(json!({"answer": 5})),
///     ]);
///     let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm).with_adapter(adapter);
///     let out = agent.call(AskInput { question: "2 + 3?".into() }).await.unwrap();
///     assert_eq!(out.output.answer, 5);
/// }
/// # });
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// Call a tool.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments (a JSON object).
        args: Value,
        /// The thought written with the call.
        thought: String,
    },
    /// End a ReAct run: call `finish`, with the outputs as its arguments (an empty object for
    /// DSPy's argument-less `finish`).
    Finish {
        /// The outputs.
        outputs: Value,
        /// The thought written with the call.
        thought: String,
    },
    /// Answer with these output field values.
    Answer {
        /// The values, by field name.
        fields: Value,
    },
}

impl ScriptedReply {
    /// Call `name` with `args`, with the thought `"I will call a tool."` (change it with
    /// [`thought`](Self::thought)).
    pub fn tool(name: impl Into<String>, args: Value) -> ScriptedReply {
        ScriptedReply::Tool {
            name: name.into(),
            args,
            thought: "I will call a tool.".to_owned(),
        }
    }

    /// Call `finish` with `outputs` (`json!({})` for none: the extractor then answers, from the
    /// next reply), with the thought `"I have everything I need."` (change it with
    /// [`thought`](Self::thought)).
    pub fn finish(outputs: Value) -> ScriptedReply {
        ScriptedReply::Finish {
            outputs,
            thought: "I have everything I need.".to_owned(),
        }
    }

    /// Answer with `fields` (an object of output values). When the request asks for a
    /// `reasoning` field (a ChainOfThought, ReAct's extractor) and `fields` has none, it is
    /// `"Scripted reasoning."`.
    pub fn answer(fields: Value) -> ScriptedReply {
        ScriptedReply::Answer { fields }
    }

    /// The thought written with a tool call or `finish` (ignored for answers): a text-mode
    /// step's `next_thought`, a native reply's text beside its call; the trajectory's
    /// [`Step::thought`](crate::module::Step::thought) and the `thought` events show it.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::testing::ScriptedReply;
    /// let reply = ScriptedReply::tool("add", json!({"a": 1, "b": 2})).thought("Add them.");
    /// assert!(matches!(reply, ScriptedReply::Tool { ref thought, .. } if thought == "Add them."));
    /// assert!(matches!(ScriptedReply::finish(json!({})), ScriptedReply::Finish { ref thought, .. } if thought == "I have everything I need."));
    /// ```
    pub fn thought(mut self, text: impl Into<String>) -> ScriptedReply {
        match &mut self {
            ScriptedReply::Tool { thought, .. } | ScriptedReply::Finish { thought, .. } => {
                *thought = text.into();
            }
            ScriptedReply::Answer { .. } => {}
        }
        self
    }

    /// The completion this reply is for `request`.
    pub(crate) fn render(&self, request: &LmRequest) -> Completion {
        let native =
            !request.tools.is_empty() && request.tool_choice != Some(crate::lm::ToolChoice::None);
        match (self, native) {
            (
                ScriptedReply::Tool {
                    name,
                    args,
                    thought,
                },
                true,
            ) => call(request, name, args, thought),
            (ScriptedReply::Finish { outputs, thought }, true) => {
                call(request, crate::module::react::FINISH, outputs, thought)
            }
            (
                ScriptedReply::Tool {
                    name,
                    args,
                    thought,
                },
                false,
            ) => text(
                request,
                json!({"next_thought": thought, "next_tool_name": name, "next_tool_args": args}),
            ),
            (ScriptedReply::Finish { outputs, thought }, false) => text(
                request,
                json!({"next_thought": thought, "next_tool_name": crate::module::react::FINISH, "next_tool_args": outputs}),
            ),
            (ScriptedReply::Answer { fields }, _) => text(request, fields.clone()),
        }
    }
}

/// A native tool call; a JSON list of calls when the request constrains the reply with a schema
/// (the inner model of [`ConstrainedToolCalls`](crate::lm::ConstrainedToolCalls)).
fn call(request: &LmRequest, name: &str, args: &Value, thought: &str) -> Completion {
    if request.response_format.is_some() {
        return Completion::text(json!([{"name": name, "arguments": args}]).to_string());
    }
    let earlier = request.tool_calls_so_far();
    let mut completion = Completion::tool_calls(vec![ToolCall::new(
        format!("call_{earlier}"),
        name,
        args.to_string(),
    )]);
    completion.text = Some(thought.to_owned());
    completion
}

/// `values` written as the request's output fields, in its format.
fn text(request: &LmRequest, values: Value) -> Completion {
    let mut values = values.as_object().cloned().unwrap_or_default();
    let signature = output_signature(request, &values);
    if signature.outputs().iter().any(|f| f.name() == "reasoning") {
        values
            .entry("reasoning")
            .or_insert_with(|| json!("Scripted reasoning."));
    }
    let last_user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let json_format = request.response_format.is_some()
        && !matches!(request.response_format, Some(ResponseFormat::Text))
        || last_user.contains("Respond with a JSON object");
    let text = if last_user.contains("wrapped in XML tags") {
        crate::adapter::xml_assistant_message(&signature, &values)
    } else if json_format {
        templates::json_assistant_message(&signature, &values, None)
    } else {
        templates::chat_assistant_message(&signature, &values, None)
    };
    Completion::text(text)
}

/// The output fields the request's system message lists (`N. `name` (type): ..`), with their
/// types where the signature parser knows them; fields it does not list come from `values`.
fn output_signature(request: &LmRequest, values: &Map<String, Value>) -> DynSignature {
    let system = request
        .messages
        .iter()
        .find(|m| m.role == Role::System)
        .map_or("", |m| m.content.as_str());
    let listed = system
        .split_once("Your output fields are:\n")
        .map_or("", |(_, rest)| rest);
    let mut signature = DynSignature::new("Scripted");
    let mut named = Vec::new();
    for line in listed.lines() {
        let Some((name, type_name)) = listed_field(line) else {
            break;
        };
        named.push(name.to_owned());
        signature = signature.with_output(field(name, type_name, values.get(name)));
    }
    if named.is_empty() {
        for (name, value) in values {
            signature = signature.with_output(field(name, "", Some(value)));
        }
    }
    signature
}

/// `("name", "type")` from a field-list line `N. `name` (type): description`.
fn listed_field(line: &str) -> Option<(&str, &str)> {
    let (number, rest) = line.split_once(". `")?;
    number.parse::<usize>().ok()?;
    let (name, rest) = rest.split_once("` (")?;
    let (type_name, _) = rest.rsplit_once("):").or_else(|| rest.rsplit_once(')'))?;
    Some((name, type_name))
}

/// A field called `name` of DSPy type `type_name` (its schema from the signature parser when it
/// knows the type, else from the value).
fn field(name: &str, type_name: &str, value: Option<&Value>) -> Field {
    let parsed = DynSignature::parse(&format!("-> {name}: {type_name}"))
        .ok()
        .and_then(|sig| sig.outputs().first().cloned());
    match parsed {
        Some(field) => field,
        None => {
            let schema = value.map_or_else(|| json!({}), schema_of);
            let field = Field::from_schema(name, schema);
            if type_name.is_empty() {
                field
            } else {
                field.with_type_name(type_name)
            }
        }
    }
}

/// A schema that describes `value`.
fn schema_of(value: &Value) -> Value {
    match value {
        Value::String(_) => json!({"type": "string"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_f64() => json!({"type": "number"}),
        Value::Number(_) => json!({"type": "integer"}),
        Value::Array(items) => match items.first() {
            Some(first) => json!({"type": "array", "items": schema_of(first)}),
            None => json!({"type": "array"}),
        },
        Value::Object(map) => {
            let properties: Map<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), schema_of(v))).collect();
            json!({"type": "object", "properties": properties})
        }
        Value::Null => json!({}),
    }
}
