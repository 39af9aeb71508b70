//! The project-level examples, integration tests and benchmarks of Signet live beside this crate
//! (`examples/`, `tests/`, `benches/`); it has no code of its own. Use the `signet` crate.
//!
//! Under `cargo test` the README and every page of the user guide in `docs/` are compiled and run
//! as doctests, so their examples cannot drift from the code.

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

#[cfg(doctest)]
#[doc = include_str!("../docs/tools.md")]
struct ToolsGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/signatures.md")]
struct SignaturesGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/modules.md")]
struct ModulesGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/adapters.md")]
struct AdaptersGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/react.md")]
struct ReactGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/lm.md")]
struct LmGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/local-models.md")]
struct LocalModelsGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/mcp.md")]
struct McpGuide;
