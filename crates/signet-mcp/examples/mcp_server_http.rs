//! Signet tools served over MCP's streamable HTTP, behind a bearer token, and called by a Signet
//! client that holds the token.
//!
//! ```text
//! cargo run --example mcp_server_http                 # serve, call once as a client, stop
//! cargo run --example mcp_server_http -- --serve      # keep serving on 127.0.0.1:8000
//! SIGNET_MCP_TOKEN=... cargo run --example mcp_server_http -- --serve 0.0.0.0:8000
//! ```
//!
//! `--serve` takes the token from `SIGNET_MCP_TOKEN` (required: make one with, for example,
//! `openssl rand -hex 32`); the one-shot demo makes a throwaway token for its own run. A request
//! without the token gets `401 Unauthorized`. Serving on an address other than loopback without a
//! token is refused (`signet_mcp::Error::Unprotected`).

use serde_json::json;
use signet::prelude::*;
use signet_mcp::{BearerAuth, HttpMode, McpClient, McpServer};

/// Convert a temperature from degrees Celsius to degrees Fahrenheit.
#[tool]
fn celsius_to_fahrenheit(
    /// The temperature in degrees Celsius.
    celsius: f64,
) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

#[path = "shared/token.rs"]
mod token;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serve = args.first().is_some_and(|a| a == "--serve");
    let addr = args.get(1).map_or("127.0.0.1:8000", String::as_str);
    let token = match std::env::var("SIGNET_MCP_TOKEN") {
        Ok(token) if !token.is_empty() => token,
        _ if serve => return Err("set SIGNET_MCP_TOKEN to the token clients must send".into()),
        _ => token::throwaway_token(),
    };
    let server = McpServer::new()
        .tool(CelsiusToFahrenheitTool)
        .with_name("temperature", "1.0.0")
        // The default: every request answered on its own, so several copies of this server can
        // share an address behind a load balancer. `HttpMode::Sessions` keeps one per client.
        .with_http_mode(HttpMode::Stateless)
        .with_bearer_auth(BearerAuth::tokens([token.clone()]));

    if serve {
        let http = server.serve_http(addr).await?;
        println!(
            "serving {} (Authorization: Bearer <token>); Ctrl-C stops",
            http.url()
        );
        tokio::signal::ctrl_c().await?;
        http.shutdown().await?;
        return Ok(());
    }

    let http = server.serve_http("127.0.0.1:0").await?;
    match McpClient::connect(http.url()).await {
        Err(refused) => println!("without the token: {refused}"),
        Ok(_) => return Err("a client without the token was let in".into()),
    }
    let client = McpClient::builder()
        .bearer_token(token)
        .connect(http.url())
        .await?;
    let tool = client
        .tool("celsius_to_fahrenheit")
        .ok_or("the server does not list celsius_to_fahrenheit")?;
    let result = tool.call(json!({"celsius": 21.5})).await?;
    println!("with the token: celsius_to_fahrenheit(21.5) = {result}");
    client.close().await?;
    http.shutdown().await?;
    Ok(())
}
