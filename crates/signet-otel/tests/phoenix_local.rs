//! The real local model (SmolLM2-135M served by llama.cpp, installed by `signet-local` on first
//! use) traced into Arize Phoenix over OTLP/gRPC: a ReAct agent with a tool from an MCP server,
//! whose `chat` spans carry what the server reported (token counts, response id and model,
//! finish reasons) and where it is (`server.address`, `server.port`).

mod common;
mod support;

use std::time::Duration;

use common::phoenix::{Phoenix, attr, int_attr};
use serde_json::Value;
use signet::adapter::JsonAdapter;
use signet::lm::LmOptions;
use signet::module::{Limits, ReAct, ReActMode};
use signet_local::LlamaCpp;
use signet_mcp::{McpClient, McpServer};
use signet_otel::{OtelConfig, Protocol};
use support::{AddTool, Ask, AskInput};

const PROJECT: &str = "signet-local-model";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_models_calls_reach_phoenix_with_their_token_counts() {
    let model = LlamaCpp::smollm2();
    let local = model
        .serve()
        .await
        .unwrap_or_else(|e| panic!("the local model server must start: {e}"));
    let phoenix = Phoenix::start().await;
    let otel = OtelConfig::new("signet-local-test")
        .endpoint(phoenix.otlp_grpc_endpoint())
        .protocol(Protocol::Grpc)
        .resource_attribute("openinference.project.name", PROJECT)
        .metrics(false)
        .log_to_stderr(false)
        .install()
        .expect("the export installs");

    let server = McpServer::new()
        .tool(AddTool)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::connect(server.url()).await.unwrap();
    let agent = ReAct::<Ask>::new()
        .tools(client.tools())
        .with_lm(model.lm(&local).unwrap())
        .with_adapter(JsonAdapter::constrained())
        .with_mode(ReActMode::Text)
        .with_limits(Limits::default().max_iters(3))
        .with_options(LmOptions {
            temperature: Some(0.0),
            max_tokens: Some(200),
            ..LmOptions::default()
        });
    let run = agent
        .call(AskInput {
            question: "What is 2 + 3? Use the add tool.".into(),
        })
        .await
        .expect("a typed answer from the real model");
    otel.shutdown().await.expect("the spans are flushed");

    // The agent span (the root, ended last) and one chat span per model call.
    let is_agent =
        |s: &Value| attr(s, "gen_ai.operation.name") == Some(&Value::from("invoke_agent"));
    let is_chat = |s: &Value| attr(s, "gen_ai.operation.name") == Some(&Value::from("chat"));
    let spans = phoenix
        .wait_until(
            PROJECT,
            "the agent span and a chat span per model call",
            Duration::from_secs(30),
            |spans| {
                spans.iter().any(is_agent)
                    && spans.iter().filter(|s| is_chat(s)).count() as u64 >= run.usage.lm_calls
            },
        )
        .await;
    let agent_span = spans
        .iter()
        .find(|s| attr(s, "gen_ai.operation.name") == Some(&Value::from("invoke_agent")))
        .unwrap_or_else(|| panic!("no agent span among {spans:#?}"));
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name") == Some(&Value::from("chat")))
        .collect();
    assert_eq!(
        chats.len() as u64,
        run.usage.lm_calls,
        "one chat span per model call"
    );
    let (mut input, mut output) = (0, 0);
    for chat in &chats {
        assert_eq!(chat["parent_id"], agent_span["context"]["span_id"]);
        assert_eq!(
            attr(chat, "gen_ai.provider.name"),
            Some(&Value::from("llama.cpp"))
        );
        assert_eq!(
            attr(chat, "server.address"),
            Some(&Value::from("127.0.0.1"))
        );
        let port = local
            .base_url()
            .trim_end_matches("/v1")
            .rsplit(':')
            .next()
            .unwrap();
        assert_eq!(int_attr(chat, "server.port").to_string(), port);
        assert!(
            attr(chat, "gen_ai.response.id")
                .and_then(Value::as_str)
                .is_some_and(|id| !id.is_empty())
        );
        assert!(attr(chat, "gen_ai.response.model").is_some());
        assert!(attr(chat, "gen_ai.response.finish_reasons").is_some_and(Value::is_array));
        assert_eq!(
            attr(chat, "gen_ai.request.temperature"),
            Some(&Value::from(0.0))
        );
        assert_eq!(int_attr(chat, "gen_ai.request.max_tokens"), 200);
        assert!(
            attr(chat, "gen_ai.input.messages").is_none(),
            "content is off by default"
        );
        let tokens = int_attr(chat, "gen_ai.usage.input_tokens");
        assert!(tokens > 0, "the server counted the prompt");
        input += tokens;
        output += int_attr(chat, "gen_ai.usage.output_tokens");
    }
    assert_eq!(input as u64, run.usage.prompt_tokens);
    assert_eq!(output as u64, run.usage.completion_tokens);
    assert_eq!(int_attr(agent_span, "gen_ai.usage.input_tokens"), input);
    drop(client);
    drop(server);
}
