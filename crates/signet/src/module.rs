//! Modules: [`Predict`] and [`ChainOfThought`] over typed signatures, and [`DynPredict`], the untyped
//! core they share (usable directly with a [`DynSignature`]).
//!
//! Configuration precedence for the LM and the adapter: the module's own setting, then the call's
//! ([`CallConfig`]), then the global one ([`configure`]). A predictor that names a model hint
//! ([`DynPredict::with_model_hint`]) and sets no LM of its own takes the model registered under
//! that name (the call's [`CallConfig::with_model`], then the global [`configure_model`]) before
//! the call's and the global LM.
//!
//! ```
//! use std::sync::Arc;
//! use signet::testing::ScriptedLm;
//! use signet::module::Predict;
//! use signet::Signature;
//!
//! /// Answer the question concisely.
//! #[derive(Signature)]
//! struct QA {
//!     #[input] question: String,
//!     #[output] answer: String,
//! }
//!
//! let lm = Arc::new(ScriptedLm::texts(["[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"]));
//! let qa = Predict::<QA>::new().with_lm(lm.clone());
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let out = qa.call(QAInput { question: "Capital of France?".into() }).await.unwrap();
//! assert_eq!(out.answer, "Paris");
//! assert!(lm.requests()[0].messages[0].content.starts_with("Your input fields are:"));
//! # });
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

mod attempts;
mod call_config;
pub mod check;
mod demo_selection;
mod hint_adapter;
pub(crate) mod module_events;
mod module_tool;
mod multi_chain;
mod predict;
mod predict_checks;
mod predict_tools;
mod program;
#[cfg(feature = "sandbox")]
mod program_of_thought;
pub mod react;
mod saved;
mod streamify;
mod tool_executor;
mod tool_runner;
mod traced;
mod typed_fields;

/// ReAct's entry points and the vocabulary [`Predict`] with tools shares with it (approvals,
/// suspension, the trajectory); the rest of ReAct's names (truncation policies, the names it
/// reserves, a suspended run's parts, stop reasons) are in [`react`].
pub use react::{
    Approval, ApprovalRequest, Approver, Decision, DynReAct, Limits, Observation, PendingCall,
    ReAct, ReActError, ReActEvent, ReActMode, ReActOutput, ReActRun, ResumeError, RunOutcome, Step,
    SuspendedRun, Trajectory, Waiting,
};

use crate::adapter::{self, Adapter, ChatAdapter, Fields};
use crate::lm::{Completion, Lm, LmError, LmOptions, Usage};
use crate::signature::DynSignature;

pub use crate::error::Error;
pub use attempts::{
    Advice, Attempt, AttemptError, BestOfN, BestOfNError, BestOfNRun, Feedback, Refine,
};
pub use call_config::CallConfig;
pub use demo_selection::{DemoSelector, EmbeddingDemos, NearestDemos};
pub use module_events::{ModuleEvent, PredictorEvent};
pub use module_tool::ModuleTool;
pub use multi_chain::{Compared, Completions, MultiChainComparison};
pub use predict::{ChainOfThought, Predict, Reasoned, with_reasoning};
pub(crate) use program::program_code;
pub use program::{Module, Predictors, join_path, prefixed};
#[cfg(feature = "sandbox")]
pub use program_of_thought::{ProgramOfThought, ProgramOfThoughtError};
pub(crate) use saved::tool_component;
pub use saved::{StateError, TOOL_DESCRIPTIONS};
pub use streamify::streamify;
pub use tool_executor::ToolExecutor;
pub use tool_runner::ToolCallError;
pub use traced::traced;
pub(crate) use typed_fields::{from_fields, to_fields};

/// Global defaults, used when neither the module nor the call sets an LM or adapter.
#[derive(Default)]
struct Settings {
    lm: Option<Arc<dyn Lm>>,
    adapter: Option<Arc<dyn Adapter>>,
    models: Models,
}

/// Models registered by name, for predictors that name a model hint.
type Models = BTreeMap<String, Arc<dyn Lm>>;

/// The adapter of a call that names none: DSPy's default, [`ChatAdapter`] as `new` makes it.
static DEFAULT_ADAPTER: std::sync::LazyLock<Arc<dyn Adapter>> =
    std::sync::LazyLock::new(|| Arc::new(ChatAdapter::new()));

static SETTINGS: RwLock<Settings> = RwLock::new(Settings {
    lm: None,
    adapter: None,
    models: BTreeMap::new(),
});

/// Sets the global LM (DSPy's `dspy.configure(lm=..)`), used by modules and calls that set none.
///
/// ```
/// use signet::testing::ScriptedLm;
/// signet::module::configure(ScriptedLm::texts(["[[ ## answer ## ]]\n42"]));
/// ```
pub fn configure(lm: impl Lm + 'static) {
    let mut settings = SETTINGS.write().unwrap_or_else(|e| e.into_inner());
    settings.lm = Some(crate::lm::shared(lm));
}

/// Registers `lm` globally under the model hint `name` (replacing the LM registered under it):
/// every predictor that names the hint ([`DynPredict::with_model_hint`]) and sets no LM of its
/// own uses it. A call can register its own ([`CallConfig::with_model`]), which wins.
///
/// ```
/// use signet::testing::ScriptedLm;
/// signet::module::configure_model("fast", ScriptedLm::texts(["[[ ## answer ## ]]\n42"]));
/// ```
pub fn configure_model(name: impl Into<String>, lm: impl Lm + 'static) {
    let mut settings = SETTINGS.write().unwrap_or_else(|e| e.into_inner());
    settings.models.insert(name.into(), crate::lm::shared(lm));
}

/// Sets the global adapter (DSPy's `dspy.configure(adapter=..)`); the default is [`ChatAdapter`].
pub fn configure_adapter(adapter: impl Adapter + 'static) {
    let mut settings = SETTINGS.write().unwrap_or_else(|e| e.into_inner());
    settings.adapter = Some(adapter::shared(adapter));
}

/// The LM and adapter a call uses, after precedence is applied.
#[derive(Clone)]
pub struct Resolved {
    /// The LM.
    pub lm: Arc<dyn Lm>,
    /// The adapter.
    pub adapter: Arc<dyn Adapter>,
}

/// What a module call produced, besides the outputs themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Output field values, in signature order.
    pub outputs: Fields,
    /// Usage summed over every LM call made.
    pub usage: Usage,
    /// The last completion.
    pub completion: Completion,
    /// The adapter that produced the outputs (differs from the configured one after a fallback).
    pub adapter: adapter::AdapterName,
}

/// The old name of [`DynPredict`]: the untyped twins of typed modules are named `Dyn*`, like
/// [`DynSignature`].
#[deprecated(note = "renamed `DynPredict`, like `DynSignature` and `DynReAct`")]
pub type Predictor = DynPredict;

/// The old name of [`DynReAct`].
#[deprecated(note = "renamed `DynReAct`, like `DynSignature` and `DynPredict`")]
pub type ReActCore = DynReAct;

/// DSPy's `Predict` over a run-time signature: formats, calls the LM through an adapter, parses.
///
/// It is also what optimizers tune: its [`instructions`](Self::instructions), its
/// [`demos`](Self::demos) and its fields' descriptions are the state a program saves and loads.
/// Each predictor value has its own [`PredictorId`](crate::trace::PredictorId) (a clone gets a new
/// one), which matches a run's trace entries to it.
pub struct DynPredict {
    id: crate::trace::PredictorId,
    signature: DynSignature,
    parse_as: Option<DynSignature>,
    demos: Vec<Fields>,
    demo_selector: Option<Arc<dyn DemoSelector>>,
    lm: Option<Arc<dyn Lm>>,
    model_hint: Option<Arc<str>>,
    adapter: Option<Arc<dyn Adapter>>,
    options: LmOptions,
    tools: Vec<Arc<dyn crate::tool::Tool>>,
    max_tool_turns: usize,
    approver: Option<react::Approver>,
    tool_limits: react::Limits,
    truncation: Arc<dyn react::TruncationPolicy>,
    formatter: Arc<dyn react::ObservationFormatter>,
    state_key: Option<Arc<[u8]>>,
    carried: saved::Carried,
    /// The output checks every answer must pass ([`check`]); `None`: no checks, no extra work.
    checks: Option<Arc<check::Checks>>,
    /// Where a streamed call ([`stream`](Self::stream)) reports its checks' failures.
    stream_events: Option<react::events::Emitter>,
}

impl std::fmt::Debug for DynPredict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynPredict")
            .field("signature", &self.signature.name())
            .field("demos", &self.demos.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Clone for DynPredict {
    /// A copy with the same state and a new [`id`](Self::id).
    fn clone(&self) -> Self {
        DynPredict {
            id: crate::trace::PredictorId::fresh(),
            ..self.same_identity_clone()
        }
    }
}

impl DynPredict {
    /// A copy that keeps this predictor's id: for copies made inside a run (the extractor with a
    /// streaming LM, a run restricted to some tools), whose calls belong to this predictor.
    pub(crate) fn same_identity_clone(&self) -> DynPredict {
        DynPredict {
            id: self.id,
            signature: self.signature.clone(),
            parse_as: self.parse_as.clone(),
            demos: self.demos.clone(),
            demo_selector: self.demo_selector.clone(),
            lm: self.lm.clone(),
            model_hint: self.model_hint.clone(),
            adapter: self.adapter.clone(),
            options: self.options.clone(),
            tools: self.tools.clone(),
            max_tool_turns: self.max_tool_turns,
            approver: self.approver.clone(),
            tool_limits: self.tool_limits,
            truncation: self.truncation.clone(),
            formatter: self.formatter.clone(),
            state_key: self.state_key.clone(),
            carried: self.carried.clone(),
            checks: self.checks.clone(),
            stream_events: None,
        }
    }

    /// A predictor for `signature`, with no demos and no module-level LM or adapter.
    pub fn new(signature: DynSignature) -> DynPredict {
        let checks = check::declared(&signature);
        DynPredict {
            id: crate::trace::PredictorId::fresh(),
            signature,
            parse_as: None,
            demos: Vec::new(),
            demo_selector: None,
            lm: None,
            model_hint: None,
            adapter: None,
            options: LmOptions::default(),
            tools: Vec::new(),
            max_tool_turns: 10,
            approver: None,
            tool_limits: react::Limits::default(),
            truncation: Arc::new(react::DropOldest),
            formatter: Arc::new(react::HtmlAsText),
            state_key: None,
            carried: saved::Carried::default(),
            checks,
            stream_events: None,
        }
    }

    crate::shared::setters! {
        /// Uses `lm` for every call (highest precedence): any [`Lm`], or an `Arc` of one shared
        /// with other modules.
        fn with_lm(lm: impl Lm + 'static) { lm = Some(crate::lm::shared(lm)) }

        /// Uses the model registered under `name` ([`configure_model`],
        /// [`CallConfig::with_model`]) unless this predictor sets its own LM: one step of a
        /// program on a small, fast model and another on a strong one, chosen where the models
        /// are set up rather than where the program is built. A hint registered nowhere is
        /// [`LmError::UnknownModel`], naming the hint and the registered ones.
        ///
        /// ```
        /// use signet::module::{CallConfig, DynPredict};
        /// use signet::testing::ScriptedLm;
        /// let qa = DynPredict::new("question -> answer".parse().unwrap()).with_model_hint("fast");
        /// let call = CallConfig::new().with_model("fast", ScriptedLm::texts(["hi"]));
        /// assert_eq!(qa.resolve(&call).unwrap().lm.model(), "scripted");
        /// assert!(qa.resolve(&CallConfig::new()).is_err());
        /// ```
        fn with_model_hint(name: impl Into<String>) {
            model_hint = Some(Arc::from(name.into()))
        }

        /// Uses `adapter` for every call (highest precedence).
        fn with_adapter(adapter: impl Adapter + 'static) {
            adapter = Some(adapter::shared(adapter))
        }

        /// Reads replies with `signature` (the same fields, possibly looser types) instead of the one
        /// shown to the model (see [`crate::adapted::run_parsing_as`]).
        fn with_parse_signature(signature: DynSignature) { parse_as = Some(signature) }

        /// Sampling options sent with every call.
        fn with_options(options: LmOptions) { options = options }
    }

    /// The sampling options sent with every call.
    pub fn options(&self) -> &LmOptions {
        &self.options
    }

    /// Few-shot demos (complete or partial examples).
    pub fn with_demos(mut self, demos: Vec<Fields>) -> Self {
        self.demos = demos;
        self
    }

    /// The signature.
    pub fn signature(&self) -> &DynSignature {
        &self.signature
    }

    /// The demos.
    pub fn demos(&self) -> &[Fields] {
        &self.demos
    }

    /// Replaces the demos (what optimizers do).
    pub fn set_demos(&mut self, demos: Vec<Fields>) {
        self.demos = demos;
    }

    /// Shows each call only the demos `selector` picks for its inputs (default: every demo), e.g.
    /// the few nearest to the question ([`NearestDemos`], DSPy's `KNNFewShot`): a large pool of
    /// demos, a short prompt. A [`NearestDemos`] setting is saved with the program
    /// (`demo_selection`, which DSPy ignores) and restored by loading it.
    ///
    /// ```
    /// use signet::module::{NearestDemos, DynPredict};
    /// let qa = DynPredict::new("question -> answer".parse().unwrap())
    ///     .with_demo_selector(NearestDemos::new(3).on(["question"]));
    /// assert!(qa.demo_selector().is_some());
    /// ```
    pub fn with_demo_selector(mut self, selector: impl DemoSelector + 'static) -> Self {
        self.demo_selector = Some(Arc::new(selector));
        self
    }

    /// Sets (or, with `None`, removes) the demo selector (see
    /// [`with_demo_selector`](Self::with_demo_selector)).
    pub fn set_demo_selector(&mut self, selector: Option<Arc<dyn DemoSelector>>) {
        self.demo_selector = selector;
    }

    /// The demo selector, if one is set.
    pub fn demo_selector(&self) -> Option<&Arc<dyn DemoSelector>> {
        self.demo_selector.as_ref()
    }

    /// The demos a call with `inputs` shows: those the [selector](Self::with_demo_selector)
    /// picks, else all of them.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::{NearestDemos, DynPredict};
    ///
    /// let demo = |q: &str, a: &str| [("question".to_owned(), json!(q)), ("answer".to_owned(), json!(a))].into_iter().collect();
    /// let qa = DynPredict::new("question -> answer".parse().unwrap())
    ///     .with_demos(vec![demo("Capital of France?", "Paris"), demo("2 + 2?", "4")])
    ///     .with_demo_selector(NearestDemos::new(1).on(["question"]));
    /// let inputs = [("question".to_owned(), json!("Capital of Spain?"))].into_iter().collect();
    /// assert_eq!(qa.demos_for(&inputs)[0]["answer"], "Paris");
    /// ```
    pub fn demos_for(&self, inputs: &Fields) -> std::borrow::Cow<'_, [Fields]> {
        match &self.demo_selector {
            None => std::borrow::Cow::Borrowed(&self.demos),
            Some(selector) => std::borrow::Cow::Owned(
                selector
                    .select(&self.demos, inputs)
                    .into_iter()
                    .filter_map(|i| self.demos.get(i).cloned())
                    .collect(),
            ),
        }
    }

    /// Awaits the [selector](Self::with_demo_selector)'s [`prepare`](DemoSelector::prepare) for a
    /// call with `inputs` (embedding them, for [`EmbeddingDemos`]): modules do it before each
    /// call; do it before [`demos_for`](Self::demos_for) when you call that yourself.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::embed::FnEmbedder;
    /// use signet::module::{DynPredict, EmbeddingDemos};
    ///
    /// // "+" or not: arithmetic or not.
    /// let sums = FnEmbedder::new("sums", |t: &[String]| {
    ///     Ok::<_, String>(t.iter().map(|t| vec![t.contains('+') as u8 as f32, 1.0]).collect())
    /// });
    /// let demo = |q: &str, a: &str| [("question".to_owned(), json!(q)), ("answer".to_owned(), json!(a))].into_iter().collect();
    /// let qa = DynPredict::new("question -> answer".parse().unwrap())
    ///     .with_demos(vec![demo("Capital of Peru?", "Lima"), demo("2 + 2?", "4")])
    ///     .with_demo_selector(EmbeddingDemos::new(1, sums).on(["question"]));
    /// let inputs = [("question".to_owned(), json!("3 + 5?"))].into_iter().collect();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// qa.prepare_demos(&inputs).await.unwrap();
    /// assert_eq!(qa.demos_for(&inputs)[0]["answer"], "4");
    /// # });
    /// ```
    pub async fn prepare_demos(&self, inputs: &Fields) -> Result<(), Error> {
        match &self.demo_selector {
            None => Ok(()),
            Some(selector) => selector
                .prepare(&self.demos, inputs)
                .await
                .map_err(Error::from),
        }
    }

    /// The instructions (the signature's).
    pub fn instructions(&self) -> String {
        self.signature.instructions()
    }

    /// Replaces the instructions (what instruction optimizers and a loaded program do).
    pub fn set_instructions(&mut self, instructions: impl Into<String>) {
        self.signature = self
            .signature
            .clone()
            .with_instructions(instructions.into());
    }

    /// The signature, to change field descriptions and prefixes in place.
    pub fn signature_mut(&mut self) -> &mut DynSignature {
        &mut self.signature
    }

    /// Sets the LM in place (see [`with_lm`](Self::with_lm)).
    pub fn set_lm(&mut self, lm: impl Lm + 'static) {
        self.lm = Some(crate::lm::shared(lm));
    }

    /// Sets (or, with `None`, removes) the model hint in place (see
    /// [`with_model_hint`](Self::with_model_hint)).
    pub fn set_model_hint(&mut self, name: Option<&str>) {
        self.model_hint = name.map(Arc::from);
    }

    /// The model hint this predictor names, if any (see
    /// [`with_model_hint`](Self::with_model_hint)).
    pub fn model_hint(&self) -> Option<&str> {
        self.model_hint.as_deref()
    }

    /// The sampling options, to change in place.
    pub fn options_mut(&mut self) -> &mut LmOptions {
        &mut self.options
    }

    /// This predictor's identity in traces.
    pub fn id(&self) -> crate::trace::PredictorId {
        self.id
    }

    /// The LM and adapter a call would use: the module's, then the model its hint names, then the
    /// call's (what it leaves unset taken from an enclosing [`CallConfig::scope`]), then the
    /// global ones; the adapter defaults to [`ChatAdapter`].
    pub fn resolve(&self, call: &CallConfig) -> Result<Resolved, Error> {
        let call = call.effective();
        let (lm, adapter) = {
            let settings = SETTINGS.read().unwrap_or_else(|e| e.into_inner());
            let lm = match &self.lm {
                Some(lm) => Some(lm.clone()),
                None => self
                    .hinted_lm(&call.models, &settings.models)?
                    .or_else(|| call.lm.clone())
                    .or_else(|| settings.lm.clone()),
            };
            (lm, self.adapter_in(&call, &settings))
        };
        let lm = lm.ok_or(LmError::NotConfigured)?;
        let lm: Arc<dyn Lm> = match &call.journal {
            Some(journal) => Arc::new(crate::journal::JournaledLm {
                lm,
                journal: journal.clone(),
            }),
            None => lm,
        };
        Ok(Resolved { lm, adapter })
    }

    /// The adapter: this predictor's, else the call's, else the global one, else [`ChatAdapter`]
    /// (one shared default, not one made per call).
    fn adapter_in(&self, call: &CallConfig, settings: &Settings) -> Arc<dyn Adapter> {
        self.adapter
            .clone()
            .or_else(|| call.adapter.clone())
            .or_else(|| settings.adapter.clone())
            .unwrap_or_else(|| DEFAULT_ADAPTER.clone())
    }

    /// The adapter a call with no per-call settings uses (those of an enclosing
    /// [`CallConfig::scope`] apply).
    pub(crate) fn adapter_without_call(&self) -> Arc<dyn Adapter> {
        let call = CallConfig::default();
        let settings = SETTINGS.read().unwrap_or_else(|e| e.into_inner());
        self.adapter_in(&call.effective(), &settings)
    }

    /// The model this predictor's hint names (the call's registration, then the global one); with
    /// no hint, the model a loaded file saved for it (its `lm.model`) when one is registered under
    /// that name.
    fn hinted_lm(&self, call: &Models, global: &Models) -> Result<Option<Arc<dyn Lm>>, LmError> {
        let registered = |name: &str| call.get(name).or_else(|| global.get(name)).cloned();
        let Some(hint) = &self.model_hint else {
            return Ok(self.saved_model().and_then(registered));
        };
        match registered(hint) {
            Some(lm) => Ok(Some(lm)),
            None => Err(LmError::UnknownModel {
                hint: hint.to_string(),
                registered: call
                    .keys()
                    .chain(global.keys())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .cloned()
                    .collect(),
            }),
        }
    }

    /// Runs the signature on `inputs` with the module's, then the global, LM and adapter.
    pub async fn forward(&self, inputs: &Fields) -> Result<Prediction, Error> {
        self.forward_with(inputs, &CallConfig::default()).await
    }

    /// Runs the signature on `inputs`; `call` supplies what the module does not set.
    pub async fn forward_with(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<Prediction, Error> {
        self.forward_counting(inputs, call, &mut Usage::default())
            .await
    }

    /// [`forward_with`](Self::forward_with) that adds the usage of every LM call to `usage`, also
    /// when the call fails (an unreadable reply still cost its tokens).
    pub(crate) fn forward_counting<'a>(
        &'a self,
        inputs: &'a Fields,
        call: &'a CallConfig,
        usage: &'a mut Usage,
    ) -> impl std::future::Future<Output = Result<Prediction, Error>> + Send + 'a {
        // Not an `async fn`: one state machine less in every call's future.
        self.forward_resolved(inputs, call, None, usage)
    }

    /// The `invoke_agent` span of a call of this predictor on `inputs` (disabled unless a
    /// subscriber wants it).
    pub(crate) fn agent_span(&self, inputs: &Fields) -> tracing::Span {
        use crate::telemetry::RecordContent;
        // In a module run through `traced` (and `Evaluate`), a predictor is named by its path.
        let span = crate::telemetry::agent_span(
            || traced::path_of(self.id).unwrap_or_else(|| self.signature.name().to_owned()),
            &self.id,
            || self.signature.instructions(),
            self.carried.version.as_deref(),
        );
        if span.is_disabled() {
            return span;
        }
        span.record_content("signet.module.inputs", || {
            serde_json::to_string(inputs).unwrap_or_default()
        });
        span
    }

    /// [`forward_counting`](Self::forward_counting) with the LM and adapter already resolved
    /// (once per run, by a loop that calls the predictor at every step).
    pub(crate) async fn forward_resolved(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        resolved: Option<&Resolved>,
        usage: &mut Usage,
    ) -> Result<Prediction, Error> {
        let mut own = Usage::default();
        let streamed = module_events::Sink::current().map(|sink| {
            let path = sink.path(self.id, self.signature.name());
            sink.send(&path, PredictorEvent::Started);
            (sink, path)
        });
        // A call of its own (not a step of a loop that resolved the LM for it) is an
        // `invoke_agent` span. Without a subscriber that wants it, the call runs as it is:
        // wrapping it would move its large future (measured: about 1,000 instructions a call).
        let span = match resolved {
            None => self.agent_span(inputs),
            Some(_) => tracing::Span::none(),
        };
        let result = if span.is_disabled() {
            self.forward_recorded(inputs, call, resolved, streamed.as_ref(), &mut own)
                .await
        } else {
            let traced = tracing::Instrument::instrument(
                self.forward_recorded(inputs, call, resolved, streamed.as_ref(), &mut own),
                span.clone(),
            );
            let result = Box::pin(traced).await;
            record_outcome(&span, &result, &own);
            result
        };
        if let Some((sink, path)) = streamed {
            sink.send(
                &path,
                match &result {
                    Ok(prediction) => PredictorEvent::Finished {
                        outputs: prediction.outputs.clone(),
                    },
                    Err(error) => PredictorEvent::Failed {
                        error: error.to_string(),
                    },
                },
            );
        }
        *usage += own;
        crate::trace::record_usage(own);
        if let Ok(prediction) = &result {
            crate::trace::record_call(self.id, inputs, &prediction.outputs);
        }
        result
    }

    /// The call; `streamed`: the streamed module run it reports to (and its path there), if any.
    async fn forward_recorded(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        resolved: Option<&Resolved>,
        streamed: Option<&(module_events::Sink, String)>,
        usage: &mut Usage,
    ) -> Result<Prediction, Error> {
        if let Some(missing) = self
            .signature
            .inputs()
            .iter()
            .find(|f| !inputs.contains_key(f.name()))
        {
            return Err(Error::MissingInput {
                field: missing.name().to_owned(),
            });
        }
        if !self.tools.is_empty() {
            // (Without tools, `adapted::run` checks the media inputs.)
            crate::adapted::check_media_inputs(&self.signature, inputs)?;
            // Boxed: the tool loop's state would otherwise make every call's future as large.
            let prediction = Box::pin(self.forward_with_tools(inputs, call, usage)).await?;
            *usage += prediction.usage;
            return Ok(prediction);
        }
        let Resolved { lm, adapter } = match resolved {
            Some(resolved) => resolved.clone(),
            None => self.resolve(call)?,
        };
        if self.demo_selector.is_some() {
            self.prepare_demos(inputs).await?;
        }
        // A streamed module run's events, for the answer and the checks' failures.
        let events = match streamed {
            Some((sink, path)) => Some(react::events::Emitter::for_sink(sink, path, true)),
            None => self.stream_events.clone(),
        };
        if let Some(checks) = &self.checks {
            let lm = match (streamed, &events) {
                (Some(_), Some(events)) => {
                    react::answer_stream::answer_lm(lm, adapter.as_ref(), events, true)
                }
                _ => lm,
            };
            let demos = self.demos_for(inputs);
            // Boxed: the re-asks' state stays out of every unchecked call's future.
            let checked =
                self.forward_checked(checks, inputs, lm, adapter, &demos, events.as_ref(), usage);
            return Box::pin(checked).await;
        }
        // In a streamed module run, the answer streams into it as the model writes it.
        let lm = match streamed {
            Some((sink, path)) => {
                let events = react::events::Emitter::for_sink(sink, path, true);
                react::answer_stream::answer_lm(lm, adapter.as_ref(), &events, true)
            }
            None => lm,
        };
        let demos = self.demos_for(inputs);
        let adapted = crate::adapted::Call {
            signature: &self.signature,
            parse_as: self.parse_as.as_ref(),
            demos: &demos,
            inputs,
            options: &self.options,
            tool_choice: None,
            extra: None,
        };
        let reply =
            crate::adapted::run_counting(adapter.as_ref(), lm.as_ref(), &adapted, usage).await?;
        Ok(Prediction {
            outputs: reply.outputs,
            usage: reply.usage,
            completion: reply.completion,
            adapter: reply.adapter,
        })
    }
}

/// Records a call's outcome on its `invoke_agent` span: what it spent (failed calls included)
/// and (with content capture) the outputs, or the error.
fn record_outcome(span: &tracing::Span, result: &Result<Prediction, Error>, spent: &Usage) {
    crate::lm::record_usage(span, spent);
    match result {
        Ok(prediction) => {
            use crate::telemetry::RecordContent;
            span.record_content("signet.module.outputs", || {
                serde_json::to_string(&prediction.outputs).unwrap_or_default()
            });
        }
        Err(error) => crate::telemetry::record_error(span, &error.error_type(), error),
    }
}
