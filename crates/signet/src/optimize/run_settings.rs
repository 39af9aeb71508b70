//! What every search optimizer's run is told besides its search: how many examples run at once,
//! when it gives up, where it keeps its log and how it shows progress. GEPA and MIPROv2 hold one
//! each; their setters (`with_concurrency`, `with_log_dir`, ..) document what it means for them.

use std::path::PathBuf;

use crate::evaluate::Progress;

/// The run settings GEPA and MIPROv2 share.
pub(crate) struct RunSettings {
    /// Examples run at once in evaluations (and bootstraps); at least 1.
    pub(crate) concurrency: usize,
    /// Failed runs of one evaluation allowed before the run stops.
    pub(crate) max_errors: Option<usize>,
    /// LM calls the run may make before it stops.
    pub(crate) max_lm_calls: Option<u64>,
    /// Where the run's log or state is kept, to resume it.
    pub(crate) log_dir: Option<PathBuf>,
    /// The metric's name in the run's fingerprint (default: its Rust type name).
    pub(crate) metric_name: Option<String>,
    /// How progress is shown.
    pub(crate) progress: Progress,
}

impl Default for RunSettings {
    /// 8 examples at once, no error or LM-call limit, no log, progress shown when it helps.
    fn default() -> Self {
        RunSettings {
            concurrency: 8,
            max_errors: None,
            max_lm_calls: None,
            log_dir: None,
            metric_name: None,
            progress: Progress::Auto,
        }
    }
}

/// The setters of the [`RunSettings`] at `path` in an optimizer (`settings.run`), written once for
/// every optimizer that holds one: examples at once, the error and LM-call limits, and progress;
/// with `resumable`, also the metric's name in a resumed run's fingerprint. `with_log_dir` stays
/// with each optimizer: what its directory holds is its own.
macro_rules! run_setters {
    ($($path:ident).+; resumable) => {
        crate::optimize::run_settings::run_setters!($($path).+);

        crate::shared::setters! {
            /// The metric's name in a resumed run's fingerprint (default: its Rust type name, which
            /// names the function or, for a closure, the function it is written in). Change it when
            /// the metric's scoring changes, so that scores of the old one are not reused; set it
            /// to keep resuming a run after the metric moved.
            fn with_metric_name(name: impl Into<String>) { $($path).+.metric_name = Some(name.into()) }
        }
    };
    ($($path:ident).+) => {
        crate::shared::setters! {
            /// Examples run at once in each evaluation (and bootstrap) (default 8).
            fn with_concurrency(n: usize) { $($path).+.concurrency = n.max(1) }

            /// Stops with [`OptimizeError::TooManyErrors`](crate::optimize::OptimizeError::TooManyErrors)
            /// when more than `n` runs of one evaluation (or bootstrap) fail: a dead endpoint fails
            /// fast instead of scoring 0 everywhere. Without it an evaluation's failed runs score
            /// 0; bootstraps allow 10.
            fn with_max_errors(n: usize) { $($path).+.max_errors = Some(n) }

            /// Stops the run once the program's and the optimizer's own LM's calls reach `n`
            /// (checked before each step of the search); the best program so far is returned.
            fn with_max_lm_calls(n: u64) { $($path).+.max_lm_calls = Some(n) }

            /// How progress is shown (one step per metric call).
            fn with_progress(progress: Progress) { $($path).+.progress = progress }
        }
    };
}
pub(crate) use run_setters;
