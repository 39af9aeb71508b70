//! The user guide as a reader's crate: under `cargo test --doc` every Rust snippet of the README
//! and of the pages of `docs/` listed below is compiled and run as a doctest, against only the
//! dependencies the guide tells the reader to add (this crate's `Cargo.toml`;
//! `tests/interop/guide.rs` checks that the two agree and runs this crate under
//! `cargo test --workspace`). The crate is not a member of
//! the workspace, so no feature another member enables reaches it: a snippet that needs a crate or
//! a feature the guide does not mention fails here as it would for the reader.
//!
//! The pages here are the ones that build on the getting-started project alone (its
//! `[dependencies]`, this crate's dependencies). The pages that tell the reader to add crates (a
//! `[dependencies]` block of their own) are doctests of `tests/guide-pages`, a workspace member.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct Readme;

#[cfg(doctest)]
#[doc = include_str!("../../docs/tools.md")]
struct ToolsGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/signatures.md")]
struct SignaturesGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/modules.md")]
struct ModulesGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/adapters.md")]
struct AdaptersGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/react.md")]
struct ReactGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-checks.md")]
struct ChecksGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/lm.md")]
struct LmGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/local-models.md")]
struct LocalModelsGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/README.md")]
struct GuideIntroduction;

#[cfg(doctest)]
#[doc = include_str!("../../docs/getting-started.md")]
struct GettingStarted;

#[cfg(doctest)]
#[doc = include_str!("../../docs/tutorial-extraction.md")]
struct TutorialExtraction;

#[cfg(doctest)]
#[doc = include_str!("../../docs/tutorial-agent.md")]
struct TutorialAgent;

#[cfg(doctest)]
#[doc = include_str!("../../docs/optimize.md")]
struct OptimizeGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/evaluate.md")]
struct EvaluateGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-providers.md")]
struct HowtoProviders;

#[cfg(doctest)]
#[doc = include_str!("../../docs/anthropic.md")]
struct AnthropicGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/openai-responses.md")]
struct ResponsesGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/gemini.md")]
struct GeminiGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-caching.md")]
struct HowtoCaching;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-tool-context.md")]
struct HowtoToolContext;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-cancellation.md")]
struct HowtoCancellation;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-sync.md")]
struct HowtoSync;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-concurrency.md")]
struct HowtoConcurrency;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-attempts.md")]
struct HowtoAttempts;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-multimodal.md")]
struct HowtoMultimodal;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-streaming.md")]
struct HowtoStreaming;

#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-retrieval.md")]
struct HowtoRetrieval;

#[cfg(doctest)]
#[doc = include_str!("../../docs/reliability.md")]
struct ReliabilityGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/performance.md")]
struct PerformanceGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/bfcl.md")]
struct BfclGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/dspy.md")]
struct DspyGuide;

#[cfg(doctest)]
#[doc = include_str!("../../docs/not-implemented.md")]
struct NotImplementedGuide;

