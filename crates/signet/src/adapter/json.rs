//! The JSON format: outputs as one JSON object, as DSPy's `JSONAdapter`.

use serde_json::{Map, Value, json};

use super::{Adapter, AdapterName, Fields, ParseError, templates, value};
use crate::lm::{Capabilities, LmRequest, Message, ResponseFormat};
use crate::signature::{DynSignature, FieldKind};

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
    max_tool_calls: Option<usize>,
    max_string_chars: Option<usize>,
    max_array_items: Option<usize>,
}

impl Default for JsonAdapter {
    fn default() -> Self {
        JsonAdapter::new()
    }
}

impl JsonAdapter {
    /// DSPy's `_make_json_adapter_fallback`: the `JSONAdapter` that the Chat and XML adapters
    /// fall back to, with their native function calling and parallel tool calls settings.
    /// The response format for the signature alone: constrained, a JSON schema, JSON mode or
    /// none.
    fn configure_format(
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
            _ if capabilities.json_object => Some(ResponseFormat::JsonObject),
            // An endpoint without JSON mode gets the format in the prompt only.
            _ => None,
        };
    }

    pub(crate) fn fallback_for(
        native_function_calling: bool,
        parallel_tool_calls: Option<bool>,
    ) -> Box<dyn Adapter> {
        Box::new(
            JsonAdapter::new()
                .with_native_function_calling(native_function_calling)
                .with_parallel_tool_calls(parallel_tool_calls),
        )
    }

    /// The JSON adapter, with native function calling on (as DSPy's `JSONAdapter`).
    pub fn new() -> JsonAdapter {
        JsonAdapter {
            native_function_calling: true,
            constrained: false,
            parallel_tool_calls: None,
            max_tool_calls: None,
            max_string_chars: None,
            max_array_items: None,
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
    /// JsonAdapter::constrained().configure(&sig, &Default::default(), &mut request, local);
    /// let Some(ResponseFormat::Raw(format)) = request.response_format else { panic!() };
    /// assert_eq!(format["schema"]["properties"]["answer"]["type"], "integer");
    /// ```
    pub fn constrained() -> JsonAdapter {
        JsonAdapter {
            native_function_calling: false,
            constrained: true,
            parallel_tool_calls: None,
            max_tool_calls: None,
            max_string_chars: None,
            max_array_items: None,
        }
    }

    crate::shared::setters! {
        /// Whether tools are sent natively for signatures with a `ToolCalls` output.
        fn with_native_function_calling(on: bool) { native_function_calling = on }

        /// In constrained mode, at most `n` calls in a `ToolCalls` output listed in the prompt (the
        /// decoding schema's `maxItems`): small models otherwise repeat a call until the token limit
        /// cuts the reply off. No bound by default.
        ///
        /// With any bound set, a reply that still cannot be read (under the decoding schema, only a
        /// reply the token limit cut off) is asked for once more under a quarter of each bound,
        /// rounded up — 4 calls become 1, 200 characters 50, 16 items 4. The retry is logged and
        /// counted in [`Usage::adapter_fallbacks`](crate::lm::Usage::adapter_fallbacks); if it is cut
        /// off too, the call fails with the parse error.
        ///
        /// ```
        /// use signet::adapter::JsonAdapter;
        /// let adapter = JsonAdapter::constrained().with_max_tool_calls(4);
        /// # let _ = adapter;
        /// ```
        fn with_max_tool_calls(n: usize) { max_tool_calls = Some(n) }

        /// In constrained mode, at most `n` characters in each string argument of a `ToolCalls`
        /// output listed in the prompt (`maxLength` on every string without bounds of its own, and
        /// on the values of an object argument with no declared keys): a
        /// small model that starts repeating inside a string value otherwise runs on until the token
        /// limit cuts the reply off, and the whole reply is lost. No bound by default; a reply cut off
        /// anyway is retried under tighter bounds, as for
        /// [`with_max_tool_calls`](Self::with_max_tool_calls).
        ///
        /// ```
        /// use signet::adapter::JsonAdapter;
        /// let adapter = JsonAdapter::constrained().with_max_tool_calls(4).with_max_string_length(200);
        /// # let _ = adapter;
        /// ```
        fn with_max_string_length(n: usize) { max_string_chars = Some(n) }

        /// In constrained mode, at most `n` items in each array argument of a `ToolCalls` output
        /// listed in the prompt (`maxItems` on every array without a bound of its own), for the same
        /// reason as [`with_max_string_length`](Self::with_max_string_length): a list the model keeps
        /// extending would otherwise cost the whole reply. No bound by default.
        fn with_max_array_items(n: usize) { max_array_items = Some(n) }

        /// Sends `parallel_tool_calls` (and `tool_choice: auto`) with native tools, as DSPy's
        /// `parallel_tool_calls` adapter argument does; `None` (the default) sends neither. ReAct's
        /// native loop and `Predict` with tools send it too: `false` asks for one call a reply
        /// (unset, they ask for concurrent calls).
        ///
        /// ```
        /// use signet::adapter::{Adapter, JsonAdapter};
        /// let adapter = JsonAdapter::new().with_parallel_tool_calls(false);
        /// assert_eq!(adapter.parallel_tool_calls(), Some(false));
        /// ```
        fn with_parallel_tool_calls(parallel: impl Into<Option<bool>>) {
            parallel_tool_calls = parallel.into()
        }
    }

    fn bounds(&self) -> CallBounds {
        CallBounds {
            calls: self.max_tool_calls,
            string_chars: self.max_string_chars,
            array_items: self.max_array_items,
        }
    }

    /// In constrained mode, the decoding schema that ties a `ToolCalls` output to the offered
    /// functions under this adapter's bounds; `None` when the call has no such output (or the
    /// signature brings a schema of its own).
    fn bounded_calls_schema(&self, signature: &DynSignature, inputs: &Fields) -> Option<Value> {
        if !self.constrained || signature.output_schema().is_some() {
            return None;
        }
        tool_calls_schema(signature, inputs, self.bounds())
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
        super::format_messages(
            format,
            signature,
            demos,
            inputs,
            self.native_function_calling,
        )
    }

    fn configure(
        &self,
        signature: &DynSignature,
        inputs: &Fields,
        request: &mut LmRequest,
        capabilities: Capabilities,
    ) {
        self.configure_format(signature, request, capabilities);
        let Some(schema) = self.bounded_calls_schema(signature, inputs) else {
            return;
        };
        match &mut request.response_format {
            Some(ResponseFormat::Raw(raw)) => raw["schema"] = schema,
            Some(ResponseFormat::JsonSchema {
                schema: sent,
                strict,
                ..
            }) => {
                // Branches per function are not always valid in strict mode.
                *sent = schema;
                *strict = false;
            }
            _ => {}
        }
    }

    fn native_function_calling(&self) -> bool {
        self.native_function_calling
    }

    fn renders_text_blocks(&self) -> bool {
        true
    }

    fn parallel_tool_calls(&self) -> Option<bool> {
        self.parallel_tool_calls
    }

    /// A bounded `ToolCalls` reply that cannot be read (when the LM decodes under the schema,
    /// only one the token limit cut off) is asked for again under a quarter of each bound.
    fn fallback(&self, signature: &DynSignature, inputs: &Fields) -> Option<Box<dyn Adapter>> {
        let bounds = self.bounds();
        let bounded = [bounds.calls, bounds.string_chars, bounds.array_items]
            .iter()
            .any(Option::is_some);
        if !bounded || self.bounded_calls_schema(signature, inputs).is_none() {
            return None;
        }
        let quarter = |bound: Option<usize>| bound.map(|n| n.div_ceil(4));
        Some(Box::new(JsonAdapter {
            max_tool_calls: quarter(bounds.calls),
            max_string_chars: quarter(bounds.string_chars),
            max_array_items: quarter(bounds.array_items),
            ..*self
        }))
    }

    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        if value::nested_too_deep(text) {
            return Err(ParseError::Malformed {
                adapter: self.name(),
                message: value::too_deep(),
                response: text.to_owned(),
            });
        }
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
                        reason: reason.to_string(),
                    })?;
                fields.insert(field.name().to_owned(), parsed);
            }
        }
        super::check_complete(self.name(), signature, fields, text)
    }
}

/// The bounds constrained mode puts on a `ToolCalls` output: how many calls, and how long each
/// string and array argument may be.
#[derive(Debug, Clone, Copy)]
struct CallBounds {
    calls: Option<usize>,
    string_chars: Option<usize>,
    array_items: Option<usize>,
}

/// Gives every string and array in `schema` without bounds of their own (`maxLength` / `maxItems`,
/// or `enum`, `const`, `pattern`, `format` on a string) the bound in `bounds`, through objects,
/// arrays and unions. A free-form object (no `properties`, any `additionalProperties`) gets
/// the values of [`free_form_value`], bounded too.
fn bound_values(schema: &mut Value, bounds: CallBounds) {
    let Value::Object(map) = schema else {
        return;
    };
    let has_type = |name: &str| match map.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    };
    let (is_string, is_array, is_object) =
        (has_type("string"), has_type("array"), has_type("object"));
    let fixed = ["maxLength", "enum", "const", "pattern", "format"]
        .iter()
        .any(|key| map.contains_key(*key));
    if let (true, false, Some(n)) = (is_string, fixed, bounds.string_chars) {
        map.insert("maxLength".to_owned(), json!(n));
    }
    if let (true, false, Some(n)) = (is_array, map.contains_key("maxItems"), bounds.array_items) {
        map.insert("maxItems".to_owned(), json!(n));
    }
    let free_form = is_object
        && !map.contains_key("properties")
        && matches!(
            map.get("additionalProperties"),
            None | Some(Value::Bool(true))
        );
    if free_form && (bounds.string_chars.is_some() || bounds.array_items.is_some()) {
        // Bounded with the other children below.
        map.insert("additionalProperties".to_owned(), free_form_value());
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children
                .values_mut()
                .for_each(|child| bound_values(child, bounds));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            bound_values(child, bounds);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children
                .iter_mut()
                .for_each(|child| bound_values(child, bounds));
        }
    }
}

/// The values a free-form object argument (a `dict` with no declared keys) may hold in
/// constrained mode: a scalar, a list of scalars, or an object of those. [`bound_values`] then
/// bounds its strings and lists like any others. Left as "any JSON value", such an argument is
/// where a small model runs on until the token limit cuts the reply off, past the bounds on every
/// declared string and list. Its keys stay unbounded: JSON Schema bounds them only through
/// `propertyNames`, which decoding grammars do not follow.
fn free_form_value() -> Value {
    let scalar = json!({"anyOf": [
        {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}
    ]});
    let list = json!({"type": "array", "items": scalar});
    let object = json!({"type": "object", "additionalProperties": {"anyOf": [scalar, list]}});
    json!({"anyOf": [scalar, list, object]})
}

/// For constrained mode, when the tools are listed in the prompt: the outputs' schema with the
/// `ToolCalls` output's calls tied to the offered functions — each call names one function and
/// its `args` follow that function's schema. `None` without a `ToolCalls` output or tool
/// descriptors in the inputs.
fn tool_calls_schema(
    signature: &DynSignature,
    inputs: &Fields,
    bounds: CallBounds,
) -> Option<Value> {
    let calls_field = signature
        .outputs()
        .iter()
        .find(|f| f.kind() == FieldKind::ToolCalls)?;
    let tools_field = signature
        .inputs()
        .iter()
        .find(|f| f.kind() == FieldKind::Tools)?;
    let branches: Vec<Value> = crate::signature::descriptors(inputs.get(tools_field.name()))
        .ok()?
        .iter()
        .map(|tool| {
            let mut args = tool.resolved_parameters();
            bound_values(&mut args, bounds);
            crate::signature::call_branch(&[], ("name", &tool.name), ("args", args))
        })
        .collect();
    if branches.is_empty() {
        return None;
    }
    let mut properties = Map::new();
    for field in signature.outputs() {
        let schema = if field.name() == calls_field.name() {
            let mut calls = json!({"type": "array", "items": {"anyOf": branches}});
            if let Some(n) = bounds.calls {
                calls["maxItems"] = json!(n);
            }
            json!({
                "type": "object",
                "properties": {"tool_calls": calls},
                "required": ["tool_calls"],
                "additionalProperties": false,
            })
        } else {
            crate::schema::inline_refs(field.schema())
        };
        properties.insert(field.name().to_owned(), schema);
    }
    let required: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    Some(json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    }))
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
        _ if capabilities.json_object => Some(ResponseFormat::JsonObject),
        _ => None,
    }
}

/// The structured-outputs schema of the outputs (DSPy's `DSPyProgramOutputs` model), or `None` when a
/// field is an open-ended mapping, which structured outputs cannot express.
///
/// Byte for byte what DSPy sends: pydantic's `model_json_schema()` of a model whose fields are the
/// outputs, then DSPy's `enforce_required`. So a named type (a model, an enum: a schema with a
/// `title`) is a `$ref` into `$defs`; every object's keys are sorted, except `properties`, which keep
/// the declaration order; and `required` / `additionalProperties` are set on every object with
/// properties, in place where pydantic already wrote them, else appended.
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
            let named = map.get("title").and_then(Value::as_str).map(str::to_owned);
            let is_class = map.contains_key("properties") || map.contains_key("enum");
            if let (Some(name), true) = (named, is_class) {
                // A model or enum class: pydantic puts it under `$defs` and refers to it.
                defs.insert(name.clone(), Value::Object(std::mem::take(map)));
                map.insert("$ref".to_owned(), json!(format!("#/$defs/{name}")));
            } else if !map.contains_key("$ref") || map.len() > 1 {
                map.entry("title")
                    .or_insert_with(|| json!(title_of(field.name())));
            }
        }
        properties.insert(field.name().to_owned(), schema);
    }
    let required: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    let mut root = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "title": "DSPyProgramOutputs",
        "additionalProperties": false,
    });
    if !defs.is_empty() {
        root["$defs"] = Value::Object(defs);
    }
    let mut root = pydantic_ordered(&root, None);
    enforce_required(&mut root);
    Some(root)
}

/// A schema with its keys in the order pydantic writes them: every object sorted by key, except the
/// maps under `properties` (declaration order) and `default` (the value as given). A field's schema
/// reaches Signet in DSPy's display order (all keys sorted), which no longer has the declaration
/// order of properties; the required ones come first, in `required`'s order (the declaration order),
/// then the others.
fn pydantic_ordered(schema: &Value, parent: Option<&str>) -> Value {
    match schema {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            match parent {
                Some("default") => {}
                Some("properties") => {}
                _ => keys.sort(),
            }
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for key in keys {
                let mut value = pydantic_ordered(&map[key], Some(key));
                if key == "properties"
                    && parent != Some("properties")
                    && let Value::Object(props) = &mut value
                {
                    let mut ordered = Map::new();
                    for name in &required {
                        if let Some(v) = props.shift_remove(*name) {
                            ordered.insert((*name).to_owned(), v);
                        }
                    }
                    ordered.extend(std::mem::take(props));
                    *props = ordered;
                }
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) if parent != Some("default") => Value::Array(
            items
                .iter()
                .map(|item| pydantic_ordered(item, None))
                .collect(),
        ),
        other => other.clone(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::Field;

    #[test]
    fn a_missing_optional_output_is_none() {
        let sig = DynSignature::parse("q -> answer, maybe: Optional[int]").unwrap();
        let parsed = JsonAdapter::new()
            .parse(&sig, r#"{"answer": "Paris"}"#)
            .unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"answer": "Paris", "maybe": null})
        );
    }

    #[test]
    fn constrained_tool_calls_follow_the_offered_functions() {
        use crate::adapter::{ToolCalls, Tools};
        let sig = DynSignature::new("Call")
            .with_input(Field::str("question"))
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::of::<ToolCalls>("tool_calls"));
        let add = json!({"type": "function", "function": {"name": "add", "description": "Add.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}});
        let inputs: Fields = json!({"question": "2 + 3?", "tools": [add]})
            .as_object()
            .cloned()
            .unwrap();
        let mut request = LmRequest::default();
        let local = Capabilities::default().with_json_object_schema(true);
        JsonAdapter::constrained().configure(&sig, &inputs, &mut request, local);
        let Some(ResponseFormat::Raw(format)) = &request.response_format else {
            panic!("{:?}", request.response_format)
        };
        let call = &format["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"]["items"]
            ["anyOf"][0];
        assert_eq!(
            call["properties"]["name"],
            json!({"type": "string", "enum": ["add"]})
        );
        assert_eq!(call["properties"]["args"]["required"], json!(["a"]));
        let calls = &format["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"];
        assert_eq!(calls.get("maxItems"), None, "no bound by default");
        let mut bounded = LmRequest::default();
        JsonAdapter::constrained().with_max_tool_calls(3).configure(
            &sig,
            &inputs,
            &mut bounded,
            local,
        );
        let Some(ResponseFormat::Raw(bounded)) = &bounded.response_format else {
            panic!()
        };
        assert_eq!(
            bounded["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"]["maxItems"],
            3
        );

        // Structured outputs get the same schema, not strict; without tools nothing changes.
        let mut request = LmRequest::default();
        let api = Capabilities::default().with_response_schema(true);
        JsonAdapter::constrained().configure(&sig, &inputs, &mut request, api);
        let Some(ResponseFormat::JsonSchema { schema, strict, .. }) = &request.response_format
        else {
            panic!("{:?}", request.response_format)
        };
        assert!(!strict);
        assert_eq!(schema, &format["schema"]);
        let mut plain = LmRequest::default();
        JsonAdapter::new().configure(&sig, &inputs, &mut plain, local);
        let mut unconstrained = LmRequest::default();
        JsonAdapter::new().configure(&sig, &Fields::new(), &mut unconstrained, local);
        assert_eq!(plain.response_format, unconstrained.response_format);
    }

    #[test]
    fn constrained_tool_call_arguments_can_be_bounded_in_length() {
        use crate::adapter::{ToolCalls, Tools};
        let sig = DynSignature::new("Call")
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::of::<ToolCalls>("tool_calls"));
        let search = json!({"type": "function", "function": {"name": "search", "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "code": {"type": "string", "maxLength": 3},
            "unit": {"type": "string", "enum": ["km", "mi"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pair": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            "filter": {"anyOf": [{"type": "object", "properties": {"name": {"type": ["string", "null"]}}}, {"type": "null"}]},
            "cards": {"type": "object", "description": "player name to a list of cards"},
            "scores": {"type": "object", "additionalProperties": {"type": "integer"}}
        }}}});
        let inputs: Fields = json!({"tools": [search]}).as_object().cloned().unwrap();
        let mut request = LmRequest::default();
        let local = Capabilities::default().with_json_object_schema(true);
        JsonAdapter::constrained()
            .with_max_string_length(100)
            .with_max_array_items(8)
            .configure(&sig, &inputs, &mut request, local);
        let Some(ResponseFormat::Raw(format)) = &request.response_format else {
            panic!("{:?}", request.response_format)
        };
        let args = &format["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"]["items"]
            ["anyOf"][0]["properties"]["args"]["properties"];
        assert_eq!(args["query"]["maxLength"], 100);
        assert_eq!(args["code"]["maxLength"], 3, "a bound of its own is kept");
        assert_eq!(args["unit"].get("maxLength"), None, "an enum needs none");
        assert_eq!(
            (
                &args["tags"]["maxItems"],
                &args["tags"]["items"]["maxLength"]
            ),
            (&json!(8), &json!(100))
        );
        assert_eq!(args["pair"]["maxItems"], 2);
        assert_eq!(
            args["filter"]["anyOf"][0]["properties"]["name"]["maxLength"],
            100
        );
        // A free-form object holds bounded scalars, lists of them, or objects of those.
        let value = &args["cards"]["additionalProperties"];
        let [scalar, list, object] = [0, 1, 2].map(|i| &value["anyOf"][i]);
        assert_eq!(scalar["anyOf"][0]["maxLength"], 100);
        assert_eq!(
            (&list["maxItems"], &list["items"]["anyOf"][0]["maxLength"]),
            (&json!(8), &json!(100))
        );
        assert_eq!(object["additionalProperties"]["anyOf"][1]["maxItems"], 8);
        assert_eq!(
            args["scores"]["additionalProperties"],
            json!({"type": "integer"}),
            "declared values are kept"
        );
    }

    #[test]
    fn a_cut_off_bounded_reply_is_retried_under_a_quarter_of_each_bound() {
        use crate::adapter::{ToolCalls, Tools};
        let sig = DynSignature::new("Call")
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::of::<ToolCalls>("tool_calls"));
        let search = json!({"type": "function", "function": {"name": "search", "parameters": {
            "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}});
        let inputs: Fields = json!({"tools": [search]}).as_object().cloned().unwrap();
        let bounded = JsonAdapter::constrained()
            .with_max_tool_calls(4)
            .with_max_string_length(200)
            .with_max_array_items(16);
        let retry = bounded.fallback(&sig, &inputs).expect("a tighter retry");
        let mut request = LmRequest::default();
        let local = Capabilities::default().with_json_object_schema(true);
        retry.configure(&sig, &inputs, &mut request, local);
        let Some(ResponseFormat::Raw(format)) = &request.response_format else {
            panic!("{:?}", request.response_format)
        };
        let calls = &format["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"];
        let tags = &calls["items"]["anyOf"][0]["properties"]["args"]["properties"]["tags"];
        assert_eq!(
            (
                &calls["maxItems"],
                &tags["maxItems"],
                &tags["items"]["maxLength"]
            ),
            (&json!(1), &json!(4), &json!(50))
        );
        // Only bounded constrained calls of a `ToolCalls` output get a retry: without bounds,
        // or without tools to bound, the same request would be cut off the same way.
        assert!(JsonAdapter::constrained().fallback(&sig, &inputs).is_none());
        let no_tools = Fields::new();
        assert!(bounded.fallback(&sig, &no_tools).is_none());
        assert!(JsonAdapter::new().fallback(&sig, &inputs).is_none());
    }

    #[test]
    fn tool_calls_and_tools_in_the_prompt_as_dspy_writes_them() {
        use crate::adapter::{ToolCalls, Tools};
        let sig = DynSignature::new("ToolSig")
            .with_input(Field::str("question"))
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::str("answer"))
            .with_output(Field::of::<ToolCalls>("tool_calls"));
        let inputs: Fields = json!({"question": "2 + 3?", "tools": []})
            .as_object()
            .cloned()
            .unwrap();
        let messages = JsonAdapter::new().format(&sig, &[], &inputs);
        assert!(messages[0].content.contains(
            "2. `tool_calls` (ToolCalls): \n    Type description of ToolCalls: Tool calls must be"
        ));
        assert!(messages[1].content.ends_with(
            "`answer`, then `tool_calls` (must be a JSON object like {\"tool_calls\": [{\"name\": \
             \"...\", \"args\": {...}}]})."
        ));
        // Text tool calls get DSPy's `id: None`.
        let parsed = JsonAdapter::new()
            .parse(
                &sig,
                r#"{"answer": "x", "tool_calls": {"tool_calls": [{"name": "add", "args": {}}]}}"#,
            )
            .unwrap();
        assert_eq!(parsed["tool_calls"]["tool_calls"][0]["id"], Value::Null);
    }

    #[test]
    fn structured_schema_is_pydantics_byte_for_byte() {
        // A model as DSPy records its schema (type first, keys sorted), an enum and an optional.
        let address = json!({"type": "object", "properties": {
                "city": {"type": "string", "description": "City name", "title": "City"},
                "street": {"type": "string", "title": "Street"}},
            "required": ["street", "city"], "title": "Address"});
        let person = json!({"type": "object", "$defs": {"Address": address},
            "properties": {"address": {"$ref": "#/$defs/Address"}, "age": {"type": "integer", "title": "Age"},
                "name": {"type": "string", "title": "Name"},
                "nicknames": {"type": "array", "default": [], "items": {"type": "string"}, "title": "Nicknames"}},
            "required": ["name", "age", "address"], "title": "Person"});
        let sig = DynSignature::new("S")
            .with_input(Field::str("text"))
            .with_output(Field::from_schema("person", person).with_type_name("Person"))
            .with_output(
                Field::from_schema(
                    "level",
                    json!({"type": "string", "enum": ["low", "high"], "title": "Level"}),
                )
                .with_type_name("Level"),
            )
            .with_output(Field::from_schema(
                "note",
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            ));
        let schema = structured_output_schema(&sig).unwrap();
        assert_eq!(
            schema.to_string(),
            concat!(
                r##"{"$defs":{"Address":{"properties":{"street":{"title":"Street","type":"string"},"##,
                r##""city":{"description":"City name","title":"City","type":"string"}},"##,
                r##""required":["street","city"],"title":"Address","type":"object","additionalProperties":false},"##,
                r##""Level":{"enum":["low","high"],"title":"Level","type":"string"},"##,
                r##""Person":{"properties":{"name":{"title":"Name","type":"string"},"##,
                r##""age":{"title":"Age","type":"integer"},"address":{"$ref":"#/$defs/Address"},"##,
                r##""nicknames":{"default":[],"items":{"type":"string"},"title":"Nicknames","type":"array"}},"##,
                r##""required":["name","age","address","nicknames"],"title":"Person","type":"object","##,
                r##""additionalProperties":false}},"additionalProperties":false,"##,
                r##""properties":{"person":{"$ref":"#/$defs/Person"},"level":{"$ref":"#/$defs/Level"},"##,
                r##""note":{"anyOf":[{"type":"string"},{"type":"null"}],"title":"Note"}},"##,
                r##""required":["person","level","note"],"title":"DSPyProgramOutputs","type":"object"}"##
            )
        );
    }
}
