//! With content capture on, spans carry what the conventions call content (messages, tool
//! arguments and results) and Signet's module inputs and outputs; and an MCP call is one trace
//! from the agent through the client to the server, its context carried in `params._meta`.

use opentelemetry::Value;
use serde_json::json;
use signet::module::ReAct;
use signet::testing::ScriptedLm;
use signet_mcp::{McpClient, McpServer};

mod support;
use support::*;

fn json_attr(span: &opentelemetry_sdk::trace::SpanData, key: &str) -> serde_json::Value {
    serde_json::from_str(&text(span, key)).unwrap_or_else(|e| panic!("{key}: {e}"))
}

#[tokio::test]
async fn content_capture_records_messages_tool_payloads_and_module_fields() {
    signet::telemetry::set_capture_content(true);
    let pipeline = Pipeline::install();
    let lm = ScriptedLm::texts([
        step("add them", "add", json!({"a": 1, "b": 2})),
        step("done", "finish", json!({})),
        extract("3"),
    ]);
    ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .call(AskInput {
            question: "1+2?".into(),
        })
        .await
        .unwrap();
    let spans = pipeline.finished();
    let chat = spans_named(&spans, "chat scripted")[0];
    let system = json_attr(chat, "gen_ai.system_instructions");
    assert_eq!(system[0]["type"], "text");
    assert!(
        system[0]["content"]
            .as_str()
            .unwrap()
            .contains("Your input fields are:")
    );
    let input = json_attr(chat, "gen_ai.input.messages");
    assert_eq!(input[0]["role"], "user");
    assert!(
        input[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("1+2?")
    );
    let output = json_attr(chat, "gen_ai.output.messages");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "stop");
    assert!(
        output[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("add them")
    );

    let tool = span(&spans, "execute_tool add");
    assert_eq!(
        json_attr(tool, "gen_ai.tool.call.arguments"),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(json_attr(tool, "gen_ai.tool.call.result"), json!(3));

    let agent = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .unwrap();
    assert_eq!(
        json_attr(agent, "signet.module.inputs"),
        json!({"question": "1+2?"})
    );
    assert_eq!(json_attr(agent, "signet.module.outputs")["answer"], "3");
}

#[tokio::test]
async fn an_mcp_call_is_one_trace_from_agent_to_server() {
    signet::telemetry::set_capture_content(true);
    let pipeline = Pipeline::install();
    let server = McpServer::new()
        .tool(AddTool)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::connect(server.url()).await.unwrap();
    let lm = ScriptedLm::texts([
        step("add them", "add", json!({"a": 2, "b": 3})),
        step("done", "finish", json!({})),
        extract("5"),
    ]);
    let out = ReAct::<Ask>::new()
        .tools(client.tools())
        .with_lm(lm)
        .call(AskInput {
            question: "2+3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "5");
    let spans = pipeline.finished();
    let tool = span(&spans, "execute_tool add");
    assert_eq!(
        text(tool, "gen_ai.tool.type"),
        "extension",
        "an MCP server's tool"
    );
    let calls: Vec<_> = spans_named(&spans, "tools/call add");
    let client_span = calls
        .iter()
        .find(|s| s.span_kind == opentelemetry::trace::SpanKind::Client)
        .unwrap_or_else(|| panic!("no client span among {:?}", names(&spans)));
    let server_span = calls
        .iter()
        .find(|s| s.span_kind == opentelemetry::trace::SpanKind::Server)
        .unwrap_or_else(|| panic!("no server span among {:?}", names(&spans)));
    assert_eq!(client_span.parent_span_id, tool.span_context.span_id());
    assert_eq!(text(client_span, "mcp.method.name"), "tools/call");
    assert_eq!(text(client_span, "network.transport"), "tcp");
    assert_eq!(text(client_span, "server.address"), "127.0.0.1");
    assert!(matches!(attr(client_span, "server.port"), Some(Value::I64(p)) if *p > 0));
    // The server's span continues the client's trace: its parent came in `params._meta`.
    assert_eq!(
        server_span.span_context.trace_id(),
        client_span.span_context.trace_id()
    );
    assert_eq!(
        server_span.parent_span_id,
        client_span.span_context.span_id()
    );
    assert!(server_span.parent_span_is_remote);
    assert_eq!(text(server_span, "gen_ai.tool.name"), "add");
    drop(client);
    drop(server);
}
