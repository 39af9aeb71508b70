//! The guide's pages that add crates to the getting-started project, as a reader's crate: under
//! `cargo test --workspace` (its doctests) every Rust snippet of these pages is compiled and run
//! with the getting-started dependencies plus the crates the pages add (this crate's
//! `Cargo.toml`, which `tests/interop/guide.rs` checks against the pages' `[dependencies]`
//! blocks). The other pages are doctests of `tests/guide`.

#[cfg(doctest)]
#[doc = include_str!("../../docs/mcp.md")]
struct McpGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/tutorial-mcp.md")]
struct TutorialMcp;

#[cfg(doctest)]
#[doc = include_str!("../../docs/tutorial-sse.md")]
struct TutorialSse;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-tracing.md")]
struct HowtoTracing;

#[cfg(doctest)]
#[doc = include_str!("../../docs/scale.md")]
struct ScaleGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/sandbox.md")]
struct SandboxGuide;
