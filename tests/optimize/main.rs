//! Optimizers (BootstrapFewShot, random search, MIPROv2, GEPA, COPRO, Ensemble, KNN demos), `Evaluate`, saved
//! programs and files on disk, and the travel agent's metric and checks.
//!
//! One test binary for all these modules, so that the dependency tree is linked once, not once per
//! file (each module was a test binary of its own). One module's tests:
//! `cargo test --test optimize travel_metric::`.

#[path = "../support/mipro_task.rs"]
mod mipro_task;
#[path = "../support/mod.rs"]
mod support;

mod atomic_files;
mod copro;
mod demo_selection;
mod ensemble;
mod evaluate;
mod evaluate_concurrency;
mod gepa;
mod mipro;
mod optimize;
mod saved_programs;
mod travel_checks;
mod travel_metric;
