//! Production runs back into examples: the inputs and outputs that `invoke_agent` spans recorded
//! (with content capture on) as examples for the next compile.

use serde_json::{Map, Value};
use signet::data::Example;

use crate::OtelError;

/// One module call read back from an exported span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanExample {
    /// The span's trace id (hex).
    pub trace_id: String,
    /// The span's id (hex).
    pub span_id: String,
    /// The program version the call ran (`gen_ai.agent.version`), if it was loaded from a file.
    pub version: Option<String>,
    /// The call's inputs (marked as inputs) and outputs (as labels).
    pub example: Example,
}

/// The calls of the agent `agent` (a signature's name, `gen_ai.agent.name`) that finished without
/// error, as examples: its inputs marked as inputs, its outputs as labels, in the order given.
///
/// `spans` are exported spans as JSON, in either shape a backend hands out: Phoenix's REST API
/// (`{"context": {"trace_id", "span_id"}, "attributes": {"gen_ai.agent.name": ..}}`) or OTLP/JSON
/// (`{"traceId", "spanId", "attributes": [{"key", "value": {"stringValue"}}]}`). Spans of other
/// kinds or agents are skipped; a matching span whose recorded inputs or outputs are not JSON
/// objects is an error naming it.
///
/// ```
/// use serde_json::json;
/// let spans = vec![json!({
///     "name": "invoke_agent Ask",
///     "context": {"trace_id": "ab", "span_id": "cd"},
///     "status_code": "OK",
///     "attributes": {
///         "gen_ai.operation.name": "invoke_agent",
///         "gen_ai.agent.name": "Ask",
///         "signet.module.inputs": "{\"question\": \"2+2?\"}",
///         "signet.module.outputs": "{\"answer\": \"4\"}"
///     }
/// })];
/// let examples = signet_otel::examples_from_spans(&spans, "Ask").unwrap();
/// assert_eq!(examples[0].example.inputs()["question"], "2+2?");
/// assert_eq!(examples[0].example.labels()["answer"], "4");
/// ```
pub fn examples_from_spans(spans: &[Value], agent: &str) -> Result<Vec<SpanExample>, OtelError> {
    let mut examples = Vec::new();
    let mut without_content = 0;
    for span in spans {
        let attributes = attributes_of(span);
        let text = |key: &str| attributes.get(key).and_then(Value::as_str);
        if text("gen_ai.operation.name") != Some("invoke_agent")
            || text("gen_ai.agent.name") != Some(agent)
            || failed(span)
        {
            continue;
        }
        let (trace_id, span_id) = ids(span);
        let (Some(inputs), Some(outputs)) =
            (text("signet.module.inputs"), text("signet.module.outputs"))
        else {
            without_content += 1;
            continue;
        };
        let object = |what: &str, json: &str| -> Result<Map<String, Value>, OtelError> {
            match serde_json::from_str(json) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(other) => Err(OtelError::SpanContent {
                    span_id: span_id.clone(),
                    message: format!("its {what} are not a JSON object: {other}"),
                }),
                Err(error) => Err(OtelError::SpanContent {
                    span_id: span_id.clone(),
                    message: format!("its {what} are not JSON: {error}"),
                }),
            }
        };
        let inputs = object("inputs", inputs)?;
        let outputs = object("outputs", outputs)?;
        let keys: Vec<String> = inputs.keys().cloned().collect();
        let mut values = inputs;
        values.extend(outputs);
        examples.push(SpanExample {
            trace_id,
            span_id,
            version: text("gen_ai.agent.version").map(str::to_owned),
            example: Example::new(Value::Object(values)).with_inputs(keys),
        });
    }
    if examples.is_empty() && without_content > 0 {
        return Err(OtelError::NoContent {
            agent: agent.to_owned(),
            spans: without_content,
        });
    }
    Ok(examples)
}

/// A span's attributes as one flat map, from Phoenix's object or OTLP/JSON's key-value list.
fn attributes_of(span: &Value) -> Map<String, Value> {
    match span.get("attributes") {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|kv| {
                let key = kv.get("key")?.as_str()?;
                let value = kv.get("value")?;
                let value = ["stringValue", "intValue", "doubleValue", "boolValue"]
                    .iter()
                    .find_map(|kind| value.get(*kind))?;
                Some((key.to_owned(), value.clone()))
            })
            .collect(),
        _ => Map::new(),
    }
}

/// Whether the span ended in error (Phoenix's `status_code`, OTLP's `status.code` 2).
fn failed(span: &Value) -> bool {
    span.get("status_code").and_then(Value::as_str) == Some("ERROR")
        || matches!(
            span.pointer("/status/code"),
            Some(Value::Number(n)) if n.as_u64() == Some(2)
        )
        || span.pointer("/status/code").and_then(Value::as_str) == Some("STATUS_CODE_ERROR")
}

/// The span's trace and span ids, in either shape.
fn ids(span: &Value) -> (String, String) {
    let text = |pointer: &str| span.pointer(pointer).and_then(Value::as_str);
    (
        text("/context/trace_id")
            .or(text("/traceId"))
            .unwrap_or_default()
            .to_owned(),
        text("/context/span_id")
            .or(text("/spanId"))
            .unwrap_or_default()
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn phoenix_span(agent: &str, inputs: &str, outputs: Option<&str>, status: &str) -> Value {
        let mut attributes = json!({
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.agent.version": "sha256:0011223344556677",
            "signet.module.inputs": inputs,
        });
        if let Some(outputs) = outputs {
            attributes["signet.module.outputs"] = json!(outputs);
        }
        json!({"context": {"trace_id": "t", "span_id": "s"}, "status_code": status,
               "attributes": attributes})
    }

    #[test]
    fn otlp_json_spans_are_read_too() {
        let span = json!({
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": "eee19b7ec3c1b174",
            "status": {"code": 1},
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "Ask"}},
                {"key": "signet.module.inputs", "value": {"stringValue": "{\"q\": 1}"}},
                {"key": "signet.module.outputs", "value": {"stringValue": "{\"a\": 2}"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}
            ]
        });
        let examples = examples_from_spans(&[span], "Ask").unwrap();
        assert_eq!(examples.len(), 1);
        assert_eq!(examples[0].span_id, "eee19b7ec3c1b174");
        assert_eq!(examples[0].example.input_keys(), ["q"]);
        assert_eq!(examples[0].example.labels()["a"], 2);
    }

    #[test]
    fn failed_calls_and_other_agents_are_skipped() {
        let spans = [
            phoenix_span("Ask", r#"{"q": 1}"#, Some(r#"{"a": 2}"#), "ERROR"),
            phoenix_span("Other", r#"{"q": 1}"#, Some(r#"{"a": 2}"#), "OK"),
            phoenix_span("Ask", r#"{"q": 3}"#, Some(r#"{"a": 4}"#), "OK"),
            json!("not a span"),
            json!({"attributes": 7}),
        ];
        let examples = examples_from_spans(&spans, "Ask").unwrap();
        assert_eq!(examples.len(), 1);
        assert_eq!(examples[0].example.inputs()["q"], 3);
        assert_eq!(
            examples[0].version.as_deref(),
            Some("sha256:0011223344556677")
        );
    }

    #[test]
    fn spans_without_content_say_capture_was_off() {
        let spans = [phoenix_span("Ask", r#"{"q": 1}"#, None, "OK")];
        let error = examples_from_spans(&spans, "Ask").unwrap_err();
        assert!(
            matches!(&error, OtelError::NoContent { spans: 1, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("capture"), "{error}");
    }

    #[test]
    fn forged_content_is_a_typed_error_naming_the_span() {
        for inputs in ["[1, 2]", "{not json", "\"text\""] {
            let spans = [phoenix_span("Ask", inputs, Some("{}"), "OK")];
            let error = examples_from_spans(&spans, "Ask").unwrap_err();
            assert!(
                matches!(&error, OtelError::SpanContent { span_id, .. } if span_id == "s"),
                "{inputs}: {error}"
            );
        }
    }
}
