//! The project-level examples and integration tests of Signet live beside this crate
//! (`examples/`, `tests/`); it has no code of its own. Use the `signet` crate.
//!
//! The README and the pages of the user guide in `docs/` are compiled and run as doctests of
//! `tests/guide`, a crate with only the dependencies the getting-started page names (run by
//! `tests/interop/guide.rs`), and of `tests/guide-pages` (the pages that add crates).
