//! What a ReAct run did: steps, observations, the caller's messages.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::adapter::templates::{BlockValue, push_text_block};
use crate::adapter::{Adapter, Fields};

/// The tools whose call is a loop's answer (ReAct's `finish`, history mode's `submit`), not a
/// tool of the user's.
/// (Spelled out here, where the trajectory's readers find them; a test ties them to the
/// constants.)
pub(crate) const ANSWERING_TOOLS: [&str; 2] = ["finish", "submit"];

/// One step of the loop: what the model thought and called, and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The step's number (kept when older steps are truncated away, as DSPy does).
    pub index: usize,
    /// The model's reasoning before the call.
    pub thought: String,
    /// The tool it chose.
    pub tool_name: String,
    /// The arguments it gave.
    pub tool_args: Value,
    /// What came back.
    pub observation: Observation,
    /// The provider's id for the call (native function calling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The model turn the call belongs to (several calls share a turn in native mode).
    #[serde(default)]
    pub turn: usize,
    /// How long the tool took.
    #[serde(with = "duration_ms")]
    pub elapsed: Duration,
}

/// A tool's result, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Observation {
    /// The tool's output.
    Output(Value),
    /// The call failed; the text is what the model reads.
    Error(String),
    /// The model read something other than the output itself: the start of its text with a
    /// marker (it was longer than [`Limits::max_observation_chars`](super::Limits)), or the text
    /// an [`ObservationFormatter`](super::ObservationFormatter) made of it (an HTML page's text);
    /// `full` is the whole output.
    Truncated {
        /// What the model read.
        shown: String,
        /// The tool's whole output.
        full: Value,
    },
}

impl Observation {
    /// The value shown to the model.
    pub fn as_value(&self) -> Value {
        match self {
            Observation::Output(value) => value.clone(),
            Observation::Error(text) | Observation::Truncated { shown: text, .. } => {
                Value::String(text.clone())
            }
        }
    }

    /// The observation as the model reads it: text as it is, other values as JSON.
    pub fn as_text(&self) -> String {
        match self {
            Observation::Output(Value::String(text))
            | Observation::Error(text)
            | Observation::Truncated { shown: text, .. } => text.clone(),
            Observation::Output(value) => value.to_string(),
        }
    }

    /// Cuts what the model reads to `max_chars` characters, with a marker saying how much was left
    /// out; an output keeps its whole value in [`Observation::Truncated`].
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::Observation;
    /// let long = Observation::Output(json!("x".repeat(50)));
    /// let Observation::Truncated { shown, full } = long.limited_to(10) else { panic!() };
    /// assert!(shown.starts_with("xxxxxxxxxx\n[... truncated: 40 more characters"));
    /// assert_eq!(full, json!("x".repeat(50)));
    /// ```
    pub fn limited_to(self, max_chars: usize) -> Observation {
        // An image or audio a tool returned is sent as itself, not as text: it does not count.
        let text = match &self {
            Observation::Output(value) => crate::media::replace_tool_media(value, &mut |part| {
                Value::String(crate::media::placeholder(&part).to_owned())
            })
            .map_or_else(
                || self.as_text(),
                |shown| Observation::Output(shown).as_text(),
            ),
            _ => self.as_text(),
        };
        let total = text.chars().count();
        if total <= max_chars {
            return self;
        }
        let cut: String = text.chars().take(max_chars).collect();
        let shown = format!(
            "{cut}\n[... truncated: {} more characters of {total} were not shown]",
            total - max_chars
        );
        match self {
            Observation::Output(full) | Observation::Truncated { full, .. } => {
                Observation::Truncated { shown, full }
            }
            Observation::Error(_) => Observation::Error(shown),
        }
    }

    /// Keeps at most `max_bytes` bytes of a [`Truncated`](Observation::Truncated) observation's
    /// whole output (its text, or its JSON): a longer one becomes that text cut at `max_bytes`
    /// (on a character boundary) followed by a marker saying how many bytes were dropped
    /// ([`Limits::max_kept_observation_bytes`](super::Limits::max_kept_observation_bytes)).
    /// Other observations are returned as they are.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::Observation;
    /// let long = Observation::Output(json!("x".repeat(50))).limited_to(10).kept_within(20);
    /// let Observation::Truncated { full, .. } = long else { panic!() };
    /// assert!(full.as_str().unwrap().starts_with(&format!("{}\n[... 30 more bytes", "x".repeat(20))));
    /// ```
    pub fn kept_within(self, max_bytes: usize) -> Observation {
        let Observation::Truncated { shown, full } = self else {
            return self;
        };
        let text = match full {
            Value::String(text) if text.len() <= max_bytes => {
                return Observation::Truncated {
                    shown,
                    full: Value::String(text),
                };
            }
            Value::String(text) => text,
            other => {
                let text = other.to_string();
                if text.len() <= max_bytes {
                    return Observation::Truncated { shown, full: other };
                }
                text
            }
        };
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let full = format!(
            "{}\n[... {} more bytes of {} were not kept (Limits::max_kept_observation_bytes)]",
            &text[..cut],
            text.len() - cut,
            text.len()
        );
        Observation::Truncated {
            shown,
            full: Value::String(full),
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().try_into().unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// The steps so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The steps, oldest first.
    pub steps: Vec<Step>,
    /// Messages the caller sent while the run was in progress ([`DynReAct::stream_with_interrupts`](super::DynReAct::stream_with_interrupts)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_messages: Vec<UserMessage>,
    /// Why the loop stopped before the model finished; `None` when it finished. The outputs were
    /// then extracted from the steps so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<StopReason>,
    /// In [history mode](super::ReActMode::History), the conversation as DSPy's `ReActV2` keeps it:
    /// one event per turn (the inputs on the first, `next_thought`, `tool_calls` with their
    /// `tool_call_results`, and the outputs on the last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Fields>,
    /// Set when the extractor could not write the outputs and they were taken from a step's
    /// observation instead (see [`DynReAct::with_answer_fallback`](super::DynReAct::with_answer_fallback)):
    /// the run's answer is the tools' own, not the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_fallback: Option<AnswerFallback>,
    /// The answers the run's output checks refused, in order, with why
    /// ([`crate::module::check`]); the model was shown each refusal and went on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_answers: Vec<crate::error::FailedAttempt>,
    /// Set when every answer was refused and the outputs are the check fallback's
    /// ([`CheckFallback`](crate::module::check::CheckFallback)), not the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_fallback: bool,
    /// Per native turn, what the provider asked to get back with the turn's calls
    /// ([`Completion::provider_state`](crate::lm::Completion::provider_state): Anthropic's signed
    /// thinking, Gemini's thought signatures, the Responses API's reasoning items), sent back on
    /// that turn's assistant message each later turn.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub provider_turns: std::collections::BTreeMap<usize, ProviderTurn>,
}

/// What the provider asked to get back with one native turn's calls (see
/// [`Trajectory::provider_turns`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderTurn {
    /// The provider's state of the turn.
    pub state: crate::lm::ProviderState,
    /// Whether the turn's [thought](Step::thought) is text the model wrote beside its calls
    /// (sent back as the turn's text); `false`: it is the model's reasoning, which goes back
    /// inside the state, not again as text.
    #[serde(default)]
    pub spoken: bool,
}

/// Where a run's outputs came from when the extractor failed after the tools ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerFallback {
    /// Why the extractor could not answer.
    pub error: String,
    /// The index of the step whose observation became the outputs.
    pub step: usize,
}

/// Why a ReAct loop stopped before the model finished (the outputs are then extracted from the
/// steps so far). Printed, it says so in words.
///
/// ```
/// use signet::module::react::StopReason;
/// let reason = StopReason::MaxIters { max_iters: 5 };
/// assert_eq!(reason.to_string(), "the step limit was reached (max_iters = 5) before the model finished");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A step's reply could not be read, even after the adapter's fallback (as in DSPy, the loop
    /// ends).
    #[error("step {step} could not be read: {error}")]
    UnreadableStep {
        /// The step's index.
        step: usize,
        /// The parse error.
        error: String,
    },
    /// In native mode, the model answered in text that could not be read.
    #[error("the final answer could not be read: {error}")]
    UnreadableAnswer {
        /// The parse error.
        error: String,
    },
    /// The trajectory no longer fits the context window, even after truncation.
    #[error("the trajectory no longer fits the context window: {message}")]
    ContextWindow {
        /// What the provider reported.
        message: String,
    },
    /// In history mode, the model made no tool call in a turn.
    #[error("turn {turn} made no tool call")]
    NoToolCalls {
        /// The turn.
        turn: usize,
    },
    /// The steps ([`Limits::max_iters`](super::Limits::max_iters)) were used up.
    #[error("the step limit was reached (max_iters = {max_iters}) before the model finished")]
    MaxIters {
        /// The limit.
        max_iters: usize,
    },
}

/// A message the caller sent during a run, and where it falls in the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The index of the last step before it (`None`: before the first step).
    pub after: Option<usize>,
    /// What the caller said (several messages sent together are joined by blank lines).
    pub text: String,
}

impl Trajectory {
    /// The trajectory as DSPy keeps it: `thought_i`, `tool_name_i`, `tool_args_i`, `observation_i`.
    pub fn to_fields(&self) -> Fields {
        let mut out = Map::new();
        self.visit_fields(0, &mut |name, value| {
            let value = match value {
                Entry::Text(text) => Value::String(text.to_owned()),
                Entry::Json(value) => value.clone(),
                Entry::Observation(observation) => observation.as_value(),
            };
            out.insert(fmt::format(name), value);
        });
        out
    }

    /// Calls `visit` with each field of [`to_fields`](Trajectory::to_fields), in its order, from
    /// the step at position `from` on; the caller's messages that come before every step (sent
    /// before the first, or after steps truncated away) only when `from` is 0.
    fn visit_fields(&self, from: usize, visit: &mut dyn FnMut(fmt::Arguments<'_>, Entry<'_>)) {
        let messages = |visit: &mut dyn FnMut(fmt::Arguments<'_>, Entry<'_>),
                        keep: &dyn Fn(&UserMessage) -> bool| {
            for (n, message) in self.user_messages.iter().enumerate() {
                if keep(message) {
                    visit(format_args!("user_message_{n}"), Entry::Text(&message.text));
                }
            }
        };
        if from == 0 {
            let present = |after: Option<usize>| {
                after.is_some_and(|i| self.steps.iter().any(|s| s.index == i))
            };
            messages(visit, &|m| !present(m.after));
        }
        for step in self.steps.get(from..).unwrap_or_default() {
            let i = step.index;
            visit(format_args!("thought_{i}"), Entry::Text(&step.thought));
            visit(format_args!("tool_name_{i}"), Entry::Text(&step.tool_name));
            visit(format_args!("tool_args_{i}"), Entry::Json(&step.tool_args));
            visit(
                format_args!("observation_{i}"),
                Entry::Observation(&step.observation),
            );
            messages(visit, &|m| m.after == Some(i));
        }
    }

    /// How many of the loop's turns called tools (`finish` included): the last step's turn plus
    /// one (steps keep their turn when older ones are truncated away), 0 without steps.
    ///
    /// ```
    /// use signet::module::Trajectory;
    /// assert_eq!(Trajectory::default().turns(), 0);
    /// ```
    pub fn turns(&self) -> usize {
        self.steps
            .last()
            .map_or(0, |step| step.turn.saturating_add(1))
    }

    /// A copy whose observations are cut at `max_chars` characters (as the model reads them),
    /// or `None` when none is longer.
    pub(super) fn with_observations_cut_at(&self, max_chars: usize) -> Option<Trajectory> {
        let long = |step: &Step| step.observation.as_text().chars().nth(max_chars).is_some();
        if !self.steps.iter().any(long) {
            return None;
        }
        let mut copy = self.clone();
        for step in &mut copy.steps {
            // `limited_to` leaves a short observation as it is.
            step.observation = step.observation.clone().limited_to(max_chars);
        }
        Some(copy)
    }

    /// Renders the trajectory as the adapter renders input fields (an empty string when empty).
    pub(super) fn render(&self, adapter: &dyn Adapter) -> String {
        let mut fields = self.to_fields();
        for step in &self.steps {
            if let Some(shown) = media_shown(&step.observation) {
                fields.insert(format!("observation_{}", step.index), shown);
            }
        }
        adapter.render_text_fields(&fields)
    }
}

/// A trajectory's text as an adapter that [renders text blocks](Adapter::renders_text_blocks)
/// writes it, kept between a run's LM calls, so that each call writes only the steps taken since
/// the last instead of the whole trajectory again. It is written anew when the trajectory changed
/// otherwise: truncated, or a message from the caller added.
#[derive(Debug, Default)]
pub(crate) struct KeptText {
    /// The blocks written, joined by blank lines, not trimmed.
    text: String,
    /// How many blocks `text` holds.
    blocks: usize,
    /// The steps it covers: each one's index and the time its tool took (together they tell
    /// steps apart, even when indices are reused after the trajectory was cleared).
    steps: Vec<(usize, Duration)>,
    /// How many of the caller's messages there were.
    user_messages: usize,
}

impl KeptText {
    /// Whether the text covers the start of `trajectory` as it is: its steps are the first ones
    /// now (none was removed), and no message came since.
    fn covers_start_of(&self, trajectory: &Trajectory) -> bool {
        !self.steps.is_empty()
            && self.steps.len() <= trajectory.steps.len()
            && self.user_messages == trajectory.user_messages.len()
            && (self.steps.iter().zip(&trajectory.steps))
                .all(|(&(index, elapsed), step)| step.index == index && step.elapsed == elapsed)
    }

    fn push(&mut self, name: fmt::Arguments<'_>, value: BlockValue<'_>) {
        push_text_block(&mut self.text, self.blocks == 0, name, value);
        self.blocks += 1;
    }
}

/// A value [`Trajectory::visit_fields`] gives.
enum Entry<'a> {
    Text(&'a str),
    Json(&'a Value),
    Observation(&'a Observation),
}

/// What a text adapter shows of an output with images or audio in it (a marker per part), when
/// it has some.
fn media_shown(observation: &Observation) -> Option<Value> {
    match observation {
        Observation::Output(value) => crate::adapter::media::observation(value),
        _ => None,
    }
}

impl Trajectory {
    /// Keeps what the provider asked to get back with turn `turn`'s calls (nothing kept for
    /// `None`); the state of turns whose steps were truncated away is dropped.
    pub(crate) fn keep_provider_state(&mut self, turn: usize, state: Option<ProviderTurn>) {
        let steps = &self.steps;
        self.provider_turns
            .retain(|kept, _| steps.iter().any(|step| step.turn == *kept));
        if let Some(state) = state {
            self.provider_turns.insert(turn, state);
        }
    }

    /// [`render`](Trajectory::render), writing only the steps `kept` does not cover yet when the
    /// adapter [renders text blocks](Adapter::renders_text_blocks) (the same text: the blocks of
    /// [`to_fields`](Trajectory::to_fields), in its order).
    pub(super) fn render_kept(&self, adapter: &dyn Adapter, kept: &mut KeptText) -> String {
        if !adapter.renders_text_blocks() {
            return self.render(adapter);
        }
        if !kept.covers_start_of(self) {
            *kept = KeptText::default();
        }
        let from = kept.steps.len();
        self.visit_fields(from, &mut |name, value| match value {
            Entry::Text(text) => kept.push(name, BlockValue::Text(text)),
            Entry::Json(value) => kept.push(name, BlockValue::Json(value)),
            Entry::Observation(observation) => match (observation, media_shown(observation)) {
                (_, Some(shown)) => kept.push(name, BlockValue::Json(&shown)),
                (Observation::Output(value), None) => kept.push(name, BlockValue::Json(value)),
                (Observation::Error(text) | Observation::Truncated { shown: text, .. }, None) => {
                    kept.push(name, BlockValue::Text(text))
                }
            },
        });
        kept.steps
            .extend(self.steps[from..].iter().map(|s| (s.index, s.elapsed)));
        kept.user_messages = self.user_messages.len();
        kept.text.trim().to_owned()
    }
}

/// The message of tool `name`'s own failure (`ToolError::Failed`), from the error text a call
/// of it was given; `None` for any other error (bad arguments, a denial, a time limit).
pub(in crate::module) fn own_failure<'a>(name: &str, error: &'a str) -> Option<&'a str> {
    error.strip_prefix(&format!(
        "Execution error in {name}: tool `{name}` failed: "
    ))
}

/// A tool's own message after DSPy's ReActV2 prefix (as Python's traceback ends with it), where
/// the other modes word a failure as DSPy's ReAct does.
pub(super) fn reworded(name: &str, observation: Observation) -> Observation {
    match observation {
        Observation::Error(text) => match own_failure(name, &text) {
            Some(message) => Observation::Error(format!("Execution error in {name}: {message}")),
            None => Observation::Error(text),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_answering_tools_are_finish_and_submit() {
        assert_eq!(
            super::ANSWERING_TOOLS,
            [super::super::FINISH, super::super::SUBMIT]
        );
    }
}

#[cfg(test)]
mod kept_text_tests {
    use serde_json::json;

    use super::*;
    use crate::adapter::{ChatAdapter, XmlAdapter};

    fn step(index: usize, observation: Observation, nanos: u32) -> Step {
        Step {
            index,
            thought: format!("  think {index}\n"),
            tool_name: "add".into(),
            tool_args: json!({"a": index, "b": [1, "two"]}),
            observation,
            call_id: None,
            turn: index,
            elapsed: Duration::new(0, nanos),
        }
    }

    /// Every change a run makes to its trajectory, checked after each: the kept text is the text
    /// the whole trajectory renders to.
    #[test]
    fn the_kept_text_is_always_the_whole_rendering() {
        let chat = ChatAdapter::new();
        let xml = XmlAdapter::new();
        let mut trajectory = Trajectory::default();
        let mut kept = KeptText::default();
        let check = |trajectory: &Trajectory, kept: &mut KeptText| {
            assert_eq!(
                trajectory.render_kept(&chat, kept),
                trajectory.render(&chat)
            );
            assert_eq!(trajectory.render_kept(&xml, kept), trajectory.render(&xml));
        };
        check(&trajectory, &mut kept);
        trajectory.user_messages.push(UserMessage {
            after: None,
            text: "first".into(),
        });
        check(&trajectory, &mut kept);
        let observations = [
            Observation::Output(json!(3)),
            Observation::Error("Execution error in add: boom  \n".into()),
            Observation::Output(json!(["x", {"y": 1}])),
            Observation::Truncated {
                shown: "abc [... truncated]".into(),
                full: json!("abcdef"),
            },
            Observation::Output(
                json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
            ),
            Observation::Output(json!("")),
        ];
        for (i, observation) in observations.into_iter().enumerate() {
            trajectory.steps.push(step(i, observation, i as u32 + 1));
            check(&trajectory, &mut kept);
            if i == 2 {
                trajectory.user_messages.push(UserMessage {
                    after: Some(2),
                    text: "later".into(),
                });
                check(&trajectory, &mut kept);
            }
        }
        // Truncated: the oldest step, then the second, go.
        trajectory.steps.remove(0);
        check(&trajectory, &mut kept);
        trajectory.steps.remove(1);
        check(&trajectory, &mut kept);
        // Cleared, then new steps with the same indices (and times) as before.
        trajectory.steps.clear();
        trajectory.user_messages.clear();
        check(&trajectory, &mut kept);
        trajectory
            .steps
            .push(step(0, Observation::Output(json!("again")), 1));
        trajectory
            .steps
            .push(step(1, Observation::Output(json!("and again")), 2));
        check(&trajectory, &mut kept);
    }
}
