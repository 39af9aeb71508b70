//! The API model the examples use beside the local one: any OpenAI-compatible endpoint named by
//! `OPENAI_MODEL` (default `gpt-4o-mini`), with `OPENAI_API_KEY` and `OPENAI_BASE_URL`.

use std::sync::Arc;

use signet::prelude::*;

/// The API model and its name.
pub fn api_lm() -> Result<(Arc<dyn Lm>, String), Box<dyn std::error::Error>> {
    let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    let lm = OpenAiLm::builder(name.clone()).build()?;
    Ok((Arc::new(lm), name))
}

/// The LM that writes new instructions (GEPA's reflection model, MIPROv2's prompt model): the API
/// model when `OPENAI_API_KEY` is set (a strong proposer pays off), otherwise the task model
/// itself.
pub fn reflection_lm(task: &Arc<dyn Lm>) -> Result<Arc<dyn Lm>, Box<dyn std::error::Error>> {
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        return Ok(task.clone());
    }
    Ok(api_lm()?.0)
}
