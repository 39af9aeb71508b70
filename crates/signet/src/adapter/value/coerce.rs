//! Coercing a JSON value to a JSON schema as pydantic's lax mode would (`"3"` for an integer,
//! `true` for a number, a string for a string list item, ..).

use serde_json::{Map, Number, Value};

use super::ValueError;

/// A schema keyword's value. Schema objects hold a handful of keys: a scan beats hashing the name
/// (serde_json's maps hash with SipHash), and `coerce` looks up several keywords per value.
fn keyword<'a>(schema: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    schema
        .iter()
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// Validates `value` against `schema` the way pydantic's lax mode does, converting where pydantic
/// would (`"3"` -> 3, `3.0` -> 3, `"yes"` -> true, missing model fields with defaults filled in,
/// unknown model fields dropped). `root` resolves `$ref`s.
pub fn coerce(value: &Value, schema: &Value, root: &Value) -> Result<Value, ValueError> {
    let Value::Object(s) = schema else {
        return Ok(value.clone());
    };
    if let Some(Value::String(reference)) = keyword(s, "$ref") {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .ok_or_else(|| ValueError::UnresolvableReference {
                reference: reference.clone(),
            })?;
        return coerce(value, target, root);
    }
    if let Some(Value::Array(allowed)) = keyword(s, "enum") {
        return if allowed.contains(value) {
            Ok(value.clone())
        } else {
            Err(ValueError::NotAllowed {
                value: value.to_string(),
                allowed: allowed.iter().map(Value::to_string).collect(),
            })
        };
    }
    if let Some(expected) = keyword(s, "const") {
        return if expected == value {
            Ok(value.clone())
        } else {
            Err(ValueError::NotConstant {
                value: value.to_string(),
                expected: expected.to_string(),
            })
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = keyword(s, key) {
            return coerce_union(value, branches, root);
        }
    }
    if let Some(Value::Array(all)) = keyword(s, "allOf") {
        let mut current = value.clone();
        for branch in all {
            current = coerce(&current, branch, root)?;
        }
        return Ok(current);
    }
    match keyword(s, "type") {
        Some(Value::String(t)) => coerce_type(value, t, s, root),
        Some(Value::Array(types)) => {
            let branches: Vec<Value> = types
                .iter()
                .map(|t| {
                    let mut branch = s.clone();
                    branch.insert("type".to_owned(), t.clone());
                    Value::Object(branch)
                })
                .collect();
            coerce_union(value, &branches, root)
        }
        _ => Ok(value.clone()),
    }
}

fn coerce_union(value: &Value, branches: &[Value], root: &Value) -> Result<Value, ValueError> {
    // An exact match wins (pydantic's "smart" unions), then the first lax conversion.
    for branch in branches {
        if let Ok(converted) = coerce(value, branch, root)
            && &converted == value
        {
            return Ok(converted);
        }
    }
    let mut errors = Vec::new();
    for branch in branches {
        match coerce(value, branch, root) {
            Ok(converted) => return Ok(converted),
            Err(e) => errors.push(e),
        }
    }
    Err(ValueError::NoAlternative {
        alternatives: errors,
    })
}

fn coerce_type(
    value: &Value,
    t: &str,
    schema: &Map<String, Value>,
    root: &Value,
) -> Result<Value, ValueError> {
    let fail = || {
        Err(ValueError::WrongType {
            value: describe(value),
            expected: t.to_owned(),
        })
    };
    match (t, value) {
        ("null", Value::Null) => Ok(Value::Null),
        ("string", Value::String(_)) => Ok(value.clone()),
        ("boolean", Value::Bool(_)) => Ok(value.clone()),
        ("boolean", Value::Number(n)) => match n.as_f64() {
            Some(0.0) => Ok(Value::Bool(false)),
            Some(1.0) => Ok(Value::Bool(true)),
            _ => fail(),
        },
        // pydantic reads these spellings as they are (no whitespace trimmed).
        ("boolean", Value::String(s)) => match s.to_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "on" | "1" => Ok(Value::Bool(true)),
            "false" | "f" | "no" | "n" | "off" | "0" => Ok(Value::Bool(false)),
            _ => fail(),
        },
        // Python's bool is an int: lax mode takes `True` as 1 (and 1.0).
        ("integer", Value::Bool(b)) => Ok(Value::from(i64::from(*b))),
        ("number", Value::Bool(b)) => Ok(Value::from(f64::from(u8::from(*b)))),
        ("integer", Value::Number(n)) => {
            if n.is_i64() || n.is_u64() {
                Ok(value.clone())
            } else {
                match n.as_f64() {
                    Some(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Ok(Value::from(x as i64)),
                    _ => Err(ValueError::Fractional {
                        value: n.to_string(),
                    }),
                }
            }
        }
        ("integer", Value::String(s)) => int_text(s).ok_or(()).or_else(|()| fail()),
        ("number", Value::Number(n)) => Ok(n
            .as_f64()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| value.clone())),
        ("number", Value::String(s)) => match float_text(s) {
            Some(x) => Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| ValueError::NotFinite { value: s.clone() }),
            None => fail(),
        },
        ("array", Value::Array(items)) => {
            if let Some(Value::Array(prefix)) = keyword(schema, "prefixItems") {
                if prefix.len() != items.len() {
                    return Err(ValueError::WrongLength {
                        expected: prefix.len(),
                        got: items.len(),
                    });
                }
                let out: Result<Vec<Value>, ValueError> = items
                    .iter()
                    .zip(prefix)
                    .map(|(v, s)| coerce(v, s, root))
                    .collect();
                return out.map(Value::Array);
            }
            let item_schema = keyword(schema, "items")
                .cloned()
                .unwrap_or(Value::Bool(true));
            let out: Result<Vec<Value>, ValueError> = items
                .iter()
                .enumerate()
                .map(|(i, v)| coerce(v, &item_schema, root).map_err(|e| e.at(format!("item {i}"))))
                .collect();
            out.map(Value::Array)
        }
        ("object", Value::Object(map)) => coerce_object(map, schema, root),
        _ => fail(),
    }
}

fn coerce_object(
    map: &Map<String, Value>,
    schema: &Map<String, Value>,
    root: &Value,
) -> Result<Value, ValueError> {
    let Some(Value::Object(properties)) = keyword(schema, "properties") else {
        // A mapping: every value follows `additionalProperties`.
        let value_schema = schema
            .get("additionalProperties")
            .cloned()
            .unwrap_or(Value::Bool(true));
        let mut out = Map::new();
        for (k, v) in map {
            out.insert(
                k.clone(),
                coerce(v, &value_schema, root).map_err(|e| e.at(format!("key {k:?}")))?,
            );
        }
        return Ok(Value::Object(out));
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (name, property) in properties {
        match map.get(name) {
            Some(v) => {
                out.insert(
                    name.clone(),
                    coerce(v, property, root).map_err(|e| e.at(name.as_str()))?,
                );
            }
            None if required.contains(&name.as_str()) => {
                return Err(ValueError::MissingField { name: name.clone() });
            }
            None => {
                if let Some(default) = property.as_object().and_then(|p| keyword(p, "default")) {
                    out.insert(name.clone(), default.clone());
                }
            }
        }
    }
    Ok(Value::Object(out))
}

/// pydantic's integer from text: surrounding whitespace, a sign, digits with single `_`s between
/// them, and a fractional part of zeros only (`"3.0"`); not `"3."`, `"1e3"` or `"0x10"`.
fn int_text(text: &str) -> Option<Value> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    if fraction.is_empty() || !fraction.chars().all(|c| c == '0') {
        return None;
    }
    let (negative, digits) = match whole.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, whole.strip_prefix('+').unwrap_or(whole)),
    };
    let digits = single_underscores(digits)?;
    let magnitude: i128 = digits.parse().ok()?;
    let n = if negative { -magnitude } else { magnitude };
    i64::try_from(n)
        .map(Value::from)
        .ok()
        .or_else(|| u64::try_from(n).ok().map(Value::from))
}

/// pydantic's float from text: surrounding whitespace, `_` between digits, and what Rust's (and
/// Python's) float syntax takes, `inf` and `nan` included.
fn float_text(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.contains('_') {
        let mut out = String::with_capacity(text.len());
        let chars: Vec<char> = text.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if c == '_' {
                let between = i > 0
                    && chars[i - 1].is_ascii_digit()
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit);
                if !between {
                    return None;
                }
            } else {
                out.push(c);
            }
        }
        return out.parse().ok();
    }
    text.parse().ok()
}

/// ASCII digits with single underscores between them, underscores removed.
fn single_underscores(digits: &str) -> Option<String> {
    let valid = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    valid.then(|| digits.replace('_', ""))
}

fn describe(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}
