//! The typed modules: [`Predict`] and [`ChainOfThought`] over a `#[derive(Signature)]` struct,
//! each a [`DynPredict`] with typed inputs and outputs.

use std::marker::PhantomData;

use serde::Serialize;

use serde_json::Value;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::react::ReActEvent;
use super::react::approval::{Approval, ApprovalRequest, Decision};
use super::react::limits::Limits;
use super::react::suspend::RunOutcome;
use super::react::typed::typed_stream;
use super::typed_fields::{from_fields, to_fields};
use super::{CallConfig, DynPredict, Prediction, SuspendedRun};
use crate::adapter::{Adapter, Fields};
use crate::error::Error;
use crate::lm::{Lm, LmOptions};
use crate::shared::forward_builders;
use crate::signature::{DynSignature, Field, Signature};

/// A typed predictor for the signature `S`: `S::Input` in, `S::Output` out.
pub struct Predict<S: Signature> {
    pub(super) inner: DynPredict,
    _signature: PhantomData<fn() -> S>,
}

super::typed_fields::typed_module_impls!(Predict, inner);
super::typed_fields::typed_module_impls!(ChainOfThought, inner);

impl<S: Signature> Default for Predict<S> {
    fn default() -> Self {
        Predict::new()
    }
}

impl<S: Signature> Predict<S> {
    /// A predictor for `S`.
    pub fn new() -> Self {
        Predict {
            inner: DynPredict::new(S::signature().clone()),
            _signature: PhantomData,
        }
    }

    forward_builders! {
        inner;
        /// Uses `lm` for every call (see [`DynPredict::with_lm`]).
        fn with_lm(lm: impl Lm + 'static);
        /// Uses the model registered under `name` (see [`DynPredict::with_model_hint`]).
        fn with_model_hint(name: impl Into<String>);
        /// Uses `adapter` for every call.
        fn with_adapter(adapter: impl Adapter + 'static);
        /// Sampling options (temperature, length limit, ..) sent with every call.
        fn with_options(options: LmOptions);
        /// Offers `tool` to the model through native function calling (see [`DynPredict::tool`]).
        fn tool(tool: impl crate::tool::Tool + 'static);
        /// Offers `tools` too (see [`DynPredict::tool`]).
        fn tools(tools: impl IntoIterator<Item = impl crate::tool::Tool + 'static>);
        /// The most tool-call rounds before the call fails (see [`DynPredict::with_max_tool_turns`]).
        fn with_max_tool_turns(turns: usize);
        /// Tool call time limit, output size and concurrency (see [`DynPredict::with_tool_limits`]).
        fn with_tool_limits(limits: Limits);
        /// How to shorten the tool turns that overflow the context window (see
        /// [`DynPredict::with_truncation`]).
        fn with_truncation(policy: impl super::react::TruncationPolicy + 'static);
        /// How tool results are shown to the model (see
        /// [`DynPredict::with_observation_formatter`]).
        fn with_observation_formatter(formatter: impl super::react::ObservationFormatter + 'static);
        /// Seals suspended calls and resumes only sealed ones (see [`DynPredict::with_state_key`]).
        fn with_state_key(key: impl AsRef<[u8]>);
        /// Checks every answer with `check` too (see [`DynPredict::with_output_check`]).
        fn with_output_check(check: impl super::check::Check + 'static);
        /// At most `n` re-asks after a refused answer (see [`DynPredict::with_max_reasks`]).
        fn with_max_reasks(n: usize);
        /// What the call answers when every attempt was refused (see
        /// [`DynPredict::with_check_fallback`]).
        fn with_check_fallback(fallback: super::check::CheckFallback);
    }

    /// Checks every answer: `check` takes the typed input and output and accepts them, or says
    /// what is wrong; a refused answer is asked for again with the message in DSPy's `hint_`
    /// input, up to [`with_max_reasks`](Self::with_max_reasks) times
    /// ([`crate::module::check`]).
    ///
    /// ```
    /// use signet::prelude::*;
    /// use signet::testing::ScriptedLm;
    ///
    /// /// Answer in one word.
    /// #[derive(Signature)]
    /// struct QA { #[input] question: String, #[output] answer: String }
    ///
    /// let reply = |a: &str| format!("[[ ## answer ## ]]\n{a}\n\n[[ ## completed ## ]]");
    /// let lm = ScriptedLm::texts([reply("It is Brussels"), reply("Brussels")]);
    /// let qa = Predict::<QA>::new().with_lm(lm).with_check("one word", |_, out: &QAOutput| {
    ///     match out.answer.split_whitespace().count() {
    ///         1 => Ok(()),
    ///         n => Err(format!("{n} words: answer with one")),
    ///     }
    /// });
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// assert_eq!(qa.call(QAInput { question: "Capital of Belgium?".into() }).await.unwrap().answer, "Brussels");
    /// # });
    /// ```
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&S::Input, &S::Output) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.inner = self.inner.with_output_check(typed_check::<S>(name, check));
        self
    }

    /// Asks `approver` before running a `#[tool(confirm)]` tool; without one such tools are never
    /// run (see [`DynPredict::with_approver`]).
    pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        self.inner = self.inner.with_approver(approver);
        self
    }

    /// Complete examples as few-shot demos.
    pub fn with_demos(mut self, demos: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        self.inner = self.inner.with_demos(examples_of(demos)?);
        Ok(self)
    }

    /// The untyped predictor inside (signature, demos, state).
    pub fn predictor(&self) -> &DynPredict {
        &self.inner
    }

    /// Mutable access to the untyped predictor (to load a saved state).
    pub fn predictor_mut(&mut self) -> &mut DynPredict {
        &mut self.inner
    }

    /// Runs the signature on `input`.
    pub async fn call(&self, input: S::Input) -> Result<S::Output, Error> {
        Ok(self.call_full(input, &CallConfig::default()).await?.0)
    }

    /// [`call`](Self::call) from sync code (see [`crate::blocking`] for the rule).
    pub fn call_blocking(&self, input: S::Input) -> Result<S::Output, Error> {
        crate::blocking::block_on(self.call(input))?
    }

    /// Runs the signature on `input` with per-call settings, returning the typed outputs and the
    /// [`Prediction`] (usage, completion, adapter).
    pub async fn call_full(
        &self,
        input: S::Input,
        call: &CallConfig,
    ) -> Result<(S::Output, Prediction), Error> {
        let inputs = to_fields(&input)?;
        let prediction = self.inner.forward_with(&inputs, call).await?;
        let output = from_fields(&prediction.outputs)?;
        Ok((output, prediction))
    }

    /// Runs the signature on `input`, yielding the call's events as they happen: its tool calls,
    /// the answer as it is written, then [`ReActEvent::Done`] with the typed output (see
    /// [`DynPredict::stream`]). Dropping the stream cancels the call.
    pub fn stream(&self, input: S::Input) -> BoxStream<'_, ReActEvent<S::Output>> {
        typed_stream(&input, |inputs| {
            self.inner.stream(inputs, CallConfig::default())
        })
    }

    /// With tools: runs the signature on `input`, suspending where a person is needed (a
    /// `#[tool(confirm)]` tool with no approver, a tool that returns
    /// [`ToolError::NeedsInput`](crate::ToolError::NeedsInput)); see [`DynPredict::start`].
    pub async fn start(&self, input: S::Input) -> Result<RunOutcome<S::Output>, Error> {
        let inputs = to_fields(&input)?;
        let outcome = self.inner.start(&inputs, &CallConfig::default()).await?;
        typed_call_outcome(outcome)
    }

    /// Goes on with a suspended call, a [`Decision`] per pending call id (see
    /// [`DynPredict::resume`]).
    pub async fn resume(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<RunOutcome<S::Output>, Error> {
        let outcome = self
            .inner
            .resume(state, decisions, &CallConfig::default())
            .await?;
        typed_call_outcome(outcome)
    }
}

/// A predictor call's outcome with its outputs as `O`.
fn typed_call_outcome<O: serde::de::DeserializeOwned>(
    outcome: RunOutcome<Prediction>,
) -> Result<RunOutcome<O>, Error> {
    Ok(match outcome {
        RunOutcome::Finished(prediction) => RunOutcome::Finished(from_fields(&prediction.outputs)?),
        RunOutcome::Suspended(state) => RunOutcome::Suspended(state),
    })
}

/// The outputs of [`ChainOfThought`]: the model's reasoning and the typed outputs. Serialized,
/// the reasoning is one more field beside the outputs' (`{"reasoning": .., "answer": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reasoned<T> {
    /// The step-by-step reasoning the model wrote first.
    pub reasoning: String,
    /// The outputs.
    #[serde(flatten)]
    pub output: T,
}

/// DSPy's `ChainOfThought`: `Predict` with a `reasoning` output before the signature's outputs.
pub struct ChainOfThought<S: Signature> {
    pub(super) inner: DynPredict,
    _signature: PhantomData<fn() -> S>,
}

impl<S: Signature> Default for ChainOfThought<S> {
    fn default() -> Self {
        ChainOfThought::new()
    }
}

/// `signature` with DSPy's `reasoning` output inserted first.
pub fn with_reasoning(signature: &DynSignature) -> DynSignature {
    let mut extended = signature.clone();
    extended.insert_output(0, Field::str("reasoning"));
    extended
}

impl<S: Signature> ChainOfThought<S> {
    /// A chain-of-thought predictor for `S`.
    pub fn new() -> Self {
        ChainOfThought {
            inner: DynPredict::new(with_reasoning(S::signature())),
            _signature: PhantomData,
        }
    }

    forward_builders! {
        inner;
        /// Uses `lm` for every call (see [`DynPredict::with_lm`]).
        fn with_lm(lm: impl Lm + 'static);
        /// Uses the model registered under `name` (see [`DynPredict::with_model_hint`]).
        fn with_model_hint(name: impl Into<String>);
        /// Uses `adapter` for every call.
        fn with_adapter(adapter: impl Adapter + 'static);
        /// Sampling options (temperature, length limit, ..) sent with every call.
        fn with_options(options: LmOptions);
        /// Checks every answer with `check` too (see [`DynPredict::with_output_check`]).
        fn with_output_check(check: impl super::check::Check + 'static);
        /// At most `n` re-asks after a refused answer (see [`DynPredict::with_max_reasks`]).
        fn with_max_reasks(n: usize);
        /// What the call answers when every attempt was refused (see
        /// [`DynPredict::with_check_fallback`]).
        fn with_check_fallback(fallback: super::check::CheckFallback);
    }

    /// Checks every answer (its outputs, the reasoning aside): `check` takes the typed input
    /// and output and accepts them, or says what is wrong; a refused answer is asked for again
    /// (see [`Predict::with_check`]).
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&S::Input, &S::Output) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.inner = self.inner.with_output_check(typed_check::<S>(name, check));
        self
    }

    /// Examples as few-shot demos. They hold no reasoning, so they are shown as DSPy shows them:
    /// as partial examples whose reasoning is "not supplied".
    pub fn with_demos(mut self, demos: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        self.inner = self.inner.with_demos(examples_of(demos)?);
        Ok(self)
    }

    /// The untyped predictor inside.
    pub fn predictor(&self) -> &DynPredict {
        &self.inner
    }

    /// [`call`](Self::call) from sync code (see [`crate::blocking`] for the rule).
    pub fn call_blocking(&self, input: S::Input) -> Result<Reasoned<S::Output>, Error> {
        crate::blocking::block_on(self.call(input))?
    }

    /// Runs the signature on `input`, yielding the reasoning and then the outputs as the model
    /// writes them ([`ReActEvent::AnswerDelta`] with the field, `reasoning` first), then
    /// [`ReActEvent::Done`] with the typed outputs and the reasoning (its `reasoning`), or
    /// [`ReActEvent::Failed`]. Dropping the stream cancels the call.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use signet::module::ReActEvent;
    /// use signet::prelude::*;
    /// use signet::testing::ScriptedLm;
    ///
    /// /// Answer.
    /// #[derive(Signature)]
    /// struct QA { #[input] question: String, #[output] answer: String }
    ///
    /// let lm = ScriptedLm::texts(["[[ ## reasoning ## ]]\nKnown.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"]);
    /// let cot = ChainOfThought::<QA>::new().with_lm(lm);
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let events: Vec<_> = cot.stream(QAInput { question: "Capital of France?".into() }).collect().await;
    /// match events.last() {
    ///     Some(ReActEvent::Done { output, reasoning, .. }) => {
    ///         assert_eq!((output.answer.as_str(), reasoning.as_deref()), ("Paris", Some("Known.")));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # });
    /// ```
    pub fn stream(&self, input: S::Input) -> BoxStream<'_, ReActEvent<S::Output>> {
        self.stream_with(input, CallConfig::default())
    }

    /// [`stream`](Self::stream) with per-call settings (see [`CallConfig`]).
    pub fn stream_with(
        &self,
        input: S::Input,
        call: CallConfig,
    ) -> BoxStream<'_, ReActEvent<S::Output>> {
        typed_stream(&input, |inputs| {
            // The reasoning is an output field of the predictor; `done` carries it apart.
            let lift = |mut event: ReActEvent| {
                if let ReActEvent::Done {
                    output, reasoning, ..
                } = &mut event
                {
                    match output.shift_remove("reasoning") {
                        Some(Value::String(text)) => *reasoning = Some(text),
                        Some(other) => *reasoning = Some(other.to_string()),
                        None => {}
                    }
                }
                event
            };
            self.inner.stream(inputs, call).map(lift).boxed()
        })
    }

    /// Runs the signature on `input`, reasoning first. When the model's own reasoning field is empty
    /// and the provider returned `reasoning_content`, that is used.
    pub async fn call(&self, input: S::Input) -> Result<Reasoned<S::Output>, Error> {
        self.call_with(input, &CallConfig::default()).await
    }

    /// [`call`](Self::call) with per-call settings (see [`CallConfig`]).
    pub async fn call_with(
        &self,
        input: S::Input,
        call: &CallConfig,
    ) -> Result<Reasoned<S::Output>, Error> {
        let inputs = to_fields(&input)?;
        let mut prediction = self.inner.forward_with(&inputs, call).await?;
        let mut reasoning = match prediction.outputs.shift_remove("reasoning") {
            Some(Value::String(text)) => text,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        if reasoning.trim().is_empty()
            && let Some(provider) = &prediction.completion.reasoning
        {
            reasoning = provider.clone();
        }
        Ok(Reasoned {
            reasoning,
            output: from_fields(&prediction.outputs)?,
        })
    }
}

/// A check of `S`'s typed input and output from a closure over them.
fn typed_check<S: Signature>(
    name: impl Into<String>,
    check: impl Fn(&S::Input, &S::Output) -> Result<(), String> + Send + Sync + 'static,
) -> super::check::TypedCheck<S::Input, S::Output> {
    super::check::TypedCheck::new(name, move |input, output, _| check(input, output))
}

fn examples_of<S: Signature>(demos: impl IntoIterator<Item = S>) -> Result<Vec<Fields>, Error> {
    demos
        .into_iter()
        .map(|demo| {
            let (input, output) = demo.into_parts();
            let mut example = to_fields(&input)?;
            example.extend(to_fields(&output)?);
            Ok(example)
        })
        .collect()
}
