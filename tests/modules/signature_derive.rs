//! `#[derive(Signature)]`: instructions, field descriptions, DSPy type names and schemas, typed
//! input and output structs, and the same metadata as a run-time `DynSignature`.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use signet::{DynSignature, Field, Signature};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// City name
    pub city: String,
    pub street: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Person {
    pub name: String,
    pub age: i64,
    pub address: Address,
    #[serde(default)]
    pub nicknames: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    A,
    B,
}

/// Extract structured facts from the text.
#[derive(Signature)]
pub struct TypedOutputs {
    #[input(desc = "Source text to analyse")]
    pub text: String,
    /// Number of people mentioned
    #[output]
    pub count: i64,
    #[output]
    pub ratio: f64,
    #[output]
    pub is_valid: bool,
    #[output]
    pub names: Vec<String>,
    #[output]
    pub choice: Choice,
    #[output]
    pub person: Person,
    #[output]
    pub scores: HashMap<String, i64>,
    #[output]
    pub maybe: Option<i64>,
}

#[test]
fn type_names_match_dspy() {
    let sig = TypedOutputs::signature();
    let names: Vec<(&str, &str)> = sig
        .outputs()
        .iter()
        .map(|f| (f.name(), f.type_name()))
        .collect();
    assert_eq!(
        names,
        [
            ("count", "int"),
            ("ratio", "float"),
            ("is_valid", "bool"),
            ("names", "list[str]"),
            ("choice", "Literal['a', 'b']"),
            ("person", "Person"),
            ("scores", "dict[str, int]"),
            ("maybe", "Union[int, NoneType]"),
        ]
    );
    assert_eq!(sig.inputs()[0].type_name(), "str");
    assert!(sig.inputs()[0].is_text());
    assert!(!sig.outputs()[4].is_text(), "a Literal is not free text");
}

#[test]
fn schemas_match_dspy_for_plain_types() {
    // These are the exact schemas DSPy 3.4.1 prints for the same Python types.
    let sig = TypedOutputs::signature();
    let schema = |name: &str| sig.field(name).unwrap().schema().to_string();
    assert_eq!(schema("count"), r#"{"type":"integer"}"#);
    assert_eq!(schema("ratio"), r#"{"type":"number"}"#);
    assert_eq!(schema("is_valid"), r#"{"type":"boolean"}"#);
    assert_eq!(
        schema("names"),
        r#"{"type":"array","items":{"type":"string"}}"#
    );
    assert_eq!(schema("choice"), r#"{"type":"string","enum":["a","b"]}"#);
    assert_eq!(
        schema("scores"),
        r#"{"type":"object","additionalProperties":{"type":"integer"}}"#
    );
    assert_eq!(
        schema("maybe"),
        r#"{"anyOf":[{"type":"integer"},{"type":"null"}]}"#
    );
}

#[test]
fn struct_schemas_read_like_pydantic_models() {
    let person = TypedOutputs::signature().field("person").unwrap().schema();
    assert_eq!(
        person,
        &json!({
            "type": "object",
            "$defs": {"Address": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name", "title": "City"},
                    "street": {"type": "string", "title": "Street"}
                },
                "required": ["city", "street"],
                "title": "Address"
            }},
            "properties": {
                "address": {"$ref": "#/$defs/Address"},
                "age": {"type": "integer", "title": "Age"},
                "name": {"type": "string", "title": "Name"},
                "nicknames": {"type": "array", "default": [], "items": {"type": "string"}, "title": "Nicknames"}
            },
            "required": ["name", "age", "address"],
            "title": "Person"
        })
    );
}

#[test]
fn instructions_and_descriptions() {
    let sig = TypedOutputs::signature();
    assert_eq!(sig.name(), "TypedOutputs");
    assert_eq!(
        sig.instructions(),
        "Extract structured facts from the text."
    );
    assert_eq!(sig.inputs()[0].desc(), Some("Source text to analyse"));
    assert_eq!(sig.outputs()[0].desc(), Some("Number of people mentioned"));
    assert_eq!(sig.outputs()[1].desc(), None);
}

#[derive(Signature)]
#[signature(name = "QA")]
struct Qa {
    #[input]
    question: String,
    #[input]
    context: Vec<String>,
    #[output]
    answer: String,
}

#[test]
fn default_instructions_follow_dspy() {
    assert_eq!(
        Qa::signature().instructions(),
        "Given the fields `question`, `context`, produce the fields `answer`."
    );
    assert!(!Qa::signature().has_explicit_instructions());
    assert_eq!(Qa::signature().name(), "QA");
}

#[test]
fn derived_and_string_signatures_carry_the_same_metadata() {
    let parsed = DynSignature::parse("question, context: list[str] -> answer").unwrap();
    assert_eq!(parsed.inputs(), Qa::signature().inputs());
    assert_eq!(parsed.outputs(), Qa::signature().outputs());
    assert_eq!(parsed.instructions(), Qa::signature().instructions());
}

#[test]
fn typed_inputs_and_outputs() {
    let input = QaInput {
        question: "Why?".into(),
        context: vec!["Because.".into()],
    };
    assert_eq!(
        serde_json::to_value(&input).unwrap(),
        json!({"question": "Why?", "context": ["Because."]})
    );
    let output: QaOutput = serde_json::from_value(json!({"answer": "42"})).unwrap();
    assert_eq!(output.answer, "42");

    let example = Qa::from_parts(input, output);
    assert_eq!(example.answer, "42");
    let (input, output) = example.into_parts();
    assert_eq!(input.question, "Why?");
    assert_eq!(output.answer, "42");
}

#[test]
fn output_struct_rejects_ill_typed_values() {
    let err = serde_json::from_value::<TypedOutputsOutput>(json!({"count": "two"})).unwrap_err();
    assert!(err.to_string().contains("invalid type"), "{err}");
}

#[test]
fn dynamic_signatures_can_be_built_field_by_field() {
    let sig = DynSignature::new("Summarize")
        .with_instructions("Summarize the document.")
        .with_input(Field::str("document").with_desc("The text"))
        .with_output(Field::of::<Vec<String>>("bullets"));
    assert_eq!(sig.outputs()[0].type_name(), "list[str]");
    assert_eq!(sig.inputs()[0].desc(), Some("The text"));
    let json = serde_json::to_string(&sig).unwrap();
    let back: DynSignature = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sig);
}

/// Rate the review.
#[derive(Signature)]
struct Rated {
    #[input(min_length = 1, max_length = 500)]
    review: String,
    /// How sure the model is.
    #[output(ge = 0.0, le = 1.0)]
    confidence: f64,
    #[output(gt = 0, lt = 6, multiple_of = 1)]
    stars: i64,
}

#[test]
fn field_bounds_are_printed_as_dspy_prints_pydantic_constraints() {
    let sig = Rated::signature();
    assert_eq!(
        sig.inputs()[0].constraints_text().as_deref(),
        Some("minimum length: 1, maximum length: 500")
    );
    assert_eq!(
        sig.outputs()[0].constraints_text().as_deref(),
        Some("greater than or equal to: 0.0, less than or equal to: 1.0")
    );
    assert_eq!(
        sig.outputs()[1].constraints_text().as_deref(),
        Some("greater than: 0, less than: 6, a multiple of the given number: 1")
    );
    use signet::adapter::Adapter;
    let system = &signet::adapter::ChatAdapter::new().format(sig, &[], &Default::default())[0];
    assert!(
        system.content.contains(
            "1. `confidence` (float): How sure the model is.\nConstraints: greater than or equal to: 0.0, less than or equal to: 1.0\n2. `stars` (int): \nConstraints: greater than: 0"
        ),
        "{}",
        system.content
    );
    // Serialized signatures keep them.
    let back: DynSignature = serde_json::from_str(&serde_json::to_string(sig).unwrap()).unwrap();
    assert_eq!(&back, sig);
}

mod user_types {
    /// A user's own type that happens to be called `History`.
    #[derive(
        Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
    )]
    pub struct History {
        pub visits: Vec<String>,
    }
}

/// Summarize the visits.
#[derive(Signature)]
struct Visits {
    #[input]
    history: user_types::History,
    #[output]
    summary: String,
}

#[tokio::test]
async fn a_user_struct_named_history_is_an_ordinary_typed_field() {
    use signet::module::Predict;
    use signet::signature::FieldKind;
    use signet::testing::ScriptedLm;
    let field = &Visits::signature().inputs()[0];
    assert_eq!(field.type_name(), "History");
    assert_eq!(
        field.kind(),
        FieldKind::Value,
        "decided by the Rust type, not the name"
    );
    let lm = std::sync::Arc::new(ScriptedLm::texts(["[[ ## summary ## ]]\nTwo visits."]));
    let out = Predict::<Visits>::new()
        .with_lm(lm.clone())
        .call(VisitsInput {
            history: user_types::History {
                visits: vec!["Oslo".into(), "Bergen".into()],
            },
        })
        .await
        .unwrap();
    assert_eq!(out.summary, "Two visits.");
    // The value is rendered as an input like any other, not as conversation turns.
    let messages = &lm.requests()[0].messages;
    assert_eq!(messages.len(), 2, "system and user only");
    assert!(
        messages[1].content.contains(
            r#"[[ ## history ## ]]
{"visits": ["Oslo", "Bergen"]}"#
        ),
        "{}",
        messages[1].content
    );
}
