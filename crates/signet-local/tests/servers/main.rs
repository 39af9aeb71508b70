//! `LocalServer` and `LlamaCpp::serve` with stand-in processes (no model needed): readiness, typed
//! errors, a port another process holds, and the record of running servers in the cache.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test -p signet-local --test servers server::`.

mod port_taken;
mod running_servers;
mod server;

/// `cargo test --workspace` runs this binary among its first (packages in name order), long before
/// the tests that need the MCP peers, Arize Phoenix or DSPy: it starts their first-use installs
/// here, in the background and side by side (`scripts/test-deps.sh`, which returns at once and
/// costs milliseconds when they are installed), so that they are done, or nearly, when those tests
/// start. `SIGNET_PREFETCH=0` turns it off; each of those tests still installs what it needs.
#[test]
fn the_workspaces_first_use_installs_start_in_the_background() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-deps.sh");
    let status = std::process::Command::new("bash")
        .arg(&script)
        .status()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
    assert!(status.success(), "{} failed ({status})", script.display());
}
