//! The parser for string signatures such as `"question, context -> answer: int"`.

use serde_json::{Value, json};

use super::{DynSignature, Field, SignatureError};

pub(super) fn parse_signature(text: &str) -> Result<DynSignature, SignatureError> {
    let error = |reason: String, position: usize| SignatureError::Parse {
        signature: text.to_owned(),
        reason,
        position,
    };
    let arrows: Vec<usize> = text.match_indices("->").map(|(i, _)| i).collect();
    let arrow = match arrows.as_slice() {
        [one] => *one,
        [] => {
            return Err(error(
                "expected `inputs -> outputs`, found no `->`".into(),
                text.len(),
            ));
        }
        [_, second, ..] => return Err(error("expected exactly one `->`".into(), *second)),
    };
    let mut signature = DynSignature::new("StringSignature");
    for field in parse_fields(text, 0, &text[..arrow])? {
        signature = signature.with_input(field);
    }
    for field in parse_fields(text, arrow + 2, &text[arrow + 2..])? {
        signature = signature.with_output(field);
    }
    if signature.outputs().is_empty() {
        return Err(error(
            "a signature needs at least one output field".into(),
            arrow + 2,
        ));
    }
    signature.validate()?;
    Ok(signature)
}

/// Parses one side of the arrow: `name`, `name: type`, separated by top-level commas.
fn parse_fields(whole: &str, offset: usize, side: &str) -> Result<Vec<Field>, SignatureError> {
    let mut fields = Vec::new();
    for (start, part) in split_top_level(side, ',') {
        let position = offset + start;
        let error = |reason: String| SignatureError::Parse {
            signature: whole.to_owned(),
            reason,
            position,
        };
        let trimmed = part.trim();
        if trimmed.is_empty() {
            if side.trim().is_empty() {
                break;
            }
            return Err(error("empty field name".into()));
        }
        let (name, ty) = match trimmed.split_once(':') {
            Some((name, ty)) => (name.trim(), Some(ty.trim())),
            None => (trimmed, None),
        };
        if !is_identifier(name) {
            return Err(error(format!("`{name}` is not a valid field name")));
        }
        let field = match ty {
            None => Field::str(name),
            // DSPy's special types: a conversation, the tools offered, the calls made.
            Some("History" | "dspy.History") => Field::of::<super::History>(name),
            Some("ToolCalls" | "dspy.ToolCalls") => Field::of::<super::ToolCalls>(name),
            Some("list[Tool]" | "list[dspy.Tool]" | "List[Tool]" | "List[dspy.Tool]") => {
                Field::of::<super::Tools>(name)
            }
            Some(ty) => {
                if let Some(of) = media_type(ty) {
                    fields.push(of(name.to_owned()));
                    continue;
                }
                let mut parser = TypeParser { text: ty, pos: 0 };
                let schema = parser
                    .parse_type()
                    .and_then(|schema| parser.expect_end().map(|()| schema))
                    .map_err(|reason| error(format!("in the type of `{name}`: {reason}")))?;
                Field::from_schema(name, schema)
            }
        };
        fields.push(field);
    }
    Ok(fields)
}

/// A media type as DSPy writes it in a string signature (`dspy.Image`, `list[Image]`,
/// `Optional[dspy.Audio]`, ...): how to make its field.
fn media_type(ty: &str) -> Option<fn(String) -> Field> {
    use crate::media::{Audio, Image};
    let compact: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let compact = compact.replace("dspy.", "").replace("List[", "list[");
    let of: fn(String) -> Field = match compact.as_str() {
        "Image" => Field::of::<Image>,
        "Audio" => Field::of::<Audio>,
        "list[Image]" => Field::of::<Vec<Image>>,
        "list[Audio]" => Field::of::<Vec<Audio>>,
        "Optional[Image]" | "Image|None" => Field::of::<Option<Image>>,
        "Optional[Audio]" | "Audio|None" => Field::of::<Option<Audio>>,
        _ => return None,
    };
    Some(of)
}

/// Splits on `sep` outside brackets and quotes, returning each part with its byte offset.
fn split_top_level(text: &str, sep: char) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                parts.push((start, &text[start..i]));
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push((start, &text[start..]));
    parts
}

pub(super) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// A recursive-descent parser for Python type expressions, producing JSON schemas.
struct TypeParser<'a> {
    text: &'a str,
    pos: usize,
}

impl TypeParser<'_> {
    fn parse_type(&mut self) -> Result<Value, String> {
        let first = self.parse_atom()?;
        // `int | None` style unions.
        let mut members = vec![first];
        while self.eat('|') {
            members.push(self.parse_atom()?);
        }
        Ok(if members.len() == 1 {
            members.remove(0)
        } else {
            any_of(members)
        })
    }

    fn parse_atom(&mut self) -> Result<Value, String> {
        self.skip_ws();
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        {
            self.pos += self.peek().map_or(0, char::len_utf8);
        }
        let name = &self.text[start..self.pos];
        if name.is_empty() {
            return Err(format!("expected a type at `{}`", &self.text[start..]));
        }
        let name = name.rsplit('.').next().unwrap_or(name);
        if name == "Literal" {
            return self.parse_literal();
        }
        let args = if self.eat('[') {
            self.parse_args()?
        } else {
            Vec::new()
        };
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "`{name}` takes {n} type argument(s), found {}",
                    args.len()
                ))
            }
        };
        let schema = match name {
            "str" => json!({"type": "string"}),
            "int" => json!({"type": "integer"}),
            "float" => json!({"type": "number"}),
            "bool" => json!({"type": "boolean"}),
            "None" | "NoneType" => json!({"type": "null"}),
            "Any" => json!({}),
            "list" | "List" | "set" | "Set" if args.is_empty() => json!({"type": "array"}),
            "list" | "List" | "set" | "Set" => {
                arity(1)?;
                json!({"type": "array", "items": args[0]})
            }
            "dict" | "Dict" if args.is_empty() => json!({"type": "object"}),
            "dict" | "Dict" => {
                arity(2)?;
                if args[0] != json!({"type": "string"}) {
                    return Err(
                        "dictionary keys must be `str` (JSON object keys are strings)".into(),
                    );
                }
                json!({"type": "object", "additionalProperties": args[1]})
            }
            "tuple" | "Tuple" => json!({
                "type": "array",
                "prefixItems": args,
                "minItems": args.len(),
                "maxItems": args.len(),
            }),
            "Optional" => {
                arity(1)?;
                any_of(vec![args[0].clone(), json!({"type": "null"})])
            }
            "Union" if !args.is_empty() => any_of(args),
            other => return Err(format!("unknown type `{other}`")),
        };
        Ok(schema)
    }

    fn parse_args(&mut self) -> Result<Vec<Value>, String> {
        let mut args = vec![self.parse_type()?];
        while self.eat(',') {
            args.push(self.parse_type()?);
        }
        if !self.eat(']') {
            return Err("expected `]`".into());
        }
        Ok(args)
    }

    fn parse_literal(&mut self) -> Result<Value, String> {
        if !self.eat('[') {
            return Err("`Literal` needs values, as in `Literal['a', 'b']`".into());
        }
        let mut values = Vec::new();
        loop {
            self.skip_ws();
            values.push(self.parse_literal_value()?);
            if self.eat(']') {
                break;
            }
            if !self.eat(',') {
                return Err("expected `,` or `]` in `Literal[...]`".into());
            }
        }
        let kind = if values.iter().all(Value::is_string) {
            "string"
        } else if values.iter().all(Value::is_i64) {
            "integer"
        } else if values.iter().all(Value::is_boolean) {
            "boolean"
        } else {
            return Ok(json!({"enum": values}));
        };
        Ok(json!({"type": kind, "enum": values}))
    }

    fn parse_literal_value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(q @ ('\'' | '"')) => {
                self.pos += 1;
                let start = self.pos;
                let end = self.text[start..]
                    .find(q)
                    .ok_or("unterminated string in `Literal`")?;
                self.pos = start + end + 1;
                Ok(Value::String(self.text[start..start + end].to_owned()))
            }
            _ => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '.')
                {
                    self.pos += 1;
                }
                match &self.text[start..self.pos] {
                    "True" => Ok(json!(true)),
                    "False" => Ok(json!(false)),
                    "None" => Ok(Value::Null),
                    number => number
                        .parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| format!("`{number}` is not a literal value")),
                }
            }
        }
    }

    fn expect_end(&mut self) -> Result<(), String> {
        self.skip_ws();
        match self.text.get(self.pos..) {
            Some("") | None => Ok(()),
            Some(rest) => Err(format!("unexpected `{rest}` after the type")),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }
}

fn any_of(members: Vec<Value>) -> Value {
    json!({"anyOf": members})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(text: &str) -> Vec<(String, String)> {
        let sig = DynSignature::parse(text).unwrap();
        sig.inputs()
            .iter()
            .chain(sig.outputs())
            .map(|f| (f.name().to_owned(), f.type_name().to_owned()))
            .collect()
    }

    #[test]
    fn parses_python_type_spellings() {
        let parsed = types(
            "a, b: int, c: list[str] -> d: dict[str, int], e: Optional[int], \
             f: Literal['x', 'y'], g: float | None, h: tuple[int, str], i: bool, j: Any",
        );
        let expected = [
            ("a", "str"),
            ("b", "int"),
            ("c", "list[str]"),
            ("d", "dict[str, int]"),
            ("e", "Union[int, NoneType]"),
            ("f", "Literal['x', 'y']"),
            ("g", "Union[float, NoneType]"),
            ("h", "tuple[int, str]"),
            ("i", "bool"),
            ("j", "Any"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(parsed, expected);
    }

    #[test]
    fn dspy_special_types_keep_their_role() {
        use crate::signature::FieldKind;
        let sig = DynSignature::parse(
            "question, history: dspy.History, tools: list[dspy.Tool] -> answer, calls: ToolCalls",
        )
        .unwrap();
        let kinds: Vec<(&str, FieldKind)> = sig
            .inputs()
            .iter()
            .chain(sig.outputs())
            .map(|f| (f.type_name(), f.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("str", FieldKind::Text),
                ("History", FieldKind::History),
                ("list[Tool]", FieldKind::Tools),
                ("str", FieldKind::Text),
                ("ToolCalls", FieldKind::ToolCalls),
            ]
        );
    }

    #[test]
    fn schemas_are_in_dspy_order() {
        let sig =
            DynSignature::parse("-> a: list[str], b: Optional[int], c: Literal['a', 'b']").unwrap();
        let schemas: Vec<String> = sig
            .outputs()
            .iter()
            .map(|f| f.schema().to_string())
            .collect();
        assert_eq!(
            schemas,
            [
                r#"{"type":"array","items":{"type":"string"}}"#,
                r#"{"anyOf":[{"type":"integer"},{"type":"null"}]}"#,
                r#"{"type":"string","enum":["a","b"]}"#,
            ]
        );
        assert!(sig.inputs().is_empty());
    }

    #[test]
    fn errors_say_what_and_where() {
        let err = DynSignature::parse("question answer").unwrap_err();
        assert!(err.to_string().contains("found no `->`"), "{err}");
        let err = DynSignature::parse("q -> a: integer").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid signature `q -> a: integer`: in the type of `a`: unknown type `integer` (at byte 4)"
        );
        let err = DynSignature::parse("q -> a: list[int").unwrap_err();
        assert!(err.to_string().contains("expected `]`"), "{err}");
        let err = DynSignature::parse("q, q -> a").unwrap_err();
        assert_eq!(err, SignatureError::DuplicateField { name: "q".into() });
        let err = DynSignature::parse("q ->").unwrap_err();
        assert!(err.to_string().contains("at least one output"), "{err}");
        let err = DynSignature::parse("1q -> a").unwrap_err();
        assert!(err.to_string().contains("not a valid field name"), "{err}");
        let err = DynSignature::parse("q -> a: dict[int, str]").unwrap_err();
        assert!(err.to_string().contains("keys must be `str`"), "{err}");
    }
}
