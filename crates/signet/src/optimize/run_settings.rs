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
