//! The travel agent's signature and tools, shared by `react_agent` (a real model) and
//! `react_scripted` (a scripted one): a sync function, an async function, and a method on shared
//! state.

use signet::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Answer the traveller's question using the tools.
#[derive(Signature)]
pub struct Travel {
    #[input]
    pub question: String,
    /// A short answer with the numbers the tools gave.
    #[output(max_length = 200)]
    pub answer: String,
}

/// Convert an amount of euros to Norwegian kroner.
#[tool]
pub fn eur_to_nok(
    /// The euros as the question writes them, e.g. "1,500" or "12.99".
    amount: String,
) -> Result<String, String> {
    let euros = euros(&amount).ok_or_else(|| {
        format!("`{amount}` is no amount of euros: give it as written, e.g. 1,500")
    })?;
    Ok(format!(
        "In kroner: {} EUR is {:.2} NOK.",
        written_number(&amount),
        kroner(euros)
    ))
}

/// The amount of euros `text` holds ("1,500", "€12.99", "2 750,50 EUR"), read as the grounding
/// check reads figures (thousands separators, decimal commas).
pub fn euros(text: &str) -> Option<f64> {
    use signet::module::check::figures::{Units, figures};
    figures(text, &Units::default())
        .first()
        .map(|figure| figure.value)
}

/// The number in `text` as written, without a currency around it ("€1,500" -> "1,500").
fn written_number(text: &str) -> &str {
    let start = text.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let end = text
        .rfind(|c: char| c.is_ascii_digit())
        .map_or(text.len(), |i| i + 1);
    text.get(start..end).unwrap_or(text).trim()
}

/// `amount` euros in kroner, rounded to the øre.
pub fn kroner(amount: f64) -> f64 {
    (amount * 11.7 * 100.0).round() / 100.0
}

/// Get tomorrow's forecast for a city.
#[tool]
pub async fn forecast(city: String) -> Result<String, String> {
    let (name, forecast) = forecast_for(&city).ok_or_else(|| {
        format!(
            "There is no forecast for {}. Known cities: Oslo, Bergen, Tromsø, Lillehammer, \
             Stavanger, Trondheim, Bodø, Ålesund, Kristiansand, Narvik, Hammerfest.",
            city.trim()
        )
    })?;
    Ok(format!("Tomorrow in {name}: {forecast}."))
}

/// The city's name and tomorrow's forecast for it ("4 °C, light rain"), if the forecast tool
/// knows the city.
pub fn forecast_for(city: &str) -> Option<(&'static str, &'static str)> {
    Some(match city.trim().to_lowercase().as_str() {
        "oslo" => ("Oslo", "4 °C, light rain"),
        "bergen" => ("Bergen", "7 °C, heavy rain"),
        "tromsø" | "tromso" => ("Tromsø", "-3 °C, snow"),
        "lillehammer" => ("Lillehammer", "-1 °C, clear"),
        "stavanger" => ("Stavanger", "8 °C, wind"),
        "trondheim" => ("Trondheim", "3 °C, cloudy"),
        "bodø" | "bodo" => ("Bodø", "1 °C, sleet"),
        "ålesund" | "alesund" => ("Ålesund", "6 °C, showers"),
        "kristiansand" => ("Kristiansand", "9 °C, sunny"),
        "narvik" => ("Narvik", "-2 °C, snow showers"),
        "hammerfest" => ("Hammerfest", "-5 °C, snow"),
        _ => return None,
    })
}

/// The traveller's notes, shared by the tools below.
#[derive(Default)]
pub struct Notes {
    entries: Mutex<HashMap<String, String>>,
}

#[tool]
impl Notes {
    /// Save a note under a key.
    #[tool]
    fn remember(&self, key: String, text: String) -> String {
        self.entries
            .lock()
            .expect("notes lock")
            .insert(key.clone(), text);
        format!("saved `{key}`")
    }
}

/// The three tools, the notes tool bound to `notes`.
pub fn tools(notes: &Arc<Notes>) -> Vec<Arc<dyn Tool>> {
    let mut tools = vec![
        signet::tool::share(EurToNokTool),
        signet::tool::share(ForecastTool),
    ];
    tools.extend(Notes::tools(notes));
    tools
}
