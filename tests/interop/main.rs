//! Signet beside DSPy and other tools: the DSPy parity fixtures, programs crossing to and from
//! Python DSPy, the BFCL harness and the user guide built as a reader's crate. Some install what
//! they need on first use (a DSPy venv, BFCL's data and checker).
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test interop parity::`.

#[path = "../support/mod.rs"]
mod support;

mod bfcl;
mod dspy_defaults;
mod dspy_interop;
mod feature_unification;
mod guide;
mod parity;
mod parity_tools;
