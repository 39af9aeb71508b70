//! Property tests: every adapter reads back exactly what it writes, for every field type; and
//! argument validation agrees with deserialization.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use signet::DynSignature;
use signet::adapter::{Adapter, ChatAdapter, JsonAdapter, XmlAdapter};
use signet::tool::ToolSpec;

/// `cases` cases, with failures saved beside this file (`properties.proptest-regressions`):
/// proptest's default would look for `tests/proptest-regressions/properties.txt`, since this
/// file's directory holds a `main.rs`. `PROPTEST_DISABLE_FAILURE_PERSISTENCE` still turns
/// persistence off.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if config.failure_persistence.is_some() {
        config.failure_persistence = Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        )));
    }
    config
}

fn signature() -> DynSignature {
    DynSignature::parse(
        "question -> text, count: int, ratio: float, ok: bool, names: list[str], \
         scores: dict[str, int], maybe: Optional[int], choice: Literal['red', 'green']",
    )
    .unwrap()
}

/// Text as models write it in a field: no surrounding whitespace, no marker-like brackets.
fn text() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9 ,.!?'\"é{}:-]{0,30}[A-Za-z0-9.!?]".prop_map(|s| s)
}

/// Output values; `item` generates the strings inside lists.
fn outputs_with(item: BoxedStrategy<String>) -> impl Strategy<Value = Map<String, Value>> {
    (
        text(),
        any::<i32>(),
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        any::<bool>(),
        prop::collection::vec(item, 0..4),
        prop::collection::btree_map("[a-z]{1,8}", any::<i32>(), 0..4),
        prop::option::of(any::<i32>()),
        prop::sample::select(vec!["red", "green"]),
    )
        .prop_map(|(text, count, ratio, ok, names, scores, maybe, choice)| {
            json!({
                "text": text, "count": count, "ratio": ratio, "ok": ok, "names": names,
                "scores": scores, "maybe": maybe, "choice": choice,
            })
            .as_object()
            .cloned()
            .unwrap()
        })
}

/// Any strings in lists (JSON carries them exactly).
fn outputs() -> impl Strategy<Value = Map<String, Value>> {
    outputs_with(any::<String>().boxed())
}

/// Lists of text as models write it: XML trims nested text (as DSPy's XML reader does) and cannot
/// carry control characters.
fn xml_outputs() -> impl Strategy<Value = Map<String, Value>> {
    outputs_with(text().boxed())
}

/// Renders `outputs` as a demo reply with `adapter`, then parses that reply.
fn round_trip(adapter: &dyn Adapter, outputs: &Map<String, Value>) -> Map<String, Value> {
    let sig = signature();
    let mut demo = outputs.clone();
    demo.insert("question".into(), json!("q"));
    let messages = adapter.format(
        &sig,
        &[demo],
        &json!({"question": "q"}).as_object().cloned().unwrap(),
    );
    let reply = &messages[2].content;
    adapter
        .parse(&sig, reply)
        .unwrap_or_else(|e| panic!("{} could not read back {reply:?}: {e}", adapter.name()))
}

fn normalized(outputs: &Map<String, Value>) -> Value {
    // Floats compare as floats whatever their JSON spelling.
    let mut value = Value::Object(outputs.clone());
    value["ratio"] = json!(outputs["ratio"].as_f64().unwrap());
    value
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn chat_reads_back_what_it_writes(outputs in outputs()) {
        prop_assert_eq!(normalized(&round_trip(&ChatAdapter::new(), &outputs)), normalized(&outputs));
    }

    #[test]
    fn json_reads_back_what_it_writes(outputs in outputs()) {
        prop_assert_eq!(normalized(&round_trip(&JsonAdapter::new(), &outputs)), normalized(&outputs));
    }

    #[test]
    fn xml_reads_back_what_it_writes(outputs in xml_outputs()) {
        prop_assert_eq!(normalized(&round_trip(&XmlAdapter::new(), &outputs)), normalized(&outputs));
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Args {
    count: i64,
    small: u8,
    ratio: f64,
    label: Option<String>,
    tags: Vec<String>,
    mode: Mode,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Mode {
    Fast,
    Slow,
}

/// A valid argument object with up to two fields changed (to any JSON value), removed, or added.
fn argument_objects() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-5i64..300).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::from),
        (-5i64..300).prop_map(|x| Value::from(x as f64)),
        "[a-z]{0,6}".prop_map(Value::String),
        prop::sample::select(vec!["fast", "slow", "medium"]).prop_map(|s| json!(s)),
    ];
    let value = leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(Value::Array)
    });
    let key = prop::sample::select(vec![
        "count", "small", "ratio", "label", "tags", "mode", "extra",
    ]);
    let change = (key, prop::option::of(value));
    prop::collection::vec(change, 0..3).prop_map(|changes| {
        let mut args = json!({"count": 1, "small": 2, "ratio": 0.5, "label": null, "tags": ["a"], "mode": "fast"});
        for (key, value) in changes {
            match value {
                Some(value) => args[key] = value,
                None => {
                    args.as_object_mut().unwrap().remove(key);
                }
            }
        }
        args
    })
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn validation_agrees_with_deserialization(args in argument_objects()) {
        let spec = ToolSpec::for_args::<Args>("t", "");
        let validated = spec.validate(&args).is_ok();
        let parsed = spec.parse_args::<Args>(args.clone()).is_ok();
        // Whatever passes validation deserializes, and whatever deserializes passes validation.
        prop_assert_eq!(validated, parsed, "{}", args);
    }
}
