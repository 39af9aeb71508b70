//! A compiled ReAct agent served over MCP as one tool: any MCP client (an IDE, a desktop
//! assistant, another agent) calls `travel_agent` with a question, follows the run as progress
//! messages, and gets the typed answer as structured content.
//!
//! ```text
//! cargo run --example mcp_serve_agent                    # serve, ask once as a client, stop
//! cargo run --example mcp_serve_agent -- "Weather in Bergen?"
//! cargo run --example mcp_serve_agent -- --stdio         # serve on stdin/stdout
//! SIGNET_MCP_TOKEN=... cargo run --example mcp_serve_agent -- --serve 127.0.0.1:8000
//! ```
//!
//! The agent is the one `react_agent` runs (SmolLM2-135M locally, or OpenAI with
//! `OPENAI_API_KEY`), compiled from `examples/travel_agent.json`. The tool's arguments are the
//! signature's inputs (`question`), its result the outputs (`answer`), and its description the
//! signature's instructions. A client's cancellation stops the run, LM call included.
//!
//! `--serve` takes the bearer token clients must send from `SIGNET_MCP_TOKEN`; the one-shot demo
//! serves on a loopback port with a throwaway token and calls the agent with signet-mcp's own
//! client, printing each progress message as it arrives.

use std::sync::Arc;

use serde_json::json;
use signet::tool::with_progress;
use signet_mcp::{BearerAuth, McpClient, McpServer};

#[path = "../../../examples/shared/travel.rs"]
mod travel;
use travel::{Notes, Travel};
#[path = "../../../examples/shared/travel_model.rs"]
mod travel_model;
use travel_model::Model;

const QUESTION: &str = "What is tomorrow's weather in Oslo, and how much is 200 EUR in NOK?";

#[path = "shared/token.rs"]
mod token;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = Model::from_env().await?;
    let agent = model.travel_agent(&Arc::new(Notes::default()))?;
    let server = McpServer::new()
        .module::<Travel>("travel_agent", agent)
        .with_name("travel", "1.0.0");

    match args.first().map(String::as_str) {
        Some("--stdio") => {
            eprintln!("serving travel_agent on stdin/stdout");
            server.serve_stdio().await?;
        }
        Some("--serve") => {
            let addr = args.get(1).map_or("127.0.0.1:8000", String::as_str);
            let token = std::env::var("SIGNET_MCP_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
                .ok_or("set SIGNET_MCP_TOKEN to the token clients must send")?;
            let http = server
                .with_bearer_auth(BearerAuth::tokens([token]))
                .serve_http(addr)
                .await?;
            eprintln!(
                "serving {} (Authorization: Bearer <token>); Ctrl-C stops",
                http.url()
            );
            tokio::signal::ctrl_c().await?;
            http.shutdown().await?;
        }
        question => {
            let question = question.unwrap_or(QUESTION).to_owned();
            let token = token::throwaway_token();
            let http = server
                .with_bearer_auth(BearerAuth::tokens([token.clone()]))
                .serve_http("127.0.0.1:0")
                .await?;
            let client = McpClient::builder()
                .bearer_token(token)
                .call_timeout(None) // a run on the local model takes a while
                .connect(http.url())
                .await?;
            let tool = client
                .tool("travel_agent")
                .ok_or("the server does not list travel_agent")?;
            println!("tool: travel_agent — {}", tool.description());
            println!("arguments: {}", tool.args_schema());
            println!("question: {question}\n");
            let call = tool.call(json!({ "question": question }));
            let answer = with_progress(|message| println!("  progress: {message}"), call).await;
            match answer {
                Ok(answer) => println!("\nanswer (structured content): {answer}"),
                Err(error) => println!("\nthe agent failed: {error}"),
            }
            client.close().await?;
            http.shutdown().await?;
        }
    }
    model.stop().await?;
    Ok(())
}
