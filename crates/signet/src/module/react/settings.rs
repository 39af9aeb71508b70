//! Building a [`DynReAct`] and changing its settings: tools, approver, state key, mode,
//! limits, LM, adapter, options and truncation.

use std::sync::Arc;

use super::limits::Limits;
use super::prompt::step_signatures;
use super::truncation::{DropOldest, TruncationPolicy};
use super::{DynReAct, HtmlAsText, ObservationFormatter, ReActMode};
use crate::adapter::{Adapter, Fields};
use crate::lm::{Lm, LmOptions};
use crate::module::{DynPredict, with_reasoning};
use crate::signature::{DynSignature, Field};
use crate::tool::Tool;

impl DynReAct {
    /// A ReAct loop for `signature`, with no tools yet (`finish` is always there); add them with
    /// [`tool`](Self::tool) and [`tools`](Self::tools).
    pub fn new(signature: DynSignature) -> DynReAct {
        let (step_signature, parse_signature) = step_signatures(&signature, &[]);
        let mut extract_signature =
            DynSignature::new(signature.name()).with_instructions(signature.instructions());
        for field in signature.inputs() {
            extract_signature = extract_signature.with_input(field.clone());
        }
        extract_signature = extract_signature.with_input(Field::str("trajectory"));
        for field in signature.outputs() {
            extract_signature = extract_signature.with_output(field.clone());
        }
        // The loop checks the answer (whichever way it comes), not the extractor by itself.
        let mut extract = DynPredict::new(with_reasoning(&extract_signature));
        extract.checks = None;
        let checks = crate::module::check::declared(&signature);
        DynReAct {
            step: DynPredict::new(step_signature).with_parse_signature(parse_signature),
            extract,
            checks,
            signature,
            tools: Vec::new(),
            own_tools: Vec::new(),
            limits: Limits::default(),
            truncation: Arc::new(DropOldest),
            mode: ReActMode::Auto,
            approver: None,
            selection_threshold: 12,
            selection_limit: 6,
            answer_fallback: true,
            formatter: Arc::new(HtmlAsText),
            require_tool_calls: false,
            finish_on_last_turn: false,
            state_key: None,
        }
    }

    /// Adds `tool`: any [`Tool`] — a `#[tool]` function's type, an `Arc<dyn Tool>` from a
    /// [`ToolBox`](crate::ToolBox) or an MCP client, a closure tool. The step signature (the tool
    /// list in its instructions, the names the model may choose) follows.
    pub fn tool(self, tool: impl Tool + 'static) -> Self {
        self.tools([tool])
    }

    /// Adds each of `tools` (see [`tool`](Self::tool)).
    pub fn tools(mut self, tools: impl IntoIterator<Item = impl Tool + 'static>) -> Self {
        let added: Vec<Arc<dyn Tool>> = tools.into_iter().map(crate::tool::share).collect();
        self.tools.extend(added.iter().cloned());
        self.own_tools.extend(added);
        let (step_signature, parse_signature) = step_signatures(&self.signature, &self.tools);
        self.step.signature = step_signature;
        self.step.parse_as = Some(parse_signature);
        self
    }

    /// The tools offered (without `finish`).
    pub fn tool_list(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    crate::shared::setters! {
        /// In native mode, every turn must call a tool — the answer is a `finish` call with the
        /// outputs (`tool_choice: "required"` instead of `"auto"`). For small models that otherwise
        /// write an answer before using any tool; `finish` is always offered, so no run is forced
        /// to call a tool it does not need. Text mode is unchanged.
        fn with_required_tool_calls(required: bool) { require_tool_calls = required }

        /// In native mode, the last turn the step limit allows ([`Limits::max_iters`], or the call's
        /// [`CallConfig::max_iters`](crate::module::CallConfig::max_iters)) must call `finish` (`tool_choice` names it): a run that would
        /// have reached the limit ends with the model's own answer, written after it saw every
        /// result, instead of stopping early and asking the extractor. For models that keep calling
        /// tools: with `max_iters(2)`, a question that needs one round of calls is answered on the
        /// second turn. Text mode is unchanged (after the limit, the extractor answers, as in DSPy);
        /// history mode always ends with DSPy's forced `submit`.
        ///
        /// ```
        /// use signet::module::{Limits, DynReAct};
        /// let agent = DynReAct::new("question -> answer".parse().unwrap())
        ///     .with_limits(Limits::default().max_iters(2))
        ///     .with_finish_on_last_turn(true);
        /// # let _ = agent;
        /// ```
        fn with_finish_on_last_turn(on: bool) { finish_on_last_turn = on }
    }

    /// Checks every answer with `check` — the outputs `finish` carries, a native text answer,
    /// the extractor's, history mode's `submit` — after the signature's own checks and those
    /// added before. A refused answer is not taken: the model reads the failures' messages (as
    /// the answering call's error result, or as a user message) and the loop goes on for
    /// another turn, in which a failure that offers tools makes the model call one of them (the
    /// turn after answers); after [`with_max_reasks`](Self::with_max_reasks) refusals (default 2) the run
    /// falls back or fails with [`ChecksFailed`](crate::module::check::ChecksFailed)
    /// ([`crate::module::check`]).
    ///
    /// ```
    /// use signet::module::DynReAct;
    /// use signet::module::check::Grounded;
    /// let agent = DynReAct::new("question -> answer".parse().unwrap()).with_output_check(Grounded::new());
    /// assert_eq!(agent.checks().unwrap().list()[0].name(), "grounded");
    /// ```
    pub fn with_output_check(mut self, check: impl crate::module::check::Check + 'static) -> Self {
        use crate::module::check::ChecksSlot;
        self.add_check(Arc::new(check));
        self
    }

    /// At most `n` re-asks after refused answers (default 2); each gives the run one more turn
    /// (two when the failure offers tools: one to call them, one to answer), beyond its step
    /// limit if need be.
    pub fn with_max_reasks(mut self, n: usize) -> Self {
        use crate::module::check::ChecksSlot;
        self.set_max_reasks(n);
        self
    }

    /// What the run answers when its answer was refused on every attempt (default: it fails
    /// with [`ChecksFailed`](crate::module::check::ChecksFailed)); see
    /// [`CheckFallback`](crate::module::check::CheckFallback).
    pub fn with_check_fallback(mut self, fallback: crate::module::check::CheckFallback) -> Self {
        use crate::module::check::ChecksSlot;
        self.set_check_fallback(fallback);
        self
    }

    /// The output checks, when any are set.
    pub fn checks(&self) -> Option<&crate::module::check::Checks> {
        self.checks.as_deref()
    }

    /// The signature's inputs among `inputs`, in signature order.
    pub(super) fn own_inputs(&self, inputs: &Fields) -> Fields {
        self.signature
            .inputs()
            .iter()
            .filter_map(|f| {
                inputs
                    .get(f.name())
                    .map(|v| (f.name().to_owned(), v.clone()))
            })
            .collect()
    }

    crate::module::tool_runner::approver_setter! {
        /// Asks `approver` before running any tool that requires confirmation (`#[tool(confirm)]`).
        /// Without an approver such tools are never run: the model is told so — or, in a run begun
        /// with [`start`](Self::start), the run suspends until a person decides.
    }

    crate::shared::setters! {
        /// Seals every state the agent suspends with `key` (an HMAC-SHA256, [`SuspendedRun::seal`](super::SuspendedRun::seal)),
        /// and resumes only states sealed with it: a state without a seal is
        /// [`ResumeError::Unsealed`](crate::module::ResumeError::Unsealed), one changed since it was sealed [`ResumeError::BadSeal`](crate::module::ResumeError::BadSeal). With a
        /// key a state may pass through hands that could change it (a client's request, a shared
        /// store): the seal proves it unchanged, though not unread (it is not encrypted) nor unused (a
        /// sealed state can be resumed more than once). Use a long random key from the service's
        /// secrets. The key is not part of the [fingerprint](Self::fingerprint).
        fn with_state_key(key: impl AsRef<[u8]>) { state_key = Some(Arc::from(key.as_ref())) }

        /// Text or native tool calling (default: [`ReActMode::Auto`]).
        fn with_mode(mode: ReActMode) { mode = mode }

        /// When the extractor cannot write the outputs (an unreadable reply, an LM error) after
        /// the tools ran, take them from the last tool result instead of failing (on by default):
        /// with one output field, the result itself; with several, the result's fields of those
        /// names. Such a run is marked ([`Trajectory::answer_fallback`](super::Trajectory::answer_fallback),
        /// an `answer_fallback` event, a warning); a result that does not fit the outputs leaves
        /// the error as it was.
        fn with_answer_fallback(on: bool) { answer_fallback = on }

        /// Bounds on a run: steps, LM calls, time per tool call, observation size, concurrency (see
        /// [`Limits`] for the defaults).
        fn with_limits(limits: Limits) { limits = limits }
    }

    /// The run's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Uses `lm` for the steps and the extractor.
    pub fn with_lm(mut self, lm: impl Lm + 'static) -> Self {
        let lm = crate::lm::shared(lm);
        self.step = self.step.with_lm(lm.clone());
        self.extract = self.extract.with_lm(lm);
        self
    }

    /// Uses `adapter` for the steps and the extractor.
    pub fn with_adapter(mut self, adapter: impl Adapter + 'static) -> Self {
        let adapter = crate::adapter::shared(adapter);
        self.step = self.step.with_adapter(adapter.clone());
        self.extract = self.extract.with_adapter(adapter);
        self
    }

    /// Whether the extractor reasons before it answers: `true` (the default) is DSPy's
    /// ChainOfThought, `false` a plain Predict over the inputs and the trajectory (one output
    /// field less to write, for small models; the run's `reasoning` is then `None`). The
    /// extractor keeps its name (`extract.predict`), its demos and its instructions, so saved
    /// programs load either way.
    ///
    /// ```
    /// let agent = signet::module::DynReAct::new("question -> answer".parse().unwrap())
    ///     .with_extractor_reasoning(false);
    /// # let _ = agent;
    /// ```
    pub fn with_extractor_reasoning(mut self, on: bool) -> Self {
        let plain = self.extract.signature.without_field("reasoning");
        self.extract.signature = if on { with_reasoning(&plain) } else { plain };
        self
    }

    /// How tool results are shown to the model (default [`HtmlAsText`]: an HTML page as its
    /// text; [`AsIs`](super::AsIs) for DSPy's behaviour). The trajectory keeps each result as
    /// the tool returned it.
    pub fn with_observation_formatter(
        mut self,
        formatter: impl ObservationFormatter + 'static,
    ) -> Self {
        self.formatter = Arc::new(formatter);
        self
    }

    /// Uses `adapter` for the steps only; the extractor keeps the one of
    /// [`with_adapter`](Self::with_adapter) (or the call's, or the global one). For a model that
    /// writes steps best in one format and answers best in another (the design's `step_adapter`).
    pub fn with_step_adapter(mut self, adapter: impl Adapter + 'static) -> Self {
        self.step = self.step.with_adapter(adapter);
        self
    }

    /// The steps and the extractor use the model registered under `name` (see
    /// [`DynPredict::with_model_hint`](crate::module::DynPredict::with_model_hint)), unless an LM
    /// is set with [`with_lm`](Self::with_lm).
    pub fn with_model_hint(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.with_step_model_hint(name.clone())
            .with_extractor_model_hint(name)
    }

    /// The steps (and the tool selection) use the model registered under `name`: a small, fast
    /// model to pick tools, a strong one to write the answer
    /// ([`with_extractor_model_hint`](Self::with_extractor_model_hint)).
    ///
    /// ```
    /// use signet::module::{DynReAct, Predictors};
    /// let agent = DynReAct::new("question -> answer".parse().unwrap())
    ///     .with_step_model_hint("fast")
    ///     .with_extractor_model_hint("strong");
    /// let hints: Vec<_> = agent.named_predictors().into_iter().map(|(_, p)| p.model_hint()).collect();
    /// assert_eq!(hints, [Some("fast"), Some("strong")]);
    /// ```
    pub fn with_step_model_hint(mut self, name: impl Into<String>) -> Self {
        self.step = self.step.with_model_hint(name);
        self
    }

    /// The extractor, which writes the answer from the trajectory, uses the model registered
    /// under `name` (see [`with_step_model_hint`](Self::with_step_model_hint)).
    pub fn with_extractor_model_hint(mut self, name: impl Into<String>) -> Self {
        self.extract = self.extract.with_model_hint(name);
        self
    }

    /// Sampling options (temperature, length limit, ..) for the steps and the extractor.
    pub fn with_options(mut self, options: LmOptions) -> Self {
        self.step = self.step.with_options(options.clone());
        self.extract = self.extract.with_options(options);
        self
    }

    /// How to shorten the trajectory when it overflows the context window (default
    /// [`DropOldest`]).
    pub fn with_truncation(mut self, policy: impl TruncationPolicy + 'static) -> Self {
        self.truncation = Arc::new(policy);
        self
    }
}

impl crate::module::check::ChecksSlot for DynReAct {
    fn checks_slot(&mut self) -> &mut Option<Arc<crate::module::check::Checks>> {
        &mut self.checks
    }
}
