//! A module offered as a tool: a Predict, ChainOfThought, ReAct agent or compiled program that
//! another agent calls, or that an MCP server serves.

use serde_json::{Map, Value, json};

use super::Module;
use crate::schema;
use crate::signature::{Field, Signature};
use crate::tool::{Tool, ToolError, ToolFuture, ToolSpec};

/// A [`Module`] as a [`Tool`]: its arguments are the signature's input fields (their schemas and
/// descriptions), its result the output fields as one JSON object, described by
/// [`output_schema`](Tool::output_schema). The description is the signature's instructions unless
/// you [give one](Self::with_description).
///
/// Arguments are validated against the input schema before the module runs; a module error is
/// [`ToolError::Failed`] with the error's message, and a panic [`ToolError::Panicked`]. A ReAct
/// run inside reports its steps as [progress](crate::tool::report_progress), which an MCP server
/// sends to the client; dropping the call (a client's cancellation, a time limit) drops the run
/// and the LM and tool calls in flight.
///
/// `S` is the signature whose inputs the module takes: for `Predict<S>`, `ChainOfThought<S>` and
/// `ReAct<S>` that `S`; for a program of your own, the signature its `Input` comes from.
///
/// ```
/// use serde_json::json;
/// use signet::testing::ScriptedLm;
/// use signet::module::ModuleTool;
/// use signet::prelude::*;
///
/// /// Translate the text into French.
/// #[derive(Signature)]
/// struct Translate {
///     /// The English text.
///     #[input]
///     text: String,
///     #[output]
///     french: String,
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let lm = ScriptedLm::texts(["[[ ## french ## ]]\nBonjour\n\n[[ ## completed ## ]]"]);
/// let translate = ModuleTool::new::<Translate>("translate", Predict::<Translate>::new().with_lm(lm));
/// assert_eq!(translate.description(), "Translate the text into French.");
/// assert_eq!(translate.args_schema()["required"], json!(["text"]));
/// assert_eq!(translate.args_schema()["properties"]["text"]["description"], "The English text.");
/// let out = translate.call(json!({"text": "Hello"})).await.unwrap();
/// assert_eq!(out, json!({"french": "Bonjour"}));
/// assert!(translate.call(json!({"txt": "Hello"})).await.is_err()); // checked before the LM runs
/// # });
/// ```
pub struct ModuleTool<M> {
    spec: ToolSpec,
    output_schema: Value,
    module: M,
}

impl<M> std::fmt::Debug for ModuleTool<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl<M: Module> ModuleTool<M> {
    /// `module` as the tool `name`, taking the inputs of the signature `S`.
    pub fn new<S>(name: impl Into<String>, module: M) -> ModuleTool<M>
    where
        S: Signature<Input = M::Input>,
    {
        let signature = S::signature();
        ModuleTool {
            spec: ToolSpec::new(
                name,
                signature.instructions(),
                fields_schema(signature.inputs()),
            ),
            output_schema: fields_schema(signature.outputs()),
            module,
        }
    }

    /// Describes the tool with `description` instead of the signature's instructions.
    pub fn with_description(mut self, description: impl Into<String>) -> ModuleTool<M> {
        let args = self.spec.args_schema().clone();
        self.spec = ToolSpec::new(self.spec.name().to_owned(), description, args);
        self
    }

    /// The module inside.
    pub fn module(&self) -> &M {
        &self.module
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        let input: M::Input = self.spec.parse_args(args)?;
        let output = self
            .module
            .call(input)
            .await
            .map_err(|error| ToolError::Failed {
                tool: self.spec.name().to_owned(),
                message: error.to_string(),
            })?;
        Ok(Value::Object(M::output_fields(&output)))
    }
}

impl<M: Module> Tool for ModuleTool<M> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(async move {
            crate::tool::dispatch::run_async(self.spec.name(), self.run(args)).await?
        })
    }

    fn output_schema(&self) -> Option<&Value> {
        Some(&self.output_schema)
    }
}

/// The object schema of `fields`: each field's schema (references inlined) with its description,
/// every field required but those that accept `null`.
fn fields_schema(fields: &[Field]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defs = Map::new();
    for field in fields {
        let mut schema = schema::inline_refs(field.schema());
        if let Value::Object(map) = &mut schema {
            // Definitions that refer to themselves stay as references; they move to the root,
            // where the references point.
            if let Some(Value::Object(kept)) = map.remove("$defs") {
                defs.extend(kept);
            }
            map.remove("title");
            if let Some(desc) = field.desc() {
                map.entry("description").or_insert_with(|| json!(desc));
            }
        }
        if !accepts_null(&schema) {
            required.push(json!(field.name()));
        }
        properties.insert(field.name().to_owned(), schema);
    }
    let mut root = json!({"type": "object", "properties": properties, "required": required});
    if !defs.is_empty() {
        root["$defs"] = Value::Object(defs);
    }
    root
}

/// Whether `schema` allows `null` (an `Option` field).
fn accepts_null(schema: &Value) -> bool {
    let null = |s: &Value| match s.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    null(schema)
        || ["anyOf", "oneOf"].iter().any(|key| {
            schema
                .get(*key)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(accepts_null))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_are_not_required_and_descriptions_are_kept() {
        let fields = [
            Field::of::<String>("question").with_desc("What to answer."),
            Field::of::<Option<u32>>("limit"),
        ];
        let schema = fields_schema(&fields);
        assert_eq!(schema["required"], json!(["question"]));
        assert_eq!(
            schema["properties"]["question"],
            json!({"type": "string", "description": "What to answer."})
        );
        assert!(accepts_null(&schema["properties"]["limit"]));
    }
}
