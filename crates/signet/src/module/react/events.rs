//! The event stream of a run, and the caller's follow-up messages (interrupts).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{Observation, ReActError, ReActRun, RunOutcome, StopReason, Trajectory, UserMessage};
use crate::adapter::Fields;
use crate::lm::Usage;

/// What happens during a run, in order, for UIs and logs
/// ([`ReAct::stream`](super::ReAct::stream), [`DynReAct::stream`](super::DynReAct::stream)).
///
/// The last event is [`Done`](ReActEvent::Done) with the run's result — typed (`O` is the
/// signature's output struct) for [`ReAct`](super::ReAct), field values for [`DynReAct`](super::DynReAct) — or
/// [`Failed`](ReActEvent::Failed) with the typed error. Serialized (for server-sent events, say),
/// each event is an object with a `type` (`step_started`, `tool_call_finished`, `done`, ..) and the
/// error as its text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReActEvent<O = Fields> {
    /// [`ReActMode::Auto`](super::ReActMode::Auto) chose text mode: the LM reports no native
    /// function calling (its [`Capabilities`](crate::lm::Capabilities); a server that does call
    /// tools should declare it), or the step predictor was tuned for DSPy's text-mode step (its
    /// instructions or demos, which native mode does not show). Not sent when the mode is set
    /// explicitly.
    TextMode {
        /// The LM's model name.
        model: String,
        /// Why, in words.
        reason: String,
    },
    /// The extractor failed after the tools ran, and the outputs were taken from step `step`'s
    /// result ([`DynReAct::with_answer_fallback`](super::DynReAct::with_answer_fallback)).
    AnswerFallback {
        /// Why the extractor failed.
        error: String,
        /// The step whose result became the outputs.
        step: usize,
    },
    /// The answer failed an output check ([`crate::module::check`]). With `reask` the model is
    /// asked again, shown `message`; without, the run falls back or fails with
    /// [`ChecksFailed`](crate::module::check::ChecksFailed). `stopped_early`: the reply was
    /// stopped while it streamed, at the failure, instead of running to its end.
    CheckFailed {
        /// The check's name.
        check: String,
        /// The output field it is about, if one.
        field: Option<String>,
        /// What is wrong (what the model is shown).
        message: String,
        /// The attempt refused: 1 for the first answer, 2 for the first re-ask's, ..
        attempt: usize,
        /// Whether the reply was stopped while it streamed.
        stopped_early: bool,
        /// Whether the model is asked again.
        reask: bool,
    },
    /// The answer failed its checks on every attempt and the module's
    /// [fallback](crate::module::check::CheckFallback) answered instead (its outputs are in
    /// [`Done`](ReActEvent::Done)).
    CheckFallback {
        /// How many attempts were refused.
        attempts: usize,
    },
    /// A model turn begins.
    StepStarted {
        /// The turn's number.
        turn: usize,
    },
    /// The model's reasoning for this turn.
    Thought {
        /// The turn's number.
        turn: usize,
        /// What it wrote.
        text: String,
    },
    /// A tool call begins.
    ToolCallStarted {
        /// The step's index in the trajectory.
        index: usize,
        /// The tool.
        name: String,
        /// The arguments.
        args: Value,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// The step's index in the trajectory.
        index: usize,
        /// The tool.
        name: String,
        /// What came back (or the error, as the model will read it).
        observation: Observation,
        /// How long it took, in milliseconds.
        elapsed_ms: u64,
    },
    /// A first call is choosing the relevant tools from a large catalogue of `total`.
    SelectingTools {
        /// How many tools the agent has.
        total: usize,
    },
    /// A first call picked these tools from a large catalogue; the run offers only them.
    ToolsSelected {
        /// The tools kept.
        names: Vec<String>,
    },
    /// Tool selection kept the step's tuned instructions (a loaded or optimized program's), with
    /// the lines of the tools it left out taken out of their tool list.
    TunedInstructionsKept {
        /// The tools whose lines were taken out.
        removed: Vec<String>,
    },
    /// The caller's follow-up messages were added to the conversation.
    UserMessage {
        /// The messages, joined by blank lines.
        text: String,
    },
    /// The trajectory was shortened to fit the context window: before a call, when its prompt
    /// was over the budget ([`Limits::context_window`](super::Limits::context_window)), or after
    /// the provider refused one. Tokens are counted as
    /// [`count_prompt_tokens`](crate::lm::count_prompt_tokens) does (exact for OpenAI models,
    /// estimated otherwise).
    Compacted {
        /// How many steps the truncation policy removed (a summary that replaces steps counts as
        /// one kept).
        dropped_steps: usize,
        /// The prompt's tokens before.
        tokens_before: usize,
        /// And after.
        tokens_after: usize,
    },
    /// The loop stopped before the model finished; the extractor works from the steps so far
    /// (the reason is also kept in [`Trajectory::stopped_early`]).
    StoppedEarly {
        /// Why.
        reason: StopReason,
    },
    /// The extractor runs (the loop ended without outputs from `finish` or a final answer).
    Extracting,
    /// A piece of the answer, as the LM streams it (only in streamed runs): the extractor's reply,
    /// or a native model's text answer with the Chat adapter.
    ///
    /// Every piece names its output field and holds only that field's text, in every adapter: the
    /// Chat adapter's `[[ ## field ## ]]` markers, the JSON adapter's keys, quotes and escapes and
    /// the XML adapter's tags and entities are not shown. `reasoning` comes first, under its own
    /// name, then the signature's outputs in the order the model writes them. Text arrives as it
    /// is written; a JSON value that is not a string (a number, a list) arrives whole, as compact
    /// JSON, when it ends; in the Chat and XML formats a field's text is what the model wrote for
    /// it (a list is JSON text in Chat, nested tags in XML). An answer that was not streamed
    /// (`finish` carried it, history mode's `submit`) comes as one piece per field, its value as
    /// text. The deltas are for display: [`Done`](ReActEvent::Done) carries the parsed outputs.
    AnswerDelta {
        /// The output field this text belongs to. `None` only for a reply in none of the
        /// adapters' formats (an adapter of your own): it arrives whole, when it ends.
        field: Option<String>,
        /// The text.
        text: String,
    },
    /// The answer is complete: every [`AnswerDelta`](ReActEvent::AnswerDelta) was sent. On every
    /// answer path — the extractor streams its reply; an answer from `finish`, a native text reply
    /// or `submit` comes as one delta per output field — then this, then
    /// [`Done`](ReActEvent::Done).
    AnswerDone,
    /// The run finished.
    Done {
        /// The outputs.
        output: O,
        /// The extractor's reasoning, when it ran.
        reasoning: Option<String>,
        /// Every step of the run.
        trajectory: Trajectory,
        /// LM usage over every call.
        usage: Usage,
        /// Wall time of the run, in milliseconds.
        elapsed_ms: u64,
        /// The loop's turns that called tools (`finish` included).
        iterations: usize,
    },
    /// The run waits for a person (only in [resumable](super::DynReAct::stream_start) runs):
    /// store the state and resume it with decisions on its pending calls.
    Suspended {
        /// Everything the run needs to go on.
        state: Box<super::SuspendedRun>,
    },
    /// The run failed; the error carries the steps and usage so far.
    Failed {
        /// What went wrong.
        #[serde(serialize_with = "error_text")]
        error: std::sync::Arc<ReActError>,
    },
}

fn error_text<S: serde::Serializer>(
    error: &std::sync::Arc<ReActError>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

impl ReActEvent<Fields> {
    /// The same event with the outputs of `Done` turned into `O` (events other than `Done` are
    /// unchanged); outputs that do not fit `O` make it [`Failed`](ReActEvent::Failed).
    pub(crate) fn typed<O: serde::de::DeserializeOwned>(self) -> ReActEvent<O> {
        use ReActEvent as E;
        match self {
            E::Done {
                output,
                reasoning,
                trajectory,
                usage,
                elapsed_ms,
                iterations,
            } => match crate::module::from_fields::<O>(&output) {
                Ok(output) => E::Done {
                    output,
                    reasoning,
                    trajectory,
                    usage,
                    elapsed_ms,
                    iterations,
                },
                Err(error) => E::Failed {
                    error: std::sync::Arc::new(ReActError::new(error, &trajectory, usage)),
                },
            },
            E::Failed { error } => E::Failed { error },
            E::Suspended { state } => E::Suspended { state },
            E::TextMode { model, reason } => E::TextMode { model, reason },
            E::AnswerFallback { error, step } => E::AnswerFallback { error, step },
            E::CheckFailed {
                check,
                field,
                message,
                attempt,
                stopped_early,
                reask,
            } => E::CheckFailed {
                check,
                field,
                message,
                attempt,
                stopped_early,
                reask,
            },
            E::CheckFallback { attempts } => E::CheckFallback { attempts },
            E::StepStarted { turn } => E::StepStarted { turn },
            E::Thought { turn, text } => E::Thought { turn, text },
            E::ToolCallStarted { index, name, args } => E::ToolCallStarted { index, name, args },
            E::ToolCallFinished {
                index,
                name,
                observation,
                elapsed_ms,
            } => E::ToolCallFinished {
                index,
                name,
                observation,
                elapsed_ms,
            },
            E::ToolsSelected { names } => E::ToolsSelected { names },
            E::TunedInstructionsKept { removed } => E::TunedInstructionsKept { removed },
            E::SelectingTools { total } => E::SelectingTools { total },
            E::AnswerDone => E::AnswerDone,
            E::Compacted {
                dropped_steps,
                tokens_before,
                tokens_after,
            } => E::Compacted {
                dropped_steps,
                tokens_before,
                tokens_after,
            },
            E::UserMessage { text } => E::UserMessage { text },
            E::StoppedEarly { reason } => E::StoppedEarly { reason },
            E::Extracting => E::Extracting,
            E::AnswerDelta { field, text } => E::AnswerDelta { field, text },
        }
    }
}

impl<O> ReActEvent<O> {
    /// The event as one line of progress, for a caller that shows how a run goes (a tool served
    /// over MCP sends it as a progress notification): a turn, a tool call and its outcome, tool
    /// selection, compaction, an early stop, the extractor. `None` for the answer's pieces and the
    /// run's end, which are not progress.
    ///
    /// ```
    /// use signet::module::ReActEvent;
    /// let event: ReActEvent = ReActEvent::ToolCallStarted {
    ///     index: 0,
    ///     name: "add".into(),
    ///     args: serde_json::json!({"a": 2, "b": 3}),
    /// };
    /// assert_eq!(event.progress_message().unwrap(), r#"calling add {"a":2,"b":3}"#);
    /// ```
    pub fn progress_message(&self) -> Option<String> {
        use ReActEvent as E;
        const MAX: usize = 200;
        let message = match self {
            E::StepStarted { turn } => format!("turn {}", turn.saturating_add(1)),
            E::Thought { text, .. } => format!("thought: {}", clip(text, MAX)),
            E::ToolCallStarted { name, args, .. } => {
                format!("calling {name} {}", clip(&args.to_string(), MAX))
            }
            E::ToolCallFinished {
                name,
                observation,
                elapsed_ms,
                ..
            } => match observation {
                Observation::Error(error) => {
                    format!("{name} failed after {elapsed_ms} ms: {}", clip(error, MAX))
                }
                _ => format!("{name} returned after {elapsed_ms} ms"),
            },
            E::SelectingTools { total } => format!("choosing tools among {total}"),
            E::ToolsSelected { names } => format!("tools chosen: {}", names.join(", ")),
            E::TunedInstructionsKept { removed } => format!(
                "tuned instructions kept, without the tools left out: {}",
                removed.join(", ")
            ),
            E::UserMessage { .. } => "follow-up message added".to_owned(),
            E::Compacted {
                dropped_steps,
                tokens_before,
                tokens_after,
            } => format!(
                "trajectory shortened by {dropped_steps} steps ({tokens_before} -> {tokens_after} tokens)"
            ),
            E::StoppedEarly { reason } => format!("stopped early: {reason}"),
            E::Extracting => "writing the answer".to_owned(),
            E::AnswerFallback { step, .. } => {
                format!("the answer could not be written; using the result of step {step}")
            }
            E::Suspended { .. } => "waiting for a person".to_owned(),
            E::CheckFailed {
                check,
                message,
                reask,
                ..
            } => format!(
                "the answer failed check `{check}`{}: {}",
                if *reask { ", asking again" } else { "" },
                clip(message, MAX)
            ),
            E::CheckFallback { attempts } => {
                format!(
                    "the answer failed its checks {attempts} times; answering with the fallback"
                )
            }
            E::TextMode { .. }
            | E::AnswerDelta { .. }
            | E::AnswerDone
            | E::Done { .. }
            | E::Failed { .. } => return None,
        };
        Some(message)
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// Told of each event of a run that is part of a streamed module run.
type Observer = std::sync::Arc<dyn Fn(&ReActEvent) + Send + Sync>;

/// What a run carries to every step besides its inputs: where its events go (nowhere for plain
/// calls), whether the answer was streamed yet, and the [journal](crate::journal) its tool calls
/// go through (its call's, if any).
#[derive(Clone, Default)]
pub(crate) struct Emitter {
    sender: Option<tokio::sync::mpsc::UnboundedSender<ReActEvent>>,
    answered: std::sync::Arc<std::sync::atomic::AtomicBool>,
    journal: Option<std::sync::Arc<dyn crate::journal::Journal>>,
    /// The streamed module run this run is part of ([`crate::module::streamify`]), which is
    /// told of its tool calls (and, when `answers`, its answer as it is written).
    observer: Option<Observer>,
    answers: bool,
}

impl Emitter {
    /// An emitter that sends to `sender`.
    pub(super) fn to(sender: tokio::sync::mpsc::UnboundedSender<ReActEvent>) -> Emitter {
        Emitter {
            sender: Some(sender),
            ..Emitter::default()
        }
    }

    /// An emitter for a run of the predictor `id` (named `name`) when this task is part of a
    /// streamed module run ([`crate::module::streamify`]): it tells that run of the tool calls
    /// and, when `answers`, of the answer as the model writes it (the run's LM is then streamed).
    /// `None` otherwise.
    pub(crate) fn for_module_run(
        id: crate::trace::PredictorId,
        name: &str,
        answers: bool,
    ) -> Option<Emitter> {
        let sink = crate::module::module_events::Sink::current()?;
        Some(Emitter::for_sink(&sink, &sink.path(id, name), answers))
    }

    /// An emitter that tells the streamed module run of `sink` what the predictor at `path`
    /// does: its tool calls and, when `answers`, its answer as the model writes it.
    pub(crate) fn for_sink(
        sink: &crate::module::module_events::Sink,
        path: &str,
        answers: bool,
    ) -> Emitter {
        use crate::module::PredictorEvent;
        let (sink, path) = (sink.clone(), path.to_owned());
        let observer = move |event: &ReActEvent| {
            let reported = match event {
                ReActEvent::AnswerDelta { field, text } if answers => PredictorEvent::FieldDelta {
                    field: field.clone(),
                    text: text.clone(),
                },
                ReActEvent::ToolCallStarted { name, args, .. } => PredictorEvent::ToolCallStarted {
                    tool: name.clone(),
                    args: args.clone(),
                },
                ReActEvent::ToolCallFinished {
                    name,
                    observation,
                    elapsed_ms,
                    ..
                } => PredictorEvent::ToolCallFinished {
                    tool: name.clone(),
                    observation: observation.as_text(),
                    elapsed_ms: *elapsed_ms,
                },
                _ => return,
            };
            sink.send(&path, reported);
        };
        Emitter {
            observer: Some(std::sync::Arc::new(observer)),
            answers,
            ..Emitter::default()
        }
    }

    /// This emitter, with the call's journal.
    pub(crate) fn with_journal(
        &self,
        journal: Option<std::sync::Arc<dyn crate::journal::Journal>>,
    ) -> Emitter {
        Emitter {
            journal,
            ..self.clone()
        }
    }

    /// The journal the run's tool calls go through.
    pub(super) fn journal(&self) -> Option<&std::sync::Arc<dyn crate::journal::Journal>> {
        self.journal.as_ref()
    }

    /// How many tool calls of a turn may run at once (see [`crate::journal`]).
    pub(super) fn tool_concurrency(&self, limit: usize) -> usize {
        crate::journal::tool_concurrency(self.journal.as_ref(), limit)
    }

    /// Whether anyone receives the events (a streamed run).
    pub(crate) fn listening(&self) -> bool {
        self.sender.is_some() || self.answers
    }

    pub(crate) fn emit(&self, event: ReActEvent) {
        // A run inside a call whose caller follows its progress (a tool served over MCP).
        if crate::tool::progress_listened()
            && let Some(message) = event.progress_message()
        {
            crate::tool::report_progress(message);
        }
        if let Some(observer) = &self.observer {
            observer(&event);
        }
        if let Some(sender) = &self.sender {
            if matches!(event, ReActEvent::AnswerDelta { .. }) {
                self.answered
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            // A closed receiver means nobody listens any more: the run goes on regardless.
            let _ = sender.send(event);
        }
    }

    /// Forgets the deltas sent so far: they were not the answer (the reply called tools).
    pub(super) fn forget_answer(&self) {
        self.answered
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Ends the answer of a finished run: its field values as deltas when none were streamed
    /// (the answer came from `finish`, a native text reply or `submit`), then `AnswerDone`.
    pub(super) fn answer(&self, outputs: &Fields) {
        if !self.answered.load(std::sync::atomic::Ordering::SeqCst) {
            for (field, value) in outputs {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                self.emit(ReActEvent::AnswerDelta {
                    field: Some(field.clone()),
                    text,
                });
            }
        }
        self.emit(ReActEvent::AnswerDone);
    }
}

/// The caller's follow-up messages for a run in progress.
#[derive(Default)]
pub(crate) struct Interrupts {
    receiver: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
    buffer: Vec<String>,
}

impl Interrupts {
    pub(super) fn new(
        receiver: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
    ) -> Interrupts {
        Interrupts {
            receiver,
            buffer: Vec::new(),
        }
    }

    /// Whether the caller can send messages during the run.
    pub(super) fn enabled(&self) -> bool {
        self.receiver.is_some()
    }

    /// Whether messages are waiting.
    pub(super) fn pending(&mut self) -> bool {
        if let Some(receiver) = &mut self.receiver {
            while let Ok(message) = receiver.try_recv() {
                self.buffer.push(message);
            }
        }
        !self.buffer.is_empty()
    }

    /// Appends the waiting messages, combined into one, to the trajectory.
    pub(super) fn inject(&mut self, trajectory: &mut Trajectory, events: &Emitter) {
        self.take(trajectory, events);
    }

    /// [`inject`](Self::inject), returning the combined message when there was one.
    pub(super) fn take(&mut self, trajectory: &mut Trajectory, events: &Emitter) -> Option<String> {
        if !self.pending() {
            return None;
        }
        let text = std::mem::take(&mut self.buffer).join("\n\n");
        events.emit(ReActEvent::UserMessage { text: text.clone() });
        let after = trajectory.steps.last().map(|s| s.index);
        trajectory.user_messages.push(UserMessage {
            after,
            text: text.clone(),
        });
        Some(text)
    }
}

/// Ends the loop early: says why in the log, the events and the trajectory.
pub(super) fn stop_early(trajectory: &mut Trajectory, events: &Emitter, reason: StopReason) {
    tracing::warn!(%reason, "the agent's loop stopped before it finished");
    events.emit(ReActEvent::StoppedEarly {
        reason: reason.clone(),
    });
    trajectory.stopped_early = Some(reason);
}

/// The observation of a `finish` that waits because the caller sent messages.
pub(super) const FINISH_POSTPONED: &str =
    "Finish postponed: the user sent new messages; address them first.";

/// What the trajectory and the event stream record for a `finish` written in the same reply as
/// other tool calls: the model wrote its answer before it saw their results, so the answer is not
/// taken and the run goes on for a turn. The model is not shown the call (nor this text): its
/// next turn reads as if it had made only the other calls.
pub(super) const FINISH_UNSEEN_RESULTS: &str = "Finish postponed: it was called in the same reply \
     as other tools, before their results were known; the model was asked again with their \
     results.";

/// The observation of a history-mode `submit` written in the same reply as other tool calls.
pub(super) const SUBMIT_UNSEEN_RESULTS: &str = "Submit postponed: it was called in the same reply \
     as other tools, before their results were known. Read the results above, then call submit \
     again.";

/// Whether a reply's calls (their tool names) hold the answering tool `answer` (`finish` or
/// `submit`) beside calls of other tools. Such an answer was written before the model saw what
/// those calls return, so it is never taken: DSPy's loop, too, answers only after the
/// observation.
pub(super) fn answers_before_results<'a>(
    names: impl IntoIterator<Item = &'a str>,
    answer: &str,
) -> bool {
    let (mut answers, mut others) = (false, false);
    for name in names {
        if name == answer {
            answers = true;
        } else {
            others = true;
        }
    }
    answers && others
}

/// The observation of a history-mode `submit` that waits because the caller sent messages.
pub(super) const SUBMIT_POSTPONED: &str =
    "Submit postponed: the user sent new messages; address them first.";

pub(super) fn millis(elapsed: Duration) -> u64 {
    elapsed.as_millis().try_into().unwrap_or(u64::MAX)
}

/// A run as a stream of its events: `run` gets the emitter its events go to; the stream ends with
/// [`ReActEvent::Done`] (after the answer's deltas, or the whole answer when none were streamed),
/// [`ReActEvent::Suspended`] or [`ReActEvent::Failed`]. Dropping the stream cancels the run.
pub(crate) fn stream_run<'a, F, Fut>(run: F) -> futures::stream::BoxStream<'a, ReActEvent>
where
    F: FnOnce(Emitter) -> Fut + Send + 'a,
    Fut: std::future::Future<Output = Result<RunOutcome<ReActRun>, ReActError>> + Send + 'a,
{
    use futures::StreamExt;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let emitter = Emitter::to(sender);
    let run = async move {
        let started = std::time::Instant::now();
        let outcome = run(emitter.clone()).await;
        let event = match outcome {
            Ok(RunOutcome::Finished(run)) => {
                emitter.answer(&run.outputs);
                ReActEvent::Done {
                    iterations: run.trajectory.turns(),
                    output: run.outputs,
                    reasoning: run.reasoning,
                    trajectory: run.trajectory,
                    usage: run.usage,
                    elapsed_ms: millis(started.elapsed()),
                }
            }
            Ok(RunOutcome::Suspended(state)) => ReActEvent::Suspended {
                state: Box::new(state),
            },
            Err(error) => ReActEvent::Failed {
                error: std::sync::Arc::new(error),
            },
        };
        emitter.emit(event);
    };
    let events = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    let driver = futures::stream::once(run).filter_map(|()| async { None });
    futures::stream::select(driver, events).boxed()
}
