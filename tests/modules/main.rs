//! Predict, ChainOfThought and the other modules, adapters, signatures and their checks, on
//! scripted models.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test modules two_step::`.

#[path = "../support/mod.rs"]
mod support;

mod adapters;
mod attempts;
mod checks;
mod constrained;
mod deep_input;
mod journal;
mod media;
mod model_hints;
mod modules;
mod multi_chain;
mod parallel;
mod program_of_thought;
mod properties;
mod scripted;
mod signature_derive;
mod streamify;
mod structured;
mod structured_parse_fn;
mod two_step;
