//! The JSON format: outputs as one JSON object, as DSPy's `JSONAdapter`.

use serde_json::{Map, Value, json};

use super::{Adapter, AdapterName, Fields, ParseError, templates, value};
use crate::lm::{Capabilities, LmRequest, Message, ResponseFormat};
use crate::signature::DynSignature;

/// DSPy's `JSONAdapter`: the same field descriptions as the Chat format, outputs requested as one
/// JSON object. With an LM that supports structured outputs the output schema is sent as
/// `response_format` (JSON mode otherwise); replies are read tolerantly (the first `{...}` in the
/// text, Python literals, trailing commas).
///
/// ```
/// use signet::adapter::{Adapter, JsonAdapter};
/// let sig = signet::DynSignature::parse("question -> answer, count: int").unwrap();
/// let parsed = JsonAdapter::new().parse(&sig, "Here: {\"answer\": \"Paris\", \"count\": \"3\"}").unwrap();
/// assert_eq!(parsed["count"], 3);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct JsonAdapter {
    native_function_calling: bool,
    constrained: bool,
    parallel_tool_calls: Option<bool>,
}

impl Default for JsonAdapter {
    fn default() -> Self {
        JsonAdapter::new()
    }
}

impl JsonAdapter {
    /// The JSON adapter, with native function calling on (as DSPy's `JSONAdapter`).
    pub fn new() -> JsonAdapter {
        JsonAdapter {
            native_function_calling: true,
            constrained: false,
            parallel_tool_calls: None,
        }
    }

    /// Schema-constrained decoding, for small local models that cannot follow a format on their own:
    /// every call sends its output schema as a decoding constraint — the llama.cpp server's
    /// `{"type": "json_object", "schema": ..}` when the LM's capabilities have
    /// `json_object_schema`, OpenAI's strict `json_schema` when they have `response_schema` —
    /// so the reply is valid JSON of the right shape by construction. A signature may carry a
    /// tighter schema of its own ([`DynSignature::with_output_schema`]), as ReAct's steps do to tie
    /// each tool name to its arguments.
    ///
    /// ```
    /// use signet::adapter::{Adapter, JsonAdapter};
    /// use signet::lm::{Capabilities, LmRequest, ResponseFormat};
    /// let sig = signet::DynSignature::parse("question -> answer: int").unwrap();
    /// let mut request = LmRequest::default();
    /// let local = Capabilities::default().with_json_object_schema(true);
    /// JsonAdapter::constrained().configure(&sig, &mut request, local);
    /// let Some(ResponseFormat::Raw(format)) = request.response_format else { panic!() };
    /// assert_eq!(format["schema"]["properties"]["answer"]["type"], "integer");
    /// ```
    pub fn constrained() -> JsonAdapter {
        JsonAdapter {
            native_function_calling: false,
            constrained: true,
            parallel_tool_calls: None,
        }
    }

    /// Whether tools are sent natively for signatures with a `ToolCalls` output.
    pub fn with_native_function_calling(mut self, on: bool) -> Self {
        self.native_function_calling = on;
        self
    }

    /// Sends `parallel_tool_calls` (and `tool_choice: auto`) with native tools, as DSPy's
    /// `parallel_tool_calls` adapter argument does; `None` (the default) sends neither.
    ///
    /// ```
    /// use signet::adapter::{Adapter, JsonAdapter};
    /// let adapter = JsonAdapter::new().with_parallel_tool_calls(false);
    /// assert_eq!(adapter.parallel_tool_calls(), Some(false));
    /// ```
    pub fn with_parallel_tool_calls(mut self, parallel: impl Into<Option<bool>>) -> Self {
        self.parallel_tool_calls = parallel.into();
        self
    }
}

impl Adapter for JsonAdapter {
    fn name(&self) -> AdapterName {
        AdapterName::Json
    }

    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message> {
        let format = if self.constrained {
            &templates::JSON_CONSTRAINED_FORMAT
        } else {
            &templates::JSON_FORMAT
        };
        super::format_messages(format, signature, demos, inputs)
    }

    fn configure(
        &self,
        signature: &DynSignature,
        request: &mut LmRequest,
        capabilities: Capabilities,
    ) {
        if self.constrained {
            request.response_format = constrained_format(signature, capabilities);
            return;
        }
        request.response_format = match structured_output_schema(signature) {
            Some(schema) if capabilities.response_schema => Some(ResponseFormat::JsonSchema {
                name: "DSPyProgramOutputs".to_owned(),
                schema,
                strict: true,
            }),
            _ if capabilities.json_object || capabilities.response_schema => {
                Some(ResponseFormat::JsonObject)
            }
            // An endpoint without JSON mode gets the format in the prompt only.
            _ => None,
        };
    }

    fn native_function_calling(&self) -> bool {
        self.native_function_calling
    }

    fn parallel_tool_calls(&self) -> Option<bool> {
        self.parallel_tool_calls
    }

    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        let Some(object) = value::reply_object(text) else {
            return Err(ParseError::NotAnObject {
                adapter: self.name(),
                response: text.to_owned(),
            });
        };
        let mut fields = Map::new();
        for field in signature.outputs() {
            if let Some(raw) = object.get(field.name()) {
                let parsed =
                    value::parse_json(field, raw).map_err(|reason| ParseError::InvalidField {
                        adapter: self.name(),
                        field: field.name().to_owned(),
                        value: raw.to_string(),
                        expected: field.type_name().to_owned(),
                        reason,
                    })?;
                fields.insert(field.name().to_owned(), parsed);
            }
        }
        super::check_complete(self.name(), signature, fields, text)
    }
}

/// The response format of constrained mode (see [`JsonAdapter::constrained`]): the signature's own
/// whole-output schema when it has one (ReAct's steps do), else the outputs' schema.
fn constrained_format(
    signature: &DynSignature,
    capabilities: Capabilities,
) -> Option<ResponseFormat> {
    let own = signature.output_schema().cloned();
    let derived = structured_output_schema(signature);
    if capabilities.json_object_schema {
        let schema = own.or(derived)?;
        return Some(ResponseFormat::Raw(
            json!({"type": "json_object", "schema": schema}),
        ));
    }
    match (own, derived) {
        // A hand-made schema (branches, optional keys) is not always valid in strict mode.
        (Some(schema), _) if capabilities.response_schema => Some(ResponseFormat::JsonSchema {
            name: "DSPyProgramOutputs".to_owned(),
            schema,
            strict: false,
        }),
        (None, Some(schema)) if capabilities.response_schema => Some(ResponseFormat::JsonSchema {
            name: "DSPyProgramOutputs".to_owned(),
            schema,
            strict: true,
        }),
        _ if capabilities.json_object || capabilities.response_schema => {
            Some(ResponseFormat::JsonObject)
        }
        _ => None,
    }
}

/// The structured-outputs schema of the outputs (DSPy's `DSPyProgramOutputs` model), or `None` when a
/// field is an open-ended mapping, which structured outputs cannot express.
pub(crate) fn structured_output_schema(signature: &DynSignature) -> Option<Value> {
    let mut properties = Map::new();
    let mut defs = Map::new();
    for field in signature.outputs() {
        let mut schema = field.schema().clone();
        let is_mapping = schema.get("type") == Some(&json!("object"))
            && schema.get("properties").is_none()
            && schema.get("$ref").is_none();
        if is_mapping {
            return None;
        }
        if let Value::Object(map) = &mut schema {
            if let Some(Value::Object(d)) = map.remove("$defs") {
                defs.extend(d);
            }
            if !map.contains_key("$ref") || map.len() > 1 {
                map.entry("title")
                    .or_insert_with(|| json!(title_of(field.name())));
            }
        }
        properties.insert(field.name().to_owned(), schema);
    }
    let mut root = json!({
        "type": "object",
        "properties": properties,
        "title": "DSPyProgramOutputs",
    });
    if !defs.is_empty() {
        root["$defs"] = Value::Object(defs);
    }
    enforce_required(&mut root);
    Some(root)
}

fn title_of(name: &str) -> String {
    let mut schema = json!({"properties": {name: {}}});
    crate::schema::pydantic_style(&mut schema);
    schema["properties"][name]["title"]
        .as_str()
        .unwrap_or(name)
        .to_owned()
}

/// Every object lists all its properties as required and forbids others (structured outputs' rule).
fn enforce_required(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.get("type") == Some(&json!("object")) {
        let names: Vec<Value> = match map.get("properties") {
            Some(Value::Object(props)) => props.keys().map(|k| json!(k)).collect(),
            _ => {
                map.insert("properties".to_owned(), json!({}));
                Vec::new()
            }
        };
        map.insert("required".to_owned(), Value::Array(names));
        map.insert("additionalProperties".to_owned(), json!(false));
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            props.values_mut().for_each(enforce_required);
        }
    }
    if map.get("type") == Some(&json!("array"))
        && let Some(items) = map.get_mut("items")
    {
        enforce_required(items);
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            defs.values_mut().for_each(enforce_required);
        }
    }
}
