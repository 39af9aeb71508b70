//! Signet's spans through an in-memory OpenTelemetry pipeline (`spans`), and the Phoenix harness
//! proved without Signet (`phoenix_harness`).
//!
//! `content.rs`, `phoenix.rs` and `phoenix_local.rs` are binaries of their own: they turn content
//! capture on for the whole process or install the global `tracing` subscriber, and `spans` checks
//! that nothing is captured unless asked.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test -p signet-otel --test otel spans::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod phoenix_harness;
mod spans;
