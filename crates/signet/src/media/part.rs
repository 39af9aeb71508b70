//! One part of a message's content (text, an image, audio) and the media a field value holds.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

use super::{Audio, DSPY_END, DSPY_START, Image, MediaError, excerpt};

/// One part of a message's content, in OpenAI's shape: text, an image (`image_url`) or audio
/// (`input_audio`).
///
/// ```
/// use serde_json::json;
/// use signet::media::{ContentPart, Image};
/// let part = ContentPart::Image(Image::from_url("https://example.com/a.png").unwrap());
/// assert_eq!(serde_json::to_value(&part).unwrap(),
///     json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentPart {
    /// Text.
    Text(String),
    /// An image.
    Image(Image),
    /// Audio.
    Audio(Audio),
}

impl ContentPart {
    /// The part in OpenAI's shape.
    pub fn to_value(&self) -> Value {
        match self {
            ContentPart::Text(text) => json!({"type": "text", "text": text}),
            ContentPart::Image(image) => {
                json!({"type": "image_url", "image_url": {"url": image.url}})
            }
            ContentPart::Audio(audio) => json!({"type": "input_audio",
                "input_audio": {"data": audio.data, "format": audio.format}}),
        }
    }

    /// A part read from OpenAI's shape (what [`to_value`](Self::to_value) writes).
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::media::ContentPart;
    /// let part = ContentPart::from_value(&json!({"type": "input_audio",
    ///     "input_audio": {"data": "UklGRg==", "format": "wav"}})).unwrap();
    /// assert!(matches!(part, ContentPart::Audio(_)));
    /// assert!(ContentPart::from_value(&json!({"type": "video"})).is_err());
    /// ```
    pub fn from_value(value: &Value) -> Result<ContentPart, MediaError> {
        let str_at = |path: &[&str]| {
            path.iter()
                .try_fold(value, |v, key| v.get(key))
                .and_then(Value::as_str)
        };
        match value.get("type").and_then(Value::as_str) {
            Some("text") => str_at(&["text"])
                .map(|t| ContentPart::Text(t.to_owned()))
                .ok_or_else(|| MediaError::Value("a text part without `text`".into())),
            Some("image_url") => {
                let url = str_at(&["image_url", "url"])
                    .ok_or_else(|| MediaError::Value("an image part without a url".into()))?;
                Image::from_url(url).map(ContentPart::Image)
            }
            Some("input_audio") => {
                let (Some(data), Some(format)) = (
                    str_at(&["input_audio", "data"]),
                    str_at(&["input_audio", "format"]),
                ) else {
                    return Err(MediaError::Value(
                        "an audio part without `data` and `format`".into(),
                    ));
                };
                Audio::from_base64(data, format).map(ContentPart::Audio)
            }
            _ => Err(MediaError::Value(format!(
                "not a content part (text, image_url or input_audio): {}",
                excerpt(&value.to_string())
            ))),
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentPart::Text(text) => Some(text),
            _ => None,
        }
    }

    /// Roughly how many bytes the part puts on the wire.
    pub(crate) fn wire_len(&self) -> usize {
        match self {
            ContentPart::Text(text) => text.len(),
            ContentPart::Image(image) => image.url.len(),
            ContentPart::Audio(audio) => audio.data.len() + audio.format.len(),
        }
    }
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ContentPart::from_value(&Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// The content parts of one image or audio value, in any form a media field accepts: an object
/// (`{"url"}` for an image, `{"data", "audio_format"}` for audio), a URL or data URI, or DSPy's
/// marked text.
///
/// ```
/// use serde_json::json;
/// use signet::media::{ContentPart, media_parts};
/// let parts = media_parts(&json!("https://example.com/a.png")).unwrap();
/// assert!(matches!(parts[..], [ContentPart::Image(_)]));
/// assert!(media_parts(&json!(42)).is_err());
/// ```
pub fn media_parts(value: &Value) -> Result<Vec<ContentPart>, MediaError> {
    match value {
        Value::Object(map) if map.contains_key("url") => {
            let url = map["url"].as_str().ok_or_else(|| {
                MediaError::Value(format!(
                    "an image's `url` must be a string, not {}",
                    excerpt(&map["url"].to_string())
                ))
            })?;
            Ok(vec![ContentPart::Image(Image::from_url(url)?)])
        }
        Value::Object(map) if map.contains_key("data") => {
            let (Some(data), Some(format)) = (
                map["data"].as_str(),
                map.get("audio_format").and_then(Value::as_str),
            ) else {
                return Err(MediaError::Value(
                    "audio needs string `data` and `audio_format`".into(),
                ));
            };
            Ok(vec![ContentPart::Audio(Audio::from_base64(data, format)?)])
        }
        Value::String(text) => {
            let trimmed = text.trim();
            if let Some(marked) = trimmed
                .strip_prefix(DSPY_START)
                .and_then(|rest| rest.strip_suffix(DSPY_END))
            {
                return dspy_marked(marked);
            }
            if trimmed.starts_with("data:audio/") {
                return Ok(vec![ContentPart::Audio(Audio::from_data_uri(trimmed)?)]);
            }
            Ok(vec![ContentPart::Image(Image::from_url(trimmed)?)])
        }
        other => Err(MediaError::Value(format!(
            "expected an image (`{{\"url\": ...}}`, a URL or a data URI) or audio \
             (`{{\"data\": ..., \"audio_format\": ...}}`), not {}",
            excerpt(&other.to_string())
        ))),
    }
}

/// A media field's value as DSPy's `program.save()` writes it: each image or audio as its content
/// parts between DSPy's markers (a list item by item; `null` and values holding no media as they
/// are), so that a saved program loads in DSPy with its image demos.
pub(crate) fn dspy_saved(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(dspy_saved).collect()),
        Value::Null => Value::Null,
        other => match media_parts(other) {
            Ok(parts) => {
                let parts = Value::Array(parts.iter().map(ContentPart::to_value).collect());
                let dumped = crate::python::json_dumps(&parts, None);
                Value::String(format!("{DSPY_START}{dumped}{DSPY_END}"))
            }
            Err(_) => other.clone(),
        },
    }
}

/// The parts inside DSPy's markers: a JSON list of content parts.
fn dspy_marked(payload: &str) -> Result<Vec<ContentPart>, MediaError> {
    let parts: Vec<Value> = serde_json::from_str(payload.trim()).map_err(|error| {
        MediaError::Value(format!("DSPy's marked content is not a JSON list: {error}"))
    })?;
    let parts: Vec<ContentPart> = parts
        .iter()
        .map(ContentPart::from_value)
        .collect::<Result<_, _>>()?;
    if parts.is_empty() {
        return Err(MediaError::Value("DSPy's marked content is empty".into()));
    }
    Ok(parts)
}
