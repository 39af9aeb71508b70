//! What the fuzz targets share: a signature with every kind of output field, and a tool whose
//! arguments are nested, optional and enumerated.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use signet::{Signature, tool};

/// A choice.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mood {
    /// Up.
    Happy,
    /// Down.
    Sad,
}

/// A nested value.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Down.
    pub y: i32,
    /// A label.
    pub label: Option<String>,
}

/// Every kind of output field.
#[derive(Signature)]
pub struct Everything {
    /// The question.
    #[input]
    pub question: String,
    /// Text.
    #[output]
    pub text: String,
    /// An integer.
    #[output]
    pub count: i64,
    /// A small unsigned integer.
    #[output]
    pub byte: u8,
    /// A float.
    #[output]
    pub ratio: f64,
    /// A flag.
    #[output]
    pub flag: bool,
    /// A list.
    #[output]
    pub items: Vec<String>,
    /// An optional value.
    #[output]
    pub maybe: Option<i32>,
    /// An enum.
    #[output]
    pub mood: Mood,
    /// A nested object.
    #[output]
    pub point: Point,
    /// A mapping.
    #[output]
    pub scores: BTreeMap<String, f64>,
}

/// A tool with nested, optional, enumerated and integer-width arguments.
#[tool]
pub fn plot(
    /// Where.
    at: Point,
    /// How it feels.
    mood: Mood,
    /// How many times.
    times: u16,
    /// Extra points.
    more: Vec<Point>,
    /// An optional note.
    note: Option<String>,
) -> String {
    format!("{at:?} {mood:?} {times} {} {note:?}", more.len())
}
