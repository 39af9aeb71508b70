//! A tool's static description (name, description, argument schema) and the compiled validator that
//! checks incoming arguments against it.

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::ToolDefinition;
use super::error::{ArgError, ArgErrorKind, ToolError};
use crate::schema;

/// Everything a model needs to know to call a tool, plus a compiled validator for its arguments.
///
/// `#[tool]` builds one per tool, once, from the generated argument struct; [`FnTool`](super::FnTool)
/// and remote tools build one from an explicit JSON schema.
///
/// ```
/// use serde_json::json;
/// use signet::tool::ToolSpec;
///
/// let spec = ToolSpec::new(
///     "lookup",
///     "Look up a person.",
///     json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
/// );
/// assert!(spec.validate(&json!({"name": "Ada"})).is_ok());
/// let err = spec.validate(&json!({})).unwrap_err();
/// assert_eq!(err.to_string(), "invalid arguments for tool `lookup`: missing required argument `name` (string)");
/// ```
pub struct ToolSpec {
    name: String,
    description: String,
    args_schema: Value,
    validator: Result<jsonschema::Validator, String>,
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("args_schema", &self.args_schema)
            .finish_non_exhaustive()
    }
}

impl ToolSpec {
    /// A spec from an explicit argument schema (an `object` schema whose `properties` are the
    /// arguments). `$ref`s are inlined; machine-width number formats (`int64`, `uint8`) are checked
    /// as ranges but left out of the schema shown to the model; a schema that does not compile is
    /// reported as
    /// [`ToolError::InvalidSchema`] on every call rather than by panicking here.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        args_schema: Value,
    ) -> ToolSpec {
        let name = name.into();
        let mut args_schema = normalize_args_schema(args_schema);
        // Validate against the machine widths (an `i64` cannot hold 1e113), but show the model
        // the schema without them.
        let mut strict = args_schema.clone();
        schema::width_formats_as_bounds(&mut strict);
        schema::drop_width_formats(&mut args_schema);
        let validator = jsonschema::validator_for(&strict).map_err(|e| e.to_string());
        ToolSpec {
            name,
            description: description.into(),
            args_schema,
            validator,
        }
    }

    /// A spec whose argument schema is generated from the struct `A` (what `#[tool]` uses), with
    /// schemars' machine-width number formats dropped ([`drop_width_formats`](schema::drop_width_formats)).
    ///
    /// ```
    /// #[derive(schemars::JsonSchema, serde::Deserialize)]
    /// struct Args { /// The city.
    ///     city: String, days: Option<u32> }
    /// let spec = signet::tool::ToolSpec::for_args::<Args>("weather", "Forecast.");
    /// assert_eq!(spec.args_schema()["required"], serde_json::json!(["city"]));
    /// assert_eq!(spec.args_schema()["properties"]["city"]["description"], "The city.");
    /// ```
    pub fn for_args<A: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> ToolSpec {
        let mut args = schema::schema_for::<A>();
        if let Value::Object(map) = &mut args {
            map.remove("title");
            map.remove("description");
        }
        ToolSpec::new(name, description, args)
    }

    /// The tool's name, as the model calls it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the tool does (its doc comment, for `#[tool]`).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON schema of the argument object, `$ref`s inlined.
    pub fn args_schema(&self) -> &Value {
        &self.args_schema
    }

    /// Checks `args` against the schema, reporting every problem found.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let validator = self
            .validator
            .as_ref()
            .map_err(|message| ToolError::InvalidSchema {
                tool: self.name.clone(),
                message: message.clone(),
            })?;
        if !args.is_object() {
            return Err(self.invalid(vec![ArgError {
                path: String::new(),
                kind: ArgErrorKind::NotAnObject,
                received: Some(args.clone()),
            }]));
        }
        if validator.is_valid(args) {
            return Ok(());
        }
        let mut errors = Vec::new();
        collect_errors(validator, &self.args_schema, args, "", &mut errors);
        Err(self.invalid(errors))
    }

    /// Validates `args`, then deserializes them into `A`. Integral floats (`3.0`), which JSON Schema
    /// counts as integers, are passed as integers. A deserializer's own complaint (one the schema
    /// could not express) is still reported as [`ToolError::InvalidArguments`].
    pub fn parse_args<A: DeserializeOwned>(&self, args: Value) -> Result<A, ToolError> {
        // Tools without arguments accept `null` as well as `{}`.
        let args = if args.is_null() {
            Value::Object(Map::new())
        } else {
            args
        };
        self.validate(&args)?;
        let mut args = args;
        integral_floats_as_integers(&mut args);
        serde_json::from_value(args).map_err(|e| {
            self.invalid(vec![ArgError {
                path: String::new(),
                kind: ArgErrorKind::Invalid {
                    message: e.to_string(),
                },
                received: None,
            }])
        })
    }

    fn invalid(&self, errors: Vec<ArgError>) -> ToolError {
        ToolError::InvalidArguments {
            tool: self.name.clone(),
            errors,
        }
    }

    /// Each argument as `type - description` (or the type alone when it has no description; the
    /// type as validation errors word it), in
    /// order: udspy's `tool.args`, a short view of the schema for logs, UIs and prompts of your own.
    ///
    /// ```
    /// use serde_json::json;
    /// let spec = signet::tool::ToolSpec::new("search", "Search.", json!({
    ///     "type": "object",
    ///     "properties": {
    ///         "query": {"type": "string", "description": "What to look for"},
    ///         "k": {"type": "integer"},
    ///         "lang": {"anyOf": [{"type": "string"}, {"type": "null"}]}
    ///     }
    /// }));
    /// assert_eq!(
    ///     serde_json::Value::Object(spec.arg_summaries()),
    ///     json!({"query": "string - What to look for", "k": "integer", "lang": "string or null"})
    /// );
    /// ```
    pub fn arg_summaries(&self) -> Map<String, Value> {
        let properties = self
            .args_schema
            .get("properties")
            .and_then(Value::as_object);
        properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| {
                let kind = expected_type(schema);
                let summary = match schema.get("description").and_then(Value::as_str) {
                    Some(description) => format!("{kind} - {description}"),
                    None => kind,
                };
                (name.clone(), Value::String(summary))
            })
            .collect()
    }

    /// The OpenAI function-calling descriptor for this tool:
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`. `required`
    /// lists the arguments that must be given, as DSPy lists those without a default.
    ///
    /// ```
    /// use serde_json::json;
    /// let spec = signet::tool::ToolSpec::new("noop", "Does nothing.", json!({"type": "object"}));
    /// assert_eq!(spec.to_openai_function(), json!({"type": "function", "function": {
    ///     "name": "noop", "description": "Does nothing.",
    ///     "parameters": {"type": "object", "properties": {}, "required": []}}}));
    /// ```
    pub fn to_openai_function(&self) -> Value {
        self.definition().to_value()
    }

    /// The tool as offered for native function calling (what [`to_openai_function`](Self::to_openai_function)
    /// sends, typed).
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(&self.name, &self.description, self.args_schema.clone())
    }
}

/// JSON Schema counts `3.0` as an integer, serde does not: what validation accepted must deserialize,
/// so integral floats are passed on as integers (float fields accept integers as well).
fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            // Every integral f64 in these ranges converts exactly (the schema judged that f64).
            if let Some(x) = n.as_f64()
                && x.fract() == 0.0
            {
                // 2^63: i64 holds [-2^63, 2^63), u64 [0, 2^64).
                let two_63 = -(i64::MIN as f64);
                if (-two_63..two_63).contains(&x) {
                    *value = Value::from(x as i64);
                } else if (0.0..2.0 * two_63).contains(&x) {
                    *value = Value::from(x as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

/// Inlines `$ref`s and makes sure the schema is an object schema with `properties` and `required`.
fn normalize_args_schema(schema: Value) -> Value {
    let mut schema = schema::inline_refs(&schema);
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
        map.entry("required").or_insert_with(|| json!([]));
    }
    schema
}

/// Turns the validator's errors into [`ArgError`]s, following `anyOf` branches (such as
/// `Option<Struct>`) down to the precise problem when only one non-null branch could apply.
fn collect_errors(
    validator: &jsonschema::Validator,
    schema: &Value,
    instance: &Value,
    prefix: &str,
    out: &mut Vec<ArgError>,
) {
    use jsonschema::error::ValidationErrorKind as K;
    for error in validator.iter_errors(instance) {
        let path = join_path(prefix, &pointer_to_path(error.instance_path().as_str()));
        let received = Some(error.instance().clone().into_owned());
        let schema_at = |pointer: &str| schema.pointer(pointer);
        let parent_pointer = parent(error.schema_path().as_str());
        match error.kind() {
            K::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let expected = schema_at(parent_pointer)
                    .and_then(|s| s.get("properties"))
                    .and_then(|p| p.get(name))
                    .map(expected_type);
                out.push(ArgError {
                    path: join_path(&path, name),
                    kind: ArgErrorKind::Missing { expected },
                    received: None,
                });
            }
            K::AdditionalProperties { unexpected } => {
                let allowed: Vec<String> = schema_at(parent_pointer)
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                for name in unexpected {
                    out.push(ArgError {
                        path: join_path(&path, name),
                        kind: ArgErrorKind::Unexpected {
                            allowed: allowed.clone(),
                        },
                        received: error.instance().get(name).cloned(),
                    });
                }
            }
            K::Type { .. } => {
                let expected = schema_at(error.schema_path().as_str())
                    .map(|t| match t {
                        Value::Array(types) => types
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(" or "),
                        other => other.as_str().unwrap_or_default().to_owned(),
                    })
                    .unwrap_or_default();
                out.push(ArgError {
                    path,
                    kind: ArgErrorKind::WrongType { expected },
                    received,
                });
            }
            K::Enum { options } => {
                let allowed = options.as_array().cloned().unwrap_or_default();
                out.push(ArgError {
                    path,
                    kind: ArgErrorKind::NotAllowed { allowed },
                    received,
                });
            }
            K::Constant { expected_value } => {
                let allowed = vec![(**expected_value).clone()];
                out.push(ArgError {
                    path,
                    kind: ArgErrorKind::NotAllowed { allowed },
                    received,
                });
            }
            K::AnyOf { .. } | K::OneOfNotValid { .. } => {
                let branches = schema_at(error.schema_path().as_str()).and_then(Value::as_array);
                let non_null: Vec<&Value> = branches
                    .map(|b| {
                        b.iter()
                            .filter(|s| s.get("type") != Some(&json!("null")))
                            .collect()
                    })
                    .unwrap_or_default();
                let instance = error.instance();
                // Down into the one non-null branch of an optional struct or list, where the
                // problem has a path of its own; an optional scalar says `string or null`.
                let precise = match non_null.as_slice() {
                    [only] if !instance.is_null() && is_container(only) => {
                        jsonschema::validator_for(only).ok()
                    }
                    _ => None,
                };
                match precise {
                    Some(branch) => {
                        collect_errors(&branch, non_null[0], instance, &path, out);
                    }
                    None => out.push(ArgError {
                        path,
                        kind: ArgErrorKind::WrongType {
                            expected: branches
                                .map(|b| {
                                    b.iter().map(expected_type).collect::<Vec<_>>().join(" or ")
                                })
                                .unwrap_or_else(|| "a different value".to_owned()),
                        },
                        received,
                    }),
                }
            }
            _ => out.push(ArgError {
                path,
                kind: ArgErrorKind::Invalid {
                    message: error.to_string(),
                },
                received,
            }),
        }
    }
}

/// Whether a schema describes an object or an array (values with parts of their own).
fn is_container(schema: &Value) -> bool {
    matches!(
        schema.get("type").and_then(Value::as_str),
        Some("object" | "array")
    ) || schema.get("properties").is_some()
        || schema.get("items").is_some()
}

/// A short description of the type a schema expects (`integer`, `array of string`, `one of "a", "b"`).
fn expected_type(schema: &Value) -> String {
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", expected_type(items)),
            None => "array".to_owned(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => match schema.get("anyOf").and_then(Value::as_array) {
            Some(branches) => branches
                .iter()
                .map(expected_type)
                .collect::<Vec<_>>()
                .join(" or "),
            None => "any value".to_owned(),
        },
    }
}

/// `/points/0/x` -> `points.0.x` (JSON-pointer escapes undone).
fn pointer_to_path(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

fn join_path(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (_, true) => prefix.to_owned(),
        _ => format!("{prefix}.{rest}"),
    }
}

fn parent(pointer: &str) -> &str {
    pointer.rsplit_once('/').map_or("", |(head, _)| head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "plot",
            "Plot a point.",
            json!({
                "type": "object",
                "properties": {
                    "point": {"$ref": "#/$defs/Point"},
                    "label": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["point"],
                "additionalProperties": false,
                "$defs": {"Point": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "required": ["x"]
                }}
            }),
        )
    }

    fn messages(args: Value) -> Vec<String> {
        match spec().validate(&args) {
            Err(ToolError::InvalidArguments { errors, .. }) => {
                errors.iter().map(ToString::to_string).collect()
            }
            other => panic!("expected invalid arguments, got {other:?}"),
        }
    }

    #[test]
    fn nested_errors_name_the_path() {
        assert_eq!(
            messages(json!({"point": {"x": "bad"}})),
            ["argument `point.x`: expected integer, got string \"bad\""]
        );
        assert_eq!(
            messages(json!({"point": {"y": 2}})),
            ["missing required argument `point.x` (integer)"]
        );
        assert_eq!(
            messages(json!({"point": {"x": 1}, "tags": ["a", 2]})),
            ["argument `tags.1`: expected string, got integer 2"]
        );
    }

    #[test]
    fn optional_struct_errors_are_precise() {
        assert_eq!(
            messages(json!({"point": {"x": 1}, "label": {"x": 1.5}})),
            ["argument `label.x`: expected integer, got number 1.5"]
        );
    }

    #[test]
    fn enum_extra_and_shape_errors() {
        assert_eq!(
            messages(json!({"point": {"x": 1}, "color": "green"})),
            ["argument `color`: expected one of \"red\", \"blue\", got \"green\""]
        );
        assert_eq!(
            messages(json!({"point": {"x": 1}, "c": 3})),
            ["unexpected argument `c` (accepted: point, label, color, tags)"]
        );
        assert_eq!(
            messages(json!([1])),
            ["arguments must be a JSON object, got array [1]"]
        );
    }

    #[test]
    fn invalid_schema_is_an_error_not_a_panic() {
        let spec = ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {"a": {"type": 5}}}),
        );
        assert!(matches!(
            spec.validate(&json!({})),
            Err(ToolError::InvalidSchema { .. })
        ));
    }

    #[test]
    fn refs_are_inlined_in_the_published_schema() {
        let spec = spec();
        assert_eq!(
            spec.args_schema()["properties"]["point"]["required"],
            json!(["x"])
        );
        assert!(spec.args_schema().get("$defs").is_none());
    }
}
