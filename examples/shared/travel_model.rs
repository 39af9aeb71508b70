//! The model the travel examples run on, and the compiled travel agent on it: OpenAI (or any
//! OpenAI-compatible endpoint) when `OPENAI_API_KEY` is set, else SmolLM2-135M served locally.

use std::sync::Arc;

use signet::adapter::Adapter;
use signet::module::check::figures::{Units, figures};
use signet::module::check::{
    Answer, Check, CheckFailure, CheckFallback, Grounded, NoRepetition, Watcher,
};
use signet::module::{Observation, Step};
use signet::prelude::*;
use signet::serde_json::Value;

use super::travel::{self, Notes, Travel};

/// The compiled agent's state (demos), in DSPy's `program.save()` format.
const COMPILED: &str = include_str!("../travel_agent.json");

/// The travel agent before it is compiled, on `lm` with `adapter`: greedy decoding, replies of at
/// most 400 tokens, at most 5 turns. On a `small` model (the local one) every turn calls a tool,
/// the answer being a `finish` call, and there are two turns: the tools, then `finish` (the
/// second turn must call it), since a question here needs one round of calls and a 135M model
/// otherwise calls tools again instead of answering. `optimize_travel` compiles this agent.
pub fn agent(
    lm: Arc<dyn Lm>,
    adapter: Arc<dyn Adapter>,
    small: bool,
    notes: &Arc<Notes>,
) -> ReAct<Travel> {
    ReAct::<Travel>::new()
        .tools(travel::tools(notes))
        .with_lm(lm)
        .with_adapter(adapter)
        .with_required_tool_calls(small)
        .with_finish_on_last_turn(small)
        .with_limits(Limits::default().max_iters(if small { 2 } else { 5 }))
        .with_options(LmOptions::new().temperature(0.0).max_tokens(400))
}

/// `agent` with its answer checked: the question's tools were used and their figures reported
/// ([`UsesItsTools`]), every figure must come from a tool or the question ([`Grounded`]; a
/// refused answer's next turn calls the forecast or the conversion, whichever were not called),
/// and no phrase may loop ([`NoRepetition`]). Both watch the answer as it
/// streams and stop it at the first failure. A refused answer is asked for again twice; after
/// that the agent answers with what its tools returned (or says it could not find it), never
/// with a figure of its own.
pub fn checked(agent: ReAct<Travel>) -> ReAct<Travel> {
    agent
        .with_output_check(UsesItsTools)
        .with_output_check(
            Grounded::new()
                .with_arguments(true)
                .offering(["forecast", "eur_to_nok"])
                .offering_for("NOK", ["eur_to_nok"])
                .offering_for("°C", ["forecast"])
                // Euros come from the question, never from a tool.
                .offering_for("EUR", [] as [&str; 0]),
        )
        .with_output_check(NoRepetition::new())
        .with_max_reasks(2)
        .with_check_fallback(CheckFallback::grounded_tool_results())
}

/// The travel agent's own check, beside the built-in ones: the euro amounts of the question were
/// converted and the cities it names that the forecast tool knows were looked up (a refusal
/// names every call that is missing and offers those tools), the answer says what those tools
/// returned (the kroner, the temperature, that a city has no forecast), and it does not quote
/// the feedback of a refused answer. It reads the question and the run, never an expected answer.
/// It watches the answer as it streams: a missing call or quoted feedback stops the reply at once.
pub struct UsesItsTools;

/// What a refused answer's feedback starts with, as the model reads it ("The answer was not
/// accepted:"), in lower case.
const FEEDBACK: &str = "not accepted";

impl UsesItsTools {
    const NAME: &str = "uses its tools";

    fn refuse(message: String) -> CheckFailure {
        CheckFailure::new(Self::NAME, message).on_field("answer")
    }

    /// The calls the question needs that the run has not made, all in one failure offering
    /// their tools.
    fn missing_calls(answer: &Answer<'_>) -> Option<CheckFailure> {
        let question = text(answer.inputs.get("question"));
        let steps: Vec<&Step> = answer.tool_steps().collect();
        let called = |tool: &str, arg: &str, matches: &dyn Fn(&Value) -> bool| {
            steps
                .iter()
                .any(|s| s.tool_name == tool && matches(&s.tool_args[arg]))
        };
        let mut missing = Vec::new();
        let mut tools = Vec::new();
        for euros in figures(&question, &Units::default())
            .iter()
            .filter(|f| f.unit.as_ref().is_some_and(|u| u.as_str() == "EUR"))
        {
            let amount = |v: &Value| v.as_f64().or_else(|| v.as_str().and_then(travel::euros));
            let same = |v: &Value| amount(v).is_some_and(|a| (a - euros.value).abs() < 1e-6);
            if !called("eur_to_nok", "amount", &same) {
                missing.push(format!("eur_to_nok for {}", euros.text));
                tools.push("eur_to_nok");
            }
        }
        for word in question.split(|c: char| !c.is_alphanumeric()) {
            let Some((city, _)) = travel::forecast_for(word) else {
                continue;
            };
            let same = |v: &Value| {
                v.as_str()
                    .and_then(travel::forecast_for)
                    .is_some_and(|(name, _)| name == city)
            };
            let call = format!("forecast for {city}");
            if !called("forecast", "city", &same) && !missing.contains(&call) {
                missing.push(call);
                tools.push("forecast");
            }
        }
        if missing.is_empty() {
            return None;
        }
        let message = format!("Call {} before answering.", missing.join(" and "));
        Some(Self::refuse(message).offering(tools))
    }

    /// A failure when `said` quotes a refused answer's feedback instead of answering.
    fn quotes_feedback(said: &str) -> Option<CheckFailure> {
        said.to_lowercase().contains(FEEDBACK).then(|| {
            Self::refuse(
                "Answer the question with what the tools returned; do not repeat the feedback."
                    .to_owned(),
            )
        })
    }
}

/// The text of a string field (empty otherwise).
fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl Check for UsesItsTools {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
        if let Some(failure) = Self::missing_calls(answer) {
            return Err(failure);
        }
        let said = text(answer.outputs.get("answer"));
        if let Some(failure) = Self::quotes_feedback(&said) {
            return Err(failure);
        }
        let units = Units::default();
        let stated = figures(&said, &units);
        for step in answer.tool_steps() {
            let result = match &step.observation {
                Observation::Output(Value::String(result)) => result,
                // A city the forecast does not know: the answer says so.
                Observation::Error(error) if step.tool_name == "forecast" => {
                    let Some(start) = error.find("There is no forecast for") else {
                        continue;
                    };
                    let sentence = error[start..].split('.').next().unwrap_or_default();
                    if said.to_lowercase().contains("no forecast") {
                        continue;
                    }
                    return Err(Self::refuse(format!(
                        "Say what forecast returned: \"{sentence}.\""
                    )));
                }
                _ => continue,
            };
            // The figure the tool is asked for: the kroner (the last), the temperature (the first).
            let found = figures(result, &units);
            let wanted = match step.tool_name.as_str() {
                "eur_to_nok" => found.last(),
                "forecast" => found.first(),
                _ => None,
            };
            if let Some(wanted) = wanted
                && !stated.iter().any(|f| f.states(wanted))
            {
                return Err(Self::refuse(format!(
                    "Say what {} returned: \"{result}\"",
                    step.tool_name
                )));
            }
        }
        Ok(())
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(ToolsWatcher::default()))
    }
}

/// [`UsesItsTools`] while the answer streams: what can fail on its first words (a call the
/// question needs was not made; the feedback is quoted). One per reply.
#[derive(Default)]
struct ToolsWatcher {
    /// Whether the calls were checked: the run's calls do not change while one reply streams,
    /// so they are checked on its first piece only.
    calls_checked: bool,
}

impl Watcher for ToolsWatcher {
    fn push(
        &mut self,
        field: &str,
        text: &str,
        new_from: usize,
        answer: &Answer<'_>,
    ) -> Option<CheckFailure> {
        if field != "answer" {
            return None;
        }
        if !self.calls_checked {
            self.calls_checked = true;
            if let Some(failure) = UsesItsTools::missing_calls(answer) {
                return Some(failure);
            }
        }
        // Only the text that can hold a quote ending in the new piece is read again.
        let mut from = new_from.saturating_sub(FEEDBACK.len());
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        UsesItsTools::quotes_feedback(&text[from..])
    }
}

/// Whether the agent checks its answer before it is given (`travel_eval` turns them off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub enum Checks {
    /// The answer is checked.
    On,
    /// It is not (to measure what the checks do).
    Off,
}

/// The model, and the local server behind it (stop it at the end).
pub struct Model {
    pub lm: Arc<dyn Lm>,
    pub adapter: Arc<dyn Adapter>,
    pub local: Option<signet_local::LocalServer>,
}

/// How the examples build a client of a hosted provider: from the model's name, the client and
/// its base URL.
type BuildHosted = fn(String) -> Result<(Arc<dyn Lm>, String), signet::lm::BuildError>;

/// The hosted providers the examples run on, in the order their keys are looked for: the key's
/// variable, the model's variable and its default, and how to build the client.
const HOSTED: [(&str, &str, &str, BuildHosted); 3] = [
    (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_MODEL",
        "claude-haiku-4-5",
        |model| {
            let lm = AnthropicLm::builder(model).build()?;
            let base_url = lm.base_url().to_owned();
            Ok((Arc::new(lm), base_url))
        },
    ),
    (
        "GEMINI_API_KEY",
        "GEMINI_MODEL",
        "gemini-2.5-flash",
        |model| {
            let lm = signet::lm::GeminiLm::builder(model).build()?;
            let base_url = lm.base_url().to_owned();
            Ok((Arc::new(lm), base_url))
        },
    ),
    ("OPENAI_API_KEY", "OPENAI_MODEL", "gpt-4o-mini", |model| {
        let lm = OpenAiLm::builder(model).build()?;
        let base_url = lm.base_url().to_owned();
        Ok((Arc::new(lm), base_url))
    }),
];

impl Model {
    /// The first hosted provider whose key is set in the environment (Anthropic, Gemini, OpenAI:
    /// [`HOSTED`]), or the local model (installed on first use). Says which on stderr.
    pub async fn from_env() -> Result<Model, Box<dyn std::error::Error>> {
        for (key, model_variable, default_model, build) in HOSTED {
            if std::env::var(key).is_ok_and(|k| !k.trim().is_empty()) {
                let model = std::env::var(model_variable).unwrap_or_else(|_| default_model.into());
                let (lm, base_url) = build(model)?;
                eprintln!("model: {} at {base_url} (from {key})", lm.model());
                return Ok(Model {
                    lm,
                    adapter: Arc::new(ChatAdapter::new()),
                    local: None,
                });
            }
        }
        eprintln!(
            "model: SmolLM2-135M-Instruct, served locally (no ANTHROPIC_API_KEY, GEMINI_API_KEY \
             or OPENAI_API_KEY set)"
        );
        let local = signet_local::LlamaCpp::smollm2();
        let server = local.serve().await?;
        eprintln!("server: {}", server.base_url());
        Ok(Model {
            lm: local.lm(&server)?,
            adapter: Arc::new(JsonAdapter::constrained()),
            local: Some(server),
        })
    }

    /// The compiled travel agent (`examples/travel_agent.json`) on this model, its notes tool
    /// bound to `notes`. On the small local model every turn calls a tool (the answer is a
    /// `finish` call).
    pub fn travel_agent(
        &self,
        notes: &Arc<Notes>,
    ) -> Result<ReAct<Travel>, Box<dyn std::error::Error>> {
        self.travel_agent_with(notes, Checks::On)
    }

    /// The travel agent before it is compiled (no demos), with or without its checks.
    pub fn zero_shot_agent(&self, notes: &Arc<Notes>, checks: Checks) -> ReAct<Travel> {
        let agent = agent(
            self.lm.clone(),
            self.adapter.clone(),
            self.local.is_some(),
            notes,
        );
        match checks {
            Checks::On => checked(agent),
            Checks::Off => agent,
        }
    }

    /// [`travel_agent`](Self::travel_agent), with or without its checks.
    pub fn travel_agent_with(
        &self,
        notes: &Arc<Notes>,
        checks: Checks,
    ) -> Result<ReAct<Travel>, Box<dyn std::error::Error>> {
        let mut agent = self.zero_shot_agent(notes, checks);
        agent.load_json(COMPILED)?;
        let demos = agent.named_predictors()[0].1.demos().len();
        eprintln!("agent: compiled, {demos} demos (examples/travel_agent.json)");
        Ok(agent)
    }

    /// Stops the local model's server, if one runs.
    pub async fn stop(self) -> Result<(), Box<dyn std::error::Error>> {
        if let Some(server) = self.local {
            server.stop().await?;
        }
        Ok(())
    }
}
