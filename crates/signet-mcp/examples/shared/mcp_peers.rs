//! Finding the reference MCP servers for the MCP examples: from `scripts/mcp-peers.sh`'s cache
//! when it was run, or else from npm through `npx -y` (which needs the npm registry).

use std::path::PathBuf;

use signet_mcp::StdioCommand;

/// The pinned version of the reference servers (as `scripts/mcp-peers.sh` installs them).
const VERSION: &str = "2026.8.31";

/// The command that runs `@modelcontextprotocol/<package>` over stdio (add its arguments).
pub fn reference_server(package: &str) -> StdioCommand {
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
            .join("@modelcontextprotocol")
            .join(package)
            .join("dist/index.js");
        Some((get("SIGNET_MCP_NODE")?, script)).filter(|(_, s)| s.exists())
    });
    match installed {
        Some((node, script)) => StdioCommand::new(node).arg(script),
        None => StdioCommand::new("npx")
            .args(["-y", &format!("@modelcontextprotocol/{package}@{VERSION}")])
            .inherit_env(["PATH", "HOME"]),
    }
}
