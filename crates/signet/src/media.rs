//! Images and audio as field values (DSPy's `dspy.Image` and `dspy.Audio`), and the content parts
//! a message carries them in.
//!
//! A field typed [`Image`] or [`Audio`] (or a `Vec` or `Option` of one) is sent to the model as
//! a content part of the user message, where DSPy puts it: between the text before and after the
//! field's value, in demos and conversation history as in the current request. Nothing here
//! downloads anything: a URL is sent as it is and the provider fetches it; a file or bytes are
//! sent inline as a base64 data URI.
//!
//! ```
//! use signet::media::{Audio, Image};
//! let photo = Image::from_url("https://example.com/cat.png").unwrap();
//! assert_eq!(photo.url(), "https://example.com/cat.png");
//! let png = Image::from_bytes(b"\x89PNG\r\n\x1a\n....").unwrap();
//! assert_eq!(png.mime_type(), Some("image/png"));
//! let clip = Audio::from_bytes(b"RIFF....WAVE", "wav");
//! assert_eq!(clip.format(), "wav");
//! assert!(Image::from_url("cat.png").is_err()); // a local file is read with Image::from_path
//! ```

mod address;
mod part;
mod tool_output;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

pub use address::allow_private_urls;
pub(crate) use part::dspy_saved;
pub use part::{ContentPart, media_parts};
pub use tool_output::tool_media;
pub(crate) use tool_output::{placeholder, replace_tool_media};

/// DSPy's markers around a custom type's content parts in a serialized value
/// (`dspy.Type.serialize_model`): how a DSPy program saves an image demo.
pub(crate) const DSPY_START: &str = "<<CUSTOM-TYPE-START-IDENTIFIER>>";
pub(crate) const DSPY_END: &str = "<<CUSTOM-TYPE-END-IDENTIFIER>>";

/// Longest excerpt of a rejected value quoted in an error.
const EXCERPT: usize = 80;

/// Why an image or audio value was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MediaError {
    /// The text is neither an http(s) or gs URL nor a data URI.
    #[error(
        "`{0}` is not an image source: give an http(s) or gs URL or a data URI \
         (`data:image/png;base64,...`); read a local file with `Image::from_path`"
    )]
    NotASource(String),
    /// A data URI that does not say `data:<type>;base64,<data>` with valid base64.
    #[error("malformed data URI `{uri}`: {reason}")]
    DataUri {
        /// The start of the URI.
        uri: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The MIME type is not of the expected kind (`image/...` for an image, `audio/...` for audio).
    #[error("`{mime}` is not an {expected} type")]
    WrongType {
        /// The MIME type given or guessed.
        mime: String,
        /// `image/*` or `audio/*`.
        expected: &'static str,
    },
    /// The bytes start like none of the image formats recognised (PNG, JPEG, GIF, WebP, BMP).
    #[error(
        "the bytes are not a PNG, JPEG, GIF, WebP or BMP image; give the type with \
         `Image::from_bytes_with_type`"
    )]
    UnknownImageBytes,
    /// A file's type cannot be told from its extension.
    #[error("cannot tell the type of `{}` from its extension", path.display())]
    UnknownExtension {
        /// The file.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("cannot read `{}`: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The kind of failure (not found, permission denied, ...).
        kind: std::io::ErrorKind,
        /// What the system said.
        message: String,
    },
    /// A JSON value that holds no image or audio.
    #[error("{0}")]
    Value(String),
    /// An image URL that names this machine or a private or link-local network: the server that
    /// fetches it would fetch from inside its own network ([`allow_private_urls`] allows it).
    #[error(
        "`{url}` names {reason}: the server that fetches images would fetch it from inside its \
         own network; signet::media::allow_private_urls(true) allows such URLs"
    )]
    PrivateAddress {
        /// The start of the URL.
        url: String,
        /// What it names.
        reason: &'static str,
    },
}

/// An image given to the model (DSPy's `dspy.Image`): an http(s) or gs URL the provider fetches,
/// or the image itself inline as a base64 data URI. Serialized as DSPy's pydantic model is
/// (`{"url": ...}`); read from that, from a bare URL or data URI, or from the marked text a DSPy
/// program saves.
///
/// ```
/// use signet::media::Image;
/// let inline = Image::from_bytes_with_type(b"GIF89a....", "image/gif").unwrap();
/// assert!(inline.url().starts_with("data:image/gif;base64,"));
/// let read: Image = serde_json::from_value(serde_json::json!({"url": "https://example.com/a.jpg"})).unwrap();
/// assert_eq!(serde_json::to_value(&read).unwrap()["url"], "https://example.com/a.jpg");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Image {
    url: String,
}

impl Image {
    /// An image at `url` (http, https or gs, with a host), or inline as a data URI
    /// (`data:image/...;base64,...`). Nothing is downloaded: the provider fetches the URL. A URL
    /// naming this machine or a private or link-local network is
    /// [`MediaError::PrivateAddress`] unless [`allow_private_urls`] says otherwise.
    ///
    /// ```
    /// use signet::media::Image;
    /// assert!(Image::from_url("gs://bucket/cat.png").is_ok());
    /// assert!(Image::from_url("file:///etc/passwd").is_err());
    /// assert!(Image::from_url("data:text/plain;base64,aGk=").is_err());
    /// assert!(Image::from_url("http://169.254.169.254/latest/meta-data").is_err());
    /// ```
    pub fn from_url(url: impl Into<String>) -> Result<Image, MediaError> {
        let url = url.into();
        let url = url.trim().to_owned();
        if url.starts_with("data:") {
            let (mime, _) = data_uri(&url)?;
            expect_type(mime, "image/")?;
            return Ok(Image { url });
        }
        if is_remote(&url) {
            if let Some(reason) = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"))
                .and_then(|rest| address::private_host(rest.split(['/', '?', '#']).next()?))
            {
                return Err(MediaError::PrivateAddress {
                    url: excerpt(&url),
                    reason,
                });
            }
            return Ok(Image { url });
        }
        Err(MediaError::NotASource(excerpt(&url)))
    }

    /// An image from its bytes, its type told from how they start (PNG, JPEG, GIF, WebP, BMP).
    ///
    /// ```
    /// use signet::media::Image;
    /// assert_eq!(Image::from_bytes(b"\xff\xd8\xff\xe0").unwrap().mime_type(), Some("image/jpeg"));
    /// assert!(Image::from_bytes(b"hello").is_err());
    /// ```
    pub fn from_bytes(bytes: impl AsRef<[u8]>) -> Result<Image, MediaError> {
        let bytes = bytes.as_ref();
        let mime = sniff_image(bytes).ok_or(MediaError::UnknownImageBytes)?;
        Ok(Image::inline(bytes, mime))
    }

    /// An image from its bytes and MIME type (`image/...`).
    ///
    /// ```
    /// use signet::media::Image;
    /// assert!(Image::from_bytes_with_type(b"...", "image/svg+xml").is_ok());
    /// assert!(Image::from_bytes_with_type(b"...", "audio/wav").is_err());
    /// ```
    pub fn from_bytes_with_type(bytes: impl AsRef<[u8]>, mime: &str) -> Result<Image, MediaError> {
        expect_type(mime, "image/")?;
        Ok(Image::inline(bytes.as_ref(), mime))
    }

    /// An image read from a file, its type told from the extension (`.png`, `.jpg`, ...).
    ///
    /// ```
    /// use signet::media::{Image, MediaError};
    /// let error = Image::from_path("no/such/cat.png").unwrap_err();
    /// assert!(matches!(error, MediaError::Read { .. }));
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Image, MediaError> {
        let (bytes, mime) = read_typed(path.as_ref(), "image/")?;
        Ok(Image::inline(&bytes, &mime))
    }

    fn inline(bytes: &[u8], mime: &str) -> Image {
        Image {
            url: format!("data:{mime};base64,{}", BASE64.encode(bytes)),
        }
    }

    /// The URL sent to the model: the remote URL, or the data URI.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The MIME type of an inline image (`None` for a remote one: its server says).
    pub fn mime_type(&self) -> Option<&str> {
        self.inline_data().map(|(mime, _)| mime)
    }

    /// An inline image's MIME type and base64 data (`None` for a remote one).
    pub(crate) fn inline_data(&self) -> Option<(&str, &str)> {
        data_uri(&self.url).ok()
    }
}

/// Audio given to the model (DSPy's `dspy.Audio`): base64 data and its format (`wav`, `mp3`,
/// ...), sent as an `input_audio` content part. Serialized as DSPy's pydantic model is
/// (`{"data": ..., "audio_format": ...}`); read from that, from a data URI, or from the marked
/// text a DSPy program saves.
///
/// ```
/// use signet::media::Audio;
/// let clip = Audio::from_data_uri("data:audio/x-wav;base64,UklGRg==").unwrap();
/// assert_eq!((clip.format(), clip.data()), ("wav", "UklGRg=="));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Audio {
    data: String,
    format: String,
}

impl Audio {
    /// Audio from its bytes and format (`wav`, `mp3`, ...: what the provider accepts).
    pub fn from_bytes(bytes: impl AsRef<[u8]>, format: &str) -> Audio {
        Audio {
            data: BASE64.encode(bytes.as_ref()),
            format: audio_format(format),
        }
    }

    /// Audio already in base64.
    ///
    /// ```
    /// use signet::media::Audio;
    /// assert!(Audio::from_base64("UklGRg==", "wav").is_ok());
    /// assert!(Audio::from_base64("not base64!", "wav").is_err());
    /// ```
    pub fn from_base64(data: impl Into<String>, format: &str) -> Result<Audio, MediaError> {
        let data = data.into();
        check_base64(&data).map_err(|reason| MediaError::DataUri {
            uri: excerpt(&data),
            reason,
        })?;
        Ok(Audio {
            data,
            format: audio_format(format),
        })
    }

    /// Audio from a data URI (`data:audio/wav;base64,...`); the format is the MIME subtype
    /// without `x-`, as DSPy reads it.
    pub fn from_data_uri(uri: &str) -> Result<Audio, MediaError> {
        let (mime, data) = data_uri(uri)?;
        expect_type(mime, "audio/")?;
        Ok(Audio {
            data: data.to_owned(),
            format: audio_format(&mime["audio/".len()..]),
        })
    }

    /// Audio read from a file, its format told from the extension (`.wav`, `.mp3`, ...).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Audio, MediaError> {
        let (bytes, mime) = read_typed(path.as_ref(), "audio/")?;
        Ok(Audio::from_bytes(bytes, &mime["audio/".len()..]))
    }

    /// The base64 data.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The format (`wav`, `mp3`, ...).
    pub fn format(&self) -> &str {
        &self.format
    }
}

/// Whether a Rust type is a media field's: [`Image`], [`Audio`], or a `Vec` or `Option` of one.
pub(crate) fn is_media_type(id: std::any::TypeId) -> bool {
    use std::any::TypeId;
    [
        TypeId::of::<Image>(),
        TypeId::of::<Audio>(),
        TypeId::of::<Vec<Image>>(),
        TypeId::of::<Vec<Audio>>(),
        TypeId::of::<Option<Image>>(),
        TypeId::of::<Option<Audio>>(),
    ]
    .contains(&id)
}

impl Serialize for Image {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        json!({"url": self.url}).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match media_parts(&Value::deserialize(deserializer)?).map_err(D::Error::custom)?[..] {
            [ContentPart::Image(ref image)] => Ok(image.clone()),
            _ => Err(D::Error::custom("expected an image, found audio")),
        }
    }
}

impl Serialize for Audio {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        json!({"data": self.data, "audio_format": self.format}).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Audio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match media_parts(&Value::deserialize(deserializer)?).map_err(D::Error::custom)?[..] {
            [ContentPart::Audio(ref audio)] => Ok(audio.clone()),
            _ => Err(D::Error::custom("expected audio, found an image")),
        }
    }
}

impl JsonSchema for Image {
    fn schema_name() -> Cow<'static, str> {
        "Image".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "title": "Image",
            "additionalProperties": false,
            "properties": {"url": {"type": "string", "title": "Url"}},
            "required": ["url"],
        })
    }
}

impl JsonSchema for Audio {
    fn schema_name() -> Cow<'static, str> {
        "Audio".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "title": "Audio",
            "additionalProperties": false,
            "properties": {
                "data": {"type": "string", "title": "Data"},
                "audio_format": {"type": "string", "title": "Audio Format"},
            },
            "required": ["data", "audio_format"],
        })
    }
}

/// `(mime, data)` of a base64 data URI, the data checked.
fn data_uri(uri: &str) -> Result<(&str, &str), MediaError> {
    let malformed = |reason| MediaError::DataUri {
        uri: excerpt(uri),
        reason,
    };
    let rest = uri
        .strip_prefix("data:")
        .ok_or_else(|| malformed("it does not start with `data:`"))?;
    let (header, data) = rest
        .split_once(',')
        .ok_or_else(|| malformed("there is no `,` before the data"))?;
    let mime = header
        .strip_suffix(";base64")
        .ok_or_else(|| malformed("only base64 data URIs are accepted"))?;
    let mime = mime.split(';').next().unwrap_or_default();
    if !mime.contains('/') {
        return Err(malformed("there is no MIME type"));
    }
    check_base64(data).map_err(malformed)?;
    Ok((mime, data))
}

fn check_base64(data: &str) -> Result<(), &'static str> {
    if data.is_empty() {
        return Err("the data is empty");
    }
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    let alphabet = body
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    if !alphabet || padding > 2 || (padding > 0 && !data.len().is_multiple_of(4)) {
        return Err("the data is not base64");
    }
    Ok(())
}

fn expect_type(mime: &str, prefix: &'static str) -> Result<(), MediaError> {
    if mime.starts_with(prefix) && mime.len() > prefix.len() {
        Ok(())
    } else {
        Err(MediaError::WrongType {
            mime: mime.to_owned(),
            expected: if prefix == "image/" {
                "image/*"
            } else {
                "audio/*"
            },
        })
    }
}

/// An http(s) or gs URL with a host (DSPy's `is_url`).
fn is_remote(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    matches!(scheme, "http" | "https" | "gs")
        && !host.is_empty()
        && !url.contains(char::is_whitespace)
}

fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.starts_with(b"BM") {
        Some("image/bmp")
    } else {
        None
    }
}

/// A file's bytes and its MIME type from the extension, which must start with `prefix`.
fn read_typed(path: &Path, prefix: &'static str) -> Result<(Vec<u8>, String), MediaError> {
    let bytes = std::fs::read(path).map_err(|error| MediaError::Read {
        path: path.to_owned(),
        kind: error.kind(),
        message: error.to_string(),
    })?;
    let mime =
        mime_guess::from_path(path)
            .first_raw()
            .ok_or_else(|| MediaError::UnknownExtension {
                path: path.to_owned(),
            })?;
    expect_type(mime, prefix)?;
    Ok((bytes, mime.to_owned()))
}

/// DSPy's audio format: the MIME subtype without an `x-` prefix.
fn audio_format(format: &str) -> String {
    format
        .trim()
        .strip_prefix("x-")
        .unwrap_or(format.trim())
        .to_owned()
}

pub(crate) fn excerpt(text: &str) -> String {
    if text.chars().count() <= EXCERPT {
        return text.to_owned();
    }
    let cut: String = text.chars().take(EXCERPT).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_read_in_every_form_dspy_writes() {
        let url = "https://example.com/a.png";
        let marked = format!(
            "{DSPY_START}[{{\"type\": \"image_url\", \"image_url\": {{\"url\": \"{url}\"}}}}]{DSPY_END}"
        );
        for value in [json!({"url": url}), json!(url), json!(marked)] {
            let image: Image = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(image.url(), url, "{value}");
        }
    }

    #[test]
    fn forged_sources_are_typed_errors_naming_the_value() {
        for bad in [
            json!({"url": "file:///etc/passwd"}),
            json!({"url": 7}),
            json!("javascript:alert(1)"),
            json!("data:image/png;base64,@@@"),
            json!("data:image/png,rawtext"),
            json!({"data": "UklGRg=="}),
            json!(format!("{DSPY_START}not json{DSPY_END}")),
            json!(format!("{DSPY_START}[]{DSPY_END}")),
            json!(null),
        ] {
            let error = media_parts(&bad).unwrap_err().to_string();
            assert!(!error.is_empty(), "{bad}");
        }
        let long = "x".repeat(10_000);
        let error = Image::from_url(long).unwrap_err().to_string();
        assert!(error.len() < 300, "the error quotes an excerpt: {error}");
    }

    #[test]
    fn audio_formats_are_read_as_dspy_reads_them() {
        let clip = Audio::from_data_uri("data:audio/mpeg;base64,SUQz").unwrap();
        assert_eq!(clip.format(), "mpeg");
        assert!(Audio::from_data_uri("data:image/png;base64,SUQz").is_err());
        let value = serde_json::to_value(&clip).unwrap();
        assert_eq!(value, json!({"data": "SUQz", "audio_format": "mpeg"}));
        assert_eq!(serde_json::from_value::<Audio>(value).unwrap(), clip);
        assert!(serde_json::from_value::<Audio>(json!("https://example.com/a.png")).is_err());
    }

    #[test]
    fn files_are_read_with_their_type_from_the_extension() {
        let dir = std::env::temp_dir().join(format!("signet-media-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("dot.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n").unwrap();
        let image = Image::from_path(&png).unwrap();
        assert_eq!(image.url(), "data:image/png;base64,iVBORw0KGgo=");
        let wav = dir.join("clip.wav");
        std::fs::write(&wav, b"RIFF").unwrap();
        assert_eq!(Audio::from_path(&wav).unwrap().format(), "wav");
        assert!(matches!(
            Image::from_path(&wav),
            Err(MediaError::WrongType { .. })
        ));
        let odd = dir.join("blob.zzq");
        std::fs::write(&odd, b"?").unwrap();
        assert!(matches!(
            Image::from_path(&odd),
            Err(MediaError::UnknownExtension { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
