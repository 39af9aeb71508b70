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

use std::path::PathBuf;

use signet::lm::ScriptedLm;
use signet::prelude::*;
use signet_mcp::{McpClient, StdioCommand};

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
        .spawn(filesystem_server(&dir))
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

/// The filesystem server from `scripts/mcp-peers.sh`'s cache, or else from npm through `npx`.
fn filesystem_server(dir: &std::path::Path) -> StdioCommand {
    let cache = std::env::var_os("SIGNET_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/signet")));
    let installed = cache.and_then(|cache| {
        let env = std::fs::read_to_string(cache.join("mcp/peers.env")).ok()?;
        let get = |key: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(PathBuf::from)
        };
        let script = get("SIGNET_MCP_NODE_MODULES")?
            .join("@modelcontextprotocol/server-filesystem/dist/index.js");
        Some((get("SIGNET_MCP_NODE")?, script)).filter(|(_, s)| s.exists())
    });
    match installed {
        Some((node, script)) => StdioCommand::new(node).arg(script).arg(dir),
        None => StdioCommand::new("npx")
            .args(["-y", "@modelcontextprotocol/server-filesystem@2026.8.31"])
            .arg(dir)
            .inherit_env(["PATH", "HOME"]),
    }
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
