//! Building a tool's argument schema one argument at a time (what `#[tool]` generates calls to).

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// Assembles the JSON schema of a tool's argument object: one property per argument, with its
/// description and default, `required` listing the arguments that must be given, and
/// `additionalProperties: false`.
///
/// An argument whose schema comes from its Rust type ([`arg`](ArgsSchema::arg)) is written the
/// way DSPy 3.4.1 writes the same Python argument, so that the tool reads the same in a prompt:
/// pydantic's shape (nested types inlined, structs and enums titled with their name and their
/// fields with `Title Case` names, `Option<T>` as `anyOf` with `null` and `default: None`) in
/// pydantic's key order (sorted, fields in declaration order), then DSPy's `default` and
/// `description`.
///
/// ```
/// use signet::tool::ArgsSchema;
/// let schema = ArgsSchema::new()
///     .arg::<String>("query", Some("The search query"), None, true)
///     .arg::<u32>("k", None, Some(serde_json::json!(3)), false)
///     .finish();
/// assert_eq!(schema["required"], serde_json::json!(["query"]));
/// assert_eq!(
///     schema["properties"]["k"].to_string(),
///     r#"{"format":"uint32","minimum":0,"type":"integer","default":3}"#
/// );
/// ```
pub struct ArgsSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    /// The arguments whose schema came from their type, in pydantic's shape once finished.
    typed: Vec<Typed>,
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
            typed: Vec::new(),
            required: Vec::new(),
            rest: false,
        }
    }

    /// Adds argument `name` of type `T`. `default` is shown to the model; `required` says whether
    /// the caller must give it (false for `Option` arguments and arguments with a default). An
    /// optional argument without a default shows `default: None`, as DSPy shows Python's
    /// `x: Optional[T] = None`.
    pub fn arg<T: JsonSchema + ?Sized>(
        mut self,
        name: &str,
        desc: Option<&str>,
        default: Option<Value>,
        required: bool,
    ) -> Self {
        let property = self.generator.subschema_for::<T>().to_value();
        let default = default.or((!required).then_some(Value::Null));
        self.typed.push(Typed {
            name: name.to_owned(),
            desc: desc.map(str::to_owned),
            default,
        });
        self.arg_with_schema(name, None, None, required, property)
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

    /// The finished schema: nested types inlined (a type that contains itself stays a `$ref`
    /// into `$defs`), the typed arguments in DSPy's shape and order.
    pub fn finish(mut self) -> Value {
        let mut defs = self.generator.take_definitions(true);
        defs.iter_mut()
            .for_each(|(name, def)| pydantic_definition(name, def));
        for typed in &self.typed {
            if let Some(property) = self.properties.get_mut(&typed.name) {
                crate::schema::add_pydantic_shape(property);
            }
        }
        let mut out = Map::new();
        out.insert("type".to_owned(), json!("object"));
        out.insert("properties".to_owned(), Value::Object(self.properties));
        out.insert("required".to_owned(), Value::Array(self.required));
        out.insert("additionalProperties".to_owned(), Value::Bool(self.rest));
        if !defs.is_empty() {
            out.insert("$defs".to_owned(), Value::Object(defs));
        }
        let mut out = crate::schema::inline_refs(&Value::Object(out));
        if let Some(Value::Object(properties)) = out.get_mut("properties") {
            for typed in self.typed {
                if let Some(property) = properties.get_mut(&typed.name) {
                    typed.finish(property);
                }
            }
        }
        out
    }
}

/// A definition as pydantic writes the model or enum it stands for: titled with its name, its
/// fields titled, nullable types as `anyOf`, and an optional nullable field given `default: None`
/// (a Rust `Option` field may be left out, as a pydantic `Optional[T] = None` field may).
fn pydantic_definition(name: &str, def: &mut Value) {
    let Value::Object(map) = def else { return };
    if (map.contains_key("properties") || map.contains_key("enum")) && !map.contains_key("title") {
        map.insert("title".to_owned(), Value::String(name.to_owned()));
    }
    crate::schema::add_pydantic_shape(def);
    let Value::Object(map) = def else { return };
    let required: Vec<Value> = match map.get("required") {
        Some(Value::Array(required)) => required.clone(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (field, property) in properties.iter_mut() {
            let optional = !required.iter().any(|r| r == field.as_str())
                && crate::schema::admits_type(property, "null");
            if let Value::Object(p) = property
                && optional
                && !p.contains_key("default")
            {
                p.insert("default".to_owned(), Value::Null);
            }
        }
    }
}

/// An argument whose schema comes from its type, with what the argument itself adds to it.
struct Typed {
    name: String,
    desc: Option<String>,
    default: Option<Value>,
}

impl Typed {
    /// pydantic's key order, then the default and the description as DSPy sets them on the
    /// schema pydantic gave: a key the type's schema already has (a struct's own description)
    /// keeps its place, a new one goes last.
    fn finish(self, property: &mut Value) {
        if let Value::Bool(true) = property {
            *property = json!({});
        }
        crate::schema::pydantic_sorted(property);
        if let Value::Object(map) = property {
            if let Some(default) = self.default {
                map.insert("default".to_owned(), default);
            }
            if let Some(desc) = self.desc {
                map.insert("description".to_owned(), Value::String(desc));
            }
        }
    }
}
