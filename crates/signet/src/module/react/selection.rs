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

        /// Tool selection keeps at most `n` tools (the first `n` the model names; default: as many
        /// as it names), so a model that names every tool still gets a short list.
        ///
        /// ```
        /// let agent = signet::module::DynReAct::new("question -> answer".parse().unwrap())
        ///     .with_tool_selection_limit(5);
        /// # let _ = agent;
        /// ```
        fn with_tool_selection_limit(n: usize) { selection_limit = Some(n.max(1)) }
    }

    /// A copy that offers only the tools named in `keep`.
    pub(super) fn restricted_to(&self, keep: &[String]) -> DynReAct {
        let kept = |tools: &[Arc<dyn Tool>]| -> Vec<Arc<dyn Tool>> {
            tools
                .iter()
                .filter(|t| keep.iter().any(|k| k == t.name()))
                .cloned()
                .collect()
        };
        let tools = kept(&self.tools);
        let (step_signature, parse_signature) = step_signatures(&self.signature, &tools);
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
                format!(
                    "- {}: {}",
                    t.name(),
                    t.description().lines().next().unwrap_or("")
                )
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
        .with_description(match self.selection_limit {
            Some(n) => format!("The names of the tools needed for this task (at most {n})."),
            None => "The names of the tools needed for this task.".to_owned(),
        });
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
                chosen.truncate(self.selection_limit.unwrap_or(usize::MAX));
                (!chosen.is_empty()).then_some(chosen)
            }
            Err(error) => {
                tracing::warn!(%error, "tool selection failed; offering every tool");
                None
            }
        }
    }
}
