//! The HTTP client (`OpenAiLm`, `OpenAiEmbedder`) against local mock and misbehaving servers: requests,
//! replies, faults, limits, costs and secrets.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test lm_http secrets::`.

#[path = "../support/raw_http.rs"]
mod raw_http;
#[path = "../support/mod.rs"]
mod support;

mod anthropic;
mod budget;
mod faults;
mod faults_runtime;
mod gemini;
mod lm_http;
mod lm_http2;
mod lm_request_limit;
mod providers;
mod responses;
mod retrieval;
mod scripted;
mod secrets;
