//! Images and audio a tool returns: recognised when held inline, never from a URL.

use serde_json::Value;

use super::{Audio, ContentPart, Image};

/// The image or audio a tool returned, when its output (or an item of a list it returned) is one
/// held inline: an [`Image`] or [`Audio`] as they serialize (`{"url": "data:image/..."}`,
/// `{"data", "audio_format"}`), or MCP image or audio content (`{"type": "image", "data",
/// "mimeType"}`). An image *URL* a tool returns is not one: it stays text, so data a tool passes
/// on (a web page, an API's JSON) cannot make the provider fetch an address it names.
///
/// ```
/// use serde_json::json;
/// use signet::media::{ContentPart, tool_media};
/// let mcp = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
/// assert!(matches!(tool_media(&mcp), Some(ContentPart::Image(_))));
/// assert!(tool_media(&json!({"url": "https://example.com/a.png"})).is_none());
/// assert!(tool_media(&json!({"url": "data:image/png;base64,iVBORw0KGgo=", "title": "x"})).is_none());
/// ```
pub fn tool_media(value: &Value) -> Option<ContentPart> {
    let map = value.as_object()?;
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    match keys.as_slice() {
        ["url"] => {
            let url = text("url")?;
            (url.starts_with("data:"))
                .then(|| Image::from_url(url).ok().map(ContentPart::Image))
                .flatten()
        }
        ["data", "audio_format"] | ["audio_format", "data"] => {
            Audio::from_base64(text("data")?, text("audio_format")?)
                .ok()
                .map(ContentPart::Audio)
        }
        _ => {
            let (data, mime) = (text("data")?, text("mimeType")?);
            match (text("type")?, mime.split_once('/')?) {
                ("image", ("image", _)) => Image::from_url(format!("data:{mime};base64,{data}"))
                    .ok()
                    .map(ContentPart::Image),
                ("audio", ("audio", format)) => Audio::from_base64(data, format)
                    .ok()
                    .map(ContentPart::Audio),
                _ => None,
            }
        }
    }
}

/// A tool's output with each image or audio in it ([`tool_media`]: the output itself, or items
/// of a list) replaced by what `with` makes of it; `None` when there is none.
pub(crate) fn replace_tool_media(
    value: &Value,
    with: &mut dyn FnMut(ContentPart) -> Value,
) -> Option<Value> {
    if let Some(part) = tool_media(value) {
        return Some(with(part));
    }
    let items = value.as_array()?;
    let mut found = false;
    let replaced = items
        .iter()
        .map(|item| match tool_media(item) {
            Some(part) => {
                found = true;
                with(part)
            }
            None => item.clone(),
        })
        .collect();
    found.then_some(Value::Array(replaced))
}

/// What stands for an image or audio in text: `[image]`, `[audio]`.
pub(crate) fn placeholder(part: &ContentPart) -> &'static str {
    match part {
        ContentPart::Audio(_) => "[audio]",
        _ => "[image]",
    }
}
