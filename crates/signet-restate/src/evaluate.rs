//! Batch evaluation on Restate: one invocation per example, keyed by the example's id, so an
//! evaluation that is interrupted — its client, or any of its workers — resumes where it
//! stopped and scores no example twice in its results.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use restate_sdk::prelude::*;
use restate_sdk::service::ServiceDefinition;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use signet::data::Example;
use signet::evaluate::{Metric, Predicted, Score};
use signet::module::Module;

use crate::ingress::{Ingress, IngressError};

/// What scores one example: the program and metric registered under a name.
type Scorer = dyn Fn(Example) -> BoxFuture<'static, ScoredExample> + Send + Sync;

/// One example to score, as sent to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRequest {
    /// The program's name, as registered with [`Evaluations::program`].
    pub program: String,
    /// The example's values.
    pub values: Value,
    /// Which of them are the program's inputs.
    pub input_keys: Vec<String>,
}

/// One example's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredExample {
    /// The example's id (its idempotency key).
    #[serde(default)]
    pub id: String,
    /// The metric's score (the failure score, 0, when the program or the metric failed).
    pub score: f64,
    /// The metric's feedback, if it gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The program's output, when it returned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the example failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An evaluation's results, in example order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    /// One result per example.
    pub results: Vec<ScoredExample>,
}

impl BatchReport {
    /// The mean score (0 for no examples).
    pub fn average(&self) -> f64 {
        if self.results.is_empty() {
            return 0.0;
        }
        self.results.iter().map(|r| r.score).sum::<f64>() / self.results.len() as f64
    }

    /// How many examples failed (the program or the metric).
    pub fn errors(&self) -> usize {
        self.results.iter().filter(|r| r.error.is_some()).count()
    }
}

/// The programs a worker scores examples with, by name. As with [`Agents`](crate::Agents),
/// every worker must register the same programs and metrics.
#[derive(Clone, Default)]
pub struct Evaluations {
    programs: BTreeMap<String, Arc<Scorer>>,
}

impl Evaluations {
    /// No programs yet.
    pub fn new() -> Evaluations {
        Evaluations::default()
    }

    /// Scores examples sent as `name` with `program` and `metric`, as
    /// [`Evaluate`](signet::evaluate::Evaluate) scores an example: its inputs read into the
    /// program's input type, panics caught, a failure scored 0 with its error.
    pub fn program<P, M>(mut self, name: impl Into<String>, program: P, metric: M) -> Evaluations
    where
        P: Module + 'static,
        M: Metric<P::Output> + 'static,
    {
        let program = Arc::new(program);
        let metric = Arc::new(metric);
        let scorer = move |example: Example| {
            let (program, metric) = (program.clone(), metric.clone());
            async move { score_one(program.as_ref(), metric.as_ref(), example).await }.boxed()
        };
        self.programs.insert(name.into(), Arc::new(scorer));
        self
    }

    /// The `SignetEvaluate` service scoring with these programs, to bind to an endpoint (or let
    /// [`crate::serve`] do it).
    pub fn service(&self) -> ServiceDefinition {
        SignetEvaluate {
            programs: Arc::new(self.programs.clone()),
        }
        .into_service_definition()
        .options(
            ServiceOptions::new()
                .inactivity_timeout(Duration::from_secs(600))
                .abort_timeout(Duration::from_secs(600)),
        )
    }
}

/// Scores one example as [`Evaluate`](signet::evaluate::Evaluate) does: the inputs read into
/// the program's input type, a panic in the program or the metric caught, a failure scored 0.
async fn score_one<P, M>(program: &P, metric: &M, example: Example) -> ScoredExample
where
    P: Module,
    M: Metric<P::Output>,
{
    if example.input_keys().is_empty() {
        return failed("the example marks no inputs (`with_inputs`)".into());
    }
    let input = match example.input_as::<P::Input>() {
        Ok(input) => input,
        Err(error) => return failed(format!("its inputs do not fit the program: {error}")),
    };
    let output = match AssertUnwindSafe(program.call(input)).catch_unwind().await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return failed(format!("the program failed: {error}")),
        Err(_) => return failed("the program panicked".into()),
    };
    let fields = P::output_fields(&output);
    let predicted = Predicted::new(&output, &fields);
    let (score, error) =
        match std::panic::catch_unwind(AssertUnwindSafe(|| metric.score(&example, &predicted))) {
            Ok(score) if score.value.is_finite() => (score, None),
            Ok(score) => (
                Score::new(0.0),
                Some(format!(
                    "the metric returned {}, not a finite number",
                    score.value
                )),
            ),
            Err(_) => (Score::new(0.0), Some("the metric panicked".to_owned())),
        };
    ScoredExample {
        id: String::new(),
        score: score.value,
        feedback: score.feedback,
        output: serde_json::to_value(&output).ok(),
        error,
    }
}

fn failed(error: String) -> ScoredExample {
    ScoredExample {
        id: String::new(),
        score: 0.0,
        feedback: None,
        output: None,
        error: Some(error),
    }
}

/// The service Restate sees: `SignetEvaluate/score` scores one example.
pub struct SignetEvaluate {
    programs: Arc<BTreeMap<String, Arc<Scorer>>>,
}

#[restate_sdk::service]
impl SignetEvaluate {
    /// Scores one example (a journaled step: a worker that dies mid-example has it scored again
    /// elsewhere; once scored, the result is Restate's).
    #[handler]
    async fn score(
        &self,
        ctx: Context<'_>,
        request: Json<ScoreRequest>,
    ) -> HandlerResult<Json<ScoredExample>> {
        let request = request.into_inner();
        let Some(scorer) = self.programs.get(&request.program).cloned() else {
            return Err(crate::not_served(
                "program",
                &request.program,
                self.programs.keys(),
            ));
        };
        let example = Example::new(request.values).with_inputs(request.input_keys);
        let span = crate::telemetry::handler_span("score", &request.program, ctx.headers());
        let scored = ctx
            .run(move || {
                tracing::Instrument::instrument(
                    async move {
                        let scored = scorer(example).await;
                        Ok(Json(scored))
                    },
                    span,
                )
            })
            .name("score")
            .await?;
        Ok(scored)
    }
}

impl Ingress {
    /// Scores `examples` with the program registered as `program`, one Restate invocation per
    /// example, keyed `{key}.{index}` (`key`: letters, digits, `-`, `_`, `.`): every example is sent (an example already sent under its
    /// key is not sent again), then every result collected, at most `concurrency` at a time.
    /// Calling it again with the same key after an interruption resumes: examples scored before
    /// are not scored again, the rest are waited for.
    pub async fn evaluate(
        &self,
        program: &str,
        key: &str,
        examples: &[Example],
        concurrency: usize,
    ) -> Result<BatchReport, IngressError> {
        self.submit_evaluation(program, key, examples, concurrency)
            .await?;
        let collected: Vec<Result<ScoredExample, IngressError>> =
            futures::stream::iter(0..examples.len())
                .map(|index| self.scored(key, index))
                .buffered(concurrency.max(1))
                .collect()
                .await;
        let results = collected.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(BatchReport { results })
    }

    /// Sends every example of an evaluation without waiting for results (see
    /// [`evaluate`](Self::evaluate)).
    pub async fn submit_evaluation(
        &self,
        program: &str,
        key: &str,
        examples: &[Example],
        concurrency: usize,
    ) -> Result<(), IngressError> {
        check_key(key)?;
        let sent: Vec<Result<String, IngressError>> =
            futures::stream::iter(examples.iter().enumerate())
                .map(|(index, example)| {
                    let request = ScoreRequest {
                        program: program.to_owned(),
                        values: Value::Object(example.values().clone()),
                        input_keys: example.input_keys().to_vec(),
                    };
                    let url = format!("{}/SignetEvaluate/score/send", self.base());
                    let call = self
                        .client()
                        .post(&url)
                        .header("idempotency-key", example_key(key, index))
                        .json(&request);
                    async move { self.send(call, &url).await }
                })
                .buffer_unordered(concurrency.max(1))
                .collect()
                .await;
        sent.into_iter().collect::<Result<Vec<_>, _>>().map(drop)
    }

    /// Waits for the result of example `index` of evaluation `key`.
    async fn scored(&self, key: &str, index: usize) -> Result<ScoredExample, IngressError> {
        let id = example_key(key, index);
        let url = format!(
            "{}/restate/invocation/SignetEvaluate/score/{id}/attach",
            self.base()
        );
        let body = self.send_waiting(self.client().get(&url), &url).await?;
        let mut scored: ScoredExample = crate::ingress::decode(body, &url)?;
        scored.id = id;
        Ok(scored)
    }
}

/// The idempotency key of example `index` of evaluation `key`.
fn example_key(key: &str, index: usize) -> String {
    format!("{key}.{index}")
}

/// Refuses a key that cannot stand in a URL path as it is.
fn check_key(key: &str) -> Result<(), IngressError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if key.is_empty() || !key.chars().all(fine) {
        return Err(IngressError::InvalidKey {
            key: key.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use signet::prelude::*;
    use signet::testing::ScriptedLm;

    /// Answer the question.
    #[derive(Signature)]
    struct Ask {
        #[input]
        question: String,
        #[output]
        answer: String,
    }

    fn example() -> Example {
        Example::new(json!({"question": "?", "answer": "yes"})).with_inputs(["question"])
    }

    fn right(example: &Example, output: &AskOutput) -> bool {
        example.values()["answer"] == output.answer
    }

    #[tokio::test]
    async fn an_example_is_scored_and_every_failure_is_a_zero_with_its_reason() {
        let program =
            || Predict::<Ask>::new().with_lm(ScriptedLm::texts(["[[ ## answer ## ]]\nyes"]));
        let scored = score_one(&program(), &right, example()).await;
        assert_eq!((scored.score, scored.error), (1.0, None));
        assert_eq!(scored.output, Some(json!({"answer": "yes"})));

        let unmarked = Example::new(json!({"question": "?"}));
        let scored = score_one(&program(), &right, unmarked).await;
        assert!(scored.error.unwrap().contains("marks no inputs"));

        let wrong = Example::new(json!({"query": "?"})).with_inputs(["query"]);
        let scored = score_one(&program(), &right, wrong).await;
        assert!(scored.error.unwrap().contains("do not fit"));

        let silent = Predict::<Ask>::new().with_lm(ScriptedLm::texts(Vec::<String>::new()));
        let scored = score_one(&silent, &right, example()).await;
        assert_eq!(scored.score, 0.0);
        assert!(scored.error.unwrap().contains("the program failed"));

        let panicking = |_: &Example, _: &AskOutput| -> bool { panic!("bad metric") };
        let scored = score_one(&program(), &panicking, example()).await;
        assert_eq!(scored.error.as_deref(), Some("the metric panicked"));
    }

    #[test]
    fn evaluation_keys_must_be_url_safe() {
        assert!(check_key("nightly-2026.11_a").is_ok());
        for bad in ["", "a b", "a/b", "ü"] {
            assert!(
                matches!(check_key(bad), Err(IngressError::InvalidKey { .. })),
                "{bad}"
            );
        }
    }
}
