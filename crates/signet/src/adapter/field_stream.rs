//! A streamed reply split into its output fields while it arrives, in each adapter's format: the
//! Chat adapter's `[[ ## field ## ]]` sections, the JSON adapter's object, the XML adapter's
//! tags. Each piece is a field's own text — no markers, keys, quotes, escapes or tags around it —
//! so a UI can write an answer field by field as the model writes it (ReAct's `AnswerDelta`s).
//!
//! A text field streams as it is written. A JSON value that is not a string (a number, a list, an
//! object) arrives whole when it ends, as compact JSON, the way an answer that was not streamed
//! shows it. With the Chat and XML formats a field's text is what the model wrote between the
//! markers or tags (a list in Chat is JSON text; in XML, nested tags).

/// Pieces of a reply: the output field (`None` only for a reply in none of the formats), and its
/// next text.
pub(crate) type Pieces = Vec<(Option<String>, String)>;

/// Adds `text` to `field`'s last piece, or starts a new piece.
fn push(out: &mut Pieces, field: Option<&str>, text: &str) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some((last, pending)) if last.as_deref() == field => pending.push_str(text),
        _ => out.push((field.map(str::to_owned), text.to_owned())),
    }
}

/// The field being written in a format that surrounds values with whitespace lines (Chat, XML):
/// its leading line breaks are not shown.
#[derive(Debug, Default)]
struct Section {
    /// The field, once its marker or tag was read.
    field: Option<String>,
    /// Whether it has shown any text yet.
    started: bool,
}

impl Section {
    fn open(&mut self, field: Option<String>) {
        self.field = field;
        self.started = false;
    }

    fn emit(&mut self, text: &str, out: &mut Pieces) {
        let Some(field) = &self.field else {
            return;
        };
        let text = if self.started {
            text
        } else {
            text.trim_start_matches(['\n', '\r'])
        };
        if !text.is_empty() {
            self.started = true;
            push(out, Some(field), text);
        }
    }
}

/// Splits a streamed reply into field pieces: [`push`](Self::push) each delta, then
/// [`finish`](Self::finish).
#[derive(Debug)]
pub(crate) enum FieldStream {
    /// A reply without field markers whose format is not known yet: the text so far, held until
    /// its first `{` (JSON) or `<` (XML).
    Undecided(String),
    /// The Chat format.
    Markers(MarkerSplitter),
    /// The JSON format.
    Json(JsonFields),
    /// The XML format.
    Xml(XmlFields),
}

impl FieldStream {
    /// A splitter for a reply whose adapter marks fields (`marked`: the Chat format), or else
    /// writes one JSON object or XML tags — told apart by which of `{` and `<` comes first.
    pub(crate) fn new(marked: bool) -> FieldStream {
        if marked {
            FieldStream::Markers(MarkerSplitter::default())
        } else {
            FieldStream::Undecided(String::new())
        }
    }

    /// Feeds a delta; returns the pieces that are now certain.
    pub(crate) fn push(&mut self, text: &str) -> Pieces {
        match self {
            FieldStream::Markers(splitter) => splitter.push(text),
            FieldStream::Json(splitter) => splitter.push(text),
            FieldStream::Xml(splitter) => splitter.push(text),
            FieldStream::Undecided(held) => {
                // What was held has neither; only the new text is searched (linear in the reply).
                let from = held.len();
                held.push_str(text);
                let Some(start) = held[from..].find(['{', '<']).map(|at| from + at) else {
                    return Pieces::new();
                };
                let rest = held.split_off(start);
                *self = if rest.starts_with('{') {
                    FieldStream::Json(JsonFields::default())
                } else {
                    FieldStream::Xml(XmlFields::default())
                };
                self.push(&rest)
            }
        }
    }

    /// The reply ended: the pieces held back. A reply in neither format is shown here, whole,
    /// with no field.
    pub(crate) fn finish(&mut self) -> Pieces {
        match self {
            FieldStream::Markers(splitter) => splitter.finish(),
            FieldStream::Json(splitter) => splitter.finish(),
            FieldStream::Xml(splitter) => splitter.finish(),
            FieldStream::Undecided(held) => {
                let mut out = Pieces::new();
                push(&mut out, None, std::mem::take(held).trim());
                out
            }
        }
    }
}

const OPEN: &str = "[[ ## ";
const CLOSE: &str = " ## ]]";

/// The longest field or tag name a marker may carry: a longer one is text. It bounds the text a
/// splitter holds back while a marker may still be arriving, so that a reply is read in time
/// linear in its length, however it is cut (an unterminated `[[ ## aaaa…` or `<aaaa…`).
const MAX_NAME: usize = 256;

/// The most trailing whitespace held back as the possible gap before a marker or closing tag;
/// more is emitted as the field's text (a run that long is the model's, not a gap), so that it is
/// not scanned again with every piece.
const MAX_GAP: usize = 4096;

/// Where the text that is certain ends in `pending[..end]`: before its trailing whitespace (the
/// possible gap before a marker), of which at most [`MAX_GAP`] bytes are held back.
fn certain_end(pending: &str, end: usize) -> usize {
    let gap_from = end.saturating_sub(MAX_GAP);
    let gap_from = (gap_from..=end)
        .find(|&i| pending.is_char_boundary(i))
        .unwrap_or(end);
    gap_from + pending[gap_from..end].trim_end().len()
}

/// Splits streamed Chat-adapter text into per-field pieces, hiding the `[[ ## field ## ]]` markers
/// and the blank lines around them. Text before the first marker and after `completed` is dropped
/// (the adapter ignores it too).
#[derive(Debug, Default)]
pub(crate) struct MarkerSplitter {
    /// Text not yet emitted: a possible marker start, or whitespace that may precede one.
    pending: String,
    /// The field being written.
    section: Section,
}

impl MarkerSplitter {
    /// Feeds a delta; returns the pieces that are now certain.
    pub(crate) fn push(&mut self, text: &str) -> Pieces {
        self.pending.push_str(text);
        let mut out = Pieces::new();
        loop {
            let Some(open) = self.pending.find(OPEN) else {
                // No marker start: keep back a tail that could begin one.
                let keep = partial_suffix(&self.pending, OPEN);
                self.emit_up_to(self.pending.len() - keep, &mut out);
                return out;
            };
            let after = &self.pending[open + OPEN.len()..];
            let name_len = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let rest = &after[name_len..];
            if name_len > 0 && name_len <= MAX_NAME && rest.starts_with(CLOSE) {
                let name = after[..name_len].to_owned();
                self.emit_up_to(open, &mut out);
                // What precedes the marker is only the gap before it.
                let marker_end = self.pending.find(CLOSE).map_or(0, |c| c + CLOSE.len());
                self.pending.drain(..marker_end);
                self.section.open((name != "completed").then_some(name));
            } else if name_len <= MAX_NAME && rest.len() < CLOSE.len() && CLOSE.starts_with(rest) {
                // Possibly a marker still arriving: emit what precedes it and wait.
                self.emit_up_to(open, &mut out);
                return out;
            } else {
                // Not a marker after all: it is text.
                let end = open + OPEN.len();
                let text: String = self.pending.drain(..end).collect();
                self.section.emit(&text, &mut out);
            }
        }
    }

    /// Emits `pending[..end]` except its trailing whitespace, which may be the gap before a marker
    /// and stays pending.
    fn emit_up_to(&mut self, end: usize, out: &mut Pieces) {
        let certain_end = certain_end(&self.pending, end);
        let text: String = self.pending.drain(..certain_end).collect();
        self.section.emit(&text, out);
    }

    /// The stream ended: emits what was held back (a marker that never closed is text).
    pub(crate) fn finish(&mut self) -> Pieces {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Pieces::new();
        self.section.emit(rest.trim_end(), &mut out);
        out
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `token`.
fn partial_suffix(text: &str, token: &str) -> usize {
    (1..token.len())
        .rev()
        .find(|&n| token.is_char_boundary(n) && text.ends_with(&token[..n]))
        .unwrap_or(0)
}

/// Where a JSON reply's reader is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum JsonState {
    /// Before the top-level object (a code fence, a sentence).
    #[default]
    BeforeObject,
    /// Before a key, or the object's end.
    BeforeKey,
    /// In a key's string.
    Key,
    /// After a key, before its colon.
    BeforeColon,
    /// After the colon, before the value.
    BeforeValue,
    /// In a string value: its text is shown as it arrives.
    Text,
    /// In a value that is not a string: shown whole when it ends.
    Raw,
    /// After the object: the rest is ignored.
    Done,
}

/// Splits a streamed JSON object into its fields: a string value's decoded text as it arrives,
/// any other value (number, boolean, null, list, object) whole, as compact JSON, when it ends.
/// Keys, quotes, escapes and the JSON around the values are not shown; text before the object
/// and after it is dropped (the adapter reads the first object).
#[derive(Debug, Default)]
pub(crate) struct JsonFields {
    /// Text not read yet (an escape that is not complete).
    pending: String,
    state: JsonState,
    /// The field being written (its key).
    key: String,
    /// A value that is not a string, so far.
    raw: String,
    /// The nesting depth inside that value.
    depth: usize,
    /// Whether that value's reader is inside one of its strings (and after a backslash there).
    in_string: bool,
    escaped: bool,
}

/// One step of reading a JSON string.
enum StringUnit {
    /// A character and the bytes it took.
    Char(char, usize),
    /// The closing quote.
    End,
    /// An escape that is not complete yet.
    Incomplete,
}

impl JsonFields {
    /// Feeds a delta; returns the pieces that are now certain.
    pub(crate) fn push(&mut self, text: &str) -> Pieces {
        self.pending.push_str(text);
        let input = std::mem::take(&mut self.pending);
        let mut out = Pieces::new();
        let mut at = 0;
        while let Some(c) = input[at..].chars().next() {
            let mut step = c.len_utf8();
            match self.state {
                JsonState::BeforeObject => {
                    if c == '{' {
                        self.state = JsonState::BeforeKey;
                    }
                }
                JsonState::BeforeKey => match c {
                    '"' => {
                        self.key.clear();
                        self.state = JsonState::Key;
                    }
                    '}' => self.state = JsonState::Done,
                    _ => {}
                },
                JsonState::Key | JsonState::Text => match string_unit(&input[at..]) {
                    StringUnit::Incomplete => break,
                    StringUnit::End => {
                        self.state = if self.state == JsonState::Key {
                            JsonState::BeforeColon
                        } else {
                            JsonState::BeforeKey
                        };
                    }
                    StringUnit::Char(decoded, len) => {
                        step = len;
                        if self.state == JsonState::Key {
                            self.key.push(decoded);
                        } else {
                            push(&mut out, Some(&self.key), decoded.encode_utf8(&mut [0; 4]));
                        }
                    }
                },
                JsonState::BeforeColon => {
                    if c == ':' {
                        self.state = JsonState::BeforeValue;
                    }
                }
                JsonState::BeforeValue => {
                    if c == '"' {
                        self.state = JsonState::Text;
                    } else if !c.is_whitespace() {
                        (self.raw, self.depth) = (String::new(), 0);
                        (self.in_string, self.escaped) = (false, false);
                        self.state = JsonState::Raw;
                        // The value's first character is read as part of it.
                        continue;
                    }
                }
                JsonState::Raw => self.read_raw(c, &mut out),
                JsonState::Done => step = input.len() - at,
            }
            at += step;
        }
        self.pending = input[at..].to_owned();
        out
    }

    /// One character of a value that is not a string.
    fn read_raw(&mut self, c: char, out: &mut Pieces) {
        if self.in_string {
            self.raw.push(c);
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_string = false;
            }
            return;
        }
        match c {
            ',' | '}' if self.depth == 0 => {
                self.emit_raw(out);
                self.state = if c == '}' {
                    JsonState::Done
                } else {
                    JsonState::BeforeKey
                };
            }
            '"' => {
                self.in_string = true;
                self.raw.push(c);
            }
            '[' | '{' => {
                self.depth += 1;
                self.raw.push(c);
            }
            ']' | '}' => {
                self.depth = self.depth.saturating_sub(1);
                self.raw.push(c);
            }
            _ => self.raw.push(c),
        }
    }

    /// Shows the value read so far, compact when it is JSON.
    fn emit_raw(&mut self, out: &mut Pieces) {
        let raw = std::mem::take(&mut self.raw);
        let raw = raw.trim();
        let text = serde_json::from_str::<serde_json::Value>(raw)
            .map_or_else(|_| raw.to_owned(), |value| value.to_string());
        push(out, Some(&self.key), &text);
    }

    /// The stream ended: a value still open is shown as it is (an escape cut off is dropped).
    pub(crate) fn finish(&mut self) -> Pieces {
        let mut out = Pieces::new();
        if self.state == JsonState::Raw {
            self.emit_raw(&mut out);
            self.state = JsonState::Done;
        }
        out
    }
}

/// Reads the start of `text`, inside a JSON string.
fn string_unit(text: &str) -> StringUnit {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'"') => StringUnit::End,
        Some(b'\\') => {
            let Some(escaped) = text[1..].chars().next() else {
                return StringUnit::Incomplete;
            };
            let decoded = match escaped {
                'u' => return unicode_escape(text),
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                // `\"`, `\\`, `\/`, and a lenient reading of anything else.
                other => other,
            };
            StringUnit::Char(decoded, 1 + escaped.len_utf8())
        }
        _ => text.chars().next().map_or(StringUnit::Incomplete, |c| {
            StringUnit::Char(c, c.len_utf8())
        }),
    }
}

/// Reads `\uXXXX` (and its low surrogate's `\uXXXX` after a high one) at the start of `text`.
fn unicode_escape(text: &str) -> StringUnit {
    let hex = |from: usize| -> Option<Option<u32>> {
        let digits = text.get(from..from + 4)?;
        Some(u32::from_str_radix(digits, 16).ok())
    };
    let Some(first) = hex(2) else {
        return StringUnit::Incomplete;
    };
    let Some(first) = first else {
        return StringUnit::Char(char::REPLACEMENT_CHARACTER, 2);
    };
    if !(0xD800..0xDC00).contains(&first) {
        return StringUnit::Char(
            char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER),
            6,
        );
    }
    // A high surrogate: its pair follows as another escape.
    if text.len() < 12 {
        return if "\\u".starts_with(text.get(6..).unwrap_or_default())
            || text.get(6..8) == Some("\\u")
        {
            StringUnit::Incomplete
        } else {
            StringUnit::Char(char::REPLACEMENT_CHARACTER, 6)
        };
    }
    match (text.get(6..8), hex(8).flatten()) {
        (Some("\\u"), Some(low)) if (0xDC00..0xE000).contains(&low) => {
            let code = 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
            StringUnit::Char(
                char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
                12,
            )
        }
        _ => StringUnit::Char(char::REPLACEMENT_CHARACTER, 6),
    }
}

/// The longest an entity (`&amp;`, `&#x1F600;`) is taken to be.
const MAX_ENTITY: usize = 10;

/// Splits streamed XML-adapter text into per-field pieces: the text between a top-level
/// `<field>` and its `</field>`, without the line breaks around it, entities decoded (`&lt;` is
/// shown as `<`). Nested tags (a list's `<item>`s) are part of the field's text. Text outside
/// the tags is dropped (the adapter ignores it too).
#[derive(Debug, Default)]
pub(crate) struct XmlFields {
    /// Text not yet emitted: a possible tag, entity, or whitespace before a closing tag.
    pending: String,
    section: Section,
}

impl XmlFields {
    /// Feeds a delta; returns the pieces that are now certain.
    pub(crate) fn push(&mut self, text: &str) -> Pieces {
        self.pending.push_str(text);
        let mut out = Pieces::new();
        loop {
            let Some(field) = self.section.field.clone() else {
                // Outside the fields: look for an opening tag.
                let Some(open) = self.pending.find('<') else {
                    self.pending.clear();
                    return out;
                };
                self.pending.drain(..open);
                let name_len = self.pending[1..]
                    .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                    .unwrap_or(self.pending.len() - 1);
                let rest = &self.pending[1 + name_len..];
                if rest.is_empty() && name_len <= MAX_NAME {
                    return out; // the tag is still arriving
                }
                let name = &self.pending[1..1 + name_len];
                if rest.starts_with('>')
                    && name_len <= MAX_NAME
                    && name.starts_with(|c: char| c.is_alphabetic() || c == '_')
                {
                    let name = name.to_owned();
                    self.pending.drain(..name_len + 2);
                    self.section.open(Some(name));
                } else {
                    self.pending.drain(..1); // not an opening tag
                }
                continue;
            };
            let close = format!("</{field}>");
            if let Some(at) = self.pending.find(&close) {
                let text: String = self.pending.drain(..at).collect();
                self.pending.drain(..close.len());
                self.section
                    .emit(&decode_entities(text.trim_end()), &mut out);
                self.section.open(None);
                continue;
            }
            // Hold back what may be the closing tag, an entity, or the whitespace before them.
            let keep = partial_suffix(&self.pending, &close).max(entity_tail(&self.pending));
            let end = certain_end(&self.pending, self.pending.len() - keep);
            let text: String = self.pending.drain(..end).collect();
            self.section.emit(&decode_entities(&text), &mut out);
            return out;
        }
    }

    /// The stream ended: a field never closed shows what it held.
    pub(crate) fn finish(&mut self) -> Pieces {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Pieces::new();
        self.section
            .emit(&decode_entities(rest.trim_end()), &mut out);
        out
    }
}

/// The length of a tail of `text` that may be an entity still arriving (`&am`).
fn entity_tail(text: &str) -> usize {
    match text.rfind('&') {
        Some(at) if !text[at..].contains(';') && text.len() - at < MAX_ENTITY => text.len() - at,
        _ => 0,
    }
}

/// `text` with XML's entities and character references decoded; anything else kept as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let decoded = rest[1..]
            .char_indices()
            .take(MAX_ENTITY)
            .find(|&(_, c)| c == ';')
            .and_then(|(end, _)| {
                let name = &rest[1..1 + end];
                let c = match name {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => {
                        let code = match name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                            None => name.strip_prefix('#')?.parse().ok()?,
                        };
                        char::from_u32(code)?
                    }
                };
                Some((c, end + 2))
            });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `chunks` streamed through a splitter for `marked` replies, consecutive pieces
    /// of one field merged (as a UI would display them).
    fn split(marked: bool, chunks: &[&str]) -> Pieces {
        let mut stream = FieldStream::new(marked);
        let mut merged = Pieces::new();
        for chunk in chunks {
            for (field, text) in stream.push(chunk) {
                push(&mut merged, field.as_deref(), &text);
            }
        }
        for (field, text) in stream.finish() {
            push(&mut merged, field.as_deref(), &text);
        }
        merged
    }

    /// `split` of `reply` cut at every point, and character by character, all equal `expected`.
    fn streams_the_same_at_every_cut(marked: bool, reply: &str, expected: &Pieces) {
        assert_eq!(&split(marked, &[reply]), expected, "whole");
        for (cut, _) in reply.char_indices() {
            let (a, b) = reply.split_at(cut);
            assert_eq!(&split(marked, &[a, b]), expected, "cut at {cut}");
        }
        let chars: Vec<String> = reply.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(&split(marked, &refs), expected, "character by character");
    }

    fn fields(pairs: &[(&str, &str)]) -> Pieces {
        pairs
            .iter()
            .map(|(f, t)| (Some((*f).to_owned()), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn chat_sections_become_their_fields_at_every_cut() {
        let reply = "[[ ## reasoning ## ]]\nIt is 4.\n\n[[ ## answer ## ]]\n4 apples\n\n\
                     [[ ## completed ## ]]";
        let expected = fields(&[("reasoning", "It is 4."), ("answer", "4 apples")]);
        streams_the_same_at_every_cut(true, reply, &expected);
    }

    #[test]
    fn chat_inner_blank_lines_and_brackets_are_kept() {
        let reply = "[[ ## answer ## ]]\nline one\n\nline [two] [[ x\n\n[[ ## completed ## ]]";
        assert_eq!(
            split(true, &[reply]),
            fields(&[("answer", "line one\n\nline [two] [[ x")])
        );
    }

    #[test]
    fn chat_an_unclosed_marker_at_the_end_is_text() {
        assert_eq!(
            split(true, &["[[ ## answer ## ]]\n42 [[ ## ans"]),
            fields(&[("answer", "42 [[ ## ans")])
        );
    }

    #[test]
    fn chat_a_marker_lookalike_with_spaces_is_text() {
        assert_eq!(
            split(
                true,
                &[
                    "[[ ## answer ## ]]\nsee [[ ## not a field",
                    " here\n\n[[ ## completed ## ]]"
                ]
            ),
            fields(&[("answer", "see [[ ## not a field here")])
        );
    }

    #[test]
    fn chat_text_before_the_first_marker_is_dropped() {
        assert_eq!(
            split(true, &["Sure!\n[[ ## answer ## ]]\nyes"]),
            fields(&[("answer", "yes")])
        );
    }

    #[test]
    fn json_string_values_stream_decoded_at_every_cut() {
        let reply = "```json\n{\n  \"reasoning\": \"Say \\\"hi\\\"\\n\\u00e9t\\u00e9 \\ud83d\\ude00\",\n  \
                     \"answer\": \"a\\\\b\"\n}\n```";
        let expected = fields(&[("reasoning", "Say \"hi\"\nété 😀"), ("answer", "a\\b")]);
        streams_the_same_at_every_cut(false, reply, &expected);
    }

    #[test]
    fn json_values_that_are_not_strings_arrive_whole_and_compact() {
        let reply = "{\"count\": 12 , \"items\": [\"a\", {\"b\": \"}]\"}],\n \"ok\": true,\
                     \"none\": null}";
        let expected = fields(&[
            ("count", "12"),
            ("items", r#"["a",{"b":"}]"}]"#),
            ("ok", "true"),
            ("none", "null"),
        ]);
        streams_the_same_at_every_cut(false, reply, &expected);
    }

    #[test]
    fn json_keys_whitespace_and_text_around_the_object_are_not_shown() {
        assert_eq!(
            split(
                false,
                &[
                    "Here: ",
                    "{ ",
                    "\"reasoning\"",
                    ": ",
                    "\"r\"",
                    ", ",
                    "\"answer\": \"5\"} ",
                    "bye"
                ]
            ),
            fields(&[("reasoning", "r"), ("answer", "5")])
        );
    }

    #[test]
    fn json_a_value_cut_off_shows_what_arrived() {
        assert_eq!(
            split(false, &["{\"answer\": \"par", "tial"]),
            fields(&[("answer", "partial")])
        );
        assert_eq!(split(false, &["{\"n\": 4"]), fields(&[("n", "4")]));
    }

    #[test]
    fn xml_tags_become_their_fields_at_every_cut() {
        let reply = "<reasoning>\nIt is &lt;4&gt; &amp; &#233;t&#xE9;.\n</reasoning>\n\
                     <answer>\n4 apples\n\nand pears\n</answer>";
        let expected = fields(&[
            ("reasoning", "It is <4> & été."),
            ("answer", "4 apples\n\nand pears"),
        ]);
        streams_the_same_at_every_cut(false, reply, &expected);
    }

    #[test]
    fn xml_nested_tags_are_a_field_text_and_text_outside_is_dropped() {
        let reply =
            "Sure.\n<names><item>Ada</item><item>Bob</item></names>\n<count>\n2\n</count> ok";
        let expected = fields(&[
            ("names", "<item>Ada</item><item>Bob</item>"),
            ("count", "2"),
        ]);
        streams_the_same_at_every_cut(false, reply, &expected);
    }

    #[test]
    fn xml_an_unknown_entity_and_a_lone_ampersand_are_kept() {
        assert_eq!(
            split(false, &["<answer>a &nbsp; b & c</answer>"]),
            fields(&[("answer", "a &nbsp; b & c")])
        );
    }

    #[test]
    fn a_reply_in_no_format_arrives_whole_without_a_field() {
        assert_eq!(
            split(false, &["just ", "words"]),
            vec![(None, "just words".to_owned())]
        );
    }

    /// Feeds `head`, then `filler` `times` times, into a fresh stream of the given format,
    /// checking after each piece that what the stream holds back stays bounded (so each piece is
    /// read in time bounded by its own length, and the reply in linear time).
    fn assert_bounded(marked: bool, head: &str, filler: &str, times: usize) {
        let mut stream = FieldStream::new(marked);
        let mut shown = 0;
        for piece in std::iter::once(head).chain(std::iter::repeat_n(filler, times)) {
            shown += stream
                .push(piece)
                .iter()
                .map(|(_, t)| t.len())
                .sum::<usize>();
            let held = match &stream {
                FieldStream::Markers(s) => s.pending.len(),
                FieldStream::Xml(s) => s.pending.len(),
                FieldStream::Json(s) => s.pending.len(),
                // A reply in neither format is held whole, by design (it is shown at the end).
                FieldStream::Undecided(_) => panic!("{head:?} is in a format"),
            };
            let bound = MAX_NAME + MAX_GAP + OPEN.len() + CLOSE.len() + 2 * filler.len();
            assert!(
                held <= bound,
                "{head:?} + {} bytes: {held} bytes held back",
                filler.len()
            );
        }
        shown += stream.finish().iter().map(|(_, t)| t.len()).sum::<usize>();
        assert!(shown > 0, "the text is shown, not dropped");
    }

    #[test]
    fn an_unterminated_marker_or_tag_of_16_mib_is_held_back_only_in_part() {
        const MIB16: usize = 16 << 20;
        let filler = "a".repeat(64 << 10);
        let times = MIB16 / filler.len();
        // The Chat format: a marker that never closes, and text then whitespace that never ends.
        assert_bounded(true, "[[ ## answer ## ]]\n[[ ## ", &filler, times);
        assert_bounded(true, "[[ ## answer ## ]]\nok", &" ".repeat(64 << 10), times);
        // XML: a tag that never closes, inside and outside a field; whitespace before a close.
        assert_bounded(false, "<answer>ok</answer><", &filler, times);
        assert_bounded(false, "<answer>ok", &" \n".repeat(32 << 10), times);
    }

    #[test]
    fn a_name_longer_than_a_field_name_can_be_is_text() {
        let long = "a".repeat(MAX_NAME + 1);
        let pieces = split(true, &["[[ ## answer ## ]]\nx [[ ## ", &long, " ## ]] y"]);
        let text: String = pieces.iter().map(|(_, t)| t.as_str()).collect();
        assert!(text.contains(&long), "{pieces:?}");
        assert!(pieces.iter().all(|(f, _)| f.as_deref() == Some("answer")));
    }
}
