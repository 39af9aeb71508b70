//! A message's content: text, or text with images and audio in between.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::media::ContentPart;
use crate::shared::SharedText;

/// What a [`Message`](super::Message) says: text, or content parts (text, images, audio) in the
/// order the model reads them. It dereferences to its text — the text parts joined, without the
/// media — so it reads like a `&str`; [`parts`](Self::parts) gives everything.
/// Serialized in OpenAI's shape: a string, or a list of parts when there is an image or audio.
///
/// ```
/// use signet::lm::Content;
/// use signet::media::{ContentPart, Image};
/// let text = Content::from("Hello");
/// assert_eq!(text, "Hello");
/// assert!(!text.has_media());
///
/// let image = Image::from_url("https://example.com/a.png").unwrap();
/// let content = Content::from_parts(vec![
///     ContentPart::Text("Look: ".into()),
///     ContentPart::Image(image),
///     ContentPart::Text(" What is it?".into()),
/// ]);
/// assert_eq!(content.as_str(), "Look:  What is it?");
/// assert_ne!(content, "Look:  What is it?"); // equal to a text only when it is text alone
/// assert_eq!(content.parts().len(), 3);
/// assert!(serde_json::to_value(&content).unwrap().is_array());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Content {
    /// The text parts, joined.
    text: Text,
    /// Every part, when there is an image or audio among them; empty for text alone.
    parts: Vec<ContentPart>,
}

/// A content's text: its own, or one shared with other messages (a system prompt rendered once
/// for every call, `From<Arc<str>>`), copied only if it is changed. Compares, hashes and prints as
/// the text.
#[derive(Clone)]
enum Text {
    Owned(String),
    Shared(Arc<str>),
    /// A prompt rendered once, with its JSON string kept (see [`Content::raw_json`]).
    Prompt(Arc<SharedText>),
}

impl Text {
    fn as_str(&self) -> &str {
        match self {
            Text::Owned(text) => text,
            Text::Shared(text) => text,
            Text::Prompt(text) => text.as_str(),
        }
    }

    fn push_str(&mut self, more: &str) {
        match self {
            Text::Owned(text) => text.push_str(more),
            Text::Shared(_) | Text::Prompt(_) => {
                *self = Text::Owned([self.as_str(), more].concat())
            }
        }
    }
}

impl Default for Text {
    fn default() -> Text {
        Text::Owned(String::new())
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Content {
    /// A text rendered once for many requests (a predictor's system prompt): shared, and
    /// escaped as JSON once ([`raw_json`](Self::raw_json)).
    pub(crate) fn prompt(text: Arc<SharedText>) -> Content {
        Content {
            text: Text::Prompt(text),
            parts: Vec::new(),
        }
    }

    /// The text as a JSON string written beforehand, when it is a prompt rendered once.
    #[cfg(feature = "openai")]
    pub(crate) fn raw_json(&self) -> Option<&serde_json::value::RawValue> {
        match &self.text {
            Text::Prompt(text) if self.parts.is_empty() => text.json(),
            _ => None,
        }
    }

    /// Content made of `parts`. Parts that are all text make plain text.
    pub fn from_parts(parts: Vec<ContentPart>) -> Content {
        let text: String = parts.iter().filter_map(ContentPart::as_text).collect();
        let media = parts.iter().any(|p| p.as_text().is_none());
        Content {
            text: Text::Owned(text),
            parts: if media { parts } else { Vec::new() },
        }
    }

    /// The text: the text parts joined, without the media.
    pub fn as_str(&self) -> &str {
        self.text.as_str()
    }

    /// Every part in order (one text part for plain text).
    pub fn parts(&self) -> std::borrow::Cow<'_, [ContentPart]> {
        if self.parts.is_empty() {
            std::borrow::Cow::Owned(vec![ContentPart::Text(self.as_str().to_owned())])
        } else {
            std::borrow::Cow::Borrowed(&self.parts)
        }
    }

    /// The images and audio, in order.
    pub fn media(&self) -> impl Iterator<Item = &ContentPart> {
        self.parts.iter().filter(|p| p.as_text().is_none())
    }

    /// Whether there is an image or audio.
    pub fn has_media(&self) -> bool {
        !self.parts.is_empty()
    }

    /// Appends text (to the last text part, or as a new one after an image or audio).
    pub fn push_str(&mut self, text: &str) {
        self.text.push_str(text);
        if self.parts.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(ContentPart::Text(last)) => last.push_str(text),
            _ => self.parts.push(ContentPart::Text(text.to_owned())),
        }
    }

    /// Roughly how many bytes the content puts on the wire (the text, and each medium's URL or
    /// data).
    pub fn wire_len(&self) -> usize {
        self.as_str().len() + self.media().map(ContentPart::wire_len).sum::<usize>()
    }

    /// The content in OpenAI's shape: a string, or a list of parts.
    pub fn to_value(&self) -> Value {
        if self.parts.is_empty() {
            Value::String(self.as_str().to_owned())
        } else {
            Value::Array(self.parts.iter().map(ContentPart::to_value).collect())
        }
    }
}

impl Deref for Content {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Content {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content {
            text: Text::Owned(text),
            parts: Vec::new(),
        }
    }
}

/// Text shared with other contents, not copied: every request of a predictor can carry its
/// system prompt, rendered once.
///
/// ```
/// use std::sync::Arc;
/// use signet::lm::Content;
/// let prompt: Arc<str> = Arc::from("You are a careful assistant.");
/// let content = Content::from(prompt.clone());
/// assert_eq!(content, "You are a careful assistant.");
/// assert_eq!(Arc::strong_count(&prompt), 2);
/// ```
impl From<Arc<str>> for Content {
    fn from(text: Arc<str>) -> Content {
        Content {
            text: Text::Shared(text),
            parts: Vec::new(),
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::from(text.to_owned())
    }
}

impl From<&String> for Content {
    fn from(text: &String) -> Content {
        Content::from(text.clone())
    }
}

impl From<Vec<ContentPart>> for Content {
    fn from(parts: Vec<ContentPart>) -> Content {
        Content::from_parts(parts)
    }
}

impl PartialEq<str> for Content {
    fn eq(&self, other: &str) -> bool {
        self.parts.is_empty() && self.as_str() == other
    }
}

impl PartialEq<&str> for Content {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialEq<String> for Content {
    fn eq(&self, other: &String) -> bool {
        *self == *other.as_str()
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.parts.is_empty() {
            serializer.serialize_str(self.as_str())
        } else {
            self.parts.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Content::from(text)),
            Value::Null => Ok(Content::default()),
            Value::Array(parts) => parts
                .iter()
                .map(ContentPart::from_value)
                .collect::<Result<Vec<_>, _>>()
                .map(Content::from_parts)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "a message's content is a string or a list of parts, not {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::Image;
    use serde_json::json;

    #[test]
    fn content_round_trips_in_openai_shape() {
        let image = Image::from_url("https://example.com/a.png").unwrap();
        let content = Content::from_parts(vec![
            ContentPart::Text("a".into()),
            ContentPart::Image(image),
        ]);
        let value = serde_json::to_value(&content).unwrap();
        assert_eq!(
            value,
            json!([{"type": "text", "text": "a"},
                   {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
        );
        assert_eq!(serde_json::from_value::<Content>(value).unwrap(), content);
        assert_eq!(
            serde_json::from_value::<Content>(json!("hi")).unwrap(),
            "hi"
        );
        assert!(serde_json::from_value::<Content>(json!([{"type": "video"}])).is_err());
        assert!(serde_json::from_value::<Content>(json!(3)).is_err());
    }

    #[test]
    fn pushed_text_follows_the_last_part() {
        let image = Image::from_url("https://example.com/a.png").unwrap();
        let mut content = Content::from_parts(vec![ContentPart::Image(image)]);
        content.push_str("after");
        assert_eq!(content.as_str(), "after");
        assert_eq!(content.parts().len(), 2);
        let mut plain = Content::from("a");
        plain.push_str("b");
        assert_eq!(plain, "ab");
        // Shared text is copied when changed; the other holders keep theirs.
        let shared: Arc<str> = Arc::from("sys");
        let mut system = Content::from(shared.clone());
        assert_eq!(system, Content::from("sys"));
        system.push_str(" more");
        assert_eq!(system, "sys more");
        assert_eq!(&*shared, "sys");
    }
}
