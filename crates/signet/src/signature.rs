//! Signatures: what a step takes and what it must produce.
//!
//! A signature is a set of named, typed, described input and output fields plus instructions. Write
//! one at compile time with `#[derive(Signature)]`, or build a [`DynSignature`] at run time (from a
//! string such as `"question, context -> answer: int"` or field by field). Both carry the same
//! metadata; modules and adapters read it through [`Signature::signature`].
//!
//! ```
//! use signet::Signature;
//!
//! /// Answer questions with short factoid answers.
//! #[derive(Signature)]
//! struct QA {
//!     /// The question to answer.
//!     #[input]
//!     question: String,
//!     /// Often between 1 and 5 words.
//!     #[output]
//!     answer: String,
//! }
//!
//! let sig = QA::signature();
//! assert_eq!(sig.instructions(), "Answer questions with short factoid answers.");
//! assert_eq!(sig.inputs()[0].name(), "question");
//! assert_eq!(sig.outputs()[0].desc(), Some("Often between 1 and 5 words."));
//! let input = QAInput { question: "Capital of France?".into() };
//! # let _ = input;
//! ```

mod declared_checks;
mod parse;
mod special_types;

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema;

use declared_checks::DeclaredChecks;
pub use declared_checks::{DeclaredCheck, FieldCheckFn};
pub use special_types::{Fields, History, ToolCallRecord, ToolCalls, Tools};
pub(crate) use special_types::{call_branch, descriptors};

/// A compile-time signature: typed input and output structs plus their field metadata.
///
/// Implemented by `#[derive(Signature)]`, which also generates the `{Name}Input` and `{Name}Output`
/// structs. The struct you derive on holds every field, so it doubles as a complete example (a demo).
pub trait Signature: Send + Sync + 'static {
    /// The input fields, as a struct.
    type Input: Serialize + DeserializeOwned + Clone + fmt::Debug + Send + Sync + 'static;
    /// The output fields, as a struct.
    type Output: Serialize + DeserializeOwned + Clone + fmt::Debug + Send + Sync + 'static;

    /// Field names, types, descriptions, schemas and instructions (built once, then cached).
    fn signature() -> &'static DynSignature;

    /// Splits a complete example into its inputs and outputs.
    fn into_parts(self) -> (Self::Input, Self::Output)
    where
        Self: Sized;

    /// Joins inputs and outputs into a complete example.
    fn from_parts(input: Self::Input, output: Self::Output) -> Self
    where
        Self: Sized;
}

/// A signature built at run time: the same metadata `#[derive(Signature)]` produces.
///
/// ```
/// let sig: signet::DynSignature = "question, context: list[str] -> answer: int".parse().unwrap();
/// assert_eq!(sig.instructions(), "Given the fields `question`, `context`, produce the fields `answer`.");
/// assert_eq!(sig.inputs()[1].type_name(), "list[str]");
/// assert_eq!(sig.outputs()[0].schema(), &serde_json::json!({"type": "integer"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DynSignature {
    name: String,
    instructions: Option<String>,
    inputs: Vec<Field>,
    outputs: Vec<Field>,
    /// A schema for the whole output object, tighter than the fields' own (see
    /// [`with_output_schema`](DynSignature::with_output_schema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
    /// Text rendered from this signature (system messages), reused across calls; reset by every
    /// change to the signature.
    #[serde(skip)]
    rendered: RenderCache,
}

/// Memoized renderings of a signature, keyed by the renderer's name. Never part of equality.
#[derive(Clone, Default)]
pub(crate) struct RenderCache(std::sync::Arc<std::sync::Mutex<Renderings>>);

/// `(renderer, text)` pairs.
type Renderings = Vec<(&'static str, std::sync::Arc<crate::shared::SharedText>)>;

impl PartialEq for RenderCache {
    fn eq(&self, _: &RenderCache) -> bool {
        true
    }
}

impl fmt::Debug for RenderCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RenderCache")
    }
}

impl DynSignature {
    /// `render(self)`, computed once per renderer `key` for this signature and reused.
    pub(crate) fn rendered(
        &self,
        key: &'static str,
        render: impl FnOnce(&DynSignature) -> String,
    ) -> std::sync::Arc<crate::shared::SharedText> {
        let mut cache = self.rendered.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, text)) = cache.iter().find(|(k, _)| *k == key) {
            return text.clone();
        }
        let text = crate::shared::SharedText::new(render(self));
        cache.push((key, text.clone()));
        text
    }

    /// Forgets cached renderings (after a change).
    fn changed(&mut self) {
        self.rendered = RenderCache::default();
    }
}

impl DynSignature {
    /// An empty signature called `name` (DSPy prints the name nowhere; it helps in logs).
    pub fn new(name: impl Into<String>) -> DynSignature {
        DynSignature {
            name: name.into(),
            instructions: None,
            inputs: Vec::new(),
            outputs: Vec::new(),
            output_schema: None,
            rendered: RenderCache::default(),
        }
    }

    /// Parses `"a, b: int -> c: list[str]"` (see [`FromStr`](#impl-FromStr-for-DynSignature)).
    pub fn parse(text: &str) -> Result<DynSignature, SignatureError> {
        text.parse()
    }

    /// Sets the instructions (what the step should do).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self.changed();
        self
    }

    /// Appends an input field.
    pub fn with_input(mut self, field: Field) -> Self {
        self.inputs.push(field);
        self.changed();
        self
    }

    /// Appends an output field.
    pub fn with_output(mut self, field: Field) -> Self {
        self.outputs.push(field);
        self.changed();
        self
    }

    /// Inserts an input field at `index` (used by modules that add fields, such as ReAct's
    /// `trajectory`).
    pub fn insert_input(&mut self, index: usize, field: Field) {
        self.inputs.insert(index.min(self.inputs.len()), field);
        self.changed();
    }

    /// Inserts an output field at `index` (ChainOfThought puts `reasoning` first).
    pub fn insert_output(&mut self, index: usize, field: Field) {
        self.outputs.insert(index.min(self.outputs.len()), field);
        self.changed();
    }

    /// A JSON schema for the whole output object that is tighter than the fields' own schemas (for
    /// example one that ties a tool name to that tool's arguments). Schema-constrained adapters send
    /// it as the decoding constraint; other adapters ignore it.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self.changed();
        self
    }

    /// The output-object schema given with [`with_output_schema`](Self::with_output_schema).
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// A copy without the field called `name` (input or output).
    pub fn without_field(&self, name: &str) -> DynSignature {
        let mut copy = self.clone();
        copy.inputs.retain(|f| f.name != name);
        copy.outputs.retain(|f| f.name != name);
        // A whole-output schema would still describe the removed field.
        copy.output_schema = None;
        copy.changed();
        copy
    }

    /// The signature's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instructions: the ones given, or DSPy's default
    /// ``Given the fields `a`, `b`, produce the fields `c`.``
    pub fn instructions(&self) -> String {
        match &self.instructions {
            Some(text) => text.clone(),
            None => {
                format!(
                    "Given the fields {}, produce the fields {}.",
                    quoted_names(&self.inputs),
                    quoted_names(&self.outputs)
                )
            }
        }
    }

    /// Whether instructions were given explicitly.
    pub fn has_explicit_instructions(&self) -> bool {
        self.instructions.is_some()
    }

    /// The input fields, in order.
    pub fn inputs(&self) -> &[Field] {
        &self.inputs
    }

    /// The output fields, in order.
    pub fn outputs(&self) -> &[Field] {
        &self.outputs
    }

    /// Every field, inputs then outputs (the order a saved program lists them in).
    pub fn fields(&self) -> impl Iterator<Item = &Field> {
        self.inputs.iter().chain(&self.outputs)
    }

    /// Changes the field called `name` (its description, prefix or constraints) in place.
    ///
    /// ```
    /// let mut sig: signet::DynSignature = "question -> answer".parse().unwrap();
    /// sig.update_field("answer", |f| *f = f.clone().with_desc("One word")).unwrap();
    /// assert_eq!(sig.outputs()[0].desc(), Some("One word"));
    /// assert!(sig.update_field("nope", |_| {}).is_err());
    /// ```
    pub fn update_field(
        &mut self,
        name: &str,
        update: impl FnOnce(&mut Field),
    ) -> Result<(), SignatureError> {
        let field = self
            .inputs
            .iter_mut()
            .chain(&mut self.outputs)
            .find(|f| f.name == name)
            .ok_or_else(|| SignatureError::UnknownField {
                name: name.to_owned(),
            })?;
        let kept = field.name.clone();
        update(field);
        // The name is the field's identity in inputs, outputs and parsing.
        field.name = kept;
        self.changed();
        Ok(())
    }

    /// Applies saved `(prefix, description)` pairs to the fields by position (inputs then
    /// outputs), as DSPy's load does: pairs beyond the last field are ignored, fields beyond the
    /// last pair keep theirs.
    pub(crate) fn apply_saved_fields<'a>(
        &mut self,
        saved: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (field, (prefix, desc)) in self.inputs.iter_mut().chain(&mut self.outputs).zip(saved) {
            field.prefix = Some(prefix.to_owned());
            field.set_saved_desc(desc);
        }
        self.changed();
    }

    /// A field by name, inputs first.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .find(|f| f.name == name)
    }

    /// Checks that every field name is a valid identifier and appears once.
    pub fn validate(&self) -> Result<(), SignatureError> {
        let mut seen = std::collections::HashSet::new();
        for field in self.inputs.iter().chain(&self.outputs) {
            if !parse::is_identifier(&field.name) {
                return Err(SignatureError::InvalidFieldName {
                    name: field.name.clone(),
                });
            }
            if !seen.insert(field.name.as_str()) {
                return Err(SignatureError::DuplicateField {
                    name: field.name.clone(),
                });
            }
        }
        Ok(())
    }
}

impl FromStr for DynSignature {
    type Err = SignatureError;

    /// Parses `inputs -> outputs`, each a comma-separated list of `name` or `name: type`. Types use
    /// Python's spelling: `str` (the default), `int`, `float`, `bool`, `Any`, `list[T]`,
    /// `dict[str, T]`, `tuple[A, B]`, `Optional[T]`, `Union[A, B]`, `Literal['a', 'b']`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse::parse_signature(text)
    }
}

/// One input or output field: name, optional description, DSPy type name and JSON schema.
///
/// ```
/// use signet::signature::Field;
/// let field = Field::of::<Option<i64>>("maybe").with_desc("Perhaps a number");
/// assert_eq!(field.type_name(), "Union[int, NoneType]");
/// assert_eq!(field.schema(), &serde_json::json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    name: String,
    desc: Option<String>,
    type_name: String,
    schema: Value,
    kind: FieldKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    constraints: Vec<Constraint>,
    /// DSPy's field prefix (`Question:`), when set; otherwise inferred from the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    /// Checks of an output's value (`#[output(check = ..)]`); not saved, not compared.
    #[serde(skip)]
    checks: DeclaredChecks,
}

/// What a field holds, which decides how adapters treat it. It comes from the field's Rust type
/// (`Field::of::<T>`), or from the schema for fields built at run time — never from the printed type
/// name, so a struct of yours called `History` is an ordinary value.
///
/// ```
/// use signet::adapter::{History, ToolCalls, Tools};
/// use signet::signature::{Field, FieldKind};
/// assert_eq!(Field::of::<String>("q").kind(), FieldKind::Text);
/// assert_eq!(Field::of::<i64>("n").kind(), FieldKind::Value);
/// assert_eq!(Field::of::<History>("history").kind(), FieldKind::History);
/// assert_eq!(Field::of::<ToolCalls>("calls").kind(), FieldKind::ToolCalls);
/// assert_eq!(Field::of::<Tools>("tools").kind(), FieldKind::Tools);
/// assert_eq!(Field::of::<Vec<signet::media::Image>>("photos").kind(), FieldKind::Media);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FieldKind {
    /// Plain text (`str`): rendered as it is, read as the text of the reply's section.
    Text,
    /// Any other value, described by its JSON schema.
    Value,
    /// Conversation history ([`adapter::History`](History)): an input rendered as
    /// earlier user and assistant turns.
    History,
    /// The tools offered to the model ([`adapter::Tools`](Tools)): an input sent
    /// natively as `tools=` when the adapter and the LM support it.
    Tools,
    /// The tool calls the model made ([`adapter::ToolCalls`](ToolCalls)): an
    /// output read from the reply's native tool calls.
    ToolCalls,
    /// An image or audio ([`Image`](crate::media::Image), [`Audio`](crate::media::Audio), or a
    /// `Vec` or `Option` of one): an input sent as content parts of the user message.
    Media,
}

impl FieldKind {
    /// The kind of a value of Rust type `T`.
    fn of<T: ?Sized + 'static>(schema: &Value) -> FieldKind {
        use std::any::TypeId;
        let id = TypeId::of::<T>();
        if id == TypeId::of::<History>() {
            FieldKind::History
        } else if id == TypeId::of::<ToolCalls>() {
            FieldKind::ToolCalls
        } else if id == TypeId::of::<Tools>() {
            FieldKind::Tools
        } else if crate::media::is_media_type(id) {
            FieldKind::Media
        } else {
            FieldKind::from_schema(schema)
        }
    }

    /// [`Text`](FieldKind::Text) for a plain string schema (no enum, no format), else
    /// [`Value`](FieldKind::Value).
    fn from_schema(schema: &Value) -> FieldKind {
        let plain_string = schema.get("type").and_then(Value::as_str) == Some("string")
            && schema
                .as_object()
                .is_some_and(|m| !m.contains_key("enum") && !m.contains_key("format"));
        if plain_string {
            FieldKind::Text
        } else {
            FieldKind::Value
        }
    }
}

/// A bound on a field's value, in pydantic's terms (`Field(ge=0, le=1)` in DSPy): printed under
/// the field in the prompt's field list (`Constraints: greater than or equal to: 0.0, ..`), as DSPy
/// prints it. Like DSPy, Signet tells the model and does not check the bound when parsing.
///
/// ```
/// use signet::signature::{Constraint, Field};
/// let field = Field::of::<f64>("confidence")
///     .with_constraint(Constraint::Ge(0.0.into()))
///     .with_constraint(Constraint::Le(1.0.into()));
/// assert_eq!(field.constraints_text().as_deref(),
///     Some("greater than or equal to: 0.0, less than or equal to: 1.0"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Constraint {
    /// Greater than.
    Gt(Value),
    /// Greater than or equal to.
    Ge(Value),
    /// Less than.
    Lt(Value),
    /// Less than or equal to.
    Le(Value),
    /// A minimum length (of a string or a list).
    MinLength(u64),
    /// A maximum length (of a string or a list).
    MaxLength(u64),
    /// A multiple of this number.
    MultipleOf(Value),
}

impl Constraint {
    /// Adds the constraint to a JSON schema of the value, as pydantic writes it (`minimum`,
    /// `exclusiveMaximum`, `maxLength` for a string or `maxItems` for a list, `multipleOf`): what a
    /// decoding constraint enforces. DSPy never sends constraints in a schema; Signet adds them
    /// only where the schema is its own (native ReAct's `finish`).
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::signature::Constraint;
    /// let mut schema = json!({"type": "string"});
    /// Constraint::MaxLength(200).apply_to(&mut schema);
    /// assert_eq!(schema, json!({"type": "string", "maxLength": 200}));
    /// let mut schema = json!({"type": "array", "items": {"type": "integer"}});
    /// Constraint::MinLength(1).apply_to(&mut schema);
    /// assert_eq!(schema["minItems"], 1);
    /// let mut schema = json!({"anyOf": [{"type": "array"}, {"type": "null"}]});
    /// Constraint::MaxLength(3).apply_to(&mut schema);
    /// assert_eq!(schema["maxItems"], 3);
    /// ```
    pub fn apply_to(&self, schema: &mut Value) {
        // A list, or an optional list (`anyOf` with an array branch, `"type": ["array", "null"]`).
        let list = crate::schema::admits_type(schema, "array");
        let Value::Object(map) = schema else {
            return;
        };
        let (key, value) = match self {
            Constraint::Gt(v) => ("exclusiveMinimum", v.clone()),
            Constraint::Ge(v) => ("minimum", v.clone()),
            Constraint::Lt(v) => ("exclusiveMaximum", v.clone()),
            Constraint::Le(v) => ("maximum", v.clone()),
            Constraint::MinLength(n) => (if list { "minItems" } else { "minLength" }, (*n).into()),
            Constraint::MaxLength(n) => (if list { "maxItems" } else { "maxLength" }, (*n).into()),
            Constraint::MultipleOf(v) => ("multipleOf", v.clone()),
        };
        map.insert(key.to_owned(), value);
    }

    /// The text DSPy prints for it: `greater than or equal to: 0.0`, with the bound as Python
    /// prints it.
    pub fn describe(&self) -> String {
        let py = crate::python::py_str;
        match self {
            Constraint::Gt(v) => format!("greater than: {}", py(v)),
            Constraint::Ge(v) => format!("greater than or equal to: {}", py(v)),
            Constraint::Lt(v) => format!("less than: {}", py(v)),
            Constraint::Le(v) => format!("less than or equal to: {}", py(v)),
            Constraint::MinLength(n) => format!("minimum length: {n}"),
            Constraint::MaxLength(n) => format!("maximum length: {n}"),
            Constraint::MultipleOf(v) => format!("a multiple of the given number: {}", py(v)),
        }
    }
}

impl Field {
    /// A field of Rust type `T`: its schema from schemars, in pydantic's shape
    /// ([`pydantic_style`](crate::schema::pydantic_style)) and DSPy's key order.
    pub fn of<T: JsonSchema + ?Sized + 'static>(name: impl Into<String>) -> Field {
        let mut schema = schema::schema_for::<T>();
        schema::pydantic_style(&mut schema);
        let field = Field::from_schema(name, schema);
        let kind = FieldKind::of::<T>(&field.schema);
        field.with_kind(kind)
    }

    /// A `str` field.
    pub fn str(name: impl Into<String>) -> Field {
        Field::from_schema(name, serde_json::json!({"type": "string"}))
    }

    /// A field described by a JSON schema; the type name is derived from the schema.
    pub fn from_schema(name: impl Into<String>, schema: Value) -> Field {
        let schema = schema::dspy_ordered(&schema);
        let type_name = schema::type_name(&schema);
        let kind = FieldKind::from_schema(&schema);
        Field {
            name: name.into(),
            desc: None,
            type_name,
            schema,
            kind,
            constraints: Vec::new(),
            prefix: None,
            checks: DeclaredChecks::default(),
        }
    }

    /// Overrides the DSPy type name shown in prompts (e.g. a Python class name).
    pub fn with_type_name(mut self, type_name: impl Into<String>) -> Self {
        self.type_name = type_name.into();
        self
    }

    /// Sets the description shown next to the field in prompts.
    pub fn with_desc(mut self, desc: impl Into<String>) -> Self {
        let desc = desc.into();
        self.desc = if desc.is_empty() { None } else { Some(desc) };
        self
    }

    /// Sets DSPy's prefix for the field (`"Final Answer:"`). Chat, JSON and XML prompts do not
    /// show it (as in DSPy 3); it is part of the state a program saves, and what prefix-tuning
    /// optimizers such as COPRO change.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// DSPy's prefix: the one set, or the name in title case with a colon (`next_tool_args` ->
    /// `Next Tool Args:`, `HTMLParser` -> `HTML Parser:`).
    ///
    /// ```
    /// use signet::signature::Field;
    /// assert_eq!(Field::str("next_tool_args").prefix(), "Next Tool Args:");
    /// assert_eq!(Field::str("text2number").prefix(), "Text 2 Number:");
    /// assert_eq!(Field::str("answer").with_prefix("Final Answer:").prefix(), "Final Answer:");
    /// ```
    pub fn prefix(&self) -> String {
        match &self.prefix {
            Some(prefix) => prefix.clone(),
            None => format!("{}:", infer_prefix(&self.name)),
        }
    }

    /// The description as DSPy saves it: the text, or the placeholder `${name}` when there is
    /// none.
    pub fn saved_desc(&self) -> String {
        match &self.desc {
            Some(desc) => desc.clone(),
            None => format!("${{{}}}", self.name),
        }
    }

    /// Sets the description from a saved program: DSPy's placeholder `${name}` for this field
    /// means no description; any other text (a placeholder naming another field included) is the
    /// description, shown as it is.
    fn set_saved_desc(&mut self, desc: &str) {
        self.desc = if desc == format!("${{{}}}", self.name) {
            None
        } else {
            Some(desc.to_owned())
        };
    }

    /// Sets what the field holds (see [`FieldKind`]); for fields built from a schema whose role
    /// the schema cannot tell, such as a conversation history described by its JSON schema.
    pub fn with_kind(mut self, kind: FieldKind) -> Self {
        self.kind = kind;
        self
    }

    /// What the field holds.
    pub fn kind(&self) -> FieldKind {
        self.kind
    }

    /// Adds a bound on the value, printed with the field (see [`Constraint`]).
    pub fn with_constraint(mut self, constraint: Constraint) -> Self {
        self.constraints.push(constraint);
        self
    }

    /// Adds a check of the output's value, which modules built on the signature run on every
    /// answer (see [`DeclaredCheck`]).
    pub fn with_check(mut self, check: DeclaredCheck) -> Self {
        self.checks.0.push(check);
        self
    }

    /// The checks declared on the field, in the order they were given.
    pub fn checks(&self) -> &[DeclaredCheck] {
        &self.checks.0
    }

    /// The bounds on the value, in the order they were given.
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    /// The bounds as the prompt prints them after `Constraints: `, if there are any.
    pub fn constraints_text(&self) -> Option<String> {
        (!self.constraints.is_empty()).then(|| {
            self.constraints
                .iter()
                .map(Constraint::describe)
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description, if any.
    pub fn desc(&self) -> Option<&str> {
        self.desc.as_deref().filter(|desc| !desc.is_empty())
    }

    /// The type name DSPy prints (`str`, `int`, `list[str]`, `Literal['a', 'b']`, `Person`).
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The JSON schema of the field's value, keys in DSPy's order.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the field is plain text (`str`), which adapters render without a schema note.
    pub fn is_text(&self) -> bool {
        self.kind == FieldKind::Text
    }
}

/// A problem with a signature written as text or assembled at run time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The text could not be parsed.
    #[error("invalid signature `{signature}`: {reason} (at byte {position})")]
    Parse {
        /// The whole signature text.
        signature: String,
        /// What was wrong.
        reason: String,
        /// Byte offset in `signature` where the problem was found.
        position: usize,
    },
    /// A field name is not an identifier.
    #[error("invalid field name `{name}`: field names must be identifiers")]
    InvalidFieldName {
        /// The offending name.
        name: String,
    },
    /// Two fields share a name.
    #[error("field `{name}` appears more than once in the signature")]
    DuplicateField {
        /// The repeated name.
        name: String,
    },
    /// No field has this name.
    #[error("the signature has no field `{name}`")]
    UnknownField {
        /// The name asked for.
        name: String,
    },
}

/// DSPy's `infer_prefix`: `camelCase`, `snake_case` and `text2number` names as title-case words
/// (`Camel Case`, `Snake Case`, `Text 2 Number`), acronyms kept (`HTMLParser` -> `HTML Parser`).
fn infer_prefix(name: &str) -> String {
    use std::sync::LazyLock;
    static RULES: LazyLock<[regex::Regex; 4]> = LazyLock::new(|| {
        [
            r"(.)([A-Z][a-z]+)",
            r"([a-z0-9])([A-Z])",
            r"([a-zA-Z])(\d)",
            r"(\d)([a-zA-Z])",
        ]
        .map(|rule| regex::Regex::new(rule).expect("a valid pattern"))
    });
    let mut text = name.to_owned();
    for rule in RULES.iter() {
        text = rule.replace_all(&text, "${1}_${2}").into_owned();
    }
    text.split('_')
        .map(|word| {
            let cased = word.chars().any(char::is_alphabetic);
            if cased && !word.chars().any(char::is_lowercase) {
                word.to_owned()
            } else {
                let mut chars = word.chars();
                chars.next().map_or_else(String::new, |first| {
                    first
                        .to_uppercase()
                        .chain(chars.flat_map(char::to_lowercase))
                        .collect()
                })
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[doc(hidden)]
/// Used by `#[derive(Signature)]`: a field of the Rust type `T`.
pub fn field_of<T: SignatureField + ?Sized + 'static>(name: &str) -> Field {
    Field::of::<T>(name)
}

/// Types that can be signature fields: every type with a JSON schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a signature field: it does not implement `schemars::JsonSchema`",
    label = "this field's type has no JSON schema",
    note = "add `#[derive(schemars::JsonSchema, serde::Serialize, serde::Deserialize)]` to `{Self}` (schemars 1.x, re-exported as `signet::schemars`)"
)]
pub trait SignatureField: JsonSchema {}
impl<T: JsonSchema + ?Sized> SignatureField for T {}

/// The fields' names in backticks, comma-separated (`` `a`, `b` ``), as DSPy's prompts list them.
pub(crate) fn quoted_names(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| format!("`{}`", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::infer_prefix;

    #[test]
    fn prefixes_are_inferred_as_dspy_infers_them() {
        // Expected values printed by DSPy's `infer_prefix`.
        for (name, prefix) in [
            ("camelCaseText", "Camel Case Text"),
            ("snake_case_text", "Snake Case Text"),
            ("text2number", "Text 2 Number"),
            ("HTMLParser", "HTML Parser"),
            ("next_tool_args", "Next Tool Args"),
            ("question", "Question"),
            ("_private", " Private"),
            ("tool_name_0", "Tool Name 0"),
        ] {
            assert_eq!(infer_prefix(name), prefix, "{name}");
        }
    }
}
