//! Streaming any module (DSPy's `dspy.streamify`): the events of every predictor inside it, then
//! its result.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::Module;
use super::module_events::{ModuleEvent, Sink};

/// Runs `module` on `input`, streaming what each predictor inside it does as it happens — its
/// output fields as the model writes them, the tools a ReAct agent or a `Predict` with tools
/// calls — then [`ModuleEvent::Done`] with the typed output (or
/// [`Failed`](ModuleEvent::Failed) with the module's error). DSPy's `dspy.streamify(program)`
/// with a stream listener on every output field and its default status messages
/// ([`PredictorEvent::status_message`](super::PredictorEvent::status_message)).
///
/// Works for any [`Module`]: your own (`#[derive(Module)]`), `Predict`, `ChainOfThought`, `ReAct`,
/// `BestOfN`. Each event names its predictor by its path in the module. Dropping the stream
/// cancels the run. Predictors run on tasks the module spawns itself (`tokio::spawn`) are not
/// reported; [`Parallel`](crate::evaluate::Parallel) and `join!` inside the module are.
///
/// ```
/// use futures::StreamExt;
/// use signet::module::{ModuleEvent, PredictorEvent, streamify};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer the question.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let qa = Predict::<Ask>::new()
///     .with_lm(ScriptedLm::texts(["[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"]));
/// let events: Vec<_> = streamify(&qa, AskInput { question: "Capital of France?".into() }).collect().await;
/// let written: String = events.iter().filter_map(|event| match event {
///     ModuleEvent::Predictor { event: PredictorEvent::FieldDelta { text, .. }, .. } => Some(text.as_str()),
///     _ => None,
/// }).collect();
/// assert_eq!(written, "Paris");
/// assert!(matches!(events.last(), Some(ModuleEvent::Done { output, .. }) if output.answer == "Paris"));
/// # });
/// ```
pub fn streamify<M: Module>(
    module: &M,
    input: M::Input,
) -> BoxStream<'_, ModuleEvent<M::Output, M::Error>> {
    let paths: HashMap<_, _> = module
        .named_predictors()
        .into_iter()
        .map(|(path, predictor)| (predictor.id(), path))
        .collect();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let (done, result) = tokio::sync::oneshot::channel();
    let run = async move {
        let started = Instant::now();
        let sink = Sink::new(sender, paths);
        let (output, record) = crate::trace::usage_of(sink.scope(module.call(input))).await;
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let _ = done.send(match output {
            Ok(output) => ModuleEvent::Done {
                output,
                usage: record.usage,
                elapsed_ms,
            },
            Err(error) => ModuleEvent::Failed {
                error: Arc::new(error),
                usage: record.usage,
            },
        });
    };
    let driver = futures::stream::once(run).filter_map(|()| async { None });
    let events = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
        .map(|(predictor, event)| ModuleEvent::Predictor { predictor, event });
    // The predictors' events end when the run (and every sender in it) is over; its result last.
    futures::stream::select(driver, events)
        .chain(futures::stream::once(result).filter_map(|result| async { result.ok() }))
        .boxed()
}
