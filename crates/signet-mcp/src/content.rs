//! Turning an MCP tool result into the JSON value a Signet tool returns.
//!
//! The rule follows DSPy's MCP bridge, keeping what DSPy drops:
//!
//! | the result's `content` | the value |
//! |---|---|
//! | one text item | that text, a string |
//! | one text item that is exactly the JSON of `structuredContent` | `structuredContent` (typed, lossless) |
//! | one non-text item (image, audio, resource, resource link) | that item as typed JSON: `{"type": "image", "mimeType": .., "data": ..}` |
//! | several items | a list: text items as strings, the others as typed JSON, in order |
//! | no items | `structuredContent` when present, else `[]` (as DSPy) |
//!
//! An `isError` result is not a value: [`error_text`] gives the message the tool error carries.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The value of a successful MCP tool result (see the [module docs](self) for the rule).
///
/// ```
/// use rmcp::model::{CallToolResult, ContentBlock};
/// use serde_json::json;
/// use signet_mcp::content::result_value;
///
/// let one = CallToolResult::success(vec![ContentBlock::text("Echo: hi")]);
/// assert_eq!(result_value(&one), json!("Echo: hi"));
///
/// let mixed = CallToolResult::success(vec![
///     ContentBlock::text("Here it is:"),
///     ContentBlock::image("iVBORw0KGgo=", "image/png"),
/// ]);
/// assert_eq!(
///     result_value(&mixed),
///     json!(["Here it is:", {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}])
/// );
/// ```
pub fn result_value(result: &CallToolResult) -> Value {
    let structured = result.structured_content.as_ref().filter(|v| !v.is_null());
    match result.content.as_slice() {
        [] => structured
            .cloned()
            .unwrap_or_else(|| Value::Array(Vec::new())),
        [ContentBlock::Text(text)] => match structured {
            Some(value)
                if serde_json::from_str::<Value>(&text.text).ok().as_ref() == Some(value) =>
            {
                value.clone()
            }
            _ => Value::String(text.text.clone()),
        },
        [only] => block_value(only),
        several => Value::Array(several.iter().map(block_value).collect()),
    }
}

/// The message of an `isError` result: its text items joined by newlines (or the content as JSON
/// when it has no text).
///
/// ```
/// use rmcp::model::{CallToolResult, ContentBlock};
/// let failed = CallToolResult::error(vec![ContentBlock::text("file not found")]);
/// assert_eq!(signet_mcp::content::error_text(&failed), "file not found");
/// ```
pub fn error_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    match (&result.structured_content, result.content.is_empty()) {
        (Some(value), true) => value.to_string(),
        (_, true) => "the server reported an error without a message".to_owned(),
        _ => Value::Array(result.content.iter().map(block_value).collect()).to_string(),
    }
}

/// One content item: text as a string, anything else as its typed MCP JSON (without `_meta`).
fn block_value(block: &ContentBlock) -> Value {
    if let ContentBlock::Text(text) = block {
        return Value::String(text.text.clone());
    }
    let mut value = serde_json::to_value(block).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("_meta");
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_content_is_used_when_the_text_is_its_json() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{\"a\": 1}")]);
        result.structured_content = Some(json!({"a": 1}));
        assert_eq!(result_value(&result), json!({"a": 1}));

        // Python's MCP SDK wraps non-object results: the text is what the model should see.
        let mut wrapped = CallToolResult::success(vec![ContentBlock::text("5")]);
        wrapped.structured_content = Some(json!({"result": 5}));
        assert_eq!(result_value(&wrapped), json!("5"));
    }

    #[test]
    fn empty_content_is_an_empty_list_or_the_structured_value() {
        let mut result = CallToolResult::success(vec![]);
        assert_eq!(result_value(&result), json!([]));
        result.structured_content = Some(json!({"ok": true}));
        assert_eq!(result_value(&result), json!({"ok": true}));
    }

    #[test]
    fn a_single_image_is_typed_content() {
        let result = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        assert_eq!(
            result_value(&result),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        );
    }

    #[test]
    fn error_text_joins_text_items() {
        let result = CallToolResult::error(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(error_text(&result), "a\nb");
        assert_eq!(
            error_text(&CallToolResult::error(vec![])),
            "the server reported an error without a message"
        );
    }
}
