//! signet-mcp against real MCP peers (the npm reference servers, the official Python SDK's server
//! and client), installed by `scripts/mcp-peers.sh` on first use (`common`).
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test -p signet-mcp --test peers served_module::`.

#[path = "../common/mod.rs"]
mod common;

mod npm_client_features;
mod npm_servers;
mod python_server;
mod react_agent;
mod served_module;
