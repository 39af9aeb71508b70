//! What an evaluation found: the average score, each example's output, score, error, usage and
//! time, as a summary, a table, or JSON lines.

use std::fmt;
use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::Score;
use crate::adapter::Fields;
use crate::data::Example;
use crate::lm::Usage;
use crate::trace::Trace;

/// Why one example has no score of its own (it gets the failure score, 0 by default).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ExampleError {
    /// The example's inputs do not fit the program's input type.
    #[error("bad example: {message}")]
    Input {
        /// What does not fit.
        message: String,
    },
    /// The program returned an error (the LM failed, a reply could not be read, ..).
    #[error("{message}")]
    Program {
        /// The error, in words.
        message: String,
        /// The error itself (downcast it to the program's error type).
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The program panicked (caught; the other examples ran).
    #[error("the program panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// The metric panicked or returned something that is not a number.
    #[error("{message}")]
    Metric {
        /// What went wrong.
        message: String,
    },
}

impl ExampleError {
    /// The failure's class (`input`, `program`, `panicked`, `metric`), as traces record it in
    /// `error.type`.
    pub fn kind(&self) -> &'static str {
        match self {
            ExampleError::Input { .. } => "input",
            ExampleError::Program { .. } => "program",
            ExampleError::Panicked { .. } => "panicked",
            ExampleError::Metric { .. } => "metric",
        }
    }
}

/// One example's result.
#[derive(Debug, Clone)]
pub struct ExampleResult<O> {
    /// Its position in the evaluated examples.
    pub index: usize,
    /// The example.
    pub example: Example,
    /// The output, when the program produced one.
    pub output: Option<O>,
    /// The output's fields, written from `output` when first asked for (a result keeps the
    /// typed output alone: half the memory of an evaluation's results, and no copies to free).
    pub(super) fields: OnceLock<Fields>,
    pub(super) fields_of: fn(&O) -> Fields,
    /// The metric's score (the failure score when there is an error).
    pub score: Score,
    /// Why the example failed, if it did.
    pub error: Option<ExampleError>,
    /// The LM usage of this example's run (failed calls included).
    pub usage: Usage,
    /// The predictor calls of the run (kept when the evaluation asks for traces).
    pub trace: Trace,
    /// How long the run took.
    pub elapsed: Duration,
}

impl<O> ExampleResult<O> {
    /// The output's fields (empty when the program failed), as
    /// [`Module::output_fields`](crate::module::Module::output_fields) writes them.
    pub fn fields(&self) -> &Fields {
        self.fields
            .get_or_init(|| (self.output.as_ref()).map_or_else(Fields::new, self.fields_of))
    }
}

/// The result of an evaluation.
#[derive(Debug, Clone)]
pub struct Report<O> {
    /// The average score over the finished examples, in percent (DSPy's `score`), rounded to two
    /// decimals.
    pub score: f64,
    /// Each finished example, in the order of the examples given.
    pub results: Vec<ExampleResult<O>>,
    /// How many examples were given.
    pub total: usize,
    /// LM usage summed over every example.
    pub usage: Usage,
    /// Wall time of the whole evaluation.
    pub elapsed: Duration,
    /// Whether it was cancelled before every example finished.
    pub cancelled: bool,
}

impl<O> Report<O> {
    pub(super) fn new(
        results: Vec<ExampleResult<O>>,
        total: usize,
        elapsed: Duration,
        cancelled: bool,
    ) -> Report<O> {
        let sum: f64 = results.iter().map(|r| r.score.value).sum();
        let average = if results.is_empty() {
            0.0
        } else {
            sum / results.len() as f64
        };
        let mut usage = Usage::default();
        for result in &results {
            usage += result.usage;
        }
        Report {
            score: (average * 10_000.0).round() / 100.0,
            results,
            total,
            usage,
            elapsed,
            cancelled,
        }
    }

    /// The average score as a fraction (0.0 to 1.0 for pass/fail metrics).
    pub fn average(&self) -> f64 {
        if self.results.is_empty() {
            0.0
        } else {
            self.results.iter().map(|r| r.score.value).sum::<f64>() / self.results.len() as f64
        }
    }

    /// The tokens the LM generated per second of the evaluation: completion tokens over the
    /// wall time, every example together (0 when nothing was timed). On a local model it shows
    /// whether the server ran at its usual speed (SmolLM2-135M on 2 cores: about 100 tokens/s)
    /// or shared its cores with something else.
    ///
    /// ```
    /// # use signet::data::Dataset;
    /// # use signet::evaluate::{Evaluate, exact_match};
    /// # use signet::lm::{Completion, Usage};
    /// # use signet::testing::ScriptedLm;
    /// # use signet::prelude::*;
    /// # #[derive(Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let mut reply = Completion::text("[[ ## answer ## ]]\nParis");
    /// reply.usage = Usage { completion_tokens: 30, ..Usage::default() };
    /// let program = Predict::<Ask>::new().with_lm(ScriptedLm::new([reply]));
    /// let devset = Dataset::from_jsonl_str("{\"question\": \"Capital of France?\", \"answer\": \"Paris\"}", &["question"])?;
    /// let report = Evaluate::new(&devset, exact_match("answer")).run_blocking(&program)?;
    /// let expected = 30.0 / report.elapsed.as_secs_f64();
    /// assert!((report.tokens_per_second() - expected).abs() < 1e-6);
    /// assert!(report.to_string().ends_with(" completion tokens/s"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tokens_per_second(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.usage.completion_tokens as f64 / seconds
        } else {
            0.0
        }
    }

    /// How many examples scored above zero without an error.
    pub fn passed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.error.is_none() && r.score.value > 0.0)
            .count()
    }

    /// The examples that failed, with their errors.
    pub fn errors(&self) -> impl Iterator<Item = (&ExampleResult<O>, &ExampleError)> {
        self.results
            .iter()
            .filter_map(|r| r.error.as_ref().map(|e| (r, e)))
    }

    /// Each example as a row: its inputs, the labels, the output fields, the score and any error
    /// — at most `max_rows` rows, values shortened to fit a terminal.
    pub fn table(&self, max_rows: usize) -> String {
        let mut out = String::new();
        let cell = |value: &Value| {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let text = text.replace('\n', " ");
            if text.chars().count() > 40 {
                format!("{}…", text.chars().take(39).collect::<String>())
            } else {
                text
            }
        };
        let join = |fields: &Fields| {
            fields
                .iter()
                .map(|(k, v)| format!("{k}: {}", cell(v)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push_str("| # | inputs | expected | output | score |\n|---|---|---|---|---|\n");
        for result in self.results.iter().take(max_rows) {
            let output = match &result.error {
                Some(error) if result.output.is_none() => {
                    format!("error: {}", cell(&json!(error.to_string())))
                }
                _ => join(result.fields()),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                result.index,
                join(&result.example.inputs()),
                join(&result.example.labels()),
                output,
                result.score.value
            ));
        }
        if self.results.len() > max_rows {
            out.push_str(&format!("… {} more\n", self.results.len() - max_rows));
        }
        out
    }

    /// Writes one JSON object per example (`index`, `inputs`, `labels`, `outputs`, `score`,
    /// `feedback`, `error`, `usage`, `elapsed_ms`) to `writer`.
    pub fn write_jsonl(&self, mut writer: impl Write) -> std::io::Result<()> {
        for result in &self.results {
            let line = json!({
                "index": result.index,
                "inputs": result.example.inputs(),
                "labels": result.example.labels(),
                "outputs": result.fields(),
                "score": result.score.value,
                "feedback": result.score.feedback,
                "error": result.error.as_ref().map(ToString::to_string),
                "usage": result.usage,
                "elapsed_ms": result.elapsed.as_millis() as u64,
            });
            serde_json::to_writer(&mut writer, &line)?;
            writer.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// The summary: score, passes, failures (with the first error), usage, time and generation speed.
impl<O> fmt::Display for Report<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finished = self.results.len();
        write!(
            f,
            "score {:.2}% over {finished} examples ({} passed",
            self.score,
            self.passed()
        )?;
        let errors: Vec<&ExampleError> = self.errors().map(|(_, e)| e).collect();
        if let Some(first) = errors.first() {
            write!(f, ", {} failed; first error: {first}", errors.len())?;
        }
        write!(f, ")")?;
        if self.cancelled {
            write!(f, ", cancelled after {finished} of {}", self.total)?;
        }
        write!(
            f,
            "; {} LM calls, {} prompt + {} completion tokens; {:.1} s, {:.1} completion tokens/s",
            self.usage.lm_calls,
            self.usage.prompt_tokens,
            self.usage.completion_tokens,
            self.elapsed.as_secs_f64(),
            self.tokens_per_second()
        )
    }
}

impl Serialize for ExampleError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}
