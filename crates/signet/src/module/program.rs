//! Programs: the [`Module`] trait every module and user program implements, and the
//! [`Predictors`] walk that lets optimizers read and set each predictor's demos and instructions.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::saved::tool_component;
use super::{
    ChainOfThought, DynPredict, DynReAct, Predict, ReAct, ReActError, Reasoned, react::UnknownTool,
};
use crate::adapter::Fields;
use crate::signature::Signature;

/// Every predictor inside a program, by DSPy's path: `self` for a lone `Predict`, `predict` inside
/// a `ChainOfThought`, `react` and `extract.predict` inside a `ReAct`, `field.sub` for a module
/// held in a field, `field[0]` and `field['key']` for modules in a `Vec` or a map — the keys of a
/// saved program, the names an optimizer reports.
///
/// `#[derive(Module)]` implements it for a struct whose fields are modules.
///
/// ```
/// use signet::module::{ChainOfThought, Predictors};
/// # #[derive(signet::Signature)]
/// # struct Ask { #[input] question: String, #[output] answer: String }
/// let cot = ChainOfThought::<Ask>::new();
/// let names: Vec<String> = cot.named_predictors().into_iter().map(|(name, _)| name).collect();
/// assert_eq!(names, ["predict"]);
/// ```
pub trait Predictors {
    /// Each predictor with its path, in a stable order.
    fn named_predictors(&self) -> Vec<(String, &DynPredict)>;

    /// Each predictor with its path, to change.
    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)>;

    /// Each ReAct loop inside the program with its path (`self` for a lone ReAct, the field's
    /// path otherwise): how saved programs and optimizers reach the tool descriptions a loop
    /// shows the model ([`named_tool_descriptions`](Self::named_tool_descriptions)). None by
    /// default; `#[derive(Module)]` walks its fields.
    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        Vec::new()
    }

    /// Each ReAct loop inside the program with its path, to change.
    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        Vec::new()
    }

    /// The description of every tool of every ReAct loop in the program, as the model is shown
    /// it, by name: `tools.<tool>` for a lone ReAct, `<path>.tools.<tool>` for one at `<path>`
    /// — the names GEPA gives these components and saved programs use.
    ///
    /// ```
    /// use signet::module::{Predictors, ReAct};
    /// use signet::tool;
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// /// Look up a word.
    /// #[tool]
    /// fn lookup(word: String) -> String { word }
    ///
    /// let mut agent = ReAct::<Ask>::new().tool(LookupTool);
    /// agent.set_named_tool_description("tools.lookup", "Define one English word.").unwrap();
    /// assert_eq!(
    ///     agent.named_tool_descriptions(),
    ///     [("tools.lookup".to_owned(), "Define one English word.".to_owned())]
    /// );
    /// ```
    fn named_tool_descriptions(&self) -> Vec<(String, String)> {
        super::saved::listed_tool_descriptions(self)
    }

    /// Sets the description of the tool named `name` (a name from
    /// [`named_tool_descriptions`](Self::named_tool_descriptions); see
    /// [`DynReAct::set_tool_description`]).
    fn set_named_tool_description(
        &mut self,
        name: &str,
        description: &str,
    ) -> Result<(), UnknownTool> {
        let mut known = Vec::new();
        for (path, core) in self.named_react_loops_mut() {
            let tool = core
                .tool_list()
                .iter()
                .map(|t| t.name().to_owned())
                .find(|tool| tool_component(&path, tool) == name);
            if let Some(tool) = tool {
                return core.set_tool_description(&tool, description);
            }
            known.extend(
                core.tool_list()
                    .iter()
                    .map(|t| tool_component(&path, t.name())),
            );
        }
        Err(UnknownTool {
            tool: name.to_owned(),
            known,
        })
    }

    /// The program's state in DSPy's `program.save()` format (see [`save`](Self::save)).
    fn dump_state(&self) -> Value {
        super::saved::dump(self)
    }

    /// Applies a state in DSPy's format to every predictor: demos, instructions, field
    /// descriptions and prefixes. The whole state is checked first; on an error nothing changes.
    fn load_state(&mut self, state: &Value) -> Result<(), super::StateError> {
        super::saved::load(self, state)
    }

    /// The saved program's text, byte for byte what DSPy's `program.save("program.json")`
    /// writes for the same state.
    fn to_saved_json(&self) -> String {
        super::saved::to_text(&self.dump_state())
    }

    /// The program's content hash (`sha256:` and 16 hex digits of its saved text): what a
    /// trace backend shows as `gen_ai.agent.version` on the spans of a program loaded from a
    /// file, so that a production run can be traced back to the compiled program behind it.
    ///
    /// ```
    /// use signet::module::{Predict, Predictors};
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let mut program = Predict::<Ask>::new();
    /// let before = program.version();
    /// program.named_predictors_mut()[0].1.set_instructions("Answer in one word.");
    /// assert_ne!(program.version(), before);
    /// assert!(before.starts_with("sha256:"));
    /// ```
    fn version(&self) -> String {
        super::saved::version_of(&self.to_saved_json())
    }

    /// Saves the program's demos, instructions and field descriptions as DSPy's
    /// `program.save(path)` does (JSON): Python's `program.load(path)` reads the file, and so does
    /// [`load`](Self::load).
    ///
    /// ```
    /// use signet::module::{ChainOfThought, Predictors};
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let mut cot = ChainOfThought::<Ask>::new();
    /// cot.named_predictors_mut()[0].1.set_instructions("Think, then answer in one word.");
    /// let path = std::env::temp_dir().join("signet-doc-cot.json");
    /// cot.save(&path).unwrap();
    ///
    /// let mut loaded = ChainOfThought::<Ask>::new();
    /// loaded.load(&path).unwrap();
    /// assert_eq!(loaded.predictor().instructions(), "Think, then answer in one word.");
    /// ```
    fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), super::StateError>
    where
        Self: Sized,
    {
        super::saved::write(path.as_ref(), &self.to_saved_json())
    }

    /// Loads a program saved by [`save`](Self::save) or by DSPy's `program.save(path)` into this
    /// program, which must have the same predictors (built by the same code: names, types and
    /// tools are not in the file).
    fn load(&mut self, path: impl AsRef<std::path::Path>) -> Result<(), super::StateError>
    where
        Self: Sized,
    {
        let state = super::saved::read(path.as_ref())?;
        self.load_state(&state)
    }

    /// Loads a saved program from its text (see [`load`](Self::load)).
    fn load_json(&mut self, text: &str) -> Result<(), super::StateError> {
        let state = super::saved::from_text("the saved program", text)?;
        self.load_state(&state)
    }
}

/// A program: a typed input in, a typed output out, predictors inside. `Predict`,
/// `ChainOfThought` and `ReAct` implement it; implement it for a program of your own (its
/// predictors walked by `#[derive(Module)]`) and Evaluate and the optimizers take it like any
/// module.
///
/// ```
/// use signet::testing::ScriptedLm;
/// use signet::module::Module;
/// use signet::prelude::*;
///
/// /// Answer.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// /// Two steps: a draft, then a check.
/// #[derive(Module)]
/// struct DraftThenCheck {
///     draft: Predict<Ask>,
///     check: ChainOfThought<Ask>,
/// }
///
/// impl Module for DraftThenCheck {
///     type Input = AskInput;
///     type Output = AskOutput;
///     type Error = signet::Error;
///
///     async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
///         let draft = self.draft.call(input).await?;
///         let checked = self.check.call(AskInput { question: format!("Is {} right?", draft.answer) }).await?;
///         Ok(checked.output)
///     }
/// }
///
/// let program = DraftThenCheck { draft: Predict::new(), check: ChainOfThought::new() };
/// let names: Vec<String> = program.named_predictors().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["draft", "check.predict"]);
/// ```
pub trait Module: Predictors + Send + Sync {
    /// What the program takes.
    type Input: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What it returns.
    type Output: Serialize + Send + Sync + 'static;
    /// Why it fails.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Runs the program on `input`.
    fn call(
        &self,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// [`call`](Self::call) from sync code (see [`crate::blocking`] for the rule).
    fn call_blocking(&self, input: Self::Input) -> Result<Self::Output, Self::Error>
    where
        Self: Sized,
        Self::Error: From<crate::blocking::BlockingError>,
    {
        crate::blocking::block_on(self.call(input))?
    }

    /// The output's field values, for metrics and demos: by default the output serialized as a
    /// JSON object.
    fn output_fields(output: &Self::Output) -> Fields {
        match serde_json::to_value(output) {
            Ok(Value::Object(map)) => map,
            Ok(other) => std::iter::once(("output".to_owned(), other)).collect(),
            Err(_) => Fields::new(),
        }
    }
}

/// `prefix` joined with a sub-path as DSPy joins them: `self` (a lone predictor) is `prefix`
/// itself, an index follows directly (`steps[0]`), anything else after a dot (`answer.predict`).
///
/// ```
/// use signet::module::join_path;
/// assert_eq!(join_path("answer", "self".into()), "answer");
/// assert_eq!(join_path("steps", "[1].predict".into()), "steps[1].predict");
/// assert_eq!(join_path("answer", "predict".into()), "answer.predict");
/// ```
pub fn join_path(prefix: &str, sub: String) -> String {
    if sub == "self" {
        prefix.to_owned()
    } else if sub.starts_with('[') {
        format!("{prefix}{sub}")
    } else {
        format!("{prefix}.{sub}")
    }
}

impl Predictors for DynPredict {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![("self".to_owned(), self)]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![("self".to_owned(), self)]
    }
}

impl<S: Signature> Predictors for Predict<S> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![("self".to_owned(), &self.inner)]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![("self".to_owned(), &mut self.inner)]
    }
}

impl<S: Signature> Module for Predict<S> {
    type Input = S::Input;
    type Output = S::Output;
    type Error = crate::error::Error;

    fn call(
        &self,
        input: S::Input,
    ) -> impl Future<Output = Result<S::Output, crate::error::Error>> + Send {
        Predict::call(self, input)
    }
}

impl<S: Signature> Predictors for ChainOfThought<S> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![("predict".to_owned(), &self.inner)]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![("predict".to_owned(), &mut self.inner)]
    }
}

impl<S: Signature> Module for ChainOfThought<S> {
    type Input = S::Input;
    type Output = Reasoned<S::Output>;
    type Error = crate::error::Error;

    fn call(
        &self,
        input: S::Input,
    ) -> impl Future<Output = Result<Reasoned<S::Output>, crate::error::Error>> + Send {
        ChainOfThought::call(self, input)
    }
}

impl Predictors for DynReAct {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![
            ("react".to_owned(), &self.step),
            ("extract.predict".to_owned(), &self.extract),
        ]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![
            ("react".to_owned(), &mut self.step),
            ("extract.predict".to_owned(), &mut self.extract),
        ]
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        vec![("self".to_owned(), self)]
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        vec![("self".to_owned(), self)]
    }
}

impl<S: Signature> Predictors for ReAct<S> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.core.named_predictors()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.core.named_predictors_mut()
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.core.named_react_loops()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.core.named_react_loops_mut()
    }
}

impl<S: Signature> Module for ReAct<S> {
    type Input = S::Input;
    type Output = super::ReActOutput<S::Output>;
    type Error = ReActError;

    fn call(
        &self,
        input: S::Input,
    ) -> impl Future<Output = Result<Self::Output, ReActError>> + Send {
        ReAct::call(self, input)
    }

    /// The outputs' fields (the trajectory and usage are not outputs).
    fn output_fields(output: &Self::Output) -> Fields {
        match serde_json::to_value(&output.output) {
            Ok(Value::Object(map)) => map,
            _ => Fields::new(),
        }
    }
}

/// Predictors of a module held in an `Option`: the module's, when there is one.
impl<M: Predictors> Predictors for Option<M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.as_ref()
            .map(Predictors::named_predictors)
            .unwrap_or_default()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.as_mut()
            .map(Predictors::named_predictors_mut)
            .unwrap_or_default()
    }
    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.as_ref()
            .map(Predictors::named_react_loops)
            .unwrap_or_default()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.as_mut()
            .map(Predictors::named_react_loops_mut)
            .unwrap_or_default()
    }
}

/// Predictors of modules in a list: `[0]`, `[1].predict`, ...
impl<M: Predictors> Predictors for Vec<M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.iter()
            .enumerate()
            .flat_map(|(i, m)| prefixed(format!("[{i}]"), m.named_predictors()))
            .collect()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.iter_mut()
            .enumerate()
            .flat_map(|(i, m)| prefixed(format!("[{i}]"), m.named_predictors_mut()))
            .collect()
    }
    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.iter()
            .enumerate()
            .flat_map(|(i, m)| prefixed(format!("[{i}]"), m.named_react_loops()))
            .collect()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.iter_mut()
            .enumerate()
            .flat_map(|(i, m)| prefixed(format!("[{i}]"), m.named_react_loops_mut()))
            .collect()
    }
}

/// Predictors of modules in a map, in key order: `['fr']`, `['fr'].predict`, ...
impl<M: Predictors> Predictors for std::collections::BTreeMap<String, M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.iter()
            .flat_map(|(k, m)| prefixed(format!("['{k}']"), m.named_predictors()))
            .collect()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.iter_mut()
            .flat_map(|(k, m)| prefixed(format!("['{k}']"), m.named_predictors_mut()))
            .collect()
    }
    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.iter()
            .flat_map(|(k, m)| prefixed(format!("['{k}']"), m.named_react_loops()))
            .collect()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.iter_mut()
            .flat_map(|(k, m)| prefixed(format!("['{k}']"), m.named_react_loops_mut()))
            .collect()
    }
}

/// The paths of `predictors` under `prefix` (see [`join_path`]).
pub fn prefixed<P>(prefix: String, predictors: Vec<(String, P)>) -> Vec<(String, P)> {
    predictors
        .into_iter()
        .map(|(sub, p)| (join_path(&prefix, sub), p))
        .collect()
}

/// The program as pseudo-code, where DSPy shows its Python source (see
/// [`templates::program_code`](crate::adapter::templates::program_code)).
pub(crate) fn program_code<P: Predictors + ?Sized>(program: &P) -> String {
    let predictors = program.named_predictors();
    crate::adapter::templates::program_code(
        predictors
            .iter()
            .map(|(path, predictor)| (path.as_str(), predictor.signature())),
    )
}

/// `ReActError` for a blocking call that could not run.
impl From<crate::blocking::BlockingError> for ReActError {
    fn from(error: crate::blocking::BlockingError) -> Self {
        ReActError::before_start(crate::error::Error::Blocking(error))
    }
}

impl<P: Predictors + ?Sized> super::saved::Parts for P {
    fn predictors(&self) -> Vec<(String, &DynPredict)> {
        self.named_predictors()
    }

    fn predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.named_predictors_mut()
    }

    fn react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.named_react_loops()
    }

    fn react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.named_react_loops_mut()
    }
}
