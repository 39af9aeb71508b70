//! `LocalServer` and `LlamaCpp::serve` with stand-in processes (no model needed): readiness, typed
//! errors, a port another process holds, and the record of running servers in the cache.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test -p signet-local --test servers server::`.

mod port_taken;
mod running_servers;
mod server;
