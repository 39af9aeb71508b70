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

#[cfg(doctest)]
#[doc = include_str!("../docs/README.md")]
struct GuideIntroduction;

#[cfg(doctest)]
#[doc = include_str!("../docs/getting-started.md")]
struct GettingStarted;

#[cfg(doctest)]
#[doc = include_str!("../docs/tutorial-extraction.md")]
struct TutorialExtraction;

#[cfg(doctest)]
#[doc = include_str!("../docs/tutorial-agent.md")]
struct TutorialAgent;

#[cfg(doctest)]
#[doc = include_str!("../docs/tutorial-mcp.md")]
struct TutorialMcp;

#[cfg(doctest)]
#[doc = include_str!("../docs/tutorial-sse.md")]
struct TutorialSse;

#[cfg(doctest)]
#[doc = include_str!("../docs/optimize.md")]
struct OptimizeGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/evaluate.md")]
struct EvaluateGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-providers.md")]
struct HowtoProviders;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-tracing.md")]
struct HowtoTracing;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-caching.md")]
struct HowtoCaching;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-tool-context.md")]
struct HowtoToolContext;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-cancellation.md")]
struct HowtoCancellation;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-sync.md")]
struct HowtoSync;

#[cfg(doctest)]
#[doc = include_str!("../docs/howto-concurrency.md")]
struct HowtoConcurrency;

#[cfg(doctest)]
#[doc = include_str!("../docs/reliability.md")]
struct ReliabilityGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/performance.md")]
struct PerformanceGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/bfcl.md")]
struct BfclGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/dspy.md")]
struct DspyGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/not-implemented.md")]
struct NotImplementedGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/scale.md")]
struct ScaleGuide;
