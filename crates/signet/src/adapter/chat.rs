//! The Chat format: fields marked `[[ ## name ## ]]`, as DSPy's `ChatAdapter`.

use serde_json::Map;

use super::{Adapter, AdapterName, Fields, ParseError, templates, value};
use crate::lm::Message;
use crate::python::{splitlines, strip};
use crate::signature::DynSignature;

/// DSPy's `ChatAdapter`: a system message describing the fields and the `[[ ## field ## ]]`
/// structure, demos as user/assistant pairs, and a user message that lists the inputs and reminds
/// the model of the output order. Replies are split at the field markers.
///
/// On a reply it cannot parse, the call falls back once to [`JsonAdapter`](super::JsonAdapter)
/// (disable with [`without_json_fallback`](ChatAdapter::without_json_fallback)); the fallback is
/// logged and counted in [`Usage::adapter_fallbacks`](crate::lm::Usage::adapter_fallbacks).
///
/// ```
/// use signet::adapter::{Adapter, ChatAdapter};
/// let sig = signet::DynSignature::parse("question -> answer").unwrap();
/// let parsed = ChatAdapter::new().parse(&sig, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]").unwrap();
/// assert_eq!(parsed["answer"], "Paris");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ChatAdapter {
    pub(crate) json_fallback: bool,
    pub(crate) native_function_calling: bool,
    pub(crate) parallel_tool_calls: Option<bool>,
}

impl Default for ChatAdapter {
    fn default() -> Self {
        ChatAdapter::new()
    }
}

impl ChatAdapter {
    /// The Chat adapter with JSON fallback on, native function calling off.
    pub fn new() -> ChatAdapter {
        ChatAdapter {
            json_fallback: true,
            native_function_calling: false,
            parallel_tool_calls: None,
        }
    }

    /// Fail on an unparseable reply instead of retrying once in the JSON format.
    pub fn without_json_fallback(mut self) -> Self {
        self.json_fallback = false;
        self
    }

    crate::shared::setters! {
        /// Send tools as native `tools=` for signatures with a tool-calls output (when the LM supports
        /// function calling), and read tool calls from the response.
        fn with_native_function_calling(on: bool) { native_function_calling = on }

        /// Sends `parallel_tool_calls` (and `tool_choice: auto`) with native tools, as DSPy's
        /// `parallel_tool_calls` adapter argument does; `None` (the default) sends neither. ReAct's
        /// native loop and `Predict` with tools send it too: `false` asks for one call a reply
        /// (unset, they ask for concurrent calls).
        ///
        /// ```
        /// use signet::adapter::{Adapter, ChatAdapter};
        /// let adapter = ChatAdapter::new().with_parallel_tool_calls(false);
        /// assert_eq!(adapter.parallel_tool_calls(), Some(false));
        /// ```
        fn with_parallel_tool_calls(parallel: impl Into<Option<bool>>) {
            parallel_tool_calls = parallel.into()
        }
    }
}

impl Adapter for ChatAdapter {
    fn name(&self) -> AdapterName {
        AdapterName::Chat
    }

    fn marks_fields(&self) -> bool {
        true
    }

    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message> {
        super::format_messages(
            &templates::CHAT_FORMAT,
            signature,
            demos,
            inputs,
            self.native_function_calling,
        )
    }

    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        // The reply's lines, borrowed; each section is a marker's name, the text after the
        // marker on its line, and the lines up to the next marker (a range of `lines`).
        let lines = splitlines(text);
        let mut sections: Vec<Section<'_>> = Vec::with_capacity(signature.outputs().len() + 1);
        for (index, line) in lines.iter().enumerate() {
            let Some((name, marker_len)) = header(strip(line)) else {
                continue;
            };
            if let Some(last) = sections.last_mut() {
                last.lines.end = index;
            }
            // DSPy slices the unstripped line at the end of the marker found in the stripped
            // line; leading whitespace therefore leaks marker characters into the value. Kept
            // as is for parity.
            let cut = (line.char_indices().nth(marker_len)).map_or(line.len(), |(i, _)| i);
            let rest = strip(&line[cut..]);
            sections.push(Section {
                name,
                rest: (!rest.is_empty()).then_some(rest),
                lines: index + 1..lines.len(),
            });
        }
        let mut fields = Map::new();
        for section in sections {
            let name = section.name;
            if fields.contains_key(name) {
                continue;
            }
            let Some(field) = signature.outputs().iter().find(|f| f.name() == name) else {
                continue;
            };
            let joined;
            let raw = match (section.rest, &lines[section.lines]) {
                (Some(line), []) | (None, &[line]) => strip(line),
                (rest, more) => {
                    joined = join_lines(rest.into_iter().chain(more.iter().copied()));
                    strip(&joined)
                }
            };
            let parsed =
                value::parse_text(field, raw).map_err(|reason| ParseError::InvalidField {
                    adapter: self.name(),
                    field: name.to_owned(),
                    value: raw.to_owned(),
                    expected: field.type_name().to_owned(),
                    reason: reason.to_string(),
                })?;
            fields.insert(name.to_owned(), parsed);
        }
        super::check_complete(self.name(), signature, fields, text)
    }

    fn fallback(&self, _: &DynSignature, _: &Fields) -> Option<Box<dyn Adapter>> {
        self.json_fallback.then(|| {
            super::JsonAdapter::fallback_for(self.native_function_calling, self.parallel_tool_calls)
        })
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
}

/// One marker's part of a reply (see [`ChatAdapter::parse`]).
struct Section<'a> {
    /// The field's name, as the marker gives it.
    name: &'a str,
    /// What follows the marker on its own line, when anything does.
    rest: Option<&'a str>,
    /// The lines after the marker's, up to the next marker (indices into the reply's lines).
    lines: std::ops::Range<usize>,
}

/// `lines` joined with `\n` between them.
fn join_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut text = String::new();
    for (i, line) in lines.enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(line);
    }
    text
}

/// `[[ ## name ## ]]` at the start of `line`: the name and the marker's length in characters.
fn header(line: &str) -> Option<(&str, usize)> {
    let rest = line.strip_prefix("[[ ## ")?;
    let name_len: usize = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .map(char::len_utf8)
        .sum();
    if name_len == 0 {
        return None;
    }
    let (name, after) = rest.split_at(name_len);
    after.strip_prefix(" ## ]]")?;
    Some((name, 6 + name.chars().count() + 6))
}

/// The value of a `str` field rendered for parsing tests.
#[cfg(test)]
fn parse_one(text: &str) -> Result<Fields, ParseError> {
    let sig = DynSignature::parse("question -> answer, count: int").unwrap();
    ChatAdapter::new().parse(&sig, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A signature with tools in and tool calls out (DSPy's `list[dspy.Tool]` / `dspy.ToolCalls`).
    fn tool_signature() -> DynSignature {
        use crate::adapter::{ToolCalls, Tools};
        use crate::signature::Field;
        DynSignature::new("ToolSig")
            .with_instructions("Use the tools.")
            .with_input(Field::str("question"))
            .with_input(Field::of::<Tools>("tools"))
            .with_output(Field::str("answer"))
            .with_output(Field::of::<ToolCalls>("tool_calls"))
    }

    fn add_tool() -> Value {
        json!({"type": "function", "function": {"name": "add", "description": "Add two integers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}}})
    }

    #[test]
    fn a_missing_optional_output_is_none() {
        let sig = DynSignature::parse("q -> answer, maybe: Optional[int]").unwrap();
        let parsed = ChatAdapter::new()
            .parse(&sig, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]")
            .unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"answer": "Paris", "maybe": null})
        );
    }

    #[test]
    fn tools_and_tool_calls_in_the_prompt_as_dspy_writes_them() {
        let inputs: Fields = json!({"question": "2 + 3?", "tools": [add_tool()]})
            .as_object()
            .cloned()
            .unwrap();
        let messages = ChatAdapter::new().format(&tool_signature(), &[], &inputs);
        // The type description of `ToolCalls` on its own line; the field's line keeps its space.
        assert!(messages[0].content.contains(
            "2. `tool_calls` (ToolCalls): \n    Type description of ToolCalls: Tool calls must be a JSON \
             object with `tool_calls`, a list of calls. Each call must include `name` and `args`. \
             Example: {\"tool_calls\": [{\"name\": \"search\", \"args\": {\"query\": \"cats\"}}]}\n"
        ));
        // Tools are listed as DSPy's `str(tool)`, in a JSON list.
        assert!(messages[1].content.contains(
            "[[ ## tools ## ]]\n[\"add, whose description is <desc>Add two integers.</desc>. It takes \
             arguments {'a': {'type': 'integer'}, 'b': {'type': 'integer'}}.\"]"
        ));
        assert!(messages[1].content.contains(
            "`[[ ## tool_calls ## ]]` (must be a JSON object like {\"tool_calls\": [{\"name\": \"...\", \
             \"args\": {...}}]})"
        ));
    }

    #[test]
    fn tool_calls_written_as_text_have_a_null_id() {
        let parsed = ChatAdapter::new()
            .parse(
                &tool_signature(),
                "[[ ## answer ## ]]\nx\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"add\", \
                 \"args\": {\"a\": 1}}]}",
            )
            .unwrap();
        assert_eq!(
            serde_json::to_string(&parsed["tool_calls"]).unwrap(),
            r#"{"tool_calls":[{"id":null,"name":"add","args":{"a":1}}]}"#
        );
    }

    #[test]
    fn the_json_fallback_keeps_the_function_calling_settings() {
        let chat = ChatAdapter::new()
            .with_native_function_calling(true)
            .with_parallel_tool_calls(false);
        let fallback = chat
            .fallback(&DynSignature::parse("q -> a").unwrap(), &Fields::new())
            .unwrap();
        assert_eq!(fallback.name(), AdapterName::Json);
        assert!(fallback.native_function_calling());
        assert_eq!(fallback.parallel_tool_calls(), Some(false));
        // A Chat adapter without native calling falls back to a JSON adapter without it too.
        assert!(
            !ChatAdapter::new()
                .fallback(&DynSignature::parse("q -> a").unwrap(), &Fields::new())
                .unwrap()
                .native_function_calling()
        );
    }

    #[test]
    fn parses_markers_in_any_order_and_ignores_unknown_ones() {
        let parsed =
            parse_one("[[ ## note ## ]]\nx\n[[ ## count ## ]]\n3\n\n[[ ## answer ## ]]\nParis")
                .unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"count": 3, "answer": "Paris"})
        );
    }

    #[test]
    fn first_occurrence_wins() {
        let parsed =
            parse_one("[[ ## answer ## ]] Paris\n[[ ## count ## ]] 3\n[[ ## answer ## ]]\nLyon")
                .unwrap();
        assert_eq!(parsed["answer"], "Paris");
    }

    #[test]
    fn missing_and_ill_typed_fields_are_errors() {
        assert!(matches!(
            parse_one("Paris has 3"),
            Err(ParseError::MissingFields { .. })
        ));
        let err = parse_one("[[ ## answer ## ]]\nParis\n[[ ## count ## ]]\nthree").unwrap_err();
        assert!(
            matches!(&err, ParseError::InvalidField { field, .. } if field == "count"),
            "{err}"
        );
    }

    #[test]
    fn indented_markers_behave_like_dspy() {
        let parsed = parse_one(" [[ ## answer ## ]]\nParis\n\n[[ ## count ## ]]\n3").unwrap();
        assert_eq!(parsed["answer"], "]\nParis");
    }
}
