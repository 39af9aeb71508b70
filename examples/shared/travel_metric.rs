//! Whether the travel agent got a question right, judged as its user would judge it: by the
//! answer. Used by `optimize_travel` (the metric its optimizers compile against, and the held-out
//! score) and checked by `tests/optimize/travel_metric.rs`.
//!
//! A question is one of five kinds (`kind` in `examples/data/travel_*.jsonl`): `both` (the
//! forecast for a city and a euro amount in kroner), `forecast`, `convert`, `unknown_city` (a
//! city the forecast tool does not know, sometimes with an amount) and `off_topic` (nothing the
//! tools can answer). A run is **right** when
//!
//! - it called exactly the tools the question needs, with the question's city and amount (a
//!   question that needs one tool uses that tool only; an off-topic question uses none), and
//!   finished by itself;
//! - its answer states what the tools returned: the forecast's temperature and condition, the
//!   amount in kroner (the euros may go unsaid); for an unknown city, that there is no forecast;
//!   for an off-topic question, the answer (`accept`) or that the agent cannot help;
//! - and says nothing false: every number it writes is the question's amount, the conversion's
//!   result or the forecast's temperature, each with its own unit (so "2340.0 NOK is 2340.0 EUR"
//!   is wrong), and no phrase of four words comes back (a model that loops is wrong too).

use serde_json::Value;
use signet::data::Example;
use signet::evaluate::Score;
use signet::module::{ReActOutput, Trajectory};

use super::travel::{self, TravelOutput};

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The forecast for a city and a conversion.
    Both,
    /// The forecast only.
    Forecast,
    /// A conversion only.
    Convert,
    /// The forecast for a city the tool does not know (and maybe a conversion).
    UnknownCity,
    /// Nothing the tools can answer.
    OffTopic,
}

impl Kind {
    /// Every kind, in the order the tables list them.
    pub const ALL: [Kind; 5] = [
        Kind::Both,
        Kind::Forecast,
        Kind::Convert,
        Kind::UnknownCity,
        Kind::OffTopic,
    ];

    /// The name the data files use.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Both => "both",
            Kind::Forecast => "forecast",
            Kind::Convert => "convert",
            Kind::UnknownCity => "unknown_city",
            Kind::OffTopic => "off_topic",
        }
    }
}

/// One question's expectations, read from its example.
#[derive(Debug, Clone)]
pub struct Case {
    /// What it asks for.
    pub kind: Kind,
    /// The city it names, if it asks for a forecast.
    pub city: Option<String>,
    /// The euro amount it asks to convert.
    pub amount: Option<f64>,
    /// For an off-topic question: words of a right answer (any one will do).
    pub accept: Vec<String>,
}

/// Phrases that say there is no forecast for a city.
const NO_FORECAST: [&str; 11] = [
    "no forecast",
    "no weather",
    "not available",
    "unavailable",
    "unknown",
    "not known",
    "don't have",
    "do not have",
    "cannot",
    "can't",
    "could not",
];

/// Phrases that say the agent cannot help with a question.
const CANNOT_HELP: [&str; 7] = [
    "can only help",
    "only help with",
    "can't help",
    "cannot help",
    "not able to help",
    "unable to help",
    "can only answer",
];

impl Case {
    /// The expectations of `example` (`kind`, `city`, `amount`, `accept`).
    pub fn of(example: &Example) -> Result<Case, String> {
        let kind = match example.get("kind").and_then(Value::as_str) {
            Some("both") => Kind::Both,
            Some("forecast") => Kind::Forecast,
            Some("convert") => Kind::Convert,
            Some("unknown_city") => Kind::UnknownCity,
            Some("off_topic") => Kind::OffTopic,
            other => return Err(format!("the example's `kind` is {other:?}")),
        };
        let city = example
            .get("city")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let amount = example.get("amount").and_then(Value::as_f64);
        let accept = example
            .get("accept")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        let needs_city = matches!(kind, Kind::Both | Kind::Forecast | Kind::UnknownCity);
        let needs_amount = matches!(kind, Kind::Both | Kind::Convert);
        if needs_city && city.is_none() || needs_amount && amount.is_none() {
            return Err(format!(
                "a `{}` example needs its city and amount",
                kind.name()
            ));
        }
        Ok(Case {
            kind,
            city,
            amount,
            accept,
        })
    }

    /// The forecast the tool gives for the question's city: temperature and condition.
    fn forecast(&self) -> Option<(f64, &'static str)> {
        let (_, text) = travel::forecast_for(self.city.as_deref()?)?;
        let (temperature, condition) = text.split_once(" °C, ")?;
        Some((temperature.parse().ok()?, condition))
    }

    /// The conversion's result for the question's amount.
    fn kroner(&self) -> Option<f64> {
        self.amount.map(travel::kroner)
    }

    /// The calls the question needs: (tool, argument, value).
    fn needed_calls(&self) -> Vec<(&'static str, &'static str, Value)> {
        let mut calls = Vec::new();
        if let Some(city) = &self.city {
            calls.push(("forecast", "city", Value::from(city.as_str())));
        }
        if let Some(amount) = self.amount {
            calls.push(("eur_to_nok", "amount", Value::from(amount)));
        }
        calls
    }
}

/// What is wrong with the run's tool calls (empty when they are right): each needed call made
/// with the question's value, no other tool called, and the run finished by itself.
pub fn wrong_calls(case: &Case, trajectory: &Trajectory) -> Vec<String> {
    let calls = trajectory
        .steps
        .iter()
        .map(|s| (s.tool_name.as_str(), &s.tool_args));
    let mut wrong = wrong_tool_calls(case, calls);
    if let Some(reason) = &trajectory.stopped_early {
        wrong.push(format!("did not finish: {reason}"));
    }
    wrong
}

/// What is wrong with these calls (tool name, arguments): each needed call made with the
/// question's value, and no other tool called (`finish` aside).
pub fn wrong_tool_calls<'a>(
    case: &Case,
    calls: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Vec<String> {
    let calls: Vec<(&str, &Value)> = calls.into_iter().filter(|(n, _)| *n != "finish").collect();
    let mut wrong = Vec::new();
    let needed = case.needed_calls();
    for (tool, arg, want) in &needed {
        let made = calls
            .iter()
            .any(|(name, args)| name == tool && same_argument(&args[*arg], want));
        if !made {
            wrong.push(format!("no {tool} call with {arg} {want}"));
        }
    }
    let mut extra: Vec<&str> = calls
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !needed.iter().any(|(tool, ..)| tool == name))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    for name in extra {
        wrong.push(format!("called {name}, which the question does not need"));
    }
    wrong
}

fn same_argument(got: &Value, want: &Value) -> bool {
    // An amount may be given as written ("1,500"): its value is compared.
    let number = |v: &Value| {
        v.as_f64().or_else(|| {
            v.as_str()
                .and_then(|t| mentions(t).first().map(|m| m.value))
        })
    };
    match (number(got), want.as_f64()) {
        (Some(got), Some(want)) => (got - want).abs() < 1e-9,
        _ => got.as_str().zip(want.as_str()).is_some_and(|(got, want)| {
            // "Tromso" and "Tromsø" are one city to the forecast tool, and so to the metric.
            let known = |city: &str| travel::forecast_for(city).map(|(name, _)| name);
            got.trim().eq_ignore_ascii_case(want.trim())
                || known(got).is_some_and(|name| Some(name) == known(want))
        }),
    }
}

/// What is wrong with the answer (empty when it is right).
pub fn wrong_answer(case: &Case, answer: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let lower = answer.to_lowercase();
    let mentions = mentions(answer);
    let forecast = case.forecast();
    let kroner = case.kroner();
    let says = |value: f64, unit: Option<Unit>| {
        mentions
            .iter()
            .any(|m| m.is(value) && (m.unit == unit || m.unit.is_none()))
    };
    // What it must state.
    if let (Some((temperature, condition)), Kind::Both | Kind::Forecast) = (forecast, case.kind) {
        if !says(temperature, Some(Unit::Celsius)) {
            wrong.push(format!("does not state the temperature, {temperature} °C"));
        }
        if !lower.contains(condition) {
            wrong.push(format!("does not state the condition, {condition}"));
        }
    }
    if let Some(kroner) = kroner {
        let nok = mentions
            .iter()
            .any(|m| m.is(kroner) && m.unit == Some(Unit::Nok));
        if !nok {
            wrong.push(format!("does not state the kroner, {kroner} NOK"));
        }
    }
    if case.kind == Kind::UnknownCity && !NO_FORECAST.iter().any(|p| lower.contains(p)) {
        wrong.push(format!(
            "does not say there is no forecast for {}",
            case.city.as_deref().unwrap_or("the city")
        ));
    }
    if case.kind == Kind::OffTopic
        && !case
            .accept
            .iter()
            .any(|a| lower.contains(&a.to_lowercase()))
        && !CANNOT_HELP.iter().any(|p| lower.contains(p))
    {
        wrong.push("neither answers nor says it cannot help".to_owned());
    }
    // What it must not state.
    let temperature = forecast.filter(|_| matches!(case.kind, Kind::Both | Kind::Forecast));
    for mention in &mentions {
        let right = match mention.unit {
            Some(Unit::Eur) => case.amount.is_some_and(|a| mention.is(a)),
            Some(Unit::Nok) => kroner.is_some_and(|k| mention.is(k)),
            Some(Unit::Celsius) => temperature.is_some_and(|(t, _)| mention.is(t)),
            None => {
                case.amount.is_some_and(|a| mention.is(a))
                    || kroner.is_some_and(|k| mention.is(k))
                    || temperature.is_some_and(|(t, _)| mention.is(t) || mention.is(t.abs()))
            }
        };
        if !right {
            let unit = match mention.unit {
                Some(Unit::Eur) => " EUR",
                Some(Unit::Nok) => " NOK",
                Some(Unit::Celsius) => " °C",
                None => "",
            };
            wrong.push(format!(
                "states {}{unit}, which neither the question nor a tool gave",
                mention.text
            ));
        }
    }
    if let Some(phrase) = repeated_phrase(&lower) {
        wrong.push(format!("repeats itself (\"{phrase}\")"));
    }
    if answer.trim().is_empty() {
        wrong.push("is empty".to_owned());
    }
    wrong
}

/// The metric the travel agent is compiled against: 1 when the run is right (its calls and its
/// answer), else 0 with feedback that names what was wrong.
pub fn right_answer(example: &Example, out: &ReActOutput<TravelOutput>) -> Score {
    score(example, |case| {
        let mut wrong = wrong_calls(case, &out.trajectory);
        wrong.extend(
            wrong_answer(case, &out.output.answer)
                .into_iter()
                .map(|w| format!("the answer {w}")),
        );
        wrong
    })
}

/// The tool-call score alone (the second column): the right calls, no others, finished.
pub fn right_calls(example: &Example, out: &ReActOutput<TravelOutput>) -> Score {
    score(example, |case| wrong_calls(case, &out.trajectory))
}

fn score(example: &Example, judge: impl FnOnce(&Case) -> Vec<String>) -> Score {
    match Case::of(example) {
        Ok(case) => {
            let wrong = judge(&case);
            if wrong.is_empty() {
                Score::new(1.0)
            } else {
                Score::new(0.0).with_feedback(wrong.join("; "))
            }
        }
        Err(error) => Score::new(0.0).with_feedback(error),
    }
}

/// The figures the answer states that no tool of the run returned and the question does not give
/// (empty when there are none): each number of the answer, with its unit when one is written
/// beside it, must be a number of the question or of a tool result (an error's text included),
/// as written or rounded to the decimals written, with the same unit where both name one. So
/// "300 EUR is 300.00 NOK" after no conversion, for a question that gives 300 EUR, states an
/// invented figure (300.00 NOK). A tool result counts only when the figures of its call's
/// arguments come from the question or an earlier result, so "240 EUR is 2808.00 NOK" after a
/// conversion of 240 euros the question never named states two invented figures. This is the
/// measure docs/optimize.md reports as "invented figures"; it reads the run's own tool calls and
/// results, not the expected ones, and its own number reader (not the framework's).
pub fn invented_figures(question: &str, trajectory: &Trajectory, answer: &str) -> Vec<String> {
    let mut sources = mentions(question);
    let grounds = |sources: &[Mention], said: &Mention| {
        sources.iter().any(|source| {
            let same_unit =
                said.unit.is_none() || source.unit.is_none() || said.unit == source.unit;
            same_unit && said.is(source.value)
        })
    };
    for step in trajectory.steps.iter().filter(|s| s.tool_name != "finish") {
        // A result counts only when the call's own figures came from the question or an
        // earlier result: a made-up amount does not become a source by passing through a tool.
        let args = mentions(&step.tool_args.to_string());
        if args.iter().all(|a| grounds(&sources, a)) {
            sources.extend(mentions(&step.observation.as_text()));
        }
    }
    mentions(answer)
        .into_iter()
        .filter(|said| !grounds(&sources, said))
        .map(|said| {
            let unit = match said.unit {
                Some(Unit::Eur) => " EUR",
                Some(Unit::Nok) => " NOK",
                Some(Unit::Celsius) => " °C",
                None => "",
            };
            format!("{}{unit}", said.text)
        })
        .collect()
}

/// The question's amount as it writes it ("1,500" for 1500, "12.99"), for a labeled call that
/// passes the amount as written; `None` when the question writes no number of that value.
pub fn written_amount(question: &str, amount: f64) -> Option<String> {
    mentions(question)
        .into_iter()
        .find(|m| (m.value - amount).abs() < 1e-9)
        .map(|m| m.text)
}

/// The unit written beside a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Eur,
    Nok,
    Celsius,
}

/// A number in the answer, as written, with its unit.
#[derive(Debug)]
struct Mention {
    text: String,
    value: f64,
    decimals: i32,
    unit: Option<Unit>,
}

impl Mention {
    /// Whether it states `value`, as written or rounded to the decimals written.
    fn is(&self, value: f64) -> bool {
        let scale = 10f64.powi(self.decimals);
        (self.value - value).abs() < 1e-9
            || (self.value - (value * scale).round() / scale).abs() < 1e-9
    }
}

/// The numbers of `text` with their units: "200 EUR", "EUR 200", "€200", "2,340.0 kroner",
/// "-3 °C", "minus 3 degrees".
fn mentions(text: &str) -> Vec<Mention> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'));
        if !starts_number {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = String::new();
        while i < chars.len() {
            let c = chars[i];
            let next_is_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == '.' && next_is_digit && !digits.contains('.') {
                digits.push('.');
            } else if c == ',' && chars[i + 1..].iter().take(3).all(char::is_ascii_digit) {
                // A thousands separator.
            } else {
                break;
            }
            i += 1;
        }
        let Ok(mut value) = digits.parse::<f64>() else {
            continue;
        };
        let before: String = chars[..start].iter().collect();
        let before = before.to_lowercase();
        let before = before.trim_end();
        let sign = start > 0 && matches!(chars[start - 1], '-' | '−');
        if sign || before.ends_with("minus") {
            value = -value;
        }
        let after: String = chars[i..].iter().take(12).collect();
        let after = after.to_lowercase();
        let after = after.trim_start();
        let unit = if after.starts_with("eur") || after.starts_with('€') {
            Some(Unit::Eur)
        } else if after.starts_with("nok") || after.starts_with("kr") {
            Some(Unit::Nok)
        } else if after.starts_with('°') || after.starts_with("degree") {
            Some(Unit::Celsius)
        } else if before.ends_with("eur") || before.ends_with('€') {
            Some(Unit::Eur)
        } else if before.ends_with("nok") || before.ends_with("kr") {
            Some(Unit::Nok)
        } else {
            None
        };
        let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len() as i32);
        let written: String = chars[start..i].iter().collect();
        found.push(Mention {
            text: if value < 0.0 {
                format!("-{written}")
            } else {
                written
            },
            value,
            decimals,
            unit,
        });
    }
    found
}

/// A phrase of four words that comes twice, if any.
fn repeated_phrase(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    words
        .windows(4)
        .map(|w| w.join(" "))
        .find(|phrase| !seen.insert(phrase.clone()))
}
