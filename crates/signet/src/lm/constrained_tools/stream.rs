//! Streaming a constrained reply: its text is read as it arrives, so that a call is reported as
//! soon as its name is known and its arguments as the model writes them.

use futures::channel::mpsc;
use futures::stream::{self, BoxStream};
use futures::{SinkExt, StreamExt};

use super::read_reply;
use crate::lm::{Lm, LmError, LmRequest, ResponseFormat, StreamEvent, ToolChoice};

/// The events of `request`'s reply, asked of `inner` as `sent` (the constrained request).
///
/// The inner stream borrows `sent`, so both live in one future, which hands the events over a
/// channel without a buffer: it reads the inner stream only as fast as the caller reads, and
/// dropping the returned stream drops the future, the inner stream with it (no task is spawned).
pub(super) fn reply_events<'a, L: Lm>(
    inner: &'a L,
    request: &'a LmRequest,
    sent: LmRequest,
) -> BoxStream<'a, Result<StreamEvent, LmError>> {
    let (mut events_out, events_in) = mpsc::channel::<Result<StreamEvent, LmError>>(0);
    let reading = async move {
        let mut reader = ReplyReader::new(request);
        let mut events = inner.stream(&sent);
        let mut out = Vec::new();
        let last = loop {
            let Some(event) = events.next().await else {
                break Err(LmError::InvalidResponse {
                    message: "the reply stream ended before the completion was done".to_owned(),
                });
            };
            match event {
                Ok(StreamEvent::TextDelta(text)) => reader.push(&text, &mut out),
                Ok(StreamEvent::ReasoningDelta(text)) => {
                    out.push(StreamEvent::ReasoningDelta(text));
                }
                // The constraint makes the reply text; the final completion says what was called.
                Ok(StreamEvent::ToolCallDelta { .. }) => {}
                Ok(StreamEvent::Done(completion)) => {
                    break read_reply(request, completion).map(StreamEvent::Done);
                }
                Err(error) => break Err(error),
            }
            for event in out.drain(..) {
                if events_out.send(Ok(event)).await.is_err() {
                    return;
                }
            }
        };
        drop(events);
        // The caller may have gone: nothing is left to do then.
        let _ = events_out.send(last).await;
    };
    let reading = stream::once(reading).filter_map(|()| async { None });
    stream::select(events_in, reading).boxed()
}

/// Where the reader is in the reply.
#[derive(Debug)]
enum State {
    /// Before the reply's first character.
    Start,
    /// In the list of calls, before a call (or the list's end).
    BeforeCall,
    /// In a call, before a key (or the call's end).
    BeforeKey,
    /// In a key.
    Key(JsonString),
    /// After a key, before its colon.
    BeforeColon,
    /// After the colon, before the value.
    BeforeValue,
    /// In the call's name.
    Name(JsonString),
    /// In another value: the arguments, or a key the reader does not know.
    Value(RawValue),
    /// After a value, before a comma or the call's end.
    AfterValue,
    /// After a call, before a comma or the list's end.
    AfterCall,
    /// In an answer that is a JSON string: its text is shown decoded.
    Answer(JsonString),
    /// In an answer shown as it is (an object following the request's schema).
    RawAnswer,
    /// Nothing more is shown: the list or the answer ended, or the reply broke the contract (the
    /// final completion reports that).
    Ignore,
}

/// The call being read.
#[derive(Debug, Default)]
struct Call {
    /// Its place in the list.
    index: usize,
    /// The key being read.
    key: String,
    /// Its name (so far).
    name: String,
    /// Whether its name is complete (and reported).
    named: bool,
    /// Whether its arguments began (only the first `arguments` of a call are shown).
    has_arguments: bool,
    /// Arguments read before the name, held until the name is known.
    held: String,
}

/// Reads a constrained reply incrementally and turns it into stream events: each call of a list
/// as a [`StreamEvent::ToolCallDelta`] with its id and name once the name is complete, then its
/// arguments' raw JSON text in pieces; an answer as [`StreamEvent::TextDelta`]s. Every character
/// is read once, in constant time (apart from one comparison of each key), and no input panics.
#[derive(Debug)]
pub(super) struct ReplyReader {
    /// Whether only a list of calls is allowed (anything else is not shown).
    only_calls: bool,
    /// Whether a string answer is the text (`response_format` text or none), so it is shown
    /// decoded; otherwise the answer is shown as it is.
    decode_answer: bool,
    /// The number of the first call's id (`call_<n>`): the calls earlier in the conversation.
    first_id: usize,
    state: State,
    /// The whitespace before an answer, shown with its first character.
    leading: String,
    call: Call,
    /// Calls begun so far.
    calls: usize,
}

impl ReplyReader {
    pub(super) fn new(request: &LmRequest) -> ReplyReader {
        ReplyReader {
            only_calls: !matches!(request.tool_choice, None | Some(ToolChoice::Auto)),
            decode_answer: matches!(request.response_format, None | Some(ResponseFormat::Text)),
            first_id: request.tool_calls_so_far(),
            state: State::Start,
            leading: String::new(),
            call: Call::default(),
            calls: 0,
        }
    }

    /// Reads the next piece of the reply, pushing the events it makes to `out`.
    pub(super) fn push(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        let mut answer = String::new();
        for (at, c) in text.char_indices() {
            match &mut self.state {
                State::RawAnswer => {
                    push_text(out, text.get(at..).unwrap_or_default());
                    break;
                }
                State::Ignore => break,
                State::Answer(string) => {
                    if string.read(c, &mut answer) {
                        self.state = State::Ignore;
                    }
                }
                _ => self.read(c, out),
            }
        }
        if !answer.is_empty() {
            push_text(out, &answer);
        }
    }

    /// Reads one character outside an answer.
    fn read(&mut self, c: char, out: &mut Vec<StreamEvent>) {
        // A value that is not a string ends at the character after it, read again after it.
        loop {
            match &mut self.state {
                State::Start => self.start(c, out),
                State::BeforeCall => match c {
                    '{' => {
                        self.call = Call {
                            index: self.calls,
                            ..Call::default()
                        };
                        self.calls += 1;
                        self.state = State::BeforeKey;
                    }
                    c if c.is_whitespace() => {}
                    _ => self.state = State::Ignore,
                },
                State::BeforeKey => match c {
                    '"' => {
                        self.call.key.clear();
                        self.state = State::Key(JsonString::default());
                    }
                    '}' => self.state = State::AfterCall,
                    c if c.is_whitespace() => {}
                    _ => self.state = State::Ignore,
                },
                State::Key(string) => {
                    if string.read(c, &mut self.call.key) {
                        self.state = State::BeforeColon;
                    }
                }
                State::BeforeColon => match c {
                    ':' => self.state = State::BeforeValue,
                    c if c.is_whitespace() => {}
                    _ => self.state = State::Ignore,
                },
                State::BeforeValue => {
                    if c.is_whitespace() {
                        return;
                    }
                    if c == '"' && !self.call.named && self.call.key == "name" {
                        self.call.name.clear();
                        self.state = State::Name(JsonString::default());
                        return;
                    }
                    let arguments = !self.call.has_arguments && self.call.key == "arguments";
                    self.call.has_arguments |= arguments;
                    self.state = State::Value(RawValue {
                        arguments,
                        ..RawValue::default()
                    });
                    // The value's first character is read as part of it.
                    continue;
                }
                State::Name(string) => {
                    if string.read(c, &mut self.call.name) {
                        self.named(out);
                        self.state = State::AfterValue;
                    }
                }
                State::Value(value) => {
                    let arguments = value.arguments;
                    let step = value.read(c);
                    if step == Step::After {
                        self.state = State::AfterValue;
                        continue;
                    }
                    if step == Step::Last {
                        self.state = State::AfterValue;
                    }
                    if arguments {
                        self.arguments(c, out);
                    }
                }
                State::AfterValue => match c {
                    ',' => self.state = State::BeforeKey,
                    '}' => self.state = State::AfterCall,
                    c if c.is_whitespace() => {}
                    _ => self.state = State::Ignore,
                },
                State::AfterCall => match c {
                    ',' => self.state = State::BeforeCall,
                    c if c.is_whitespace() => {}
                    // The list's end, or a reply that is not a list of calls.
                    _ => self.state = State::Ignore,
                },
                State::Answer(_) | State::RawAnswer | State::Ignore => {}
            }
            return;
        }
    }

    /// The reply's first character (other than whitespace) tells a list of calls from an answer.
    fn start(&mut self, c: char, out: &mut Vec<StreamEvent>) {
        if c.is_whitespace() {
            // The final completion's text keeps it when the answer is shown as it is.
            self.leading.push(c);
            return;
        }
        self.state = match c {
            '[' => State::BeforeCall,
            _ if self.only_calls => State::Ignore,
            '"' if self.decode_answer => State::Answer(JsonString::default()),
            _ => {
                let mut text = std::mem::take(&mut self.leading);
                text.push(c);
                push_text(out, &text);
                State::RawAnswer
            }
        };
    }

    /// The call's name is complete: reports the call, then the arguments read before the name.
    fn named(&mut self, out: &mut Vec<StreamEvent>) {
        let call = &mut self.call;
        call.named = true;
        out.push(StreamEvent::ToolCallDelta {
            index: call.index,
            id: Some(format!("call_{}", self.first_id.saturating_add(call.index))),
            name: Some(call.name.clone()),
            arguments: String::new(),
        });
        if !call.held.is_empty() {
            let held = std::mem::take(&mut call.held);
            push_arguments(out, call.index, &held);
        }
    }

    /// One character of the call's arguments: shown once the call is named, held until then.
    fn arguments(&mut self, c: char, out: &mut Vec<StreamEvent>) {
        if self.call.named {
            push_arguments(out, self.call.index, c.encode_utf8(&mut [0; 4]));
        } else {
            self.call.held.push(c);
        }
    }
}

/// Appends answer text to `out`, to its last delta when that is text.
fn push_text(out: &mut Vec<StreamEvent>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(StreamEvent::TextDelta(last)) = out.last_mut() {
        last.push_str(text);
    } else {
        out.push(StreamEvent::TextDelta(text.to_owned()));
    }
}

/// Appends a piece of call `index`'s arguments to `out`, to its last delta when that is one.
fn push_arguments(out: &mut Vec<StreamEvent>, index: usize, text: &str) {
    if let Some(StreamEvent::ToolCallDelta {
        index: last,
        id: None,
        name: None,
        arguments,
    }) = out.last_mut()
        && *last == index
    {
        arguments.push_str(text);
        return;
    }
    out.push(StreamEvent::ToolCallDelta {
        index,
        id: None,
        name: None,
        arguments: text.to_owned(),
    });
}

/// What a character is to the value being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Part of it.
    In,
    /// Its last character.
    Last,
    /// The character after it (not part of it).
    After,
}

/// A JSON value read as it is: nesting and strings (with their escapes) are followed to find its
/// end, nothing is decoded.
#[derive(Debug, Default)]
struct RawValue {
    /// Whether it is the call's arguments (shown) rather than a value the reader skips.
    arguments: bool,
    /// How many lists and objects are open.
    depth: usize,
    /// Whether the reader is in a string, and just after a backslash there.
    in_string: bool,
    escaped: bool,
}

impl RawValue {
    fn read(&mut self, c: char) -> Step {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_string = false;
                if self.depth == 0 {
                    return Step::Last;
                }
            }
            return Step::In;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth = self.depth.saturating_add(1),
            '}' | ']' => {
                if self.depth == 0 {
                    // The end of the call, after a number, `true`, `false` or `null`.
                    return Step::After;
                }
                self.depth -= 1;
                if self.depth == 0 {
                    return Step::Last;
                }
            }
            ',' if self.depth == 0 => return Step::After,
            c if c.is_whitespace() && self.depth == 0 => return Step::After,
            _ => {}
        }
        Step::In
    }
}

/// Where a [`JsonString`] is in an escape.
#[derive(Debug, Default, Clone, Copy)]
enum Escape {
    /// Not in one.
    #[default]
    None,
    /// After a backslash.
    Backslash,
    /// In `\uXXXX`, `digits` read, after a high surrogate when `high` is set.
    Hex {
        high: Option<u32>,
        value: u32,
        digits: u8,
    },
    /// After a high surrogate: its low half's `\uXXXX` should follow.
    AfterHigh(u32),
    /// After a high surrogate and a backslash.
    AfterHighBackslash(u32),
}

/// Decodes a JSON string one character at a time (after its opening quote). Escapes are decoded
/// as JSON defines them, `\uXXXX` surrogate pairs included; what is not valid JSON (a lone
/// surrogate, a broken `\u` escape) is read as U+FFFD and an unknown escape as the escaped
/// character (the whole reply then fails to parse, and the final completion says so).
#[derive(Debug, Default)]
struct JsonString {
    escape: Escape,
}

impl JsonString {
    /// Reads `c`, pushing what it decodes to `out`; true when `c` is the closing quote.
    fn read(&mut self, c: char, out: &mut String) -> bool {
        match self.escape {
            Escape::None => match c {
                '"' => return true,
                '\\' => self.escape = Escape::Backslash,
                _ => out.push(c),
            },
            Escape::Backslash => {
                self.escape = Escape::None;
                match c {
                    'u' => {
                        self.escape = Escape::Hex {
                            high: None,
                            value: 0,
                            digits: 0,
                        };
                    }
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    // `\"`, `\\`, `\/`, and anything else.
                    other => out.push(other),
                }
            }
            Escape::Hex {
                high,
                value,
                digits,
            } => {
                let Some(digit) = c.to_digit(16) else {
                    if high.is_some() {
                        out.push(char::REPLACEMENT_CHARACTER);
                    }
                    out.push(char::REPLACEMENT_CHARACTER);
                    self.escape = Escape::None;
                    return self.read(c, out);
                };
                let value = value * 16 + digit;
                if digits < 3 {
                    self.escape = Escape::Hex {
                        high,
                        value,
                        digits: digits + 1,
                    };
                    return false;
                }
                self.escape = Escape::None;
                match high {
                    Some(high) if (0xDC00..0xE000).contains(&value) => {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00);
                        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                    }
                    Some(_) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        self.code_point(value, out);
                    }
                    None => self.code_point(value, out),
                }
            }
            Escape::AfterHigh(high) => {
                if c == '\\' {
                    self.escape = Escape::AfterHighBackslash(high);
                } else {
                    out.push(char::REPLACEMENT_CHARACTER);
                    self.escape = Escape::None;
                    return self.read(c, out);
                }
            }
            Escape::AfterHighBackslash(high) => {
                if c == 'u' {
                    self.escape = Escape::Hex {
                        high: Some(high),
                        value: 0,
                        digits: 0,
                    };
                } else {
                    out.push(char::REPLACEMENT_CHARACTER);
                    self.escape = Escape::Backslash;
                    return self.read(c, out);
                }
            }
        }
        false
    }

    /// A complete `\uXXXX`: a character, or a high surrogate waiting for its low half.
    fn code_point(&mut self, value: u32, out: &mut String) {
        if (0xD800..0xDC00).contains(&value) {
            self.escape = Escape::AfterHigh(value);
        } else {
            out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> (String, bool) {
        let mut string = JsonString::default();
        let mut out = String::new();
        let ended = text.chars().any(|c| string.read(c, &mut out));
        (out, ended)
    }

    #[test]
    fn strings_decode_as_serde_json_reads_them() {
        for json in [
            r#""plain""#,
            r#""q\"uo\\te\/ \n\t\r\b\f""#,
            r#""\u00e9\u0041 é \ud83d\ude00 \uD834\uDD1E""#,
            r#""}]\"[{""#,
        ] {
            let expected: String = serde_json::from_str(json).unwrap();
            assert_eq!(decoded(&json[1..]), (expected, true), "{json}");
        }
        // Not JSON: read without panicking.
        assert_eq!(decoded(r#"\ud83d x""#), ("\u{fffd} x".to_owned(), true));
        assert_eq!(
            decoded(r#"\udc00\uzz""#),
            ("\u{fffd}\u{fffd}zz".to_owned(), true)
        );
        assert_eq!(decoded(r#"\ud83d\n"#), ("\u{fffd}\n".to_owned(), false));
        assert_eq!(decoded(r#"\ud83d\u0041""#), ("\u{fffd}A".to_owned(), true));
        assert_eq!(decoded(r#"\q\"#), ("q".to_owned(), false));
    }

    #[test]
    fn any_text_is_read_without_panicking() {
        // A small deterministic generator over the characters that matter to the reader.
        let alphabet: Vec<char> = "[]{}\",:\\u0dD8Ab n\u{e9}".chars().collect();
        let mut seed = 0x2545_f491_u64;
        let mut request = LmRequest::default();
        for round in 0..600 {
            request.tool_choice = (round % 2 == 0).then_some(ToolChoice::Required);
            let mut reader = ReplyReader::new(&request);
            let mut out = Vec::new();
            let mut text = String::from(if round % 3 == 0 { "[{\"name\": \"" } else { "" });
            for _ in 0..40 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let pick = usize::try_from(seed >> 33).unwrap_or(0) % alphabet.len();
                text.push(alphabet[pick]);
            }
            for piece in text.split_inclusive(['"', '\\']) {
                reader.push(piece, &mut out);
            }
        }
    }

    #[test]
    fn random_strings_read_back_in_any_pieces() {
        let alphabet: Vec<char> = "\"\\/{}[],: a\n\t\u{1}\u{7f}é😀\u{2028}".chars().collect();
        let mut seed = 0x9e37_79b9_u64;
        let mut next = move |below: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).unwrap_or(0) % below
        };
        let request = LmRequest {
            tool_choice: Some(ToolChoice::Required),
            ..LmRequest::default()
        };
        for _ in 0..300 {
            let text: String = (0..next(12))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let arguments = serde_json::json!({"k": text, "l": [text, {}, [1.5, null]]});
            let reply =
                serde_json::json!([{"name": text, "arguments": arguments}, {"name": "b", "arguments": text}]).to_string();
            let size = 1 + next(6);
            let mut reader = ReplyReader::new(&request);
            let mut out = Vec::new();
            let mut start = 0;
            while start < reply.len() {
                let mut end = (start + size).min(reply.len());
                while !reply.is_char_boundary(end) {
                    end += 1;
                }
                reader.push(&reply[start..end], &mut out);
                start = end;
            }
            let mut calls: Vec<(String, String)> = Vec::new();
            for event in out {
                let StreamEvent::ToolCallDelta {
                    index,
                    name,
                    arguments,
                    ..
                } = event
                else {
                    panic!("not a call: {event:?}")
                };
                match name {
                    Some(name) => calls.push((name, arguments)),
                    None => calls[index].1.push_str(&arguments),
                }
            }
            let expected = [
                (text.clone(), arguments.to_string()),
                ("b".to_owned(), serde_json::to_string(&text).unwrap()),
            ];
            assert_eq!(calls, expected, "{reply}");

            let mut answer = ReplyReader::new(&LmRequest::default());
            let mut out = Vec::new();
            let quoted = serde_json::to_string(&text).unwrap();
            for c in quoted.chars() {
                answer.push(c.encode_utf8(&mut [0; 4]), &mut out);
            }
            let shown: String = out
                .into_iter()
                .map(|event| match event {
                    StreamEvent::TextDelta(text) => text,
                    other => panic!("not text: {other:?}"),
                })
                .collect();
            assert_eq!(shown, text);
        }
    }
}
