//! Tools (`#[tool]` schemas, validation, dispatch, methods, modules as tools) and per-call settings
//! (`CallConfig::scope`).
//!
//! `call_scope` checks that a call outside any scope has no LM (`LmError::NotConfigured`), so it
//! is kept out of the `modules` binary, whose `modules::configuration_precedence_*` test sets the
//! process-wide LM (`signet::module::configure`), which cannot be unset.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test tools tool_validation::`.

#[path = "../support/mod.rs"]
mod support;

mod call_scope;
mod method_tools;
mod module_tool;
mod tool_approval;
mod tool_dispatch;
mod tool_schema;
mod tool_validation;
