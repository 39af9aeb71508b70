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
pub fn eur_to_nok(amount: f64) -> f64 {
    (amount * 11.7 * 100.0).round() / 100.0
}

/// Get tomorrow's forecast for a city.
#[tool]
pub async fn forecast(city: String) -> Result<String, String> {
    let forecast = match city.trim().to_lowercase().as_str() {
        "oslo" => "4 °C, light rain",
        "bergen" => "7 °C, heavy rain",
        "tromsø" | "tromso" => "-3 °C, snow",
        "lillehammer" => "-1 °C, clear",
        "stavanger" => "8 °C, wind",
        "trondheim" => "3 °C, cloudy",
        "bodø" | "bodo" => "1 °C, sleet",
        "ålesund" | "alesund" => "6 °C, showers",
        "kristiansand" => "9 °C, sunny",
        "narvik" => "-2 °C, snow showers",
        "hammerfest" => "-5 °C, snow",
        other => {
            return Err(format!(
                "no forecast for `{other}`; known cities: Oslo, Bergen, Tromsø, Lillehammer, \
                 Stavanger, Trondheim, Bodø, Ålesund, Kristiansand, Narvik, Hammerfest"
            ));
        }
    };
    Ok(forecast.into())
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
