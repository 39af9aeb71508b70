//! Metrics: how well one output answers one example. A metric is any closure
//! `Fn(&Example, &Output) -> S` where `S` is a `bool`, an `f64`, or a [`Score`] (a value with
//! textual feedback, for optimizers that read it), or one of the built-ins here, which compare an
//! output field with the example's label as DSPy's `answer_exact_match` and `F1` do.
//!
//! ```
//! use serde_json::json;
//! use signet::data::Example;
//! use signet::evaluate::{Metric, Predicted, exact_match, f1};
//!
//! let example = Example::new(json!({"question": "Tallest tower?", "answer": "The Eiffel Tower"}))
//!     .with_inputs(["question"]);
//! let fields = json!({"answer": "eiffel tower!"}).as_object().unwrap().clone();
//! let predicted = Predicted::new(&(), &fields);
//! assert_eq!(exact_match("answer").score(&example, &predicted).value, 1.0);
//! let fields = json!({"answer": "the tower in Paris"}).as_object().unwrap().clone();
//! let half = f1("answer").score(&example, &Predicted::new(&(), &fields)).value;
//! assert!((half - 0.4).abs() < 1e-9);
//! ```

use std::collections::HashMap;

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::adapter::Fields;
use crate::data::Example;
use crate::trace::Trace;

/// A metric's verdict: a number (1.0 or 0.0 for pass/fail metrics) and, optionally, text saying
/// why — what feedback-driven optimizers read.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The value; higher is better. Pass/fail metrics give 1.0 or 0.0.
    pub value: f64,
    /// Why, in words (optional).
    pub feedback: Option<String>,
}

impl Score {
    /// A score with no feedback.
    pub fn new(value: f64) -> Score {
        Score {
            value,
            feedback: None,
        }
    }

    /// Adds feedback.
    pub fn with_feedback(mut self, feedback: impl Into<String>) -> Score {
        self.feedback = Some(feedback.into());
        self
    }

    /// Whether the score counts as a success: at least `threshold` when one is given, otherwise
    /// above zero (DSPy's truthiness of a metric's value).
    pub fn passes(&self, threshold: Option<f64>) -> bool {
        match threshold {
            Some(threshold) => self.value >= threshold,
            None => self.value > 0.0,
        }
    }
}

impl From<bool> for Score {
    fn from(pass: bool) -> Score {
        Score::new(if pass { 1.0 } else { 0.0 })
    }
}

impl From<f64> for Score {
    fn from(value: f64) -> Score {
        Score::new(value)
    }
}

impl From<f32> for Score {
    fn from(value: f32) -> Score {
        Score::new(f64::from(value))
    }
}

impl<T: Into<String>> From<(f64, T)> for Score {
    fn from((value, feedback): (f64, T)) -> Score {
        Score::new(value).with_feedback(feedback)
    }
}

/// What a program produced on one example, as a metric sees it: the typed output, its fields as
/// JSON, and — while an optimizer bootstraps demos — the run's trace.
#[derive(Debug, Clone, Copy)]
pub struct Predicted<'a, O: ?Sized> {
    /// The typed output.
    pub output: &'a O,
    /// The output's fields (see [`Module::output_fields`](crate::module::Module::output_fields)).
    pub fields: &'a Fields,
    /// The predictor calls of the run, when an optimizer asks (`None` in plain evaluation).
    pub trace: Option<&'a Trace>,
}

impl<'a, O: ?Sized> Predicted<'a, O> {
    /// An output and its fields, without a trace.
    pub fn new(output: &'a O, fields: &'a Fields) -> Predicted<'a, O> {
        Predicted {
            output,
            fields,
            trace: None,
        }
    }

    /// The output field `name`.
    pub fn field(&self, name: &str) -> Option<&'a Value> {
        self.fields.get(name)
    }
}

/// How well an output answers an example. Implemented by closures
/// `Fn(&Example, &Output) -> impl Into<Score>`, by [`with_trace`]'s closures, and by the
/// built-ins ([`exact_match`], [`f1`]).
pub trait Metric<O: ?Sized>: Send + Sync {
    /// Scores `predicted` against `example`.
    fn score(&self, example: &Example, predicted: &Predicted<'_, O>) -> Score;
}

impl<O: ?Sized, F, S> Metric<O> for F
where
    F: Fn(&Example, &O) -> S + Send + Sync,
    S: Into<Score>,
{
    fn score(&self, example: &Example, predicted: &Predicted<'_, O>) -> Score {
        self(example, predicted.output).into()
    }
}

/// A metric used through a reference (optimizers share one metric between their runs).
pub(crate) struct Borrowed<'a, M>(pub(crate) &'a M);

impl<O: ?Sized, M: Metric<O>> Metric<O> for Borrowed<'_, M> {
    fn score(&self, example: &Example, predicted: &Predicted<'_, O>) -> Score {
        self.0.score(example, predicted)
    }
}

/// A metric that also sees the run's trace (`None` in plain evaluation), as DSPy metrics see
/// `trace`: stricter while bootstrapping, for instance.
///
/// ```
/// use signet::evaluate::{Metric, with_trace};
/// # #[derive(serde::Serialize)] struct Out { answer: String }
/// let strict_when_bootstrapping = with_trace(|example: &signet::data::Example, out: &Out, trace| {
///     let right = example.get("answer").and_then(|a| a.as_str()) == Some(out.answer.as_str());
///     right && trace.is_none_or(|t| t.len() <= 3)
/// });
/// # let _ = strict_when_bootstrapping;
/// ```
pub fn with_trace<O: ?Sized, F, S>(metric: F) -> WithTrace<F>
where
    F: Fn(&Example, &O, Option<&Trace>) -> S + Send + Sync,
    S: Into<Score>,
{
    WithTrace(metric)
}

/// See [`with_trace`].
#[derive(Debug, Clone, Copy)]
pub struct WithTrace<F>(F);

impl<O: ?Sized, F, S> Metric<O> for WithTrace<F>
where
    F: Fn(&Example, &O, Option<&Trace>) -> S + Send + Sync,
    S: Into<Score>,
{
    fn score(&self, example: &Example, predicted: &Predicted<'_, O>) -> Score {
        (self.0)(example, predicted.output, predicted.trace).into()
    }
}

/// DSPy's `answer_exact_match` on the field `field`: 1.0 when the output field equals the label
/// (or any of a list of labels) after [`normalize_text`]. Non-text values compare as their JSON
/// text. A missing label or output field scores 0 with feedback saying which.
pub fn exact_match(field: impl Into<String>) -> FieldMatch {
    FieldMatch {
        field: field.into(),
        kind: MatchKind::Exact,
    }
}

/// DSPy's `F1` on the field `field`: the best token F1 between the output field and the label (or
/// any of a list of labels), after [`normalize_text`].
pub fn f1(field: impl Into<String>) -> FieldMatch {
    FieldMatch {
        field: field.into(),
        kind: MatchKind::F1,
    }
}

/// A built-in metric on one field (see [`exact_match`] and [`f1`]).
#[derive(Debug, Clone)]
pub struct FieldMatch {
    field: String,
    kind: MatchKind,
}

#[derive(Debug, Clone, Copy)]
enum MatchKind {
    Exact,
    F1,
}

impl<O: ?Sized> Metric<O> for FieldMatch {
    fn score(&self, example: &Example, predicted: &Predicted<'_, O>) -> Score {
        let Some(label) = example.get(&self.field) else {
            return Score::new(0.0).with_feedback(format!(
                "the example has no label `{}` to compare with",
                self.field
            ));
        };
        let Some(output) = predicted.field(&self.field) else {
            return Score::new(0.0)
                .with_feedback(format!("the output has no field `{}`", self.field));
        };
        let output = text(output);
        let score = |answer: &Value| {
            let answer = text(answer);
            match self.kind {
                MatchKind::Exact => f64::from(u8::from(same_normalized(&output, &answer))),
                MatchKind::F1 => token_f1(&output, &answer),
            }
        };
        let best = match label {
            Value::Array(answers) => answers.iter().map(score).fold(0.0, f64::max),
            answer => score(answer),
        };
        Score::new(best)
    }
}

fn text(value: &Value) -> std::borrow::Cow<'_, str> {
    match value {
        Value::String(s) => s.as_str().into(),
        other => other.to_string().into(),
    }
}

/// DSPy's `normalize_text`: Unicode NFD, lower case, ASCII punctuation removed, the articles
/// `a`, `an` and `the` removed, whitespace collapsed.
///
/// ```
/// assert_eq!(signet::evaluate::normalize_text("The,  Eiffel  Tower!"), "eiffel tower");
/// ```
pub fn normalize_text(text: &str) -> String {
    if is_printable_ascii(text) {
        return normalize_printable_ascii(text);
    }
    let lowered: String = text.nfd().collect::<String>().to_lowercase();
    let unpunctuated: String = lowered
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    without_articles(&unpunctuated)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Printable ASCII and ASCII whitespace only: text [`normalize_printable_ascii`] can take.
fn is_printable_ascii(text: &str) -> bool {
    text.bytes()
        .all(|b| matches!(b, b' '..=b'~' | b'\t' | b'\n' | b'\r' | b'\x0c'))
}

/// [`normalize_text`] for printable ASCII, word by word (its own NFD form; after punctuation is
/// removed every whitespace-separated token is one word).
fn normalize_printable_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in ascii_words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.bytes().map(char::from));
    }
    out
}

/// Whether `a` and `b` are the same after [`normalize_text`]; for printable ASCII (the common
/// case) word by word, without writing either out.
fn same_normalized(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (printable_ascii_words(a), printable_ascii_words(b)) {
        (Some(a), Some(b)) => a.eq(b),
        _ => normalize_text(a) == normalize_text(b),
    }
}

/// The words of [`normalize_printable_ascii`]'s result (`None` when `text` is not printable
/// ASCII).
fn printable_ascii_words(text: &str) -> Option<impl Iterator<Item = AsciiWord<'_>>> {
    is_printable_ascii(text).then(|| ascii_words(text))
}

/// The normalised words of printable ASCII text: its whitespace-separated tokens, less those that
/// normalisation removes (empty once punctuation is gone, or an article).
fn ascii_words(text: &str) -> impl Iterator<Item = AsciiWord<'_>> {
    (text.split_ascii_whitespace())
        .map(AsciiWord)
        .filter(|word| !word.is_dropped())
}

/// One whitespace-separated token of printable ASCII, compared as its normalized word (lower
/// case, punctuation removed).
#[derive(Clone, Copy)]
struct AsciiWord<'a>(&'a str);

impl AsciiWord<'_> {
    fn bytes(self) -> impl Iterator<Item = u8> {
        (self.0.bytes())
            .filter(|b| !b.is_ascii_punctuation())
            .map(|b| b.to_ascii_lowercase())
    }

    /// Whether the word is empty or an article, which normalization removes.
    fn is_dropped(self) -> bool {
        let mut word = [0u8; 3];
        let mut len = 0;
        for b in self.bytes() {
            if len == word.len() {
                return false;
            }
            word[len] = b;
            len += 1;
        }
        matches!(&word[..len], b"" | b"a" | b"an" | b"the")
    }
}

impl PartialEq for AsciiWord<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes().eq(other.bytes())
    }
}

/// Python's `re.sub(r"\b(a|an|the)\b", " ", text)`: every whole word that is an article becomes
/// a space. Words are runs of Python's `\w` (letters, numbers, `_`), so a combining accent ends
/// a word, as it does in Python.
fn without_articles(text: &str) -> String {
    let is_word = |c: char| c.is_alphabetic() || c.is_numeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_word) {
        out.push_str(&rest[..start]);
        let word_and_rest = &rest[start..];
        let end = word_and_rest
            .find(|c: char| !is_word(c))
            .unwrap_or(word_and_rest.len());
        let word = &word_and_rest[..end];
        out.push_str(if matches!(word, "a" | "an" | "the") {
            " "
        } else {
            word
        });
        rest = &word_and_rest[end..];
    }
    out.push_str(rest);
    out
}

/// DSPy's `f1_score`: token F1 of two texts after [`normalize_text`].
fn token_f1(prediction: &str, truth: &str) -> f64 {
    let predicted = normalize_text(prediction);
    let expected = normalize_text(truth);
    let predicted: Vec<&str> = predicted.split_whitespace().collect();
    let expected: Vec<&str> = expected.split_whitespace().collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for token in &expected {
        *counts.entry(token).or_default() += 1;
    }
    let mut same = 0usize;
    for token in &predicted {
        if let Some(n) = counts.get_mut(token)
            && *n > 0
        {
            *n -= 1;
            same += 1;
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / predicted.len() as f64;
    let recall = same as f64 / expected.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalization_and_f1_match_dspy() {
        // Expected values printed by DSPy's `normalize_text` and `F1`.
        // NFD leaves `ç` as `c` and a combining cedilla, which ends the word: `a` is an article.
        assert_eq!(
            normalize_text("Ça, c'est l'Été!"),
            "c\u{327} cest le\u{301}te\u{301}"
        );
        assert_eq!(normalize_text("An apple a day"), "apple day");
        assert_eq!(normalize_text("theater"), "theater");
        // The ASCII path and the general one agree.
        for text in [
            "The,  Eiffel\tTower!",
            "a - an -- the",
            " _x_ A.B ",
            "Don't stop",
            "",
        ] {
            let general = without_articles(
                &text
                    .to_lowercase()
                    .chars()
                    .filter(|c| !c.is_ascii_punctuation())
                    .collect::<String>(),
            )
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
            assert_eq!(normalize_text(text), general, "{text:?}");
        }
        assert!((token_f1("Eiffel Tower is in Paris", "Paris") - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(token_f1("the the", "the"), 0.0);
        assert!((token_f1("a b b c", "b b d") - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn word_by_word_comparison_agrees_with_normalizing() {
        let texts = [
            "The Eiffel Tower",
            "eiffel tower!",
            "Eiffel  Tower.",
            "eiffel towers",
            "eiffel",
            "a an the",
            "",
            " . , ",
            "A.N",
            "an",
            "AN!",
            "the the eiffel",
            "thee",
            "The\tEiffel\nTower\r\x0c",
            "Don't",
            "dont",
            "Été",
            "ete",
            "eiffel \u{a0}tower",
            "eiffel tower",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(
                    same_normalized(a, b),
                    normalize_text(a) == normalize_text(b),
                    "{a:?} and {b:?}"
                );
            }
        }
    }

    #[test]
    fn lists_of_labels_and_missing_fields() {
        let example = Example::new(json!({"answer": ["Louvre", "Eiffel Tower"]}));
        let fields = json!({"answer": "the eiffel tower"})
            .as_object()
            .unwrap()
            .clone();
        let score = exact_match("answer").score(&example, &Predicted::new(&(), &fields));
        assert_eq!(score.value, 1.0);
        let score = exact_match("city").score(&example, &Predicted::new(&(), &fields));
        assert_eq!(score.value, 0.0);
        assert!(score.feedback.unwrap().contains("`city`"));
        let numbers = Example::new(json!({"n": 4}));
        let fields = json!({"n": 4}).as_object().unwrap().clone();
        assert_eq!(
            exact_match("n")
                .score(&numbers, &Predicted::new(&(), &fields))
                .value,
            1.0
        );
    }

    #[test]
    fn closures_are_metrics() {
        let metric = |e: &Example, o: &String| e.get("answer") == Some(&json!(o));
        let example = Example::new(json!({"answer": "x"}));
        let fields = Fields::new();
        let output = "x".to_owned();
        assert!(
            metric
                .score(&example, &Predicted::new(&output, &fields))
                .passes(None)
        );
        let half = |_: &Example, _: &String| (0.5, "half right");
        let score = half.score(&example, &Predicted::new(&output, &fields));
        assert!(score.passes(Some(0.5)) && !score.passes(Some(0.6)));
        assert_eq!(score.feedback.as_deref(), Some("half right"));
    }
}
