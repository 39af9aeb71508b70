//! Turning MCP content into what Signet works with: a tool result or a resource's contents into
//! the JSON value a Signet tool returns, a prompt into chat messages.
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
//! A resource's contents follow the same rule ([`resource_value`]), and a prompt's messages become
//! Signet [`Message`]s ([`prompt_messages`]).

use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, ResourceContents, Role as McpRole,
};
use serde_json::Value;
use signet::lm::{Message, Role};

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

/// The value of a resource's contents: one text item is that text; otherwise a list with text
/// items as strings and binary items as `{"uri": .., "mimeType": .., "blob": <base64>}`.
///
/// ```
/// use rmcp::model::ResourceContents;
/// use serde_json::json;
/// use signet_mcp::content::resource_value;
///
/// let text = ResourceContents::text("hello", "demo://greeting");
/// assert_eq!(resource_value(&[text]), json!("hello"));
/// ```
pub fn resource_value(contents: &[ResourceContents]) -> Value {
    match contents {
        [ResourceContents::TextResourceContents { text, .. }] => Value::String(text.clone()),
        several => Value::Array(several.iter().map(resource_item).collect()),
    }
}

fn resource_item(item: &ResourceContents) -> Value {
    match item {
        ResourceContents::TextResourceContents { text, .. } => Value::String(text.clone()),
        other => {
            let mut value = serde_json::to_value(other).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.remove("_meta");
            }
            value
        }
    }
}

/// A prompt's messages as Signet chat messages: text as it is, an embedded text resource as its
/// text, anything else (an image, a binary resource, a resource link) as its typed MCP JSON.
///
/// ```
/// use rmcp::model::{GetPromptResult, PromptMessage};
/// use signet::lm::{Message, Role};
///
/// let prompt = GetPromptResult::new(vec![PromptMessage::new_text(
///     rmcp::model::Role::User,
///     "What is the weather in Paris?",
/// )]);
/// assert_eq!(
///     signet_mcp::content::prompt_messages(&prompt),
///     [Message::new(Role::User, "What is the weather in Paris?")]
/// );
/// ```
pub fn prompt_messages(prompt: &GetPromptResult) -> Vec<Message> {
    prompt
        .messages
        .iter()
        .map(|message| {
            let role = match message.role {
                McpRole::User => Role::User,
                McpRole::Assistant => Role::Assistant,
            };
            let text = match &message.content {
                ContentBlock::Text(text) => text.text.clone(),
                ContentBlock::Resource(embedded) => match &embedded.resource {
                    ResourceContents::TextResourceContents { text, .. } => text.clone(),
                    other => resource_item(other).to_string(),
                },
                other => block_value(other).to_string(),
            };
            Message::new(role, text)
        })
        .collect()
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
