//! Signet's traces in a real LLM tracing server, Arize Phoenix (installed into the cache by
//! `scripts/phoenix.sh` on first use): a ReAct agent whose tools come from an MCP server, and an
//! evaluation, exported by `signet_otel` over OTLP/HTTP and read back through Phoenix's REST API.
//! The span tree, the conventions' attribute names and values, the token counts, and the
//! examples rebuilt from the production spans are checked, not just that spans arrived.

mod common;
mod support;

use std::collections::HashMap;
use std::time::Duration;

use common::phoenix::{Phoenix, attr, int_attr, str_attr};
use serde_json::{Value, json};
use signet::data::Example;
use signet::evaluate::{Evaluate, Score};
use signet::module::{Predict, ReAct};
use signet::testing::ScriptedLm;
use signet_mcp::{McpClient, McpServer};
use signet_otel::{OtelConfig, Protocol, examples_from_spans};
use support::{AddTool, Ask, AskInput, AskOutput, completion, extract, step};

const PROJECT: &str = "signet-scripted";

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_mcp_tools_and_an_evaluation_arrive_in_phoenix_as_trees() {
    let phoenix = Phoenix::start().await;
    let otel = OtelConfig::new("signet-phoenix-test")
        .endpoint(phoenix.base_url())
        .protocol(Protocol::HttpProtobuf)
        .resource_attribute("openinference.project.name", PROJECT)
        .capture_content(true)
        // Metrics on, as by default: Phoenix takes traces only, and says so with a 405, which
        // turns metrics off with one line instead of failing the export.
        .metrics_interval(std::time::Duration::from_millis(200))
        .log_to_stderr(false)
        .install()
        .expect("the export installs");

    // A ReAct agent whose `add` tool is served by a Signet MCP server over HTTP.
    let server = McpServer::new()
        .tool(AddTool)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::connect(server.url()).await.unwrap();
    let lm = ScriptedLm::new([
        completion(step("add them", "add", json!({"a": 2, "b": 3})), 120, 12),
        completion(step("done", "finish", json!({})), 160, 9),
        completion(extract("5"), 180, 6),
    ]);
    let out = ReAct::<Ask>::new()
        .tools(client.tools())
        .with_lm(lm)
        .call(AskInput {
            question: "What is 2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "5");

    // An evaluation of a Predict over two examples, one right and one wrong.
    let lm = ScriptedLm::texts([
        "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]",
        "[[ ## answer ## ]]\n7\n\n[[ ## completed ## ]]",
    ]);
    let examples = vec![
        Example::new(json!({"question": "2+2?", "answer": "4"})).with_inputs(["question"]),
        Example::new(json!({"question": "3+3?", "answer": "6"})).with_inputs(["question"]),
    ];
    let metric = |example: &Example, output: &AskOutput| {
        let right = example.get("answer") == Some(&json!(output.answer));
        Score::new(if right { 1.0 } else { 0.0 }).with_feedback(if right {
            "right"
        } else {
            "wrong answer"
        })
    };
    let report = Evaluate::new(&examples, metric)
        .with_concurrency(1)
        .run(&Predict::<Ask>::new().with_lm(lm))
        .await
        .unwrap();
    assert_eq!(report.score, 50.0);

    otel.shutdown()
        .await
        .expect("the spans are flushed, and Phoenix's 405 for metrics is no error");
    drop(client);
    drop(server);

    // agent + 3 chats + 2 tools + MCP client + MCP server; evaluate + 2 examples + 2 programs +
    // 2 agents + 2 chats.
    let spans = phoenix
        .wait_for_spans(PROJECT, 17, Duration::from_secs(30))
        .await;
    let by_id: HashMap<&str, &Value> = spans.iter().map(|s| (id(s), s)).collect();
    let parent = |span: &Value| -> Option<&Value> {
        span["parent_id"]
            .as_str()
            .and_then(|p| by_id.get(p).copied())
    };

    // The agent's tree: invoke_agent -> chat x3, execute_tool -> tools/call (client) ->
    // tools/call (server).
    let agent = spans
        .iter()
        .find(|s| {
            attr(s, "gen_ai.operation.name") == Some(&json!("invoke_agent")) && parent(s).is_none()
        })
        .unwrap_or_else(|| panic!("no root agent span among {spans:#?}"));
    let agent_name = str_attr(agent, "gen_ai.agent.name");
    assert_eq!(agent["name"], format!("invoke_agent {agent_name}"));
    assert_eq!(agent["span_kind"], "AGENT");
    let trace = agent["context"]["trace_id"].as_str().unwrap();
    let in_trace: Vec<&Value> = spans
        .iter()
        .filter(|s| s["context"]["trace_id"] == trace)
        .collect();
    // agent, 3 chats, `add` and its two MCP spans, and ReAct's built-in `finish`.
    assert_eq!(in_trace.len(), 8, "{in_trace:#?}");
    assert!(in_trace.iter().any(|s| s["name"] == "execute_tool finish"));
    let chats: Vec<&Value> = in_trace
        .iter()
        .copied()
        .filter(|s| s["name"] == "chat scripted")
        .collect();
    assert_eq!(chats.len(), 3);
    for chat in &chats {
        assert_eq!(parent(chat).map(id), Some(id(agent)));
        assert_eq!(chat["span_kind"], "LLM");
        assert_eq!(str_attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(str_attr(chat, "gen_ai.provider.name"), "signet.scripted");
        assert_eq!(str_attr(chat, "gen_ai.request.model"), "scripted");
        assert_eq!(
            attr(chat, "gen_ai.response.finish_reasons"),
            Some(&json!(["stop"]))
        );
        let messages: Value =
            serde_json::from_str(str_attr(chat, "gen_ai.input.messages")).unwrap();
        assert_eq!(messages[0]["role"], "user");
    }
    let tokens: Vec<(i64, i64)> = chats
        .iter()
        .map(|c| {
            (
                int_attr(c, "gen_ai.usage.input_tokens"),
                int_attr(c, "gen_ai.usage.output_tokens"),
            )
        })
        .collect();
    assert_eq!(tokens, [(120, 12), (160, 9), (180, 6)]);
    assert_eq!(int_attr(agent, "gen_ai.usage.input_tokens"), 460);
    assert_eq!(int_attr(agent, "gen_ai.usage.output_tokens"), 27);

    let tool = in_trace
        .iter()
        .find(|s| s["name"] == "execute_tool add")
        .unwrap();
    assert_eq!(parent(tool).map(id), Some(id(agent)));
    assert_eq!(tool["span_kind"], "TOOL");
    assert_eq!(str_attr(tool, "gen_ai.tool.type"), "extension");
    assert_eq!(
        serde_json::from_str::<Value>(str_attr(tool, "gen_ai.tool.call.arguments")).unwrap(),
        json!({"a": 2, "b": 3})
    );
    let mcp: Vec<&&Value> = in_trace
        .iter()
        .filter(|s| s["name"] == "tools/call add")
        .collect();
    assert_eq!(mcp.len(), 2, "the client's span and the server's");
    let mcp_client = mcp
        .iter()
        .find(|s| parent(s).map(id) == Some(id(tool)))
        .expect("the MCP client span is the tool span's child");
    assert_eq!(str_attr(mcp_client, "mcp.method.name"), "tools/call");
    assert_eq!(str_attr(mcp_client, "network.transport"), "tcp");
    let mcp_server = mcp
        .iter()
        .find(|s| parent(s).map(id) == Some(id(mcp_client)))
        .expect("the MCP server span continues the client's trace (params._meta)");
    assert_eq!(str_attr(mcp_server, "gen_ai.tool.name"), "add");

    // The evaluation's tree: evaluate -> evaluate_example x2 -> invoke_agent Predict<Ask> (the
    // program) -> invoke_agent Ask (its one predictor) -> chat.
    let evaluate = spans
        .iter()
        .find(|s| {
            s["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("evaluate ")
        })
        .expect("an evaluate span");
    assert_eq!(attr(evaluate, "signet.evaluate.score"), Some(&json!(50.0)));
    assert_eq!(int_attr(evaluate, "signet.evaluate.examples"), 2);
    assert!(str_attr(evaluate, "gen_ai.agent.version").starts_with("sha256:"));
    let examples = named(&spans, "evaluate_example");
    assert_eq!(examples.len(), 2);
    let mut feedback: Vec<(i64, &str)> = examples
        .iter()
        .map(|e| {
            assert_eq!(parent(e).map(id), Some(id(evaluate)));
            (
                int_attr(e, "signet.example.index"),
                str_attr(e, "signet.example.feedback"),
            )
        })
        .collect();
    feedback.sort();
    assert_eq!(feedback, [(0, "right"), (1, "wrong answer")]);
    for example in &examples {
        let program = spans
            .iter()
            .find(|s| parent(s).map(id) == Some(id(example)))
            .expect("the example's program call");
        assert_eq!(program["name"], "invoke_agent Predict<Ask>");
        let agent = spans
            .iter()
            .find(|s| parent(s).map(id) == Some(id(program)))
            .expect("the program's predictor call");
        assert_eq!(agent["name"], "invoke_agent Ask");
        assert!(
            spans
                .iter()
                .any(|s| parent(s).map(id) == Some(id(agent)) && s["name"] == "chat scripted")
        );
    }

    // Production spans back into examples for the next compile: every call of an `Ask` agent
    // (the ReAct run and the two evaluated Predict calls).
    let rebuilt = examples_from_spans(&spans, "Ask").unwrap();
    let mut questions: Vec<String> = rebuilt
        .iter()
        .map(|e| e.example.inputs()["question"].as_str().unwrap().to_owned())
        .collect();
    questions.sort();
    assert_eq!(questions, ["2+2?", "3+3?", "What is 2 + 3?"]);
    assert!(
        rebuilt
            .iter()
            .all(|e| e.example.labels().contains_key("answer"))
    );
}
