//! The model the travel examples run on, and the compiled travel agent on it: OpenAI (or any
//! OpenAI-compatible endpoint) when `OPENAI_API_KEY` is set, else SmolLM2-135M served locally.

use std::sync::Arc;

use signet::adapter::Adapter;
use signet::prelude::*;

use super::travel::{self, Notes, Travel};

/// The compiled agent's state (demos), in DSPy's `program.save()` format.
const COMPILED: &str = include_str!("../travel_agent.json");

/// The model, and the local server behind it (stop it at the end).
pub struct Model {
    pub lm: Arc<dyn Lm>,
    pub adapter: Arc<dyn Adapter>,
    pub local: Option<signet_local::LocalServer>,
}

impl Model {
    /// OpenAI from the environment, or the local model (installed on first use). Says which on
    /// stderr.
    pub async fn from_env() -> Result<Model, Box<dyn std::error::Error>> {
        if std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.trim().is_empty()) {
            let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
            let lm = OpenAiLm::builder(model).build()?;
            eprintln!(
                "model: {} at {} (from OPENAI_API_KEY)",
                lm.model(),
                lm.base_url()
            );
            return Ok(Model {
                lm: Arc::new(lm),
                adapter: Arc::new(ChatAdapter::new()),
                local: None,
            });
        }
        eprintln!("model: SmolLM2-135M-Instruct, served locally (no OPENAI_API_KEY set)");
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
        let mut agent = ReAct::<Travel>::new()
            .tools(travel::tools(notes))
            .with_lm(self.lm.clone())
            .with_adapter(self.adapter.clone())
            .with_required_tool_calls(self.local.is_some())
            .with_limits(Limits::default().max_iters(5))
            .with_options(LmOptions::new().temperature(0.0).max_tokens(400));
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
