//! The XML format: fields as `<name>` tags, lists, maps and structs as nested XML, as DSPy's
//! `XMLAdapter`.

use serde_json::{Map, Value};

use super::{Adapter, AdapterName, Fields, ParseError, templates, value};
use crate::lm::Message;
use crate::python::{py_str, strip};
use crate::signature::{DynSignature, Field, FieldKind};

/// DSPy's `XMLAdapter`: the Chat adapter's messages with `<field>` tags instead of markers. Lists,
/// maps and structs are written and read as nested XML (`<names><item>..</item></names>`). Falls
/// back once to [`JsonAdapter`](super::JsonAdapter) on an unparseable reply, like the Chat adapter.
///
/// ```
/// use signet::adapter::{Adapter, XmlAdapter};
/// let sig = signet::DynSignature::parse("text -> names: list[str], count: int").unwrap();
/// let reply = "<names><item>Ada</item><item>Bob</item></names>\n<count>\n2\n</count>";
/// let parsed = XmlAdapter::new().parse(&sig, reply).unwrap();
/// assert_eq!(parsed["names"], serde_json::json!(["Ada", "Bob"]));
/// assert_eq!(parsed["count"], 2);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct XmlAdapter {
    json_fallback: bool,
    native_function_calling: bool,
    parallel_tool_calls: Option<bool>,
}

impl Default for XmlAdapter {
    fn default() -> Self {
        XmlAdapter::new()
    }
}

impl XmlAdapter {
    /// The XML adapter, with JSON fallback on.
    pub fn new() -> XmlAdapter {
        XmlAdapter {
            json_fallback: true,
            native_function_calling: false,
            parallel_tool_calls: None,
        }
    }

    crate::shared::setters! {
        /// Send `tools` inputs as the LM's native tools and read its tool calls into a `ToolCalls`
        /// output, when the LM supports function calling (DSPy's `use_native_function_calling`, off by
        /// default for XML as for Chat).
        fn with_native_function_calling(on: bool) { native_function_calling = on }

        /// Ask the provider for (or against) parallel tool calls when native function calling is
        /// active; `None` (the default) leaves the provider's default. ReAct's native loop and
        /// `Predict` with tools send it too: `false` asks for one call a reply (unset, they ask for
        /// concurrent calls).
        fn with_parallel_tool_calls(parallel: impl Into<Option<bool>>) {
            parallel_tool_calls = parallel.into()
        }
    }

    /// Fail on an unparseable reply instead of retrying once in the JSON format.
    pub fn without_json_fallback(mut self) -> Self {
        self.json_fallback = false;
        self
    }
}

impl Adapter for XmlAdapter {
    fn name(&self) -> AdapterName {
        AdapterName::Xml
    }

    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message> {
        super::format_messages(
            &XML_FORMAT,
            signature,
            demos,
            inputs,
            self.native_function_calling,
        )
    }

    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        if value::nested_too_deep(text) {
            return Err(ParseError::Malformed {
                adapter: self.name(),
                message: value::too_deep(),
                response: text.to_owned(),
            });
        }
        let wrapped = format!("<dspy_root>{text}</dspy_root>");
        let document = roxmltree::Document::parse(&wrapped).map_err(|e| ParseError::Malformed {
            adapter: self.name(),
            message: format!("failed to parse XML: {e}"),
            response: text.to_owned(),
        })?;
        // Reading the elements recurses once per level, so the parsed tree's depth is checked
        // too: quotes in text (`<a>"<a>"…`) can hide elements from the text scan above.
        if element_depth(&document) > value::MAX_NESTING + 1 {
            return Err(ParseError::Malformed {
                adapter: self.name(),
                message: value::too_deep(),
                response: text.to_owned(),
            });
        }
        let elements = group_children(document.root_element());
        let mut fields = Map::new();
        for field in signature.outputs() {
            let Some(found) = group(&elements, field.name()) else {
                continue;
            };
            let schema = field.schema();
            let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
            let mut candidates = vec![schema.clone()];
            candidates.extend(
                schema
                    .get("anyOf")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            let mut last_error = String::new();
            let mut last_value = Value::Null;
            let mut parsed = None;
            for candidate in &candidates {
                let attempt =
                    elements_to_value(found, candidate, &defs, &wrapped).and_then(|raw| {
                        last_value = raw.clone();
                        value::parse_json(field, &raw).map_err(|e| e.to_string())
                    });
                match attempt {
                    Ok(v) => {
                        parsed = Some(v);
                        break;
                    }
                    Err(e) => last_error = e,
                }
            }
            match parsed {
                Some(v) => {
                    fields.insert(field.name().to_owned(), v);
                }
                None => {
                    return Err(ParseError::InvalidField {
                        adapter: self.name(),
                        field: field.name().to_owned(),
                        value: py_str(&last_value),
                        expected: field.type_name().to_owned(),
                        reason: last_error,
                    });
                }
            }
        }
        super::check_complete(self.name(), signature, fields, text)
    }

    fn render_text_fields(&self, values: &Fields) -> String {
        let fields: Vec<String> = values
            .iter()
            .map(|(name, value)| format!("<{name}>\n{}\n</{name}>", templates::text_value(value)))
            .collect();
        fields.join("\n\n").trim().to_owned()
    }

    fn fallback(&self, _: &DynSignature, _: &Fields) -> Option<Box<dyn Adapter>> {
        self.json_fallback.then(|| {
            super::JsonAdapter::fallback_for(self.native_function_calling, self.parallel_tool_calls)
        })
    }

    fn native_function_calling(&self) -> bool {
        self.native_function_calling
    }

    fn parallel_tool_calls(&self) -> Option<bool> {
        self.parallel_tool_calls
    }
}

// ---- formatting ---------------------------------------------------------------------------------

/// The XML format's messages.
const XML_FORMAT: super::Format = super::Format {
    name: "xml",
    system: system_message,
    user: user_message,
    assistant: assistant_message,
};

fn system_message(signature: &DynSignature) -> String {
    let block = |fields: &[Field], is_output: bool| {
        fields
            .iter()
            .map(|f| {
                if is_output && uses_nested_xml(f) {
                    schema_to_xml(f.name(), f.schema(), &defs_of(f), &mut Vec::new())
                } else {
                    tagged(
                        f,
                        &Value::String(templates::field_placeholder(f, !is_output)),
                        is_output,
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let structure = [
        "All interactions will be structured in the following way, with the appropriate values filled in."
            .to_owned(),
        block(signature.inputs(), false),
        block(signature.outputs(), true),
    ]
    .join("\n\n");
    // DSPy's XML structure is not trimmed, unlike the Chat and JSON ones.
    templates::system_message(signature, &structure)
}

fn user_message(
    signature: &DynSignature,
    inputs: &Fields,
    prefix: &str,
    main_request: bool,
) -> String {
    let fields: Vec<String> = signature
        .inputs()
        .iter()
        .filter_map(|f| inputs.get(f.name()).map(|v| tagged(f, v, false)))
        .collect();
    let mut parts = vec![prefix.to_owned(), fields.join("\n\n").trim().to_owned()];
    if main_request {
        parts.push(output_requirements(signature));
    }
    parts.push(String::new());
    parts.join("\n\n").trim().to_owned()
}

pub(crate) fn assistant_message(
    signature: &DynSignature,
    outputs: &Fields,
    missing: Option<&str>,
) -> String {
    let fields: Vec<String> = signature
        .outputs()
        .iter()
        .map(|f| {
            let value = match (outputs.get(f.name()), missing) {
                (Some(v), _) => v.clone(),
                (None, Some(m)) => Value::String(m.to_owned()),
                (None, None) => Value::Null,
            };
            tagged(f, &value, true)
        })
        .collect();
    fields.join("\n\n").trim().to_owned()
}

fn output_requirements(signature: &DynSignature) -> String {
    let tags: Vec<String> = signature
        .outputs()
        .iter()
        .map(|f| format!("`<{}>`", f.name()))
        .collect();
    let schemas: Vec<String> = signature
        .outputs()
        .iter()
        .filter(|f| uses_nested_xml(f))
        .map(|f| schema_to_xml(f.name(), f.schema(), &defs_of(f), &mut Vec::new()))
        .collect();
    let mut text = format!(
        "Respond with the corresponding output fields wrapped in XML tags {}.",
        tags.join(", then ")
    );
    if !schemas.is_empty() {
        text.push_str(&format!(
            " Use this nested XML structure: {}",
            schemas.join(" ")
        ));
    }
    text
}

/// One field as `<name>\nvalue\n</name>`, or nested XML for a structured output value.
fn tagged(field: &Field, value: &Value, is_output: bool) -> String {
    if is_output && uses_nested_xml(field) && (value.is_object() || value.is_array()) {
        return value_to_xml(value, field.name(), None);
    }
    let mut formatted = templates::field_value(field, value);
    if is_output && field.is_text() {
        formatted = escape(&formatted).into();
    }
    format!("<{0}>\n{formatted}\n</{0}>", field.name())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;")
}

/// Python's `xml.sax.saxutils.quoteattr`.
fn quote_attr(text: &str) -> String {
    let mut data = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    data = data
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;");
    if data.contains('"') {
        if data.contains('\'') {
            format!("\"{}\"", data.replace('"', "&quot;"))
        } else {
            format!("'{data}'")
        }
    } else {
        format!("\"{data}\"")
    }
}

fn value_to_xml(value: &Value, tag: &str, key: Option<&str>) -> String {
    let attrs = key
        .map(|k| format!(" key={}", quote_attr(k)))
        .unwrap_or_default();
    match value {
        Value::Array(items) => {
            let children: String = items
                .iter()
                .map(|item| value_to_xml(item, "item", None))
                .collect();
            if children.is_empty() {
                format!("<{tag}{attrs} />")
            } else {
                format!("<{tag}{attrs}>{children}</{tag}>")
            }
        }
        Value::Object(map) => {
            let children: String = map
                .iter()
                .map(|(name, child)| {
                    if is_xml_name(name) {
                        value_to_xml(child, name, None)
                    } else {
                        value_to_xml(child, "entry", Some(name))
                    }
                })
                .collect();
            format!("<{tag}{attrs}>{children}</{tag}>")
        }
        Value::Null => format!("<{tag}{attrs} />"),
        scalar => format!("<{tag}{attrs}>{}</{tag}>", escape(&py_str(scalar))),
    }
}

/// DSPy's test: the name, with `-` and `.` after the first character read as `_`, is an identifier.
fn is_xml_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Whether an output is written as nested XML: lists, maps and structs (also when optional), but not
/// DSPy's own types (`ToolCalls`, `History`, `list[Tool]`: models from a `dspy.` module), which keep
/// the `{name}` placeholder with the JSON-schema note and are written as JSON.
fn uses_nested_xml(field: &Field) -> bool {
    if matches!(
        field.kind(),
        FieldKind::ToolCalls | FieldKind::History | FieldKind::Tools
    ) {
        return false;
    }
    let schema = field.schema();
    let inner = match schema.get("anyOf").and_then(Value::as_array) {
        Some(branches) => {
            let non_null: Vec<&Value> = branches
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            match non_null.as_slice() {
                [only] => *only,
                _ => return false,
            }
        }
        None => schema,
    };
    inner.get("$ref").is_some()
        || matches!(
            inner.get("type").and_then(Value::as_str),
            Some("array" | "object")
        )
}

fn defs_of(field: &Field) -> Value {
    field.schema().get("$defs").cloned().unwrap_or(Value::Null)
}

/// The nested XML skeleton of a schema (`<person><name>...</name>..</person>`).
fn schema_to_xml(tag: &str, schema: &Value, defs: &Value, seen: &mut Vec<String>) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference).to_owned();
        let Some(target) = defs.get(&name).filter(|_| !seen.contains(&name)) else {
            return format!("<{tag}>...</{tag}>");
        };
        seen.push(name);
        let out = schema_to_xml(tag, target, defs, seen);
        seen.pop();
        return out;
    }
    if let Some(choices) = schema.get("anyOf").and_then(Value::as_array) {
        let choice = choices
            .iter()
            .find(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .or(choices.first());
        if let Some(choice) = choice {
            return schema_to_xml(tag, choice, defs, seen);
        }
    }
    if schema.get("type").and_then(Value::as_str) == Some("array") {
        let item = schema_to_xml(
            "item",
            schema.get("items").unwrap_or(&Value::Null),
            defs,
            seen,
        );
        return format!("<{tag}>{item}</{tag}>");
    }
    let children: String = property_order(schema)
        .into_iter()
        .map(|(name, child)| schema_to_xml(name, child, defs, seen))
        .collect();
    if children.is_empty() {
        format!("<{tag}>...</{tag}>")
    } else {
        format!("<{tag}>{children}</{tag}>")
    }
}

/// Properties in declaration order as far as it can be told: required ones in `required` order, then
/// the rest in schema order (schemas printed DSPy's way are key-sorted, which loses the order).
fn property_order(schema: &Value) -> Vec<(&str, &Value)> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut ordered: Vec<(&str, &Value)> = required
        .iter()
        .filter_map(|name| properties.get_key_value(*name))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    for (name, child) in properties {
        if !required.contains(&name.as_str()) {
            ordered.push((name.as_str(), child));
        }
    }
    ordered
}

// ---- parsing ------------------------------------------------------------------------------------

/// How deep elements nest in `document` (the root element is level 1), without recursion: nodes
/// come in document order, so a node's parent is always measured before it.
fn element_depth(document: &roxmltree::Document<'_>) -> usize {
    let mut depths: Vec<usize> = Vec::new();
    let mut deepest = 0;
    for node in document.root().descendants() {
        let index = node.id().get_usize();
        if depths.len() <= index {
            depths.resize(index + 1, 0);
        }
        let parent = node
            .parent()
            .and_then(|p| depths.get(p.id().get_usize()).copied())
            .unwrap_or(0);
        let depth = parent + usize::from(node.is_element());
        depths[index] = depth;
        deepest = deepest.max(depth);
    }
    deepest
}

/// Children grouped by tag (or by `key` for `<entry key="..">`), in order of first appearance.
type Grouped<'a, 'i> = Vec<(String, Vec<roxmltree::Node<'a, 'i>>)>;

fn group<'g, 'a, 'i>(
    groups: &'g Grouped<'a, 'i>,
    name: &str,
) -> Option<&'g Vec<roxmltree::Node<'a, 'i>>> {
    groups.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn group_children<'a, 'i>(node: roxmltree::Node<'a, 'i>) -> Grouped<'a, 'i> {
    let mut groups: Grouped<'a, 'i> = Vec::new();
    for child in node.children().filter(roxmltree::Node::is_element) {
        let tag = child.tag_name().name();
        let key = if tag == "entry" {
            child.attribute("key").unwrap_or(tag)
        } else {
            tag
        };
        match groups.iter_mut().find(|(k, _)| k == key) {
            Some((_, nodes)) => nodes.push(child),
            None => groups.push((key.to_owned(), vec![child])),
        }
    }
    groups
}

fn has_children(node: &roxmltree::Node<'_, '_>) -> bool {
    node.children().any(|c| c.is_element())
}

/// What ElementTree's `element.text` is: the text before the first child element.
fn text_of<'a>(node: &roxmltree::Node<'a, '_>) -> &'a str {
    node.text().unwrap_or("")
}

/// DSPy's `_elements_to_value`: the raw value of a field's elements, guided by its schema.
fn elements_to_value(
    elements: &[roxmltree::Node<'_, '_>],
    schema: &Value,
    defs: &Value,
    source: &str,
) -> Result<Value, String> {
    let mut schema = schema;
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        schema = defs
            .get(name)
            .ok_or_else(|| format!("unknown definition {name}"))?;
    }
    let first = elements.first().ok_or("no element")?;
    if let Some(choices) = schema.get("anyOf").and_then(Value::as_array) {
        let null = serde_json::json!({"type": "null"});
        if choices.contains(&null) && !has_children(first) && strip(text_of(first)).is_empty() {
            return Ok(Value::Null);
        }
        let non_null: Vec<&Value> = choices.iter().filter(|c| **c != null).collect();
        let mut chosen = *non_null.first().ok_or("no non-null choice")?;
        if has_children(first)
            && let Some(structured) = non_null
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) != Some("string"))
        {
            chosen = structured;
        }
        return elements_to_value(elements, chosen, defs, source);
    }
    let kind = schema.get("type").and_then(Value::as_str);
    if kind == Some("array") {
        let mut elements = elements.to_vec();
        if elements.len() == 1 && !has_children(first) {
            let text = strip(text_of(first));
            if text.is_empty() {
                return Ok(Value::Array(Vec::new()));
            }
            if text.starts_with('[') {
                return Ok(Value::String(text.to_owned()));
            }
        }
        if elements.len() == 1
            && let Some(items) = group(&group_children(*first), "item")
        {
            elements = items.clone();
        }
        let item_schema = schema.get("items").cloned().unwrap_or(Value::Null);
        let items: Result<Vec<Value>, String> = elements
            .iter()
            .map(|e| elements_to_value(std::slice::from_ref(e), &item_schema, defs, source))
            .collect();
        return items.map(Value::Array);
    }
    if kind == Some("string") && has_children(first) {
        // The text with its child elements serialized back, as ElementTree's `tostring` would.
        let mut out = text_of(first).to_owned();
        for child in first.children().filter(roxmltree::Node::is_element) {
            out.push_str(&source[child.range()]);
            out.push_str(child.tail().unwrap_or(""));
        }
        return Ok(Value::String(out));
    }
    let children = group_children(*first);
    if children.is_empty() {
        if kind == Some("object") && strip(text_of(first)).is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        let values: Vec<Value> = elements
            .iter()
            .map(|e| Value::String(strip(text_of(e)).to_owned()))
            .collect();
        return Ok(if values.len() == 1 {
            values.into_iter().next().unwrap_or_default()
        } else {
            Value::Array(values)
        });
    }
    let properties = schema.get("properties");
    let fallback = schema
        .get("additionalProperties")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or(Value::Null);
    let mut out = Map::new();
    for (name, nodes) in &children {
        let child_schema = properties.and_then(|p| p.get(name)).unwrap_or(&fallback);
        out.insert(
            name.clone(),
            elements_to_value(nodes, child_schema, defs, source)?,
        );
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_missing_optional_output_is_none() {
        let sig = DynSignature::parse("q -> answer, maybe: Optional[int]").unwrap();
        let parsed = XmlAdapter::new()
            .parse(&sig, "<answer>Paris</answer>")
            .unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"answer": "Paris", "maybe": null})
        );
    }

    #[test]
    fn tools_and_tool_calls_in_the_prompt_as_dspy_writes_them() {
        use crate::adapter::{ToolCalls, Tools};
        use crate::signature::Field;
        let sig = DynSignature::new("ToolSig")
            .with_input(Field::str("question"))
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::str("answer"))
            .with_output(Field::of::<ToolCalls>("tool_calls"));
        let tool = json!({"type": "function", "function": {"name": "lookup", "description": "",
            "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}});
        let inputs: Fields = json!({"question": "Alice?", "tools": [tool]})
            .as_object()
            .cloned()
            .unwrap();
        let messages = XmlAdapter::new().format(&sig, &[], &inputs);
        assert!(messages[0].content.contains(
            "2. `tool_calls` (ToolCalls): \n    Type description of ToolCalls: Tool calls must be"
        ));
        assert!(messages[1].content.contains(
            "<tools>\n[\"lookup. It takes arguments {'name': {'type': 'string'}}.\"]\n</tools>"
        ));
    }

    #[test]
    fn native_function_calling_and_the_json_fallback() {
        let xml = XmlAdapter::new();
        assert!(!xml.native_function_calling());
        assert_eq!(xml.parallel_tool_calls(), None);
        let xml = xml
            .with_native_function_calling(true)
            .with_parallel_tool_calls(true);
        assert!(xml.native_function_calling());
        let fallback = xml
            .fallback(&DynSignature::parse("q -> a").unwrap(), &Fields::new())
            .unwrap();
        assert_eq!(fallback.name(), AdapterName::Json);
        assert!(fallback.native_function_calling());
        assert_eq!(fallback.parallel_tool_calls(), Some(true));
        assert!(
            !XmlAdapter::new()
                .fallback(&DynSignature::parse("q -> a").unwrap(), &Fields::new())
                .unwrap()
                .native_function_calling()
        );
    }

    #[test]
    fn malformed_xml_is_a_parse_error() {
        let sig = DynSignature::parse("q -> a").unwrap();
        let err = XmlAdapter::new().parse(&sig, "<a>unclosed").unwrap_err();
        assert!(matches!(err, ParseError::Malformed { .. }), "{err}");
    }

    #[test]
    fn maps_and_optional_values() {
        let sig = DynSignature::parse("q -> scores: dict[str, int], maybe: Optional[int]").unwrap();
        let parsed = XmlAdapter::new()
            .parse(
                &sig,
                "<scores><Ada>3</Ada><entry key=\"Bob Smith\">1</entry></scores><maybe>\n</maybe>",
            )
            .unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"scores": {"Ada": 3, "Bob Smith": 1}, "maybe": null})
        );
    }

    #[test]
    fn values_render_as_nested_xml() {
        assert_eq!(
            value_to_xml(&json!({"a b": [1, null], "ok": true}), "x", None),
            "<x><entry key=\"a b\"><item>1</item><item /></entry><ok>True</ok></x>"
        );
    }
}
