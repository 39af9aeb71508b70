//! Tool selection: above a threshold, a first LM call picks the tools relevant to the inputs from
//! a compact catalogue, and the run offers only those.

use std::sync::Arc;

use serde_json::{Value, json};

use super::DynReAct;
use super::prompt::step_signatures;
use crate::adapter::Fields;
use crate::lm::{Lm, Usage};
use crate::tool::Tool;

impl DynReAct {
    crate::shared::setters! {
        /// With more tools than `threshold` (default 12), a first LM call picks the tools relevant to
        /// the inputs from a compact catalogue, and the run sees only those. If that call fails, every
        /// tool is used.
        fn with_tool_selection_threshold(threshold: usize) { selection_threshold = threshold }

        /// Tool selection keeps at most `n` tools (the first `n` the model names; default 6, the
        /// design's cap), so a model that names every tool still gets a short list.
        ///
        /// ```
        /// let agent = signet::module::DynReAct::new("question -> answer".parse().unwrap())
        ///     .with_tool_selection_limit(5);
        /// # let _ = agent;
        /// ```
        fn with_tool_selection_limit(n: usize) { selection_limit = n.max(1) }
    }

    /// A copy that offers only the tools named in `keep`. Tuned step instructions (a loaded or
    /// optimized program's) are kept, with the lines of the tools left out taken out of their
    /// tool list; untuned ones are generated again for the tools kept.
    pub(super) fn restricted_to(&self, keep: &[String]) -> DynReAct {
        let kept = |tools: &[Arc<dyn Tool>]| -> Vec<Arc<dyn Tool>> {
            tools
                .iter()
                .filter(|t| keep.iter().any(|k| k == t.name()))
                .cloned()
                .collect()
        };
        let tools = kept(&self.tools);
        let (mut step_signature, parse_signature) = step_signatures(&self.signature, &tools);
        if self.step_instructions_tuned() {
            let tuned = &self.step.signature;
            let fields: Vec<(String, String)> = tuned
                .fields()
                .map(|field| (field.prefix(), field.saved_desc()))
                .collect();
            step_signature.apply_saved_fields(fields.iter().map(|(p, d)| (p.as_str(), d.as_str())));
            let listed: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            step_signature = step_signature.with_instructions(narrowed_tool_list(
                &tuned.instructions(),
                &listed,
                keep,
            ));
        }
        let mut restricted = self.clone();
        // The same predictors (their calls belong to this agent's trace), fewer tools.
        restricted.step = self.step.same_identity_clone();
        restricted.extract = self.extract.same_identity_clone();
        restricted.step.signature = step_signature;
        restricted.step.parse_as = Some(parse_signature);
        restricted.tools = tools;
        restricted.own_tools = kept(&self.own_tools);
        restricted.selection_threshold = usize::MAX;
        restricted
    }

    /// Whether the step predictor's instructions are other than the ones generated for the
    /// signature and tools: tuned by an optimizer, loaded from a saved program or set by hand.
    pub(super) fn step_instructions_tuned(&self) -> bool {
        let (generated, _) = step_signatures(&self.signature, &self.tools);
        self.step.signature.instructions() != generated.instructions()
    }

    /// Picks the tools relevant to `inputs` (see [`with_tool_selection_threshold`](Self::with_tool_selection_threshold)).
    pub(super) async fn select_tools(
        &self,
        lm: &dyn Lm,
        inputs: &Fields,
        usage: &mut Usage,
    ) -> Option<Vec<String>> {
        use crate::structured::{StructuredRequest, call_structured};
        let names: Vec<Value> = self.tools.iter().map(|t| json!(t.name())).collect();
        let catalogue: Vec<String> = self
            .tools
            .iter()
            .map(|t| {
                let summary = t.description().lines().next().unwrap_or("");
                format!("- {}: {}", t.name(), catalogue_summary(summary))
            })
            .collect();
        let task = crate::adapter::templates::user_message(&self.signature, inputs, "", None);
        let request = StructuredRequest::new(
            "select_tools",
            json!({
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "string", "enum": names}}},
                "required": ["tools"]
            }),
            vec![
                crate::lm::Message::system(crate::adapter::templates::tool_selection_instructions(
                    &self.signature.instructions(),
                    &catalogue.join("\n"),
                )),
                crate::lm::Message::user(task),
            ],
        )
        .with_description(format!(
            "The names of the tools needed for this task (at most {}).",
            self.selection_limit
        ));
        match call_structured(lm, &request).await {
            Ok(selected) => {
                *usage += selected.usage;
                crate::trace::record_usage(selected.usage);
                let mut chosen: Vec<String> = Vec::new();
                for name in selected.value["tools"].as_array().into_iter().flatten() {
                    if let Some(name) = name.as_str()
                        && !chosen.iter().any(|c| c == name)
                    {
                        chosen.push(name.to_owned());
                    }
                }
                chosen.truncate(self.selection_limit);
                (!chosen.is_empty()).then_some(chosen)
            }
            Err(error) => {
                // The failed selection's calls are spent: they count like any other.
                *usage += error.usage();
                crate::trace::record_usage(error.usage());
                tracing::warn!(%error, "tool selection failed; offering every tool");
                None
            }
        }
    }
}

/// The most characters of a tool's summary line the selection catalogue shows.
const CATALOGUE_LINE_CHARS: usize = 160;

/// A tool's summary line as the catalogue shows it: at most [`CATALOGUE_LINE_CHARS`] characters,
/// cut with `…`, so one long description cannot crowd out the others.
fn catalogue_summary(line: &str) -> String {
    match line.char_indices().nth(CATALOGUE_LINE_CHARS) {
        Some((at, _)) => format!("{}…", line[..at].trim_end()),
        None => line.to_owned(),
    }
}

/// `instructions` with the tool-list lines (`(3) name, whose description is ..` or `(3) name.
/// It takes ..`) of the tools in `listed` but not in `keep` taken out, and the tool lines left
/// (with `finish`'s) numbered from 1 again. Other lines, numbered or not, stay as written.
fn narrowed_tool_list(instructions: &str, listed: &[&str], keep: &[String]) -> String {
    let tool_of = |rest: &str| -> Option<String> {
        listed.iter().chain([&super::FINISH]).find_map(|name| {
            (rest.starts_with(&format!("{name}, whose description is <desc>"))
                || rest.starts_with(&format!("{name}. It takes arguments ")))
            .then(|| (*name).to_owned())
        })
    };
    let mut number = 0;
    let mut lines = Vec::new();
    for line in instructions.split('\n') {
        let listing = line
            .strip_prefix('(')
            .and_then(|l| l.split_once(") "))
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            .and_then(|(_, rest)| tool_of(rest).map(|tool| (tool, rest)));
        match listing {
            Some((tool, _)) if tool != super::FINISH && !keep.contains(&tool) => {}
            Some((_, rest)) => {
                number += 1;
                lines.push(format!("({number}) {rest}"));
            }
            None => lines.push(line.to_owned()),
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrowed_tool_list_keeps_the_tuned_text_and_renumbers_the_tools_kept() {
        let tuned = "Be brief. (1) Never guess.\n\
                     (1) add, whose description is <desc>Add.</desc>. It takes arguments {}.\n\
                     (2) mul. It takes arguments {}.\n\
                     (3) lookup, whose description is <desc>Look up.</desc>. It takes arguments {}.\n\
                     (4) finish, whose description is <desc>Done.</desc>. It takes arguments {}.\n\
                     (5) Answer in English.";
        let keep = ["lookup".to_owned()];
        assert_eq!(
            narrowed_tool_list(tuned, &["add", "mul", "lookup"], &keep),
            "Be brief. (1) Never guess.\n\
             (1) lookup, whose description is <desc>Look up.</desc>. It takes arguments {}.\n\
             (2) finish, whose description is <desc>Done.</desc>. It takes arguments {}.\n\
             (5) Answer in English."
        );
    }

    #[test]
    fn a_long_summary_is_cut_at_a_character_boundary() {
        assert_eq!(catalogue_summary("Adds two numbers."), "Adds two numbers.");
        let long = "é".repeat(200);
        let shown = catalogue_summary(&long);
        assert_eq!(shown.chars().count(), CATALOGUE_LINE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
