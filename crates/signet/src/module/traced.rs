//! Running a module of your own in its `invoke_agent` span ([`traced`]), its predictors' spans
//! named by their paths in it.

use std::collections::HashMap;
use std::sync::Arc;

use tracing::Instrument;

use super::Module;
use crate::trace::PredictorId;

tokio::task_local! {
    /// The paths of the predictors of the module a task runs through [`traced`].
    static PATHS: Arc<HashMap<PredictorId, String>>;
}

/// Runs `module` on `input` inside an `invoke_agent {Type}` span (its type's name, its content
/// hash as `gen_ai.agent.version`), in which each of its predictors' spans is
/// named by the predictor's path (`invoke_agent generate.predict`) instead of its signature's
/// name. `Evaluate` runs every example this way. Without a subscriber that wants the span it is
/// `module.call(input)`, nothing more.
///
/// ```
/// use signet::module::{Module, Predict, traced};
/// use signet::testing::ScriptedLm;
/// # #[derive(signet::Signature)]
/// # struct Ask { #[input] question: String, #[output] answer: String }
/// let lm = ScriptedLm::texts(["[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]"]);
/// let program = Predict::<Ask>::new().with_lm(lm);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let output = traced(&program, AskInput { question: "2+2?".into() }).await.unwrap();
/// assert_eq!(output.answer, "4");
/// # });
/// ```
pub async fn traced<M: Module>(module: &M, input: M::Input) -> Result<M::Output, M::Error> {
    // The name is made only for a subscriber that wants the span.
    let span = crate::telemetry::agent_span(
        crate::telemetry::short_type_name::<M>,
        &"module",
        String::new,
        None,
    );
    if span.is_disabled() {
        return module.call(input).await;
    }
    span.record("gen_ai.agent.version", module.version());
    let paths: HashMap<PredictorId, String> = module
        .named_predictors()
        .into_iter()
        .map(|(path, predictor)| (predictor.id(), path))
        .chain(
            module
                .named_react_loops()
                .into_iter()
                .map(|(path, agent)| (agent.step_predictor().id(), path)),
        )
        // A program that is one predictor (`self`) keeps its signature's name.
        .filter(|(_, path)| path != "self" && !path.is_empty())
        .collect();
    // (Its usage is on the spans of its calls: counting it here would take it from an enclosing
    // recording, such as `Evaluate`'s.)
    let result = PATHS
        .scope(Arc::new(paths), module.call(input))
        .instrument(span.clone())
        .await;
    if result.is_err() {
        crate::telemetry::record_error(&span, "module", &"the module returned an error");
    }
    result
}

/// The path of predictor `id` in the module this task runs through [`traced`], if any.
pub(crate) fn path_of(id: PredictorId) -> Option<String> {
    PATHS
        .try_with(|paths| paths.get(&id).cloned())
        .ok()
        .flatten()
}
