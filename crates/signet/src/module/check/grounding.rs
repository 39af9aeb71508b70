//! The grounding check: every figure an answer states comes from a tool result of the run or
//! from the question.

use std::sync::Arc;

use super::figures::{Figure, Units, figures, settled_figures};
use super::{Answer, Check, CheckFailure, Watcher, value_text};

/// Refuses an answer that states a figure — a number, with its unit when one is written beside
/// it — that no tool result of the run returned and the inputs do not give: the invented rate,
/// the temperature of a forecast never asked for. A figure is grounded when some figure of a
/// source states the same value (the answer may round it to fewer decimals: "1168.8" and "1169"
/// state 1168.83) with the same unit where both name one ("300 NOK" is not grounded by
/// "300 EUR"). How figures are read — separators, signs, units, dates — and what is not read
/// (numbers spelled out, "1.2 million") is in [`figures`](super::figures).
///
/// The refused answer's message names the figures and, in an agent, **offers the tools the run
/// has not called** (or those of [`offering`](Self::offering) among them): the re-ask's turn may
/// call only them, or answer again. Outside a tool loop the sources are the inputs alone.
///
/// It watches a streaming answer: once a figure is settled (its digits and unit can no longer
/// change) and grounded by nothing, the reply is stopped there.
///
/// Checked fields: every text output, or those of [`on_fields`](Self::on_fields) (a field that
/// is not text is read as its JSON).
///
/// ```
/// use serde_json::json;
/// use signet::module::check::{Answer, Check, Grounded};
///
/// let inputs = [("question".to_owned(), json!("How much is 300 EUR in NOK?"))].into_iter().collect();
/// let invented = [("answer".to_owned(), json!("300 EUR is 300.00 NOK."))].into_iter().collect();
/// let failure = Grounded::new().check(&Answer::new(&invented, &inputs)).unwrap_err();
/// assert!(failure.message.contains("300.00 NOK"), "{failure}");
/// let given = [("answer".to_owned(), json!("You asked about 300 EUR."))].into_iter().collect();
/// assert!(Grounded::new().check(&Answer::new(&given, &inputs)).is_ok());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Grounded {
    fields: Option<Vec<String>>,
    units: Units,
    offering: Option<Vec<String>>,
    /// Per unit (canonical name), the tools that return figures in it.
    by_unit: Vec<(String, Vec<String>)>,
    /// Whether the figures of tool calls' arguments must be grounded too.
    arguments: bool,
}

/// The check's name.
const NAME: &str = "grounded";

impl Grounded {
    /// Every text output checked, the built-in units, uncalled tools offered.
    pub fn new() -> Grounded {
        Grounded::default()
    }

    /// Checks these output fields only.
    pub fn on_fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Grounded {
        self.fields = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Reads units with `units` (the built-in table extended with your aliases, say).
    pub fn with_units(mut self, units: Units) -> Grounded {
        self.units = units;
        self
    }

    /// A re-ask offers only these of the tools not called yet (default: all of them), e.g. the
    /// tools that return figures.
    pub fn offering<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Grounded {
        self.offering = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// A refused figure in `unit` (its canonical name: `NOK`, `°C`, `EUR`, ..) offers these tools,
    /// those not called yet, instead of every one: a figure in kroner comes from the conversion.
    /// No tools: figures in that unit come from no tool (an amount the question gives), and such
    /// a refusal offers none. Figures without a unit, or in a unit not named here, offer as
    /// [`offering`](Self::offering) says.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::check::{Answer, Check, Grounded};
    ///
    /// let grounded = Grounded::new().offering_for("NOK", ["eur_to_nok"]).offering_for("EUR", [] as [&str; 0]);
    /// let inputs = [("question".to_owned(), json!("Weather in Rome?"))].into_iter().collect();
    /// let answer = [("answer".to_owned(), json!("No forecast for Rome. 45 EUR is 526.50 NOK."))].into_iter().collect();
    /// let trajectory = Default::default();
    /// let failure = grounded.check(&Answer::new(&answer, &inputs).after(&trajectory, &[])).unwrap_err();
    /// assert!(failure.offer_tools.is_empty(), "no tool is offered: the agent has none here");
    /// ```
    pub fn offering_for<S: Into<String>>(
        mut self,
        unit: &str,
        tools: impl IntoIterator<Item = S>,
    ) -> Grounded {
        self.by_unit.retain(|(u, _)| u != unit);
        self.by_unit
            .push((unit.to_owned(), tools.into_iter().map(Into::into).collect()));
        self
    }

    /// The tools that may ground `figure` when called, by its unit; `None`: the default offer.
    fn tools_for(&self, figure: &Figure) -> Option<&[String]> {
        let unit = figure.unit.as_ref()?;
        self.by_unit
            .iter()
            .find(|(u, _)| u == unit.as_str())
            .map(|(_, tools)| tools.as_slice())
    }

    /// Also holds **tool calls** to the rule: every figure a call's arguments hold must come from
    /// the inputs or an earlier call's result, and only the results of such calls ground the
    /// answer. A figure the model made up does not become a source by passing through a tool
    /// (`eur_to_nok(240)` for a question that names no 240, "1.5" for "1,500"); the refusal
    /// names the call and offers its tool again. For tools whose numbers come from the user;
    /// not for those that take numbers of their own (a page, a limit).
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::check::{Answer, Check, Grounded};
    /// use signet::module::{Observation, Step, Trajectory};
    ///
    /// let inputs = [("question".to_owned(), json!("How much is 1,500 EUR in NOK?"))].into_iter().collect();
    /// let call = Step {
    ///     index: 0, thought: String::new(), tool_name: "eur_to_nok".into(),
    ///     tool_args: json!({"amount": 1.5}), observation: Observation::Output(json!("1.5 EUR is 17.55 NOK.")),
    ///     call_id: None, turn: 0, elapsed: Default::default(),
    /// };
    /// let trajectory = Trajectory { steps: vec![call], ..Default::default() };
    /// let answer = [("answer".to_owned(), json!("1.5 EUR is 17.55 NOK."))].into_iter().collect();
    /// let judged = Answer::new(&answer, &inputs).after(&trajectory, &[]);
    /// assert!(Grounded::new().check(&judged).is_ok(), "the result grounds the answer");
    /// let failure = Grounded::new().with_arguments(true).check(&judged).unwrap_err();
    /// assert!(failure.message.contains("eur_to_nok"), "{failure}");
    /// ```
    pub fn with_arguments(mut self, on: bool) -> Grounded {
        self.arguments = on;
        self
    }

    /// Whether output field `name` is checked (`text`: whether its value is text).
    fn checks_field(&self, name: &str, text: bool) -> bool {
        match &self.fields {
            Some(fields) => fields.iter().any(|f| f == name),
            None => text,
        }
    }

    /// Every figure of the inputs and of the tool results (with
    /// [`with_arguments`](Self::with_arguments), of the results of calls whose arguments are
    /// grounded).
    fn sources(&self, answer: &Answer<'_>) -> Vec<Figure> {
        let mut sources = Vec::new();
        for text in answer.input_texts() {
            sources.extend(figures(&text, &self.units));
        }
        for step in answer.tool_steps() {
            if self.arguments
                && !self
                    .ungrounded_arguments(&step.tool_args, &sources)
                    .is_empty()
            {
                continue;
            }
            sources.extend(figures(&step.observation.as_text(), &self.units));
        }
        sources
    }

    /// The figures of a call's `args` (numbers, and the figures of strings) that no figure of
    /// `sources` grounds.
    fn ungrounded_arguments(&self, args: &serde_json::Value, sources: &[Figure]) -> Vec<Figure> {
        let mut said = Vec::new();
        argument_figures(args, &self.units, &mut said);
        said.retain(|figure| !sources.iter().any(|s| figure.states(s)));
        said
    }

    /// The first call whose arguments hold a figure nothing before it grounds, as a failure.
    fn ungrounded_call(&self, answer: &Answer<'_>) -> Option<CheckFailure> {
        let mut sources = Vec::new();
        for text in answer.input_texts() {
            sources.extend(figures(&text, &self.units));
        }
        for step in answer.tool_steps() {
            let invented = self.ungrounded_arguments(&step.tool_args, &sources);
            if let Some(first) = invented.first() {
                let message = format!(
                    "The call {}({}) uses {}, which the question does not give and no earlier \
                     tool returned. Call {} again with the figures the question gives.",
                    step.tool_name, step.tool_args, first.text, step.tool_name
                );
                let failure = CheckFailure::new(NAME, message);
                let field = self.fields.as_ref().and_then(|f| f.first());
                return Some(
                    match field {
                        Some(field) => failure.on_field(field),
                        None => failure,
                    }
                    .offering([step.tool_name.clone()]),
                );
            }
            sources.extend(figures(&step.observation.as_text(), &self.units));
        }
        None
    }

    /// The failure for `invented` figures of `field`.
    fn failure(&self, field: &str, invented: &[&Figure], answer: &Answer<'_>) -> CheckFailure {
        let mut written: Vec<&str> = Vec::new();
        for figure in invented {
            if !written.contains(&figure.text.as_str()) {
                written.push(&figure.text);
            }
        }
        let states = format!("The answer states {}, which", written.join(", "));
        let failure = CheckFailure::new(NAME, String::new()).on_field(field);
        if answer.trajectory.is_none() {
            return CheckFailure {
                message: format!(
                    "{states} the inputs do not give. State only figures the inputs give."
                ),
                ..failure
            };
        }
        let uncalled = answer.uncalled_tools();
        let mut offered: Vec<String> = Vec::new();
        for figure in invented {
            let candidates: Vec<&String> = match self.tools_for(figure) {
                Some(tools) => tools.iter().collect(),
                None => uncalled
                    .iter()
                    .filter(|t| self.offering.as_ref().is_none_or(|o| o.contains(t)))
                    .collect(),
            };
            for tool in candidates {
                if uncalled.contains(tool) && !offered.contains(tool) {
                    offered.push(tool.clone());
                }
            }
        }
        let message = if offered.is_empty() {
            format!(
                "{states} no tool returned and the question does not give. State only the \
                 figures the tools returned, or say you could not find it."
            )
        } else {
            format!(
                "{states} no tool returned and the question does not give. Call a tool that \
                 returns it ({}), or state only the figures the tools returned.",
                offered.join(", ")
            )
        };
        CheckFailure {
            message,
            offer_tools: offered,
            ..failure
        }
    }
}

/// The figures of `said` that no figure of `sources` grounds.
fn ungrounded<'a>(said: &'a [Figure], sources: &[Figure]) -> Vec<&'a Figure> {
    said.iter()
        .filter(|figure| !sources.iter().any(|s| figure.states(s)))
        .collect()
}

impl Check for Grounded {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
        if self.arguments
            && let Some(failure) = self.ungrounded_call(answer)
        {
            return Err(failure);
        }
        let mut sources = None;
        for (name, value) in answer.outputs {
            if !self.checks_field(name, value.is_string()) {
                continue;
            }
            let said = figures(&value_text(value), &self.units);
            if said.is_empty() {
                continue;
            }
            let sources = sources.get_or_insert_with(|| self.sources(answer));
            let invented = ungrounded(&said, sources);
            if !invented.is_empty() {
                return Err(self.failure(name, &invented, answer));
            }
        }
        Ok(())
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(GroundedWatcher {
            check: Arc::new(self.clone()),
            sources: None,
            checked_to: Vec::new(),
        }))
    }
}

/// How far back a streaming field is read again for figures: a figure that has not settled
/// within this many bytes is not one (a run of digits that long is no quantity a user reads).
const RESCAN_WINDOW: usize = 4096;

/// Watches a streaming answer for a settled figure no source grounds.
struct GroundedWatcher {
    check: Arc<Grounded>,
    /// The sources' figures, read at the first piece.
    sources: Option<Vec<Figure>>,
    /// Per field, the byte offset up to which its settled figures were checked.
    checked_to: Vec<(String, usize)>,
}

impl Watcher for GroundedWatcher {
    fn push(
        &mut self,
        field: &str,
        text: &str,
        _new_from: usize,
        answer: &Answer<'_>,
    ) -> Option<CheckFailure> {
        // A streamed field's pieces are its text.
        if !self.check.checks_field(field, true) {
            return None;
        }
        let done = match self.checked_to.iter_mut().find(|(f, _)| f == field) {
            Some((_, done)) => done,
            None => {
                self.checked_to.push((field.to_owned(), 0));
                &mut self.checked_to.last_mut()?.1
            }
        };
        let mut from = (*done).max(text.len().saturating_sub(RESCAN_WINDOW));
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let settled: Vec<Figure> = settled_figures(&text[from..], &self.check.units)
            .into_iter()
            .filter(|f| from + f.span.start >= *done)
            .collect();
        let last = settled.last()?;
        *done = from + last.span.end;
        let sources = self
            .sources
            .get_or_insert_with(|| self.check.sources(answer));
        let invented = ungrounded(&settled, sources);
        (!invented.is_empty()).then(|| self.check.failure(field, &invented, answer))
    }
}

/// The figures of a JSON value: each number as written, and the figures of each string.
fn argument_figures(value: &serde_json::Value, units: &Units, out: &mut Vec<Figure>) {
    match value {
        serde_json::Value::Number(n) => out.extend(figures(&n.to_string(), units)),
        serde_json::Value::String(text) => out.extend(figures(text, units)),
        serde_json::Value::Array(items) => {
            for item in items {
                argument_figures(item, units, out);
            }
        }
        serde_json::Value::Object(map) => {
            for item in map.values() {
                argument_figures(item, units, out);
            }
        }
        serde_json::Value::Bool(_) | serde_json::Value::Null => {}
    }
}

/// Whether each of `steps` (a run's tool calls, in order) has arguments whose figures all come
/// from `inputs` (their texts) or the results of earlier such calls: what
/// [`Grounded::with_arguments`] takes as sources, and a fallback that answers from tool results
/// keeps.
pub(crate) fn grounded_calls<'a>(
    inputs: impl Iterator<Item = String>,
    steps: impl Iterator<Item = &'a super::Step>,
) -> Vec<bool> {
    let units = Units::default();
    let mut sources = Vec::new();
    for text in inputs {
        sources.extend(figures(&text, &units));
    }
    let mut grounded = Vec::new();
    for step in steps {
        let mut said = Vec::new();
        argument_figures(&step.tool_args, &units, &mut said);
        let ok = said.iter().all(|f| sources.iter().any(|s| f.states(s)));
        if ok {
            sources.extend(figures(&step.observation.as_text(), &units));
        }
        grounded.push(ok);
    }
    grounded
}
