//! ReAct: its modes, events, streams, budgets, interrupts, approvals and suspended runs.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test react suspend_seal::`.

#[path = "../support/mod.rs"]
mod support;

mod react;
mod react_answer_deltas;
mod react_answer_order;
mod react_approval;
mod react_budget;
mod react_events;
mod react_history;
mod react_interrupts;
mod react_native;
mod react_native_http;
mod react_selection;
mod react_sse;
mod react_suspend;
mod suspend_seal;
