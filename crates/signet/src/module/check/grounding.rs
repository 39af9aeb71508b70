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

    /// Whether output field `name` is checked (`text`: whether its value is text).
    fn checks_field(&self, name: &str, text: bool) -> bool {
        match &self.fields {
            Some(fields) => fields.iter().any(|f| f == name),
            None => text,
        }
    }

    /// Every figure of the inputs and of the tool results.
    fn sources(&self, answer: &Answer<'_>) -> Vec<Figure> {
        let mut sources = Vec::new();
        for text in answer.input_texts().chain(answer.tool_results()) {
            sources.extend(figures(&text, &self.units));
        }
        sources
    }

    /// The failure for `invented` figures of `field`.
    fn failure(&self, field: &str, invented: &[String], answer: &Answer<'_>) -> CheckFailure {
        let states = format!("The answer states {}, which", invented.join(", "));
        let failure = CheckFailure::new(NAME, String::new()).on_field(field);
        if answer.trajectory.is_none() {
            return CheckFailure {
                message: format!(
                    "{states} the inputs do not give. State only figures the inputs give."
                ),
                ..failure
            };
        }
        let offered: Vec<String> = answer
            .uncalled_tools()
            .into_iter()
            .filter(|t| self.offering.as_ref().is_none_or(|o| o.contains(t)))
            .collect();
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

/// The figures of `said` that no figure of `sources` grounds, as written.
fn ungrounded(said: &[Figure], sources: &[Figure]) -> Vec<String> {
    let mut invented: Vec<String> = Vec::new();
    for figure in said {
        if !sources.iter().any(|s| figure.states(s)) && !invented.contains(&figure.text) {
            invented.push(figure.text.clone());
        }
    }
    invented
}

impl Check for Grounded {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
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
        let Some(last) = settled.last() else {
            return None;
        };
        *done = from + last.span.end;
        let sources = self
            .sources
            .get_or_insert_with(|| self.check.sources(answer));
        let invented = ungrounded(&settled, sources);
        (!invented.is_empty()).then(|| self.check.failure(field, &invented, answer))
    }
}
