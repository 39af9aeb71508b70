//! [`CallConfig`]: the settings of one call (LM, adapter, step limit, journal, models by hint),
//! given to a call directly or to every module a future calls ([`CallConfig::scope`], DSPy's
//! `with dspy.context(lm=..)`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use crate::adapter::{self, Adapter};
use crate::lm::Lm;

tokio::task_local! {
    /// The settings of the enclosing [`CallConfig::scope`], if any.
    static SCOPED: CallConfig;
}

/// Per-call settings (between the module's and the global ones in precedence): passed to one call
/// (`Predict::call_full`, `ReAct::call_with`, `DynReAct::forward`), or to every module a future
/// calls with [`scope`](Self::scope) — a `ChainOfThought`, a program of your own, a `BestOfN`.
///
/// ```
/// use signet::testing::ScriptedLm;
/// use signet::module::CallConfig;
/// let call = CallConfig::new().with_lm(ScriptedLm::texts(["hi"]));
/// assert!(call.lm.is_some() && call.adapter.is_none());
/// ```
#[derive(Default, Clone)]
pub struct CallConfig {
    /// The LM for this call.
    pub lm: Option<Arc<dyn Lm>>,
    /// The adapter for this call.
    pub adapter: Option<Arc<dyn Adapter>>,
    /// For a ReAct run: its step limit, in place of the agent's
    /// [`Limits::max_iters`](super::react::Limits::max_iters).
    pub max_iters: Option<usize>,
    /// Where the call's LM calls and tool calls go through (see [`crate::journal`]).
    pub journal: Option<Arc<dyn crate::journal::Journal>>,
    /// Models registered for this call by hint (see [`with_model`](Self::with_model)).
    pub models: BTreeMap<String, Arc<dyn Lm>>,
}

impl CallConfig {
    /// No per-call settings.
    pub fn new() -> CallConfig {
        CallConfig::default()
    }

    crate::shared::setters! {
        /// Uses `lm` for this call, unless the module sets its own.
        fn with_lm(lm: impl Lm + 'static) { lm = Some(crate::lm::shared(lm)) }

        /// Uses `adapter` for this call, unless the module sets its own.
        fn with_adapter(adapter: impl Adapter + 'static) {
            adapter = Some(adapter::shared(adapter))
        }

        /// Hands every LM call and tool call of this call — nested modules' included — to
        /// `journal`, which runs it or answers with a recorded result (see [`crate::journal`]). The
        /// tools of one turn then run one after another, in the model's order.
        ///
        /// ```
        /// let call = signet::module::CallConfig::new()
        ///     .with_journal(signet::journal::MemoryJournal::new());
        /// assert!(call.journal.is_some());
        /// ```
        fn with_journal(journal: impl crate::journal::Journal + 'static) {
            journal = Some(Arc::new(journal))
        }

        /// For a ReAct run: at most `n` steps in this call (the agent's
        /// [`Limits::max_iters`](super::react::Limits::max_iters) otherwise).
        ///
        /// ```
        /// let call = signet::module::CallConfig::new().with_max_iters(3);
        /// assert_eq!(call.max_iters, Some(3));
        /// ```
        fn with_max_iters(n: usize) { max_iters = Some(n) }
    }

    /// Registers `lm` for this call under the model hint `name`: the predictors that name the
    /// hint and set no LM of their own use it, in place of the global one of the same name
    /// ([`configure_model`](super::configure_model)).
    ///
    /// ```
    /// use signet::testing::ScriptedLm;
    /// let call = signet::module::CallConfig::new().with_model("strong", ScriptedLm::texts(["hi"]));
    /// assert!(call.models.contains_key("strong"));
    /// ```
    pub fn with_model(mut self, name: impl Into<String>, lm: impl Lm + 'static) -> Self {
        self.models.insert(name.into(), crate::lm::shared(lm));
        self
    }

    /// Runs `future` with these settings for every module it calls, as if each call were given
    /// them (DSPy's `with dspy.context(lm=..)`): a module's own settings still win, and a call
    /// given a `CallConfig` of its own takes from the scope only what it leaves unset. Scopes
    /// nest the same way. The scope is the future's task: a module called on a task spawned
    /// from it (`tokio::spawn`) runs without it.
    ///
    /// ```
    /// use signet::module::{CallConfig, ChainOfThought};
    /// use signet::prelude::*;
    /// use signet::testing::ScriptedLm;
    ///
    /// /// Answer.
    /// #[derive(Signature)]
    /// struct QA { #[input] question: String, #[output] answer: String }
    ///
    /// let cot = ChainOfThought::<QA>::new(); // no LM of its own
    /// let lm = ScriptedLm::texts(["[[ ## reasoning ## ]]\nKnown.\n\n[[ ## answer ## ]]\nParis"]);
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let out = CallConfig::new()
    ///     .with_lm(lm)
    ///     .scope(cot.call(QAInput { question: "Capital of France?".into() }))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(out.output.answer, "Paris");
    /// # });
    /// ```
    pub async fn scope<F: Future>(self, future: F) -> F::Output {
        let settings = self.effective().into_owned();
        SCOPED.scope(settings, future).await
    }

    /// These settings, with what they leave unset taken from the enclosing
    /// [`scope`](Self::scope), if any.
    pub(crate) fn effective(&self) -> Cow<'_, CallConfig> {
        SCOPED
            .try_with(|outer| Cow::Owned(self.over(outer)))
            .unwrap_or(Cow::Borrowed(self))
    }

    /// `self`'s settings, `outer`'s where `self` has none (models: both, `self`'s first).
    fn over(&self, outer: &CallConfig) -> CallConfig {
        let mut models = outer.models.clone();
        models.extend(self.models.iter().map(|(k, v)| (k.clone(), v.clone())));
        CallConfig {
            lm: self.lm.clone().or_else(|| outer.lm.clone()),
            adapter: self.adapter.clone().or_else(|| outer.adapter.clone()),
            max_iters: self.max_iters.or(outer.max_iters),
            journal: self.journal.clone().or_else(|| outer.journal.clone()),
            models,
        }
    }
}
