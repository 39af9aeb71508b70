//! What an MCP client offers beyond tools, against the reference server that exercises all of it
//! (`@modelcontextprotocol/server-everything`, over stdio): resources and their templates, a
//! prompt sent to a model, the server sampling the client's model, the server asking the user a
//! question (elicitation), the roots the client declares, and resources handed to a ReAct agent
//! as tools.
//!
//! ```text
//! bash scripts/mcp-peers.sh                 # once: installs the MCP servers into ~/.cache/signet/mcp
//! cargo run --example mcp_everything        # a scripted model: runs offline, same output every time
//! OPENAI_API_KEY=sk-... cargo run --example mcp_everything   # a real model answers
//! ```

use std::sync::Arc;

use serde_json::json;
use signet::lm::{Lm, LmRequest};
use signet::prelude::*;
use signet::testing::ScriptedLm;
use signet_mcp::content::resource_value;
use signet_mcp::{ElicitationAnswer, ElicitationKind, McpClient, Root, Sampling};

#[path = "shared/mcp_peers.rs"]
mod mcp_peers;
use mcp_peers::reference_server;

/// Answer the question using the server's resources.
#[derive(Signature)]
struct AskDocs {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lm: Arc<dyn Lm> = match std::env::var("OPENAI_API_KEY") {
        Ok(key) if !key.trim().is_empty() => Arc::new(OpenAiLm::builder("gpt-4o-mini").build()?),
        _ => Arc::new(ScriptedLm::texts([
            "Oslo in winter: short days, northern lights nearby, warm cafés.",
            "A haiku: quiet server hums / borrowing a distant mind / words come back to it",
        ])),
    };

    let client = McpClient::builder()
        .name("everything")
        // The roots this client lets the server know about.
        .roots([Root::new("file:///srv/projects/signet").name("signet")])
        // The server may borrow our model: at most 100 tokens a reply, 2,000 in all.
        .sampling(
            Sampling::new(lm.clone())
                .max_tokens(100)
                .token_budget(2_000),
        )
        // The server's questions to the user; here a program answers them.
        .elicitation(|question| async move {
            println!("  ? {} asks: {}", question.server, question.message);
            match question.kind {
                ElicitationKind::Form { .. } => {
                    ElicitationAnswer::Accept(json!({"name": "Ada Lovelace", "check": true}))
                }
                _ => ElicitationAnswer::Decline,
            }
        })
        .spawn(reference_server("server-everything").arg("stdio"))
        .await?;

    // Resources and templates.
    let resources = client.resources().await?;
    let templates = client.resource_templates().await?;
    println!(
        "{} resources and {} templates, e.g. {} and {}",
        resources.len(),
        templates.len(),
        resources.first().map_or("-", |r| r.uri.as_str()),
        templates.first().map_or("-", |t| t.uri_template.as_str()),
    );
    let contents = client
        .read_resource("demo://resource/dynamic/text/1")
        .await?;
    println!(
        "read demo://resource/dynamic/text/1: {}",
        resource_value(&contents)
    );

    // A prompt, filled in and sent to the model.
    let messages = client
        .prompt_messages("args-prompt", json!({"city": "Oslo"}))
        .await?;
    println!("\nprompt args-prompt: {:?}", messages[0].content);
    let reply = lm.complete(&LmRequest::new(messages)).await?;
    println!("model: {}", reply.text.unwrap_or_default());

    // The server samples our model in the middle of a tool call.
    let sampled = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "write a haiku"}),
        )
        .await?;
    println!(
        "\ntrigger-sampling-request -> {}",
        signet_mcp::content::result_value(&sampled)
    );
    let usage = client.sampling_usage();
    println!(
        "sampling so far: {} LM call(s), {} tokens",
        usage.lm_calls,
        usage.total_tokens()
    );

    // The server asks the user a question in the middle of a tool call.
    let elicited = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await?;
    println!(
        "trigger-elicitation-request -> {}",
        signet_mcp::content::result_value(&elicited)
    );

    // What the server knows of our roots.
    let roots = client.call_tool("get-roots-list", json!({})).await?;
    let roots = signet_mcp::content::result_value(&roots);
    let declared = roots.as_str().unwrap_or_default().lines().map(str::trim);
    let declared: Vec<&str> = declared.filter(|l| l.starts_with("URI:")).collect();
    println!("\nget-roots-list -> {}", declared.join(", "));

    // Resources as tools for an agent.
    let agent = ReAct::<AskDocs>::new()
        .tools(client.resource_tools())
        .with_lm(agent_steps())
        .with_limits(Limits::default().max_iters(4));
    let out = agent
        .call(AskDocsInput {
            question: "What does dynamic text resource 2 say?".into(),
        })
        .await?;
    println!();
    for step in &out.trajectory.steps {
        let observation = step.observation.as_text();
        let short: String = observation.chars().take(70).collect();
        println!(
            "{}. {}({}) -> {short}",
            step.index, step.tool_name, step.tool_args
        );
    }
    println!("answer: {}", out.output.answer);

    client.close().await?;
    Ok(())
}

/// The agent's steps, scripted so the example runs without a model.
fn agent_steps() -> ScriptedLm {
    let step = |thought: &str, tool: &str, args: serde_json::Value| {
        format!(
            "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
             [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
        )
    };
    ScriptedLm::texts([
        step("See what there is to read.", "list_resources", json!({})),
        step(
            "Read the second dynamic text resource.",
            "read_resource",
            json!({"uri": "demo://resource/dynamic/text/2"}),
        ),
        step("I have read it.", "finish", json!({})),
        "[[ ## reasoning ## ]]\nThe resource was read.\n\n[[ ## answer ## ]]\nIt is a generated \
         plaintext resource, number 2.\n\n[[ ## completed ## ]]"
            .to_owned(),
    ])
}
