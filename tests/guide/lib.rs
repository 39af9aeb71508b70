//! The user guide as a reader's crate: under `cargo test --doc` every Rust snippet of the README
//! and of each page of `docs/` is compiled and run as a doctest, against only the dependencies the
//! guide tells the reader to add (this crate's `Cargo.toml`; `tests/interop/guide.rs` checks that
//! the two agree and runs this crate under `cargo test --workspace`). The crate is not a member of
//! the workspace, so no feature another member enables reaches it: a snippet that needs a crate or
//! a feature the guide does not mention fails here as it would for the reader.
//!
//! The pages that start from the getting-started project (its `[dependencies]`, this crate's
//! plain dependencies) are tested without features; the pages that tell the reader to add more
//! (a `[dependencies]` block of their own) are tested together, each with the feature named after
//! it, which turns on exactly what it adds (`cargo test --doc --features tutorial-sse,mcp,..`).

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../README.md")]
struct Readme;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/tools.md")]
struct ToolsGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/signatures.md")]
struct SignaturesGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/modules.md")]
struct ModulesGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/adapters.md")]
struct AdaptersGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/react.md")]
struct ReactGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-checks.md")]
struct ChecksGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/lm.md")]
struct LmGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/local-models.md")]
struct LocalModelsGuide;

#[cfg(all(doctest, feature = "mcp"))]
#[doc = include_str!("../../docs/mcp.md")]
struct McpGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/README.md")]
struct GuideIntroduction;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/getting-started.md")]
struct GettingStarted;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/tutorial-extraction.md")]
struct TutorialExtraction;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/tutorial-agent.md")]
struct TutorialAgent;

#[cfg(all(doctest, feature = "tutorial-mcp"))]
#[doc = include_str!("../../docs/tutorial-mcp.md")]
struct TutorialMcp;

#[cfg(all(doctest, feature = "tutorial-sse"))]
#[doc = include_str!("../../docs/tutorial-sse.md")]
struct TutorialSse;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/optimize.md")]
struct OptimizeGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/evaluate.md")]
struct EvaluateGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-providers.md")]
struct HowtoProviders;

#[cfg(all(doctest, feature = "howto-tracing"))]
#[doc = include_str!("../../docs/howto-tracing.md")]
struct HowtoTracing;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-caching.md")]
struct HowtoCaching;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-tool-context.md")]
struct HowtoToolContext;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-cancellation.md")]
struct HowtoCancellation;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-sync.md")]
struct HowtoSync;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-concurrency.md")]
struct HowtoConcurrency;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-attempts.md")]
struct HowtoAttempts;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-multimodal.md")]
struct HowtoMultimodal;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-streaming.md")]
struct HowtoStreaming;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/howto-retrieval.md")]
struct HowtoRetrieval;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/reliability.md")]
struct ReliabilityGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/performance.md")]
struct PerformanceGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/bfcl.md")]
struct BfclGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/dspy.md")]
struct DspyGuide;

#[cfg(all(doctest, not(feature = "page")))]
#[doc = include_str!("../../docs/not-implemented.md")]
struct NotImplementedGuide;

#[cfg(all(doctest, feature = "scale"))]
#[doc = include_str!("../../docs/scale.md")]
struct ScaleGuide;
