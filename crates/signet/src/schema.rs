//! JSON-schema helpers shared by tools, signatures and adapters.
//!
//! Rust types describe themselves through [`schemars`]; these functions turn that description into the
//! forms the rest of Signet needs:
//!
//! * [`schema_for`]: a type's schema with its `$defs`, as schemars produces it (draft 2020-12).
//! * [`inline_refs`]: `$ref`s replaced by the definitions they point at, the way DSPy resolves them
//!   before showing a tool's arguments to the model (recursive types keep their `$defs`).
//! * [`dspy_ordered`]: keys sorted with `type` first at every level, the order DSPy prints schemas in.
//! * [`type_name`]: the Python-style type name DSPy prints in prompts (`int`, `list[str]`,
//!   `Union[int, NoneType]`, `Literal['a', 'b']`, class names).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The schema of `T`, as schemars generates it for deserialization (draft 2020-12), with the
/// `$schema` keyword removed. Definitions of nested types stay under `$defs`.
///
/// ```
/// let schema = signet::schema::schema_for::<Vec<u8>>();
/// assert_eq!(schema["type"], "array");
/// ```
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.shift_remove("$schema");
        // schemars titles every root ("Array_of_uint8"); only a struct's title is a class name.
        if !map.contains_key("properties") {
            map.shift_remove("title");
        }
    }
    value
}

/// How many JSON values [`inline_refs`] may produce before it gives up inlining and keeps the
/// schema's `$ref`s: a schema whose definitions refer to each other several times can expand to
/// far more than it is written with (40 definitions, each referring to the next twice, expand to
/// about 2^40 values).
pub const INLINE_NODE_LIMIT: usize = 10_000;

/// How deeply nested the result of [`inline_refs`] may be (objects and arrays inside each other)
/// before it gives up inlining and keeps the schema's `$ref`s.
pub const INLINE_DEPTH_LIMIT: usize = 128;

/// Why [`try_inline_refs`] did not inline a schema.
///
/// ```
/// use signet::schema::{InlineError, try_inline_refs};
/// use serde_json::json;
/// let schema = json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "array", "items": [1, 2, 3]}}});
/// let error = try_inline_refs(&schema, 3, 128).unwrap_err();
/// assert_eq!(error, InlineError::TooLarge { limit: 3 });
/// assert_eq!(error.to_string(), "inlining the schema's $refs would produce more than 3 values");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InlineError {
    /// The inlined schema would hold more than `limit` JSON values.
    #[error("inlining the schema's $refs would produce more than {limit} values")]
    TooLarge {
        /// The node limit.
        limit: usize,
    },
    /// The inlined schema would be nested more than `limit` levels deep.
    #[error("inlining the schema's $refs would nest it more than {limit} levels deep")]
    TooDeep {
        /// The depth limit.
        limit: usize,
    },
}

/// Replaces every local `$ref` (`#/$defs/..` or `#/definitions/..`) by the definition it names.
///
/// Definitions that refer to themselves (directly or through others) cannot be inlined without end;
/// their references are kept, and so is a `$defs` holding exactly the definitions still referenced.
/// Sibling keywords next to a `$ref` (such as `description`) are kept and win over the definition's.
///
/// Inlining is bounded: a schema that would expand past [`INLINE_NODE_LIMIT`] values or
/// [`INLINE_DEPTH_LIMIT`] levels (definitions that refer to each other many times over, as a
/// hostile MCP server may send) is returned as given, its `$ref`s and `$defs` kept, which
/// validators resolve just as well. [`try_inline_refs`] says why instead.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "type": "object",
///     "properties": {"p": {"$ref": "#/$defs/P", "description": "a point"}},
///     "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}}
/// });
/// let inlined = signet::schema::inline_refs(&schema);
/// assert_eq!(inlined["properties"]["p"]["properties"]["x"]["type"], "integer");
/// assert_eq!(inlined["properties"]["p"]["description"], "a point");
/// assert!(inlined.get("$defs").is_none());
/// ```
pub fn inline_refs(schema: &Value) -> Value {
    match try_inline_refs(schema, INLINE_NODE_LIMIT, INLINE_DEPTH_LIMIT) {
        Ok(inlined) => inlined,
        Err(error) => {
            tracing::debug!(%error, "keeping the schema's $refs");
            schema.clone()
        }
    }
}

/// [`inline_refs`] with explicit limits: an error, rather than the schema as given, when the
/// result would hold more than `max_nodes` JSON values or be nested more than `max_depth` levels.
/// The work done is bounded by the limits, whatever the schema.
///
/// ```
/// use serde_json::{Value, json};
/// use signet::schema::{InlineError, try_inline_refs};
/// // 40 definitions, each referring to the next twice: about 2^40 values once inlined.
/// let mut defs = serde_json::Map::new();
/// for i in 0..40 {
///     let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
///     defs.insert(format!("D{i}"), json!({"type": "array", "prefixItems": [next.clone(), next]}));
/// }
/// defs.insert("D40".into(), json!({"type": "string"}));
/// let schema = json!({"$ref": "#/$defs/D0", "$defs": Value::Object(defs)});
/// assert!(matches!(try_inline_refs(&schema, 10_000, 128), Err(InlineError::TooLarge { .. })));
/// ```
pub fn try_inline_refs(
    schema: &Value,
    max_nodes: usize,
    max_depth: usize,
) -> Result<Value, InlineError> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = schema.get(key) {
            for (name, def) in d {
                defs.insert(format!("#/{key}/{name}"), def.clone());
            }
        }
    }
    if defs.is_empty() {
        return Ok(schema.clone());
    }
    let mut inliner = Inliner {
        defs: &defs,
        stack: Vec::new(),
        kept: Map::new(),
        nodes: 0,
        max_nodes,
        max_depth,
    };
    let mut out = inliner.value(schema, 0)?;
    if let Value::Object(map) = &mut out {
        map.shift_remove("$defs");
        map.shift_remove("definitions");
        if !inliner.kept.is_empty() {
            // Keep the recursive definitions, themselves inlined as far as they can be.
            let mut remaining = Map::new();
            let mut pending: Vec<String> = inliner.kept.keys().cloned().collect();
            while let Some(reference) = pending.pop() {
                let name = reference
                    .rsplit('/')
                    .next()
                    .unwrap_or(&reference)
                    .to_owned();
                if remaining.contains_key(&name) {
                    continue;
                }
                inliner.kept.clear();
                inliner.stack = vec![reference.clone()];
                let def = defs.get(&reference).cloned().unwrap_or(Value::Bool(true));
                let inlined = inliner.value(&def, 2)?;
                remaining.insert(name, inlined);
                pending.extend(inliner.kept.keys().cloned());
            }
            map.insert("$defs".to_owned(), Value::Object(remaining));
        }
    }
    Ok(out)
}

/// The state of one [`try_inline_refs`]: the definitions, the references being inlined, the
/// recursive ones met, and the values produced so far against the limits.
struct Inliner<'a> {
    defs: &'a Map<String, Value>,
    stack: Vec<String>,
    kept: Map<String, Value>,
    nodes: usize,
    max_nodes: usize,
    max_depth: usize,
}

impl Inliner<'_> {
    /// Counts `n` more values produced at nesting `depth`.
    fn produce(&mut self, n: usize, depth: usize) -> Result<(), InlineError> {
        if depth > self.max_depth {
            return Err(InlineError::TooDeep {
                limit: self.max_depth,
            });
        }
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.max_nodes {
            return Err(InlineError::TooLarge {
                limit: self.max_nodes,
            });
        }
        Ok(())
    }

    /// `value` with its references inlined; `depth` is where it lands in the result.
    fn value(&mut self, value: &Value, depth: usize) -> Result<Value, InlineError> {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref")
                    && let Some(def) = self.defs.get(reference)
                {
                    if self.stack.contains(reference) {
                        self.kept.insert(reference.clone(), Value::Null);
                        let mut out = map.clone();
                        self.produce(count_values(value, depth, self.max_depth), depth)?;
                        // Point at the `$defs` we keep, whatever the original section was called.
                        let name = reference.rsplit('/').next().unwrap_or(reference);
                        out.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
                        return Ok(Value::Object(out));
                    }
                    self.stack.push(reference.clone());
                    let resolved = self.value(def, depth);
                    self.stack.pop();
                    let mut out = match resolved? {
                        Value::Object(m) => m,
                        other => return Ok(other),
                    };
                    for (k, v) in map {
                        if k != "$ref" {
                            let inlined = self.value(v, depth + 1)?;
                            out.insert(k.clone(), inlined);
                        }
                    }
                    return Ok(Value::Object(out));
                }
                self.produce(1, depth)?;
                let mut out = Map::new();
                for (k, v) in map {
                    if k != "$defs" && k != "definitions" {
                        let inlined = self.value(v, depth + 1)?;
                        out.insert(k.clone(), inlined);
                    }
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => {
                self.produce(1, depth)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.value(item, depth + 1)?);
                }
                Ok(Value::Array(out))
            }
            other => {
                self.produce(1, depth)?;
                Ok(other.clone())
            }
        }
    }
}

/// How many values `value` holds, nested from `depth`; stops counting past `max_depth`, returning
/// `usize::MAX`, which no node limit admits.
fn count_values(value: &Value, depth: usize, max_depth: usize) -> usize {
    if depth > max_depth {
        return usize::MAX;
    }
    1usize.saturating_add(match value {
        Value::Object(map) => map
            .values()
            .map(|v| count_values(v, depth + 1, max_depth))
            .fold(0, usize::saturating_add),
        Value::Array(items) => items
            .iter()
            .map(|v| count_values(v, depth + 1, max_depth))
            .fold(0, usize::saturating_add),
        _ => 0,
    })
}

/// Reorders every object in `schema` the way DSPy prints schemas: `type` first, then the other keys
/// in sorted order. Arrays (such as `required` or `enum`) keep their order.
///
/// ```
/// use serde_json::json;
/// let ordered = signet::schema::dspy_ordered(&json!({"items": {"type": "string"}, "type": "array"}));
/// assert_eq!(ordered.to_string(), r#"{"type":"array","items":{"type":"string"}}"#);
/// ```
pub fn dspy_ordered(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| (a.as_str() != "type", a.as_str()).cmp(&(b.as_str() != "type", b)));
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), dspy_ordered(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(dspy_ordered).collect()),
        other => other.clone(),
    }
}

/// Rewrites a schemars schema into the shape pydantic gives the equivalent Python model, so schemas
/// of Rust types read like the ones DSPy shows:
///
/// * each property of a model gets a `title` (`is_valid` -> `Is Valid`) unless it is a bare `$ref`,
///   and each model under `$defs` its class name as `title`;
/// * a nullable type list (`{"type": ["integer", "null"]}`) becomes
///   `{"anyOf": [{"type": "integer"}, {"type": "null"}]}`;
/// * schemars' machine-width formats on numbers (`int64`, `uint8`, `double`, ..) are dropped: they
///   describe Rust's storage, not the value the model should write.
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({"type": "object", "properties": {"is_valid": {"type": ["boolean", "null"]}}});
/// signet::schema::pydantic_style(&mut schema);
/// assert_eq!(schema["properties"]["is_valid"], json!({
///     "anyOf": [{"type": "boolean"}, {"type": "null"}], "title": "Is Valid"
/// }));
/// ```
pub fn pydantic_style(schema: &mut Value) {
    drop_width_formats(schema);
    add_pydantic_shape(schema);
}

pub(crate) fn add_pydantic_shape(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            nullable_as_any_of(map);
            if let Some(Value::Object(defs)) = map.get_mut("$defs") {
                for (name, def) in defs.iter_mut() {
                    if let Value::Object(d) = def
                        && d.contains_key("properties")
                        && !d.contains_key("title")
                    {
                        d.insert("title".to_owned(), Value::String(name.clone()));
                    }
                }
            }
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if let Value::Object(p) = prop
                        && !p.contains_key("title")
                        && !p.contains_key("$ref")
                    {
                        p.insert("title".to_owned(), Value::String(pydantic_title(name)));
                    }
                }
            }
            for value in map.values_mut() {
                add_pydantic_shape(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(add_pydantic_shape),
        _ => {}
    }
}

/// Sorts the keys of every object in `schema` as pydantic does before DSPy prints a tool's
/// arguments: alphabetically, except the keys of `properties` (the fields' order) and of a
/// `default` value, which keep their order.
pub(crate) fn pydantic_sorted(schema: &mut Value) {
    sort_under(schema, None);
}

fn sort_under(value: &mut Value, parent: Option<&str>) {
    match value {
        Value::Object(map) => {
            if !matches!(parent, Some("properties" | "default")) {
                map.sort_keys();
            }
            for (key, item) in map.iter_mut() {
                sort_under(item, Some(key));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| sort_under(item, parent)),
        _ => {}
    }
}

/// Removes schemars' machine-width formats on numbers (`int64`, `uint8`, `double`, ..) everywhere in
/// `schema`: they describe Rust's storage, not the value a model should write (ranges such as
/// `minimum: 0` stay).
///
/// ```
/// let mut schema = signet::schema::schema_for::<u8>();
/// signet::schema::drop_width_formats(&mut schema);
/// assert_eq!(schema, serde_json::json!({"type": "integer", "minimum": 0, "maximum": 255}));
/// ```
pub fn drop_width_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(is_width_format)
            {
                // `shift_remove`: the other keys keep their order (DSPy's key order is the prompt's).
                map.shift_remove("format");
            }
            map.values_mut().for_each(drop_width_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_width_formats),
        _ => {}
    }
}

/// Turns machine-width number formats into the ranges they imply (`uint8` -> `0..=255`, `int64` ->
/// the `i64` range), keeping ranges already given, so that validation rejects what the Rust type
/// cannot hold.
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({"type": "integer", "format": "int64"});
/// signet::schema::width_formats_as_bounds(&mut schema);
/// assert_eq!(schema["maximum"], json!(i64::MAX));
/// ```
pub fn width_formats_as_bounds(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let bounds: Option<(Value, Value)> = match map.get("format").and_then(Value::as_str) {
                Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
                Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
                Some("uint8") => Some((0.into(), u8::MAX.into())),
                Some("uint16") => Some((0.into(), u16::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("uint64" | "uint") => Some((0.into(), u64::MAX.into())),
                _ => None,
            };
            if let Some((min, max)) = bounds {
                map.entry("minimum").or_insert(min);
                map.entry("maximum").or_insert(max);
            }
            map.values_mut().for_each(width_formats_as_bounds);
        }
        Value::Array(items) => items.iter_mut().for_each(width_formats_as_bounds),
        _ => {}
    }
}

fn is_width_format(format: &str) -> bool {
    matches!(
        format,
        "int8"
            | "int16"
            | "int32"
            | "int64"
            | "int128"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "uint128"
            | "int"
            | "float"
            | "double"
    )
}

/// `{"type": [T, "null"], ..}` -> `{"anyOf": [{"type": T, ..}, {"type": "null"}]}`, keeping the
/// annotations (`title`, `description`, `default`) outside the union as pydantic does.
fn nullable_as_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    if types.len() != 2 || !types.iter().any(|t| t == "null") {
        return;
    }
    let Some(inner) = types.iter().find(|t| *t != "null").cloned() else {
        return;
    };
    let mut branch = Map::new();
    branch.insert("type".to_owned(), inner);
    let keys: Vec<String> = map.keys().cloned().collect();
    let annotation = |key: &str| {
        matches!(
            key,
            "type" | "title" | "description" | "default" | "examples"
        )
    };
    for key in keys {
        if !annotation(&key)
            && let Some(v) = map.shift_remove(&key)
        {
            branch.insert(key, v);
        }
    }
    map.shift_remove("type");
    map.insert(
        "anyOf".to_owned(),
        Value::Array(vec![
            Value::Object(branch),
            serde_json::json!({"type": "null"}),
        ]),
    );
}

/// Python's `str.title()` on a field name with underscores turned into spaces (`is_valid` -> `Is Valid`).
fn pydantic_title(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut at_word_start = true;
    for c in name.chars() {
        let c = if c == '_' { ' ' } else { c };
        if c.is_alphabetic() {
            if at_word_start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            at_word_start = false;
        } else {
            out.push(c);
            at_word_start = true;
        }
    }
    out
}

/// Whether a value of JSON type `ty` fits the schema: its `type` (a name or a list of names) is
/// `ty`, or a branch of its `anyOf` / `oneOf` union admits it (`Optional[list[int]]` admits
/// `"array"` and `"null"`).
pub(crate) fn admits_type(schema: &Value, ty: &str) -> bool {
    let own = match schema.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(types)) => types.iter().any(|t| t == ty),
        _ => false,
    };
    own || ["anyOf", "oneOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| admits_type(b, ty)))
    })
}

/// The Python-style name DSPy prints for a field's type, read off its JSON schema.
///
/// | schema | name |
/// |---|---|
/// | `string`, `integer`, `number`, `boolean` | `str`, `int`, `float`, `bool` |
/// | array of `T` | `list[T]` (tuples: `tuple[A, B]`) |
/// | object with `additionalProperties: V` | `dict[str, V]` |
/// | object with a `title` (a struct) or a `$ref` | the class name |
/// | a string `enum` / `const`s | `Literal['a', 'b']` |
/// | `anyOf` / type list with `null` | `Union[T, NoneType]` |
/// | `true` / `{}` | `Any` |
///
/// ```
/// use serde_json::json;
/// use signet::schema::type_name;
/// assert_eq!(type_name(&json!({"type": "array", "items": {"type": "string"}})), "list[str]");
/// assert_eq!(type_name(&json!({"type": ["integer", "null"]})), "Union[int, NoneType]");
/// assert_eq!(type_name(&json!({"type": "string", "enum": ["a", "b"]})), "Literal['a', 'b']");
/// ```
pub fn type_name(schema: &Value) -> String {
    let Value::Object(map) = schema else {
        return "Any".to_owned();
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        return reference.rsplit('/').next().unwrap_or(reference).to_owned();
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return literal(values);
    }
    if let Some(value) = map.get("const") {
        return literal(std::slice::from_ref(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = map.get(key) {
            let consts: Option<Vec<Value>> =
                variants.iter().map(|v| v.get("const").cloned()).collect();
            if let Some(consts) = consts.filter(|c| !c.is_empty()) {
                return literal(&consts);
            }
            return union(variants.iter().map(type_name).collect());
        }
    }
    if let Some(Value::Array(allof)) = map.get("allOf")
        && allof.len() == 1
    {
        return type_name(&allof[0]);
    }
    match map.get("type") {
        Some(Value::String(t)) => single_type_name(t, map),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .map(|t| {
                    t.as_str()
                        .map_or_else(|| "Any".to_owned(), |t| single_type_name(t, map))
                })
                .collect(),
        ),
        _ => "Any".to_owned(),
    }
}

fn single_type_name(t: &str, map: &Map<String, Value>) -> String {
    match t {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "null" => "NoneType".to_owned(),
        "array" => {
            if let Some(Value::Array(prefix)) = map.get("prefixItems") {
                let parts: Vec<String> = prefix.iter().map(type_name).collect();
                format!("tuple[{}]", parts.join(", "))
            } else if let Some(items) = map.get("items") {
                format!("list[{}]", type_name(items))
            } else {
                "list".to_owned()
            }
        }
        "object" => {
            if let Some(Value::String(title)) = map.get("title") {
                title.clone()
            } else if map.get("additionalProperties") == Some(&Value::Bool(true)) {
                "dict[str, Any]".to_owned()
            } else if let Some(values) = map.get("additionalProperties").filter(|v| v.is_object()) {
                format!("dict[str, {}]", type_name(values))
            } else {
                "dict".to_owned()
            }
        }
        other => other.to_owned(),
    }
}

fn union(mut names: Vec<String>) -> String {
    // DSPy lists `NoneType` last, as Python's `Optional[T]` does.
    if let Some(pos) = names.iter().position(|n| n == "NoneType") {
        let none = names.remove(pos);
        names.push(none);
    }
    names.dedup();
    if names.len() == 1 {
        return names.remove(0);
    }
    format!("Union[{}]", names.join(", "))
}

fn literal(values: &[Value]) -> String {
    let parts: Vec<String> = values.iter().map(python_repr).collect();
    format!("Literal[{}]", parts.join(", "))
}

/// Renders a JSON value the way Python's `repr` renders the equivalent object: strings in single
/// quotes, `True`/`False`/`None`, dicts as `{'k': v}`. DSPy prints tool argument schemas this way.
///
/// ```
/// use serde_json::json;
/// let repr = signet::schema::python_repr(&json!({"a": {"type": "integer"}, "d": null, "b": true}));
/// assert_eq!(repr, "{'a': {'type': 'integer'}, 'd': None, 'b': True}");
/// assert_eq!(signet::schema::python_repr(&json!([1, 2.0, 1.5e-5, "it's"])), r#"[1, 2.0, 1.5e-05, "it's"]"#);
/// ```
pub fn python_repr(value: &Value) -> String {
    let mut out = String::new();
    write_python_repr(value, &mut out);
    out
}

fn write_python_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        // Floats as Python prints them (`1e-05`, `2.0`).
        Value::Number(_) => out.push_str(&crate::python::py_str(value)),
        Value::String(s) => write_python_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_str(k, out);
                out.push_str(": ");
                write_python_repr(v, out);
            }
            out.push('}');
        }
    }
}

fn write_python_str(s: &str, out: &mut String) {
    // Python prefers single quotes, and switches to double quotes when the text has a single quote
    // but no double quote.
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_of_scalars_and_containers() {
        assert_eq!(type_name(&schema_for::<String>()), "str");
        assert_eq!(type_name(&schema_for::<i64>()), "int");
        assert_eq!(type_name(&schema_for::<u8>()), "int");
        assert_eq!(type_name(&schema_for::<f32>()), "float");
        assert_eq!(type_name(&schema_for::<bool>()), "bool");
        assert_eq!(type_name(&schema_for::<Vec<String>>()), "list[str]");
        assert_eq!(
            type_name(&schema_for::<std::collections::HashMap<String, i32>>()),
            "dict[str, int]"
        );
        assert_eq!(
            type_name(&schema_for::<Option<i64>>()),
            "Union[int, NoneType]"
        );
        assert_eq!(
            type_name(&schema_for::<Option<Vec<String>>>()),
            "Union[list[str], NoneType]"
        );
        assert_eq!(type_name(&schema_for::<(i32, String)>()), "tuple[int, str]");
        assert_eq!(type_name(&schema_for::<serde_json::Value>()), "Any");
    }

    #[test]
    fn names_of_user_types() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Person {
            name: String,
        }
        #[derive(JsonSchema)]
        #[serde(rename_all = "lowercase")]
        #[allow(dead_code)]
        enum Color {
            Red,
            Blue,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        enum Documented {
            /// first
            A,
            /// second
            B,
        }
        assert_eq!(type_name(&schema_for::<Person>()), "Person");
        assert_eq!(type_name(&schema_for::<Vec<Person>>()), "list[Person]");
        assert_eq!(
            type_name(&schema_for::<Option<Person>>()),
            "Union[Person, NoneType]"
        );
        assert_eq!(type_name(&schema_for::<Color>()), "Literal['red', 'blue']");
        assert_eq!(type_name(&schema_for::<Documented>()), "Literal['A', 'B']");
    }

    #[test]
    fn dspy_order_puts_type_first_and_sorts_the_rest() {
        let schema = json!({"title": "P", "required": ["b", "a"], "properties": {"b": {}, "a": {}}, "type": "object"});
        assert_eq!(
            dspy_ordered(&schema).to_string(),
            r#"{"type":"object","properties":{"a":{},"b":{}},"required":["b","a"],"title":"P"}"#
        );
    }

    #[test]
    fn recursive_definitions_are_kept() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Tree {
            children: Vec<Tree>,
            label: Leaf,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Leaf {
            text: String,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Forest {
            trees: Vec<Tree>,
        }
        let inlined = inline_refs(&schema_for::<Forest>());
        let first = &inlined["properties"]["trees"]["items"];
        assert_eq!(
            first["properties"]["children"]["items"]["$ref"],
            "#/$defs/Tree"
        );
        let tree = &inlined["$defs"]["Tree"];
        assert_eq!(
            tree["properties"]["children"]["items"]["$ref"],
            "#/$defs/Tree"
        );
        assert_eq!(
            tree["properties"]["label"]["properties"]["text"]["type"],
            "string"
        );
        assert!(inlined["$defs"].get("Leaf").is_none());
    }

    /// 40 definitions, each referring to the next twice: a few KB written, ~2^40 values inlined.
    fn exploding_schema() -> Value {
        let mut defs = Map::new();
        for i in 0..40 {
            let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {"left": next.clone(), "right": next}}),
            );
        }
        defs.insert("D40".into(), json!({"type": "string"}));
        json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/D0"}},
            "required": ["root"],
            "$defs": Value::Object(defs)
        })
    }

    #[test]
    fn an_exploding_schema_keeps_its_refs_quickly() {
        let schema = exploding_schema();
        assert!(schema.to_string().len() < 8_000);
        let started = std::time::Instant::now();
        let inlined = inline_refs(&schema);
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        // Given back as it was: bounded, and still resolvable by a validator.
        assert_eq!(inlined, schema);
        assert_eq!(
            try_inline_refs(&schema, INLINE_NODE_LIMIT, INLINE_DEPTH_LIMIT),
            Err(InlineError::TooLarge {
                limit: INLINE_NODE_LIMIT
            })
        );
        // A generous node limit meets the depth limit instead.
        assert_eq!(
            try_inline_refs(&schema, usize::MAX, 16),
            Err(InlineError::TooDeep { limit: 16 })
        );
        // The same shape, 5 levels deep, is inlined in full.
        let mut small = schema.clone();
        small["$defs"]["D5"] = json!({"type": "string"});
        let inlined = inline_refs(&small);
        assert!(inlined.get("$defs").is_none());
        assert_eq!(
            inlined.pointer("/properties/root/properties/left/properties/right/properties/left/properties/right/properties/left/type"),
            Some(&json!("string"))
        );
    }

    #[test]
    fn python_repr_matches_python() {
        assert_eq!(python_repr(&json!("it's")), "\"it's\"");
        assert_eq!(python_repr(&json!("a\nb")), "'a\\nb'");
        assert_eq!(python_repr(&json!([1, 2.5, false])), "[1, 2.5, False]");
        assert_eq!(pydantic_title("is_valid"), "Is Valid");
        assert_eq!(pydantic_title("x2y"), "X2Y");
    }
}
