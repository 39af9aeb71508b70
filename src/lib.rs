//! The project-level examples, integration tests and benchmarks of Signet live beside this crate
//! (`examples/`, `tests/`, `benches/`); it has no code of its own. Use the `signet` crate.
