//! Building a tool's argument schema one argument at a time (what `#[tool]` generates calls to).

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// Assembles the JSON schema of a tool's argument object: one property per argument, with its
/// description and default, `required` listing the arguments that must be given, and
/// `additionalProperties: false`. Nested types are described once under `$defs` and inlined by
/// [`ToolSpec::new`](super::ToolSpec::new).
///
/// ```
/// use signet::tool::ArgsSchema;
/// let schema = ArgsSchema::new()
///     .arg::<String>("query", Some("The search query"), None, true)
///     .arg::<u32>("k", None, Some(serde_json::json!(3)), false)
///     .finish();
/// assert_eq!(schema["required"], serde_json::json!(["query"]));
/// assert_eq!(
///     schema["properties"]["k"],
///     serde_json::json!({"type": "integer", "format": "uint32", "minimum": 0, "default": 3})
/// );
/// ```
pub struct ArgsSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
    /// Whether arguments other than the named ones are taken (a `#[arg(rest)]` parameter).
    rest: bool,
}

impl Default for ArgsSchema {
    fn default() -> Self {
        ArgsSchema::new()
    }
}

impl std::fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsSchema")
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl ArgsSchema {
    /// An argument object with no arguments yet.
    pub fn new() -> ArgsSchema {
        ArgsSchema {
            generator: SchemaSettings::draft2020_12()
                .for_deserialize()
                .into_generator(),
            properties: Map::new(),
            required: Vec::new(),
            rest: false,
        }
    }

    /// Adds argument `name` of type `T`. `default` is shown to the model; `required` says whether
    /// the caller must give it (false for `Option` arguments and arguments with a default).
    pub fn arg<T: JsonSchema + ?Sized>(
        mut self,
        name: &str,
        desc: Option<&str>,
        default: Option<Value>,
        required: bool,
    ) -> Self {
        let property = self.generator.subschema_for::<T>().to_value();
        self.arg_with_schema(name, desc, default, required, property)
    }

    /// Adds argument `name` whose schema is `schema`, written by hand (`#[arg(schema = ..)]`):
    /// what the model is shown and what its arguments are checked against, whatever the Rust
    /// type says.
    ///
    /// ```
    /// use serde_json::json;
    /// let schema = signet::tool::ArgsSchema::new()
    ///     .arg_with_schema("code", None, None, true, json!({"type": "string", "pattern": "^[A-Z]{3}$"}))
    ///     .finish();
    /// assert_eq!(schema["properties"]["code"]["pattern"], "^[A-Z]{3}$");
    /// ```
    pub fn arg_with_schema(
        mut self,
        name: &str,
        desc: Option<&str>,
        default: Option<Value>,
        required: bool,
        schema: Value,
    ) -> Self {
        let mut property = schema;
        if let Value::Bool(true) = property {
            property = json!({});
        }
        if let Value::Object(map) = &mut property {
            if let Some(default) = default {
                map.insert("default".to_owned(), default);
            }
            if let Some(desc) = desc {
                map.insert("description".to_owned(), Value::String(desc.to_owned()));
            }
        }
        self.properties.insert(name.to_owned(), property);
        if required {
            self.required.push(Value::String(name.to_owned()));
        }
        self
    }

    /// Takes arguments other than the named ones too (DSPy's `**kwargs`; a `#[arg(rest)]`
    /// parameter receives them): the schema's `additionalProperties` is `true`.
    ///
    /// ```
    /// let schema = signet::tool::ArgsSchema::new().rest().finish();
    /// assert_eq!(schema["additionalProperties"], true);
    /// ```
    pub fn rest(mut self) -> Self {
        self.rest = true;
        self
    }

    /// The finished schema (with `$defs` when nested types were used).
    pub fn finish(mut self) -> Value {
        let mut out = Map::new();
        out.insert("type".to_owned(), json!("object"));
        out.insert("properties".to_owned(), Value::Object(self.properties));
        out.insert("required".to_owned(), Value::Array(self.required));
        out.insert("additionalProperties".to_owned(), Value::Bool(self.rest));
        let defs = Value::Object(self.generator.take_definitions(true));
        if defs.as_object().is_some_and(|d| !d.is_empty()) {
            out.insert("$defs".to_owned(), defs);
        }
        Value::Object(out)
    }
}
