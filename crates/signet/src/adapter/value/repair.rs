//! `json_repair.loads`, as DSPy's `parse_value` calls it on a field's text: strict JSON first;
//! otherwise the first JSON container (`{..}`, `[..]`, a line-leading Python tuple) found in the
//! text, read leniently — unquoted keys and strings, single or curly quotes, missing commas and
//! closers, trailing commas, comments, `True`/`None` — and, when more containers follow, all of
//! them (a container with the same shape as the one before it replaces it: a model correcting
//! itself). Text outside containers is skipped, so a bare scalar (`+3`, `1_000`, `inf`) gives
//! nothing — `None` here, `""` in `json_repair` — and DSPy goes on to `ast.literal_eval`.
//!
//! This follows json_repair 0.64 (the version DSPy 3.4.1 pins) in its rules, not every heuristic:
//! a string's stray inner quotes end it. Work is linear in the text, and containers nest at most
//! [`MAX_NESTING`] deep (deeper ones are not read).

use serde_json::{Map, Number, Value};

use super::MAX_NESTING;

/// What a container's member is being read as (json_repair's parser context): it decides where an
/// unquoted string ends and whether a comma can be part of a number.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Key,
    ObjectValue,
    Array,
}

const QUOTES: [char; 4] = ['"', '\'', '\u{201c}', '\u{201d}'];

/// Where a character stands among a literal's quoted strings, as [`Quotes::read`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// A backslash (it escapes what follows).
    Escape,
    /// Inside a string, its closing quote included.
    Inside,
    /// The quote that opens a string.
    Opens,
    /// Outside any string.
    Outside,
}

/// The quoted string a scan is in, if any, and the backslashes just read.
#[derive(Default)]
struct Quotes {
    open: Option<char>,
    backslashes: usize,
}

impl Quotes {
    /// Reads `c`, the next character of the scan.
    fn read(&mut self, c: char) -> Quoting {
        if c == '\\' {
            self.backslashes += 1;
            return Quoting::Escape;
        }
        let escaped = self.backslashes % 2 == 1;
        self.backslashes = 0;
        if let Some(quote) = self.open {
            if c == quote && !escaped {
                self.open = None;
            }
            return Quoting::Inside;
        }
        if QUOTES.contains(&c) && !escaped {
            self.open = Some(c);
            return Quoting::Opens;
        }
        Quoting::Outside
    }
}

/// `json_repair.loads(text)`; `None` where it returns `""` (nothing found, or an empty string).
pub(super) fn loads(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return non_empty(value);
    }
    let mut parser = Repair {
        text,
        pos: 0,
        depth: 0,
        tried_suffix: false,
        budget: 16 * text.len() + 4096,
    };
    parser.top_level().and_then(non_empty)
}

fn non_empty(value: Value) -> Option<Value> {
    (value != Value::String(String::new())).then_some(value)
}

/// Python's truthiness of a parsed value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `ObjectComparer.is_same_object`: the same type, keys and lengths, recursively.
fn same_object(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_object(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_object(v, w))
        }
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

struct Repair<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    pos: usize,
    depth: usize,
    /// json_repair tries strict JSON once, for the first container it meets.
    tried_suffix: bool,
    /// Characters the look-aheads (`(` starting a value, a quoted key) may still scan; past it
    /// they answer no, so that hostile text stays linear.
    budget: usize,
}

impl Repair<'_> {
    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..)?.chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        } else {
            self.pos = self.text.len();
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// One comment (`# ..`, `// ..`, `/* .. */`) or a lone `/`.
    fn skip_comment(&mut self) {
        let rest = &self.text[self.pos..];
        if rest.starts_with('#') || rest.starts_with("//") {
            let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
            self.pos += end;
        } else if let Some(body) = rest.strip_prefix("/*") {
            self.pos += body.find("*/").map_or(rest.len(), |end| end + 4);
        } else {
            self.bump();
        }
    }

    fn skip_ws_and_comments(&mut self) {
        loop {
            self.skip_ws();
            let rest = &self.text[self.pos..];
            if rest.starts_with('#') || rest.starts_with("//") || rest.starts_with("/*") {
                self.skip_comment();
            } else {
                return;
            }
        }
    }

    /// `_parse_top_level`: every element; several become a list, a repeated shape an update.
    fn top_level(&mut self) -> Option<Value> {
        let first = self.element();
        if self.at_end() {
            return first;
        }
        let mut found = vec![first.unwrap_or_else(|| Value::String(String::new()))];
        while !self.at_end() {
            let comma_separated = self.next_is_comma_separated();
            match self.element() {
                Some(next) if truthy(&next) => {
                    let last = found.last().expect("never empty");
                    if (!comma_separated && same_object(last, &next)) || !truthy(last) {
                        found.pop();
                    }
                    found.push(next);
                }
                _ => self.bump(),
            }
        }
        if found.len() == 1 {
            found.pop()
        } else {
            Some(Value::Array(found))
        }
    }

    fn next_is_comma_separated(&self) -> bool {
        let after = self.text[self.pos..].trim_start();
        after.starts_with(',') || self.text[..self.pos].trim_end().ends_with(',')
    }

    /// `parse_json` outside any container: skips text up to the next value it can start.
    fn element(&mut self) -> Option<Value> {
        let check_initial_quote = self.pos == 0;
        self.depth = 0;
        loop {
            let c = self.peek()?;
            match c {
                '{' | '[' => {
                    if !self.tried_suffix && self.container_has_trailing_content() {
                        self.tried_suffix = true;
                        if let Some(value) = self.strict_prefix() {
                            return Some(value);
                        }
                    }
                    self.bump();
                    return if c == '{' {
                        self.object()
                    } else {
                        self.array(']')
                    };
                }
                '(' if self.parenthesized_can_start() => return self.parenthesized(),
                '#' | '/' => self.skip_comment(),
                c if check_initial_quote && self.pos == 0 && QUOTES.contains(&c) => {
                    if let Some(object) = self.missing_opening_brace() {
                        return Some(object);
                    }
                    self.bump();
                }
                _ => self.bump(),
            }
        }
    }

    /// `_initial_container_has_non_comma_trailing_content`: true past the start of the text;
    /// at the start, whether something other than a comma follows the first container.
    fn container_has_trailing_content(&self) -> bool {
        if self.pos != 0 {
            return true;
        }
        let mut open = Vec::new();
        for (i, c) in super::outside_strings(self.text) {
            match c {
                '{' | '[' => open.push(c),
                '}' | ']' => {
                    let expected = if c == '}' { '{' } else { '[' };
                    if open.pop() != Some(expected) {
                        return false;
                    }
                    if open.is_empty() {
                        let rest = self.text[i + 1..].trim_start();
                        return !rest.is_empty() && !rest.starts_with(',');
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// `json.JSONDecoder().raw_decode` at the current position: a complete JSON value that
    /// text may follow.
    fn strict_prefix(&mut self) -> Option<Value> {
        let rest = &self.text[self.pos..];
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = stream.next()?.ok()?;
        self.pos += stream.byte_offset();
        Some(value)
    }

    /// `_try_parse_missing_opening_object`: `"a": 1}` is `{"a": 1}` when one `{` explains it.
    fn missing_opening_brace(&mut self) -> Option<Value> {
        if !self.text.trim_end().ends_with('}') {
            return None;
        }
        let candidate = format!("{{{}", self.text);
        match serde_json::from_str::<Value>(&candidate) {
            Ok(object @ Value::Object(_)) => {
                self.pos = self.text.len();
                Some(object)
            }
            _ => None,
        }
    }

    /// `top_level_parenthesized_can_start_value`: a `(` that starts its line, holds a value and
    /// whose `)` ends the line.
    fn parenthesized_can_start(&mut self) -> bool {
        let line_start = self.text[..self.pos]
            .chars()
            .rev()
            .take_while(|c| *c != '\n' && *c != '\r')
            .all(char::is_whitespace);
        if !line_start {
            return false;
        }
        let inner = self.text[self.pos + 1..].trim_start();
        let Some(first) = inner.chars().next() else {
            return false;
        };
        let lower: String = inner.chars().take(5).collect::<String>().to_lowercase();
        let starts_value = matches!(first, ')' | '{' | '[' | '(' | '-' | '.')
            || QUOTES.contains(&first)
            || first.is_ascii_digit()
            || ["true", "null", "none"]
                .iter()
                .any(|w| lower.starts_with(w))
            || lower.starts_with("false");
        if !starts_value {
            return false;
        }
        let (mut parens, mut squares, mut braces) = (0usize, 0usize, 0usize);
        let mut quotes = Quotes::default();
        let mut chars = self.text[self.pos + 1..].chars();
        while let Some(c) = chars.next() {
            if self.budget == 0 || parens > MAX_NESTING {
                return false;
            }
            self.budget -= 1;
            if quotes.read(c) != Quoting::Outside {
                continue;
            }
            match c {
                '(' => parens += 1,
                ')' if parens == 0 && squares == 0 && braces == 0 => {
                    for trailer in chars.by_ref() {
                        if trailer == '\n' || trailer == '\r' {
                            return true;
                        }
                        if !trailer.is_whitespace() {
                            return false;
                        }
                    }
                    return true;
                }
                ')' => parens = parens.saturating_sub(1),
                '[' => squares += 1,
                ']' => squares = squares.saturating_sub(1),
                '{' => braces += 1,
                '}' => braces = braces.saturating_sub(1),
                _ => {}
            }
        }
        true
    }

    /// `(1, 2)` is a list, `(1)` the value itself.
    fn parenthesized(&mut self) -> Option<Value> {
        let explicit_tuple = self.explicit_tuple();
        self.bump();
        match self.array(')')? {
            Value::Array(mut items) if !explicit_tuple && items.len() == 1 => items.pop(),
            other => Some(other),
        }
    }

    /// `parenthesized_is_explicit_tuple`: `()` or a comma at the parentheses' own level.
    fn explicit_tuple(&mut self) -> bool {
        let (mut nested, mut squares, mut braces) = (0usize, 0usize, 0usize);
        let mut quotes = Quotes::default();
        let mut content = false;
        for c in self.text[self.pos + 1..].chars() {
            if self.budget == 0 || nested > MAX_NESTING {
                return false;
            }
            self.budget -= 1;
            let top = nested == 0 && squares == 0 && braces == 0;
            match quotes.read(c) {
                Quoting::Outside => {}
                Quoting::Opens => {
                    content |= top;
                    continue;
                }
                Quoting::Escape | Quoting::Inside => continue,
            }
            if !c.is_whitespace() && c != ',' && c != ')' && top {
                content = true;
            }
            match c {
                '(' => nested += 1,
                ')' if top => return !content,
                ')' => nested = nested.saturating_sub(1),
                '[' => squares += 1,
                ']' => squares = squares.saturating_sub(1),
                '{' => braces += 1,
                '}' => braces = braces.saturating_sub(1),
                ',' if top => return true,
                _ => {}
            }
        }
        !content
    }

    fn enter(&mut self) -> Option<()> {
        if self.depth >= MAX_NESTING {
            return None;
        }
        self.depth += 1;
        Some(())
    }

    /// An object's members, after its `{`. Ends at `}`, at a `]` (left for the array around it),
    /// or at the end of the text.
    fn object(&mut self) -> Option<Value> {
        self.enter()?;
        let mut map = Map::new();
        loop {
            self.skip_ws_and_comments();
            match self.peek() {
                None => break,
                Some('}') => {
                    self.bump();
                    break;
                }
                Some(']') => break,
                Some(',') => self.bump(),
                Some(_) => {
                    let start = self.pos;
                    let key = self.key();
                    self.skip_ws_and_comments();
                    let value = match self.peek() {
                        Some(':') => {
                            self.bump();
                            Some(self.value(Context::ObjectValue)?)
                        }
                        // A key that ends the object has no value: dropped.
                        None | Some('}' | ']') => None,
                        Some(_) => Some(Value::String(String::new())),
                    };
                    if let (Some(key), Some(value)) = (key, value) {
                        map.insert(key, value);
                    }
                    if self.pos == start {
                        self.bump();
                    }
                }
            }
        }
        self.depth -= 1;
        Some(Value::Object(map))
    }

    fn key(&mut self) -> Option<String> {
        match self.value(Context::Key)? {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s),
            other => Some(other.to_string()),
        }
    }

    /// An array's items, after its opener; `close` is `]` (or `)` for a tuple).
    fn array(&mut self, close: char) -> Option<Value> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            self.skip_ws_and_comments();
            let Some(c) = self.peek() else { break };
            if c == close || c == '}' {
                break;
            }
            if c == ',' {
                self.bump();
                continue;
            }
            let value = if QUOTES.contains(&c) && self.quoted_key_follows() {
                // `["a": 1]`: an object whose `{` is missing.
                self.object()?
            } else {
                self.value(Context::Array)?
            };
            let next = self.peek();
            let empty = match &value {
                Value::String(s) => s.is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if empty && next != Some(close) && next != Some(',') {
                self.bump();
            } else if !(value == Value::String("...".to_owned())
                && self.text[..self.pos].ends_with('.'))
            {
                items.push(value);
            }
        }
        // json_repair steps past whatever ended the array: its closer, a `}`, or the end.
        self.bump();
        self.depth -= 1;
        Some(Value::Array(items))
    }

    /// Whether the quoted string here is followed by `:`.
    fn quoted_key_follows(&mut self) -> bool {
        let mut probe = Repair {
            text: self.text,
            pos: self.pos,
            depth: self.depth,
            tried_suffix: true,
            budget: 0,
        };
        probe.quoted();
        probe.skip_ws();
        let scanned = probe.pos - self.pos;
        if scanned > self.budget {
            self.budget = 0;
            return false;
        }
        self.budget -= scanned;
        probe.peek() == Some(':')
    }

    /// A value inside a container. `None` only past the nesting limit.
    fn value(&mut self, context: Context) -> Option<Value> {
        // Once past a character no value starts with, json_repair skips everything (closers
        // and commas too) up to the next value.
        let mut skipping = false;
        loop {
            self.skip_ws_and_comments();
            let Some(c) = self.peek() else {
                return Some(Value::String(String::new()));
            };
            match c {
                '{' => {
                    self.bump();
                    return self.object();
                }
                '[' => {
                    self.bump();
                    return self.array(']');
                }
                '(' => {
                    let explicit = self.explicit_tuple();
                    self.bump();
                    return match self.array(')')? {
                        Value::Array(mut items) if !explicit && items.len() == 1 => items.pop(),
                        other => Some(other),
                    };
                }
                c if QUOTES.contains(&c) => return Some(Value::String(self.quoted())),
                c if c.is_ascii_digit() || c == '-' || c == '.' => {
                    return Some(self.number(context));
                }
                c if c.is_alphabetic() => {
                    if let Some(literal) = self.boolean_or_null() {
                        return Some(literal);
                    }
                    return Some(Value::String(self.bare(context)));
                }
                '}' | ']' | ')' | ',' | ':' if !skipping => {
                    return Some(Value::String(String::new()));
                }
                _ => {
                    skipping = true;
                    self.bump();
                }
            }
        }
    }

    /// `true`, `False`, `NULL`, `None` (any case) standing alone.
    fn boolean_or_null(&mut self) -> Option<Value> {
        let rest = &self.text[self.pos..];
        for (word, value) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
            ("none", Value::Null),
        ] {
            let Some(head) = rest.get(..word.len()) else {
                continue;
            };
            if !head.eq_ignore_ascii_case(word) {
                continue;
            }
            let after = rest[word.len()..].chars().next();
            if after.is_none_or(|c| c.is_whitespace() || matches!(c, ',' | ')' | ']' | '}')) {
                self.pos += word.len();
                return Some(value);
            }
        }
        None
    }

    /// An unquoted string: up to `:` for a key, `,` or `}` for an object's value, `,` or `]` in
    /// an array; trimmed.
    fn bare(&mut self, context: Context) -> String {
        let rest = &self.text[self.pos..];
        let end = rest
            .find(|c: char| match context {
                Context::Key => c == ':' || c == '}' || c == ',',
                Context::ObjectValue => c == ',' || c == '}',
                Context::Array => c == ',' || c == ']',
            })
            .unwrap_or(rest.len());
        self.pos += end;
        rest[..end].trim().to_owned()
    }

    /// A string in `"`, `'` or curly quotes, JSON escapes decoded; an unclosed one runs to the end.
    fn quoted(&mut self) -> String {
        let open = self.peek().unwrap_or('"');
        let close = match open {
            '\u{201c}' => '\u{201d}',
            other => other,
        };
        self.bump();
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.bump();
            match c {
                c if c == close || (close == '\u{201d}' && c == '\u{201c}') => return out,
                '\\' => {
                    let Some(escaped) = self.peek() else { break };
                    self.bump();
                    match escaped {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'u' => {
                            let hex = self.text.get(self.pos..self.pos + 4);
                            match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
                                Some(code) => {
                                    self.pos += 4;
                                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                                }
                                None => out.push_str("\\u"),
                            }
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    /// `parse_number`: digits and `-.eE/,_` (a comma only outside arrays; `_` dropped); a word
    /// that starts with digits is a string; what Python's `int`/`float` reject stays text.
    fn number(&mut self, context: Context) -> Value {
        let start = self.pos;
        let mut number = String::new();
        while let Some(c) = self.peek() {
            let accepted = "0123456789-.eE/,_".contains(c)
                || (c == '+' && (number.ends_with('e') || number.ends_with('E')));
            if !accepted || (context == Context::Array && c == ',') {
                break;
            }
            if c != '_' {
                number.push(c);
            }
            self.bump();
        }
        if self.peek().is_some_and(char::is_alphabetic) {
            self.pos = start;
            return Value::String(self.bare(context));
        }
        if number.ends_with(['+', '-', 'e', 'E', '/', ',']) {
            number.pop();
            self.pos -= 1;
        }
        if number.contains(',') {
            return Value::String(number);
        }
        let parsed = if number.contains(['.', 'e', 'E']) {
            python_float(&number)
                .and_then(Number::from_f64)
                .map(Value::Number)
        } else {
            python_int(&number)
        };
        parsed.unwrap_or(Value::String(number))
    }
}

/// Python's `int(text)` for a string of digits with an optional sign.
fn python_int(text: &str) -> Option<Value> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(Value::from(u));
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

/// Python's `float(text)` for text made of digits, signs, `.` and exponents.
fn python_float(text: &str) -> Option<f64> {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let mantissa = body.split(['e', 'E']).next().unwrap_or_default();
    if !mantissa.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_outside_containers_are_not_found() {
        for text in [
            "1_000", "0x10", "inf", "nan", "'no'", "True", "TRUE", "None", "abc", "3 # x", "1,000",
            "+3", "x: 0.5", "- a\n- b", "1 2 3", "x (1, 2)", "(1, 2) x",
        ] {
            assert_eq!(loads(text), None, "{text:?}");
        }
        assert_eq!(loads("true"), Some(json!(true)));
        assert_eq!(loads("\"low\""), Some(json!("low")));
    }

    #[test]
    fn containers_are_repaired_like_json_repair() {
        let cases = [
            ("{x: 0.5}", json!({"x": 0.5})),
            ("[a, b]", json!(["a", "b"])),
            ("{\"a\": 1} {\"a\": 2}", json!({"a": 2})),
            ("{\"a\": 1} {\"b\": 2}", json!([{"a": 1}, {"b": 2}])),
            ("(1, 2)", json!([1, 2])),
            ("(1)", json!(1)),
            ("```json\n[1]\n```", json!([1])),
            (
                "{a: hello world, b: 2}",
                json!({"a": "hello world", "b": 2}),
            ),
            ("[1, 2", json!([1, 2])),
            ("{\"a\": [1, 2}", json!({"a": [1, 2]})),
            ("[\"a\" \"b\"]", json!(["a", "b"])),
            ("{\"a\": True}", json!({"a": true})),
            ("{\"a\": tru}", json!({"a": "tru"})),
            ("[1,000]", json!([1, 0])),
            ("{\"a\": 1,000}", json!({"a": "1,000"})),
            ("{a:1_000}", json!({"a": 1000})),
            (
                "[.5, -.5, 1e3, 1E+3, 1/2]",
                json!([0.5, -0.5, 1000.0, 1000.0, "1/2"]),
            ),
            ("{\"k\": \"v\"} and more", json!({"k": "v"})),
            ("text [1] more [2]", json!([2])),
            ("[] [1]", json!([1])),
            ("// c\n[1]", json!([1])),
            ("\"a\": 1}", json!({"a": 1})),
            (
                "[True, FALSE, None, none, Null]",
                json!([true, false, null, null, null]),
            ),
            ("{a: hello\nb: 2}", json!({"a": "hello\nb: 2"})),
            ("{a: hello: x, b: 1}", json!({"a": "hello: x", "b": 1})),
            ("[\"a\": 1, \"b\": 2]", json!([{"a": 1, "b": 2}])),
            ("[1 2 3]", json!([1, 2, 3])),
            ("{,\"a\":1}", json!({"a": 1})),
            ("[@, 1]", json!([1])),
            ("[@]", json!([])),
            ("[@], [2]", json!([[2]])),
            ("{\"a\": @, \"b\": 1}", json!({"a": "b"})),
            ("{\"a\": , \"b\": 1}", json!({"a": "", "b": 1})),
            ("[*a, *b]", json!(["a", "b"])),
            ("{\"a\": -, \"b\": 2}", json!({"a": "-", "b": 2})),
            ("{\"a\": 1e}", json!({"a": 1})),
            ("{\"a\": [1, 2], \"b\"}", json!({"a": [1, 2]})),
            ("{\"a\" 1}", json!({"a": ""})),
            ("{\"a\": 007}", json!({"a": 7})),
            ("[1.2.3]", json!(["1.2.3"])),
            ("{\"a\": 1 \"b\": 2}", json!({"a": 1, "b": 2})),
            ("{\"a\": [1, 2]]", json!({"a": [1, 2]})),
            ("[{\"a\": 1]", json!([{"a": 1}])),
            ("[1] # c", json!([1])),
            ("{\"a\": 1}, {\"a\": 2}", json!([{"a": 1}, {"a": 2}])),
            ("[1], [2]", json!([[1], [2]])),
            ("{\"a\":1}{\"a\":2}{\"b\":3}", json!([{"a": 2}, {"b": 3}])),
            ("[\u{201c}x\u{201d}]", json!(["x"])),
        ];
        for (text, want) in cases {
            assert_eq!(loads(text), Some(want), "{text:?}");
        }
    }

    #[test]
    fn hostile_text_is_bounded() {
        let deep = "[".repeat(MAX_NESTING * 4);
        assert_eq!(loads(&deep), None);
        let wide = "(\n".repeat(10_000);
        let _ = loads(&wide);
        let _ = loads(&"{a: [b, (c".repeat(2_000));
    }
}
