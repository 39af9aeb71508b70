//! Turning what a model wrote into a field's typed value, following DSPy's `parse_value` rules
//! (pydantic's lax validation): `"3"` and `3.0` are fine for an `int`, `"yes"` for a `bool`, a JSON or
//! Python literal for a list; anything that does not fit is an error that says why.

use serde_json::{Map, Number, Value};

use crate::python::strip;
use crate::signature::Field;

mod coerce;
mod error;
mod pyliteral;
mod repair;

pub use coerce::coerce;
pub use error::ValueError;

/// Parses a field value written as text (Chat and XML formats).
pub fn parse_text(field: &Field, text: &str) -> Result<Value, ValueError> {
    if field.kind() == crate::signature::FieldKind::ToolCalls
        && let Some(wrapped) = lenient_json(text).and_then(wrapped_calls)
    {
        return parse_text_value(field, &wrapped.to_string()).map(|value| typed(field, value));
    }
    parse_text_value(field, text).map(|value| typed(field, value))
}

/// Tool calls written as DSPy's validator also reads them, a bare list of calls or one
/// `{"name", "args"}` call, as the `{"tool_calls": [..]}` the type holds; `None` for any other
/// value (left to the usual parsing and its error).
fn wrapped_calls(value: Value) -> Option<Value> {
    let is_call = |v: &Value| v.get("name").is_some() && v.get("args").is_some();
    match value {
        Value::Array(items) if items.iter().all(is_call) => {
            Some(serde_json::json!({"tool_calls": items}))
        }
        one @ Value::Object(_) if one.get("tool_calls").is_none() && is_call(&one) => {
            Some(serde_json::json!({"tool_calls": [one]}))
        }
        _ => None,
    }
}

/// A parsed value as DSPy's type holds it: a `ToolCalls` value's calls always have an `id` (None
/// when the model wrote the calls as text), keys in the order `ToolCalls.ToolCall` declares them
/// (`id`, `name`, `args`).
fn typed(field: &Field, value: Value) -> Value {
    if field.kind() != crate::signature::FieldKind::ToolCalls {
        return value;
    }
    let mut value = value;
    if let Some(calls) = value.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls.iter_mut() {
            if let Value::Object(map) = call {
                let mut ordered = Map::new();
                ordered.insert(
                    "id".to_owned(),
                    map.shift_remove("id").unwrap_or(Value::Null),
                );
                for key in ["name", "args"] {
                    if let Some(v) = map.shift_remove(key) {
                        ordered.insert(key.to_owned(), v);
                    }
                }
                ordered.extend(std::mem::take(map));
                *map = ordered;
            }
        }
    }
    value
}

fn parse_text_value(field: &Field, text: &str) -> Result<Value, ValueError> {
    if field.is_text() {
        return Ok(Value::String(text.to_owned()));
    }
    if nested_too_deep(text) {
        return Err(ValueError::TooDeep);
    }
    let raw = Value::String(text.to_owned());
    if let Some(member) = enum_member(field, &raw) {
        return member;
    }
    if let Some(value) = literal_match(field, &raw) {
        return value;
    }
    if accepts_str_and_null(field.schema()) {
        return coerce(&raw, field.schema(), field.schema());
    }
    coerce(&candidate(text), field.schema(), field.schema())
}

/// What DSPy's `parse_value` validates for text: `json_repair.loads(text)` (strict JSON, or the
/// JSON containers found in the text, repaired); when that finds nothing, `ast.literal_eval(text)`
/// (`+3`, `1_000`, `0x10`, `'quoted'`, `1, 2`); when that fails too, the text itself.
fn candidate(text: &str) -> Value {
    repair::loads(text)
        .or_else(|| pyliteral::literal_eval(text))
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

/// Enum fields (a Python `Enum` in a DSPy signature: an `enum` schema whose type is not written
/// `Literal[...]`), read as DSPy's `find_enum_member` does: a member's value, exactly as written
/// (no quotes stripped, no JSON read), or else a member's name. Schemas carry values only: names
/// come from an `x-enum-varnames` list beside `enum` when the schema has one, and are otherwise
/// taken to be Python's convention, the value in upper case (`HIGH = "high"`).
fn enum_member(field: &Field, value: &Value) -> Option<Result<Value, ValueError>> {
    let type_name = field.type_name();
    if type_name.starts_with("Literal[") || type_name == "str" {
        return None;
    }
    let schema = field.schema();
    let members = schema.get("enum").and_then(Value::as_array)?;
    let same = |member: &Value| match (member, value) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => member == value,
    };
    if let Some(member) = members.iter().find(|m| same(m)) {
        return Some(Ok(member.clone()));
    }
    if let Value::String(name) = value {
        let declared = schema
            .get("x-enum-varnames")
            .and_then(Value::as_array)
            .filter(|names| names.len() == members.len());
        let found = match declared {
            Some(names) => names.iter().position(|n| n.as_str() == Some(name.as_str())),
            None => members.iter().position(|m| {
                m.as_str()
                    .map(str::to_uppercase)
                    .is_some_and(|upper| is_identifier(&upper) && upper == *name)
            }),
        };
        if let Some(i) = found {
            return Some(Ok(members[i].clone()));
        }
    }
    let shown = match value {
        Value::String(s) => s.clone(),
        other => crate::schema::python_repr(other),
    };
    Some(Err(ValueError::NotAMember {
        value: shown,
        enum_name: type_name.to_string(),
    }))
}

/// Whether `name` is a Python identifier (ASCII form).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Parses a field value that is already JSON (JSON format).
pub fn parse_json(field: &Field, value: &Value) -> Result<Value, ValueError> {
    if field.is_text() {
        return Ok(match value {
            Value::String(s) => Value::String(s.clone()),
            // Python's `str()` of what was parsed: `{'city': 'Paris'}` for a dict, `True`, `42`.
            other => Value::String(crate::schema::python_repr(other)),
        });
    }
    if let Some(member) = enum_member(field, value) {
        return member;
    }
    if let Some(value) = literal_match(field, value) {
        return value;
    }
    match value {
        Value::String(text) if !accepts_str_and_null(field.schema()) => parse_text(field, text),
        other => {
            let wrapped = (field.kind() == crate::signature::FieldKind::ToolCalls)
                .then(|| wrapped_calls(other.clone()))
                .flatten();
            coerce(
                wrapped.as_ref().unwrap_or(other),
                field.schema(),
                field.schema(),
            )
            .map(|value| typed(field, value))
        }
    }
}

/// `Literal[...]` fields: the value itself, or a string that names it (quoted, or wrapped in
/// `Literal[...]`).
fn literal_match(field: &Field, value: &Value) -> Option<Result<Value, ValueError>> {
    if !field.type_name().starts_with("Literal[") {
        return None;
    }
    let allowed = field.schema().get("enum").and_then(Value::as_array)?;
    if allowed.contains(value) {
        return Some(Ok(value.clone()));
    }
    if let Value::String(text) = value {
        let mut v = strip(text);
        if (v.starts_with("Literal[") || v.starts_with("str[")) && v.ends_with(']') {
            let open = v.find('[').unwrap_or(0);
            v = &v[open + 1..v.len() - 1];
        }
        let chars: Vec<char> = v.chars().collect();
        if chars.len() > 1
            && chars[0] == chars[chars.len() - 1]
            && (chars[0] == '"' || chars[0] == '\'')
        {
            v = &v[1..v.len() - 1];
        }
        let candidate = Value::String(v.to_owned());
        if allowed.contains(&candidate) {
            return Some(Ok(candidate));
        }
        // Non-string literals (`Literal[1, 2]`) written as text.
        if let Some(parsed) = lenient_json(v)
            && allowed.contains(&parsed)
        {
            return Some(Ok(parsed));
        }
    }
    Some(Err(ValueError::NotAllowed {
        value: value.to_string(),
        allowed: allowed.iter().map(Value::to_string).collect(),
    }))
}

/// `Optional[str]`-like unions keep text as text.
fn accepts_str_and_null(schema: &Value) -> bool {
    let branches = schema.get("anyOf").and_then(Value::as_array);
    let has = |t: &str| {
        branches.is_some_and(|b| {
            b.iter()
                .any(|s| s.get("type").and_then(Value::as_str) == Some(t))
        })
    };
    has("string") && has("null")
}

/// How deep a value read from a model may nest: serde_json's own limit. Deeper text is refused
/// with an error (see [`nested_too_deep`]) before anything recursive reads it, so a hostile reply
/// cannot overflow the stack.
pub const MAX_NESTING: usize = 128;

/// Whether brackets (`[`, `{`, `(`) or XML elements in `text` open more than [`MAX_NESTING`]
/// levels deep, counted outside double-quoted strings. Linear in the text and never recursive.
///
/// ```
/// use signet::adapter::value::nested_too_deep;
/// assert!(!nested_too_deep("[[1, 2], {\"a\": [3]}]"));
/// assert!(nested_too_deep(&"[".repeat(129)));
/// assert!(!nested_too_deep(&format!("\"{}\"", "[".repeat(500))));
/// ```
pub fn nested_too_deep(text: &str) -> bool {
    let mut depth = 0usize;
    let mut chars = outside_strings(text).map(|(_, c)| c).peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth = depth.saturating_sub(1),
            '<' => match chars.peek() {
                Some('/') => depth = depth.saturating_sub(1),
                Some(next) if next.is_alphabetic() || *next == '_' => depth += 1,
                _ => {}
            },
            '/' if chars.peek() == Some(&'>') => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return true;
        }
    }
    false
}

/// The characters of `text` (with their byte offsets) outside JSON's double-quoted strings; the
/// quotes themselves are left out too.
fn outside_strings(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut in_string = false;
    let mut escaped = false;
    text.char_indices().filter(move |&(_, c)| {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            return false;
        }
        in_string = c == '"';
        !in_string
    })
}

/// The error for a value deeper than [`MAX_NESTING`], as text.
pub(crate) fn too_deep() -> String {
    ValueError::TooDeep.to_string()
}

/// Reads JSON, or a Python literal (`True`, `None`, `'single quotes'`, tuples), leniently: trailing
/// commas are dropped and unclosed brackets closed. `None` when the text is neither, or when it
/// nests deeper than [`MAX_NESTING`].
pub fn lenient_json(text: &str) -> Option<Value> {
    let text = strip(text);
    if text.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let mut parser = Literal {
        chars: text.chars().collect(),
        pos: 0,
        depth: 0,
        repaired: false,
    };
    let value = parser.value()?;
    parser.skip_ws();
    (parser.pos == parser.chars.len()).then_some(value)
}

/// The JSON object a reply stands for, read as DSPy reads it (`json_repair`, then the first
/// balanced `{...}`): the object itself, or the one inside prose or a code fence. When the reply
/// holds several objects one after the other, an object with the same keys (and shape) as the one
/// before it replaces it — a model correcting itself — and if that leaves one object, it is the
/// answer; otherwise the first object is.
///
/// ```
/// use signet::adapter::value::reply_object;
/// let corrected = reply_object("{\"a\": 1}\n{\"a\": 2}").unwrap();
/// assert_eq!(corrected["a"], 2);
/// let different = reply_object("{\"a\": 1}\n{\"b\": 2}").unwrap();
/// assert_eq!(different["a"], 1);
/// ```
pub fn reply_object(text: &str) -> Option<Map<String, Value>> {
    if let Some(Value::Object(object)) = lenient_json(text) {
        return Some(object);
    }
    let mut sequence: Vec<Map<String, Value>> = Vec::new();
    let mut first = None;
    let mut rest = text;
    let mut after_comma = false;
    while let Some(found) = first_json_object(rest) {
        let start = found.as_ptr() as usize - rest.as_ptr() as usize;
        after_comma |= rest[..start].trim_end().ends_with(',');
        rest = &rest[start + found.len()..];
        let Some(Value::Object(object)) = lenient_json(found) else {
            continue;
        };
        if first.is_none() {
            first = Some(object.clone());
        }
        match sequence.last() {
            Some(last) if !after_comma && same_shape_objects(last, &object) => {
                sequence.pop();
            }
            Some(last) if last.is_empty() => {
                sequence.pop();
            }
            _ => {}
        }
        sequence.push(object);
        after_comma = rest.trim_start().starts_with(',');
    }
    if sequence.len() == 1 {
        sequence.pop()
    } else {
        first
    }
}

/// `json_repair`'s test for a repeated object: the same keys, with values of the same types,
/// recursively.
fn same_shape_objects(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(key, value)| b.get(key).is_some_and(|other| same_shape(value, other)))
}

fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => same_shape_objects(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_shape(x, y))
        }
        // Python's int and float are different types; JSON numbers say which they are.
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Finds the first balanced `{...}` in `text` (the JSON object a model wrapped in prose or a code
/// fence). Braces inside JSON strings do not count.
pub fn first_json_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    for (i, c) in outside_strings(&text[start..]) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// A small reader for JSON-like and Python-literal text.
struct Literal {
    chars: Vec<char>,
    pos: usize,
    /// Containers open around `pos`; reading stops past [`MAX_NESTING`].
    depth: usize,
    repaired: bool,
}

impl Literal {
    fn skip_ws(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.skip_ws();
        let open = *self.chars.get(self.pos)?;
        if matches!(open, '{' | '[' | '(') {
            if self.depth >= MAX_NESTING {
                return None;
            }
            self.depth += 1;
            let value = match open {
                '{' => self.object(),
                '[' => self.sequence(']'),
                _ => self.sequence(')'),
            };
            self.depth -= 1;
            return value;
        }
        match open {
            '"' | '\'' => self.string().map(Value::String),
            _ => self.word(),
        }
    }

    fn object(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.chars.get(self.pos) {
                None => {
                    self.repaired = true;
                    return Some(Value::Object(map));
                }
                Some('}') => {
                    self.pos += 1;
                    return Some(Value::Object(map));
                }
                Some(',') => self.pos += 1,
                Some(_) => {
                    let key = match self.value()? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.skip_ws();
                    if self.chars.get(self.pos) != Some(&':') {
                        return None;
                    }
                    self.pos += 1;
                    let value = self.value()?;
                    map.insert(key, value);
                }
            }
        }
    }

    fn sequence(&mut self, close: char) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.chars.get(self.pos) {
                None => {
                    self.repaired = true;
                    return Some(Value::Array(items));
                }
                Some(c) if *c == close => {
                    self.pos += 1;
                    return Some(Value::Array(items));
                }
                Some(',') => self.pos += 1,
                Some(_) => items.push(self.value()?),
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.chars[self.pos];
        self.pos += 1;
        let mut out = String::new();
        while let Some(&c) = self.chars.get(self.pos) {
            self.pos += 1;
            match c {
                c if c == quote => return Some(out),
                '\\' => {
                    let escaped = *self.chars.get(self.pos)?;
                    self.pos += 1;
                    out.push(match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'u' => {
                            let hex: String =
                                self.chars.get(self.pos..self.pos + 4)?.iter().collect();
                            self.pos += 4;
                            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                        }
                        other => other,
                    });
                }
                c => out.push(c),
            }
        }
        None
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.pos;
        while self
            .chars
            .get(self.pos)
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '-' | '+' | '.' | '_'))
        {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match word.as_str() {
            "True" | "true" => Some(Value::Bool(true)),
            "False" | "false" => Some(Value::Bool(false)),
            "None" | "null" => Some(Value::Null),
            number => {
                if let Ok(i) = number.parse::<i64>() {
                    Some(Value::from(i))
                } else {
                    number
                        .parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .map(Value::Number)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn int() -> Field {
        Field::from_schema("count", json!({"type": "integer"}))
    }

    fn int_list() -> Field {
        Field::from_schema(
            "counts",
            json!({"type": "array", "items": {"type": "integer"}}),
        )
    }

    #[test]
    fn ints_follow_pydantic_lax_rules() {
        assert_eq!(parse_text(&int(), "3").unwrap(), 3);
        assert_eq!(parse_text(&int(), "3.0").unwrap(), 3);
        assert_eq!(parse_text(&int(), "\"3\"").unwrap(), 3);
        assert_eq!(parse_text(&int(), "-3").unwrap(), -3);
        for bad in ["three", "3 museums", "3.5", "", "```\n3\n```"] {
            assert!(parse_text(&int(), bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn text_follows_dspy_parse_value() {
        // json_repair finds nothing in a bare scalar; ast.literal_eval reads it.
        assert_eq!(parse_text(&int(), "1_000").unwrap(), 1000);
        assert_eq!(parse_text(&int(), "0x10").unwrap(), 16);
        assert_eq!(parse_text(&int(), "+3").unwrap(), 3);
        assert_eq!(parse_text(&int(), "true").unwrap(), 1);
        assert!(parse_text(&int(), "1,000").is_err()); // the tuple (1, 0)
        let ratio = Field::from_schema("r", json!({"type": "number"}));
        for text in ["nan", "NaN", "inf", "-Infinity"] {
            assert!(
                matches!(
                    parse_text(&ratio, text).unwrap_err(),
                    ValueError::NotFinite { .. }
                ),
                "{text}"
            );
        }
        // Containers inside fences or prose, repaired.
        assert_eq!(
            parse_text(&int_list(), "```json\n[1, 2]\n```").unwrap(),
            json!([1, 2])
        );
        let scores = Field::from_schema(
            "s",
            json!({"type": "object", "additionalProperties": {"type": "number"}}),
        );
        assert_eq!(
            parse_text(&scores, "{x: 0.5} and more").unwrap(),
            json!({"x": 0.5})
        );
    }

    #[test]
    fn enums_take_a_value_or_a_member_name() {
        let level = Field::from_schema("level", json!({"type": "string", "enum": ["low", "high"]}))
            .with_type_name("Level");
        assert_eq!(parse_text(&level, "high").unwrap(), "high");
        assert_eq!(parse_text(&level, "HIGH").unwrap(), "high");
        for bad in ["\"low\"", "Level.HIGH", "High", "medium"] {
            let error = parse_text(&level, bad).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("not a valid name or value for the enum Level")
            );
        }
        assert_eq!(parse_json(&level, &json!("LOW")).unwrap(), "low");
        let named = Field::from_schema(
            "p",
            json!({"type": "integer", "enum": [1, 2], "x-enum-varnames": ["ONE", "TWO"]}),
        )
        .with_type_name("Priority");
        assert_eq!(parse_text(&named, "TWO").unwrap(), 2);
        assert_eq!(parse_json(&named, &json!(1)).unwrap(), 1);
        assert!(parse_text(&named, "1").is_err()); // text is never the integer 1
    }

    #[test]
    fn python_literals_and_containers() {
        let list = Field::from_schema(
            "names",
            json!({"type": "array", "items": {"type": "string"}}),
        );
        assert_eq!(
            parse_text(&list, "['a', \"b\"]").unwrap(),
            json!(["a", "b"])
        );
        assert_eq!(
            parse_text(&list, "[\"a\", \"b\",]").unwrap(),
            json!(["a", "b"])
        );
        let flag = Field::from_schema("ok", json!({"type": "boolean"}));
        assert_eq!(parse_text(&flag, "True").unwrap(), true);
        assert_eq!(parse_text(&flag, "yes").unwrap(), true);
        let maybe = Field::from_schema(
            "m",
            json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        );
        assert_eq!(parse_text(&maybe, "None").unwrap(), Value::Null);
        assert_eq!(parse_text(&maybe, "4").unwrap(), 4);
    }

    #[test]
    fn literals_accept_quoted_and_wrapped_values() {
        let choice = Field::from_schema("c", json!({"type": "string", "enum": ["a", "b"]}));
        assert_eq!(parse_text(&choice, "a").unwrap(), "a");
        assert_eq!(parse_text(&choice, "'b'").unwrap(), "b");
        assert_eq!(parse_text(&choice, "Literal['a']").unwrap(), "a");
        assert!(parse_text(&choice, "c").is_err());
    }

    #[test]
    fn models_fill_defaults_and_drop_unknown_keys() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "tags": {"type": "array", "default": []}},
            "required": ["name"]
        });
        let person = Field::from_schema("p", schema);
        assert_eq!(
            parse_text(&person, "{\"name\": \"A\", \"x\": 1}").unwrap(),
            json!({"name": "A", "tags": []})
        );
        assert!(
            parse_text(&person, "{\"tags\": []}")
                .unwrap_err()
                .to_string()
                .contains("name")
        );
    }

    #[test]
    fn the_lenient_reader_stops_at_the_nesting_limit() {
        let at_limit = format!("{}{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(lenient_json(&at_limit).is_some());
        assert!(!nested_too_deep(&at_limit));
        // Torn (so serde_json is not the one refusing) and one level deeper.
        let past = "[".repeat(MAX_NESTING + 1);
        assert_eq!(lenient_json(&past), None);
        assert!(nested_too_deep(&past));
        assert_eq!(
            parse_text(&int_list(), &past).unwrap_err(),
            ValueError::TooDeep
        );
    }

    #[test]
    fn first_object_is_found_in_prose() {
        assert_eq!(
            first_json_object("Sure! ```json\n{\"a\": {\"b\": 1}}\n```"),
            Some("{\"a\": {\"b\": 1}}")
        );
        assert_eq!(first_json_object("no object"), None);
        assert_eq!(
            first_json_object(r#"x {"a": "}{", "b": "\\"} y"#),
            Some(r#"{"a": "}{", "b": "\\"}"#)
        );
    }
}
