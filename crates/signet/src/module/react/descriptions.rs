//! Tool descriptions a ReAct agent shows the model in place of the tools' own: set by hand, by an
//! optimizer (GEPA's tool components) or by a saved program.

use std::sync::Arc;

use super::DynReAct;
use super::prompt::tool_listing;
use crate::tool::{Redescribed, Tool};

/// A tool name the agent does not have.
///
/// ```
/// let mut agent = signet::module::DynReAct::new("question -> answer".parse().unwrap());
/// let error = agent.set_tool_description("search", "Search the web.").unwrap_err();
/// assert_eq!(error.to_string(), "the agent has no tool `search` (its tools: none)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the agent has no tool `{tool}` (its tools: {})", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
pub struct UnknownTool {
    /// The name asked for.
    pub tool: String,
    /// The agent's tools.
    pub known: Vec<String>,
}

impl DynReAct {
    /// Shows `tool` to the model described as `description` instead of its own description:
    /// in the tool list of the step instructions (text mode) and in the `tools=` sent in native
    /// and history modes. The tool runs as before. Giving the tool's own description back removes
    /// the change. Saved programs keep these descriptions ([`Predictors::save`](super::super::Predictors::save)),
    /// and GEPA can optimize them (`Gepa::with_tool_descriptions`).
    ///
    /// The step instructions hold DSPy's tool list, one line per tool; that line is rewritten in
    /// place, so changes made elsewhere in the instructions stay. Instructions that no longer
    /// contain the tool's line (rewritten by hand or by an optimizer) are left as they are.
    ///
    /// ```
    /// use signet::module::DynReAct;
    /// use signet::tool;
    ///
    /// /// Look up a word.
    /// #[tool]
    /// fn lookup(word: String) -> String { word }
    ///
    /// let mut agent = DynReAct::new("question -> answer".parse().unwrap()).tool(LookupTool);
    /// agent.set_tool_description("lookup", "Define an English word; one word per call.").unwrap();
    /// assert_eq!(agent.tool_description("lookup"), Some("Define an English word; one word per call."));
    /// assert!(agent.step_predictor().instructions().contains("<desc>Define an English word; one word per call.</desc>"));
    /// assert!(agent.set_tool_description("search", "Search.").is_err());
    /// ```
    pub fn set_tool_description(
        &mut self,
        tool: &str,
        description: impl Into<String>,
    ) -> Result<(), UnknownTool> {
        let index = self.tool_index(tool)?;
        self.describe(index, description.into(), true);
        Ok(())
    }

    /// The description the model is shown for `tool` (its own unless changed with
    /// [`set_tool_description`](Self::set_tool_description)); `None` when there is no such tool.
    pub fn tool_description(&self, tool: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| t.name() == tool)
            .map(|t| t.description())
    }

    /// The tools shown with another description than their own: `(tool, description)` in tool
    /// order.
    pub fn changed_tool_descriptions(&self) -> Vec<(&str, &str)> {
        self.tools
            .iter()
            .zip(&self.own_tools)
            .filter(|(shown, own)| shown.description() != own.description())
            .map(|(shown, _)| (shown.name(), shown.description()))
            .collect()
    }

    /// Shows every tool as `changed` says and the rest with their own descriptions, leaving the
    /// step instructions as they are (a saved program's instructions already hold its tool list).
    /// Unknown names are an error and change nothing.
    pub(crate) fn reset_tool_descriptions(
        &mut self,
        changed: &[(String, String)],
    ) -> Result<(), UnknownTool> {
        let mut indices = Vec::with_capacity(changed.len());
        for (tool, _) in changed {
            indices.push(self.tool_index(tool)?);
        }
        for index in 0..self.tools.len() {
            let own = self.own_tools[index].description().to_owned();
            self.describe(index, own, false);
        }
        for (index, (_, description)) in indices.into_iter().zip(changed) {
            self.describe(index, description.clone(), false);
        }
        Ok(())
    }

    fn tool_index(&self, tool: &str) -> Result<usize, UnknownTool> {
        self.tools
            .iter()
            .position(|t| t.name() == tool)
            .ok_or_else(|| UnknownTool {
                tool: tool.to_owned(),
                known: self.tools.iter().map(|t| t.name().to_owned()).collect(),
            })
    }

    /// Shows tool `index` as `description`; with `rewrite`, its line in the step instructions
    /// follows.
    fn describe(&mut self, index: usize, description: String, rewrite: bool) {
        let own = &self.own_tools[index];
        let shown: Arc<dyn Tool> = if description == own.description() {
            own.clone()
        } else {
            Arc::new(Redescribed::new(own.clone(), description))
        };
        if rewrite {
            let instructions = self.step.instructions();
            if let Some(updated) = replace_listing(&instructions, shown.as_ref()) {
                self.step.set_instructions(updated);
            }
        }
        self.tools[index] = shown;
    }
}

/// `instructions` with the tool-list line of `tool` (`(3) name, whose description is ...`)
/// replaced by its listing as `tool` describes itself; `None` when there is no such line.
fn replace_listing(instructions: &str, tool: &dyn Tool) -> Option<String> {
    let listing = tool_listing(tool);
    let name = tool.name();
    let args_start = listing.find(" It takes arguments ")?;
    let args_end = &listing[args_start..];
    let mut found = false;
    let lines: Vec<String> = instructions
        .split('\n')
        .map(|line| {
            let rest = line
                .strip_prefix('(')
                .and_then(|l| l.split_once(") "))
                .filter(|(number, _)| number.chars().all(|c| c.is_ascii_digit()));
            match rest {
                Some((number, rest))
                    if !found
                        && (rest.starts_with(&format!("{name}, whose description is <desc>"))
                            || rest.starts_with(&format!("{name}.")))
                        && rest.ends_with(args_end) =>
                {
                    found = true;
                    format!("({number}) {listing}")
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    found.then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::FnTool;

    fn tool(name: &str, description: &str) -> FnTool {
        FnTool::builder(name)
            .description(description)
            .schema(json!({"type": "object", "properties": {"q": {"type": "string"}}}))
            .sync_fn(|_| Ok::<_, String>(json!("ok")))
    }

    fn agent() -> DynReAct {
        DynReAct::new("question -> answer".parse().unwrap())
            .tool(tool("add", "Add."))
            .tool(tool("add_all", "Add all."))
    }

    #[test]
    fn the_tools_line_is_rewritten_in_place_and_nothing_else() {
        let mut agent = agent();
        let before = agent.step_predictor().instructions();
        agent
            .set_tool_description("add", "Sum two numbers.\nAlways.")
            .unwrap();
        let after = agent.step_predictor().instructions();
        let changed: Vec<(&str, &str)> = before
            .lines()
            .zip(after.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(
            changed,
            [(
                "(1) add, whose description is <desc>Add.</desc>. It takes arguments {'q': {'type': 'string'}}.",
                "(1) add, whose description is <desc>Sum two numbers.  Always.</desc>. It takes arguments {'q': {'type': 'string'}}."
            )]
        );
        assert_eq!(
            agent.changed_tool_descriptions(),
            [("add", "Sum two numbers.\nAlways.")]
        );
        // Its own description back: the listing and the list of changes are as built.
        agent.set_tool_description("add", "Add.").unwrap();
        assert_eq!(agent.step_predictor().instructions(), before);
        assert!(agent.changed_tool_descriptions().is_empty());
    }

    #[test]
    fn an_empty_description_is_listed_as_dspy_lists_it() {
        let mut agent = agent();
        agent.set_tool_description("add_all", "").unwrap();
        assert!(
            agent
                .step_predictor()
                .instructions()
                .contains("(2) add_all. It takes arguments {'q': {'type': 'string'}}.")
        );
        agent
            .set_tool_description("add_all", "Add them all.")
            .unwrap();
        assert!(agent.step_predictor().instructions().contains(
            "(2) add_all, whose description is <desc>Add them all.</desc>. It takes arguments"
        ));
    }

    #[test]
    fn rewritten_instructions_are_left_alone_and_native_specs_follow() {
        let mut agent = agent();
        agent.step.set_instructions("Use add for sums.".to_owned());
        agent.set_tool_description("add", "Sum.").unwrap();
        assert_eq!(agent.step_predictor().instructions(), "Use add for sums.");
        assert_eq!(
            agent.tool_list()[0].to_openai_function()["function"]["description"],
            "Sum."
        );
    }

    #[test]
    fn a_reset_applies_only_the_given_changes_and_checks_names_first() {
        let mut agent = agent();
        agent.set_tool_description("add", "Sum.").unwrap();
        let instructions = agent.step_predictor().instructions();
        let error = agent
            .reset_tool_descriptions(&[("nope".into(), "x".into())])
            .unwrap_err();
        assert_eq!(error.known, ["add", "add_all"]);
        assert_eq!(agent.tool_description("add"), Some("Sum."));
        agent
            .reset_tool_descriptions(&[("add_all".into(), "All.".into())])
            .unwrap();
        assert_eq!(agent.changed_tool_descriptions(), [("add_all", "All.")]);
        // The instructions are the caller's: a reset does not touch them.
        assert_eq!(agent.step_predictor().instructions(), instructions);
    }
}
