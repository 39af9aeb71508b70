//! A ReAct agent that uses an MCP server's tools next to a local `#[tool]`: the official
//! filesystem server (`@modelcontextprotocol/server-filesystem`, over stdio) reads a file, and a
//! Rust function counts its words.
//!
//! ```text
//! bash scripts/mcp-peers.sh            # once: installs the MCP servers into ~/.cache/signet/mcp
//! cargo run --example mcp_agent        # a scripted model: runs offline, same steps every time
//! OPENAI_API_KEY=sk-... cargo run --example mcp_agent   # a real model picks the steps
//! ```
//!
//! Without the installed peers it runs the server with `npx -y` (which needs the npm registry).
//! The server is stopped when the client is closed (or dropped); it sees only the environment
//! given to it (here, none: `node` is run directly).

use signet::prelude::*;
use signet::testing::ScriptedLm;
use signet_mcp::McpClient;

#[path = "shared/mcp_peers.rs"]
mod mcp_peers;
use mcp_peers::reference_server;

/// Answer the question about the files, using the tools.
#[derive(Signature)]
struct AskFiles {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Count the words in a text.
#[tool]
fn count_words(text: String) -> usize {
    text.split_whitespace().count()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A directory for the server to serve, with one file in it.
    let dir = std::env::temp_dir().join(format!("signet-mcp-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "Signet talks to MCP servers in both directions.\n")?;

    let files = McpClient::builder()
        .name("files")
        .spawn(reference_server("server-filesystem").arg(&dir))
        .await?;
    println!(
        "MCP server `{}` offers: {}",
        files.name(),
        files.tool_names().join(", ")
    );

    // MCP tools and a local tool, side by side.
    let file_tools = files
        .tools()
        .into_iter()
        .filter(|t| ["read_text_file", "list_directory"].contains(&t.name()));
    let agent = ReAct::<AskFiles>::new()
        .tools(file_tools)
        .tool(CountWordsTool)
        .with_limits(Limits::default().max_iters(6));
    let agent = match std::env::var("OPENAI_API_KEY") {
        Ok(key) if !key.trim().is_empty() => {
            agent.with_lm(OpenAiLm::builder("gpt-4o-mini").build()?)
        }
        _ => agent.with_lm(scripted(&notes)),
    };
    let question = format!("How many words are in {}?", notes.display());
    println!("question: {question}\n");
    let out = agent.call(AskFilesInput { question }).await?;
    for step in &out.trajectory.steps {
        println!(
            "{}. {} -> {}({})",
            step.index, step.thought, step.tool_name, step.tool_args
        );
        match &step.observation {
            Observation::Error(text) => println!("   error: {text}"),
            other => println!("   {}", other.as_text().trim_end()),
        }
    }
    println!("\nanswer: {}", out.output.answer);

    files.close().await?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The steps a model would take, so the example runs without one.
fn scripted(notes: &std::path::Path) -> ScriptedLm {
    let step = |thought: &str, tool: &str, args: serde_json::Value| {
        format!(
            "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
             [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
        )
    };
    let text = "Signet talks to MCP servers in both directions.\n";
    ScriptedLm::texts([
        step(
            "First read the file through the filesystem server.",
            "read_text_file",
            serde_json::json!({"path": notes}),
        ),
        step(
            "Now count its words with the local tool.",
            "count_words",
            serde_json::json!({"text": text}),
        ),
        step(
            "I have the count.",
            "finish",
            serde_json::json!({"answer": "The file has 8 words."}),
        ),
    ])
}
