//! Python's text renderings of JSON values, which DSPy's prompts use: `str(value)` for scalars and
//! `json.dumps(value, ensure_ascii=False)` (optionally `indent=2`) for containers.

use serde_json::{Number, Value};

/// Python's `repr`/`str` of a float (`1.0`, `0.5`, `1e+20`, `1e-05`, `inf`, `nan`).
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "inf".to_owned()
        } else {
            "-inf".to_owned()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".to_owned()
        } else {
            "0.0".to_owned()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as Python's repr does.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        // Positional notation.
        let point = exponent + 1; // digits before the decimal point
        let text = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_owned()
        } else {
            format!("{first}.{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs())
    }
}

fn number_str(n: &Number) -> String {
    if n.is_f64() {
        n.as_f64().map(float_repr).unwrap_or_else(|| n.to_string())
    } else {
        n.to_string()
    }
}

/// Python's `str()` of the value a JSON value stands for: strings as they are, `True`/`False`/`None`,
/// floats as Python prints them; containers as `json.dumps` renders them (what DSPy does for them).
pub(crate) fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => number_str(n),
        container => json_dumps(container, None),
    }
}

/// Python's `json.dumps(value, ensure_ascii=False)` (separators `", "` and `": "`), or with
/// `indent=Some(n)` the pretty form (`",\n"`, `": "`). Floats are written as Python writes them
/// (`1.0`, `NaN`, `Infinity`).
pub(crate) fn json_dumps(value: &Value, indent: Option<usize>) -> String {
    let mut out = String::new();
    write_json(value, indent, 0, &mut out);
    out
}

fn write_json(value: &Value, indent: Option<usize>, level: usize, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                match n.as_f64() {
                    Some(x) if x.is_nan() => out.push_str("NaN"),
                    Some(x) if x.is_infinite() => {
                        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" })
                    }
                    Some(x) => out.push_str(&float_repr(x)),
                    None => out.push_str(&n.to_string()),
                }
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(i, indent, level + 1, out);
                write_json(item, indent, level + 1, out);
            }
            closing(indent, level, out);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                separator(i, indent, level + 1, out);
                write_json_string(k, out);
                out.push_str(": ");
                write_json(v, indent, level + 1, out);
            }
            closing(indent, level, out);
            out.push('}');
        }
    }
}

fn separator(index: usize, indent: Option<usize>, level: usize, out: &mut String) {
    match indent {
        Some(width) => {
            if index > 0 {
                out.push(',');
            }
            out.push('\n');
            out.push_str(&" ".repeat(width * level));
        }
        None => {
            if index > 0 {
                out.push_str(", ");
            }
        }
    }
}

fn closing(indent: Option<usize>, level: usize, out: &mut String) {
    if let Some(width) = indent {
        out.push('\n');
        out.push_str(&" ".repeat(width * level));
    }
}

/// A JSON string as Python's `json.dumps(.., ensure_ascii=False)` writes it, except that the line
/// separators U+0085, U+2028 and U+2029 are escaped (Python leaves them raw).
fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            // Line separators Python's `splitlines` (and so the Chat parser) would break a string
            // on; Python's `json.dumps` leaves them raw, which loses them. Escaping is lossless.
            '\u{85}' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `str.splitlines()`: splits on every line boundary Python recognises and drops them.
/// Read byte by byte: the boundaries are ASCII controls and three UTF-8 sequences (U+0085
/// `C2 85`, U+2028 `E2 80 A8`, U+2029 `E2 80 A9`) that no other character's bytes contain.
pub(crate) fn splitlines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    // Room for a short reply's lines (markers, values, blank lines) in one allocation; counting
    // the boundaries first cost more than growing.
    let mut lines = Vec::with_capacity(8);
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let width = match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => 2,
            b'\n' | b'\r' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
            0xc2 if bytes.get(i + 1) == Some(&0x85) => 2,
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                3
            }
            _ => {
                i += 1;
                continue;
            }
        };
        lines.push(&text[start..i]);
        i += width;
        start = i;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Python's `str.strip()` (Unicode whitespace plus the separator controls Python counts).
pub(crate) fn strip(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// Python's `str.isspace()` for one character.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python() {
        for (x, expected) in [
            (0.5, "0.5"),
            (3.0, "3.0"),
            (-2.25, "-2.25"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (100.0, "100.0"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(float_repr(x), expected, "{x}");
        }
    }

    #[test]
    fn scalars_print_like_python_str() {
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(2)), "2");
        assert_eq!(py_str(&json!(2.0)), "2.0");
        assert_eq!(py_str(&json!("x")), "x");
        assert_eq!(py_str(&json!(["a", 1])), "[\"a\", 1]");
    }

    #[test]
    fn pretty_json_matches_indent_2() {
        assert_eq!(
            json_dumps(&json!({"a": 1, "b": {"c": [true, null]}}), Some(2)),
            "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": [\n      true,\n      null\n    ]\n  }\n}"
        );
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(splitlines("a\r\nb\rc\n"), ["a", "b", "c"]);
        assert_eq!(splitlines("a\n\nb"), ["a", "", "b"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("a\u{2028}b"), ["a", "b"]);
        assert_eq!(
            splitlines("é\u{85}ü\u{2029}\u{2027}\u{0b}x\u{1e}\u{1f}\r"),
            ["é", "ü", "\u{2027}", "x", "\u{1f}"]
        );
        assert_eq!(splitlines("\r\r\n\n"), ["", "", ""]);
    }
}

#[cfg(test)]
mod doc_examples {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_prints_floats_as_python_does() {
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1e20), "1e+20");
        assert_eq!(float_repr(1.5e-5), "1.5e-05");
        assert_eq!(float_repr(123456789012345680.0), "1.2345678901234568e+17");
    }

    #[test]
    fn json_dumps_matches_pythons_separators() {
        assert_eq!(
            json_dumps(&json!({"a": [1, 2.0], "b": "é"}), None),
            r#"{"a": [1, 2.0], "b": "é"}"#
        );
        assert_eq!(json_dumps(&json!({"a": []}), Some(2)), "{\n  \"a\": []\n}");
    }
}
