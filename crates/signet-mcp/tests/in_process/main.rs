//! signet-mcp without external peers: an in-process Signet MCP server over HTTP (its modes,
//! authentication, sessions) and hostile in-process peers meeting the limits.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test -p signet-mcp --test in_process session::`.

use signet::tool;

/// Add two integers (the tool most of these modules serve).
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

mod http_auth;
mod http_modes;
mod limits;
mod load;
mod redirects;
mod session;
