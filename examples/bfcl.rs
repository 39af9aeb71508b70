//! Signet on BFCL (the Berkeley Function Calling Leaderboard): answers exported BFCL questions in
//! one or more modes and writes the calls in the form BFCL's own checker scores. Run through
//! `benches/bfcl/run.sh`, which installs BFCL's data and checker, exports the questions, runs this
//! and prints the scored table:
//!
//! ```text
//! bash benches/bfcl/run.sh --categories simple_python,irrelevance --limit 20 --modes native,constrained
//! ```
//!
//! Directly: `cargo run --example bfcl -- --questions Q.jsonl --results R.jsonl [--modes
//! native,chat,json,xml,constrained] [--model local|api] [--concurrency N] [--train T.jsonl
//! --demos K --labeled L --per-category] [--optimizer bootstrap|gepa|mipro] [--budget N]`.
//! `--model api` uses any OpenAI-compatible endpoint from `OPENAI_API_KEY`, `OPENAI_BASE_URL`
//! and `OPENAI_MODEL`.
//!
//! With `--train`, each mode is also compiled on the training questions and the compiled program
//! answers the questions again, as mode `<mode>+<optimizer>` (`--per-category`: one program per
//! category, compiled on that category's training questions, answers that category's
//! questions):
//!
//! * `bootstrap` (the default): `BootstrapFewShot`, up to K bootstrapped demos (kept when their
//!   calls match BFCL's possible answers), then labeled demos — BFCL's first possible answer to
//!   a training question — up to L demos in all.
//! * `gepa`: GEPA rewrites the instruction within `--budget N` metric calls (150 by default),
//!   minibatches and candidates scored on the training questions; the reflection LM is the API
//!   model when `OPENAI_API_KEY` is set, otherwise the task model.
//! * `mipro`: MIPROv2 searches three instructions (the original and two proposed by the same
//!   model) and three demo sets of up to K bootstrapped and L demos in all, each trial scored on
//!   the training questions, for 10 trials or `--budget N` metric calls.
//!
//! Every question is one `Predict<FunctionCall>` call — the request and the functions (`Tools`)
//! in, the calls (`ToolCalls`) out — so the modes differ only in how Signet sends the functions
//! and reads the calls:
//!
//! | mode | adapter | functions sent as |
//! |---|---|---|
//! | `native` | Chat, native function calling | `tools=` (the local model gets them through `ConstrainedToolCalls`) |
//! | `chat` | Chat | the prompt, calls read from `[[ ## tool_calls ## ]]` |
//! | `json` | JSON | the prompt, calls read from the JSON reply |
//! | `xml` | XML | the prompt, calls read from `<tool_calls>` |
//! | `constrained` | `JsonAdapter::constrained()` with at most 4 calls, 200-character strings and 16-item arrays (a reply cut off at the token limit is asked for again under a quarter of each) | the prompt, and the decoding schema ties each call to one function's arguments |

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use signet::adapter::{
    Adapter, ChatAdapter, JsonAdapter, ToolCallRecord, ToolCalls, Tools, XmlAdapter,
};
use signet::data::Example;
use signet::evaluate::Score;
use signet::journal::{Entry, MemoryJournal};
use signet::lm::{Lm, LmOptions, Usage};
use signet::module::{CallConfig, Error, Predict};
use signet::optimize::{BootstrapFewShot, Gepa, GepaBudget, MiproBudget, MiproV2};
use signet::prelude::*;

/// Fulfil the user's request by calling the given functions, with argument values taken from the
/// request. Make several calls when the request asks for several things. When none of the
/// functions fits the request, make no call.
#[derive(Signature)]
pub struct FunctionCall {
    #[input]
    pub question: String,
    #[input]
    pub tools: Tools,
    #[output]
    pub tool_calls: ToolCalls,
}

#[path = "shared/api_model.rs"]
mod api_model;
use api_model::{api_lm, reflection_lm};

/// The most calls constrained mode allows in one reply.
pub const MAX_CALLS: usize = 4;

/// The longest string argument constrained mode allows, in characters (one of BFCL's 10,632
/// expected string values is longer).
pub const MAX_STRING: usize = 200;

/// The longest array argument constrained mode allows (two of BFCL's 853 expected arrays are
/// longer).
pub const MAX_ITEMS: usize = 16;

const MODES: [&str; 5] = ["native", "chat", "json", "xml", "constrained"];

pub fn adapter(mode: &str) -> Result<Arc<dyn Adapter>, String> {
    Ok(match mode {
        "native" => Arc::new(ChatAdapter::new().with_native_function_calling(true)),
        "chat" => Arc::new(ChatAdapter::new()),
        "json" => Arc::new(JsonAdapter::new().with_native_function_calling(false)),
        "xml" => Arc::new(XmlAdapter::new()),
        // Up to 4 calls: all but 6 of BFCL's 2,351 single-turn AST answers have at most 4, and
        // unbounded, a small model repeats a call until the token limit cuts the reply off.
        "constrained" => Arc::new(
            JsonAdapter::constrained()
                .with_max_tool_calls(MAX_CALLS)
                .with_max_string_length(MAX_STRING)
                .with_max_array_items(MAX_ITEMS),
        ),
        other => return Err(format!("unknown mode `{other}`; the modes are {MODES:?}")),
    })
}

/// The program of one mode.
pub fn program(mode: &str, lm: Arc<dyn Lm>) -> Result<Predict<FunctionCall>, String> {
    Ok(Predict::<FunctionCall>::new()
        .with_adapter(adapter(mode)?)
        .with_lm(lm)
        .with_options(LmOptions::new().temperature(0.0).max_tokens(512)))
}

/// A BFCL parameter schema as JSON Schema: BFCL writes Python's type names (`dict`, `float`,
/// `tuple`, `any`) where JSON Schema has `object`, `number`, `array`; `any` becomes `string`, as in
/// BFCL's own conversion for function-calling models (its answers for `any` are strings).
pub fn json_schema(bfcl: &Value) -> Value {
    let Value::Object(map) = bfcl else {
        return bfcl.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "type" => match value.as_str() {
                Some("dict") => {
                    out.insert("type".into(), json!("object"));
                }
                Some("float") => {
                    out.insert("type".into(), json!("number"));
                }
                Some("tuple") => {
                    out.insert("type".into(), json!("array"));
                }
                Some("any") => {
                    out.insert("type".into(), json!("string"));
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            },
            "properties" => {
                let properties = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(name, schema)| (name.clone(), json_schema(schema)))
                            .collect::<Map<String, Value>>()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" | "additionalProperties" => {
                out.insert(key.clone(), json_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// OpenAI function names allow letters, digits, `_` and `-`; BFCL's have dots (`math.factorial`).
pub fn wire_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One exported question, ready for Signet: the inputs, and the wire names back to BFCL's.
pub struct Question {
    pub id: String,
    pub category: String,
    /// The language BFCL's checker reads the calls in: `python`, `java` or `javascript`.
    pub language: String,
    pub input: FunctionCallInput,
    pub names: HashMap<String, String>,
    /// BFCL's possible answers (`null` where the right answer is no call).
    pub ground_truth: Value,
}

impl Question {
    /// The JSON Schema of the parameters of the function sent as `wire`.
    pub fn parameters(&self, wire: &str) -> Option<&Value> {
        self.input
            .tools
            .0
            .iter()
            .find(|tool| tool["function"]["name"] == wire)
            .map(|tool| &tool["function"]["parameters"])
    }

    /// `calls` as BFCL's result format writes them, `{name: arguments}` under BFCL's own names.
    pub fn bfcl_calls(&self, calls: &ToolCalls) -> Vec<Value> {
        calls
            .tool_calls
            .iter()
            .map(|call| {
                let name = self.names.get(&call.name).unwrap_or(&call.name);
                json!({ name: call.args })
            })
            .collect()
    }
}

pub fn question(line: &str) -> Result<Question, String> {
    let record: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let id = record["id"].as_str().ok_or("no `id`")?.to_owned();
    let category = record["category"].as_str().unwrap_or_default().to_owned();
    let language = record["language"].as_str().unwrap_or("python").to_owned();
    let messages = record["messages"].as_array().ok_or("no `messages`")?;
    let text: Vec<String> = messages
        .iter()
        .map(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            if messages.len() == 1 {
                content.to_owned()
            } else {
                format!("{}: {content}", m["role"].as_str().unwrap_or("user"))
            }
        })
        .collect();
    let mut names = HashMap::new();
    let mut tools = Vec::new();
    for function in record["functions"].as_array().ok_or("no `functions`")? {
        let name = function["name"]
            .as_str()
            .ok_or("a function without a name")?;
        let wire = wire_name(name);
        names.insert(wire.clone(), name.to_owned());
        tools.push(json!({
            "type": "function",
            "function": {
                "name": wire,
                "description": function["description"],
                "parameters": json_schema(&function["parameters"]),
            }
        }));
    }
    Ok(Question {
        id,
        category,
        language,
        input: FunctionCallInput {
            question: text.join("\n"),
            tools: Tools(tools),
        },
        names,
        ground_truth: record["ground_truth"].clone(),
    })
}

/// Runs one question; the result line BFCL's scorer reads (`calls` null when the reply could not
/// be read as calls). Its tokens are those of every LM call the question cost, read or not: the
/// call goes through a [`MemoryJournal`], which keeps each completion, usage included, even when
/// the prediction fails.
pub async fn answer(
    program: &Predict<FunctionCall>,
    q: &Question,
    mode: &str,
    model: &str,
) -> Value {
    let journal = MemoryJournal::new();
    let config = CallConfig::new().with_journal(journal.clone());
    let start = Instant::now();
    let result = program.call_full(q.input.clone(), &config).await;
    let seconds = start.elapsed().as_secs_f64();
    let usage = spent(&journal);
    let mut line = json!({"id": q.id, "category": q.category, "mode": mode, "model": model,
        "seconds": seconds, "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens, "calls": null});
    match result {
        Ok((output, _)) => {
            line["calls"] = json!(q.bfcl_calls(&output.tool_calls));
        }
        Err(Error::Parse(error)) => {
            line["error"] = json!(format!("unparseable reply: {error}"));
            line["error_kind"] = json!("parse");
        }
        Err(error) => {
            line["error"] = json!(error.to_string());
            line["error_kind"] = json!("lm");
        }
    }
    line
}

/// What the LM calls a journal recorded spent, summed over those that returned a completion.
fn spent(journal: &MemoryJournal) -> Usage {
    let mut usage = Usage::default();
    for entry in journal.entries() {
        if let Entry::Lm {
            result: Ok(completion),
            ..
        } = entry
        {
            usage += completion.usage;
        }
    }
    usage
}

/// A training example for the optimizer: the inputs, BFCL's possible answers (what the metrics
/// read) and, as the `tool_calls` label a labeled demo shows, the first of those answers
/// ([`answer_calls`]; none for Java and JavaScript questions).
pub fn example(q: &Question) -> Example {
    let mut values = json!({
        "question": q.input.question,
        "tools": q.input.tools,
        "ground_truth": q.ground_truth,
    });
    if let Some(calls) = answer_calls(q) {
        values["tool_calls"] = json!(calls);
    }
    Example::new(values).with_inputs(["question", "tools"])
}

/// BFCL's first possible answer to `q` as calls (wire names): every argument its first listed
/// value, an argument that may be left out (`""` among its values) left out unless its function
/// requires it, and no call where the right answer is none. `None` for the Java and JavaScript
/// categories, whose checker wants each value written as source text of that language (`new
/// ArrayList<>(…)`), which BFCL's possible answers do not say how to write.
pub fn answer_calls(q: &Question) -> Option<ToolCalls> {
    if q.language != "python" {
        return None;
    }
    let required = |wire: &str| -> Vec<String> {
        q.parameters(wire)
            .and_then(|parameters| parameters["required"].as_array())
            .map(|names| {
                names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let tool_calls = q
        .ground_truth
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|answer| answer.as_object()?.iter().next())
        .map(|(name, possible)| {
            let wire = wire_name(name);
            let required = required(&wire);
            let args: Map<String, Value> = possible
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, values)| {
                    !values.as_array().is_some_and(|v| v.contains(&json!("")))
                        || required.contains(key)
                })
                .filter_map(|(key, values)| Some((key.clone(), first_value(values)?)))
                .collect();
            ToolCallRecord {
                id: None,
                name: wire,
                args: Value::Object(args),
            }
        })
        .collect();
    Some(ToolCalls { tool_calls })
}

/// Whether `value` is a dict answer whose possible values BFCL lists per key (every value a
/// list), rather than a literal dict (as in the Java and JavaScript categories).
fn lists_per_key(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|keys| keys.values().all(Value::is_array))
}

/// The first value of a list of possible values other than `""` (none: `None`). A dict value's
/// possible values are listed per key, so it is resolved key by key, as are dicts inside lists.
fn first_value(possible: &Value) -> Option<Value> {
    fn resolve(value: &Value) -> Value {
        match value {
            Value::Object(keys) if lists_per_key(value) => Value::Object(
                keys.iter()
                    .filter_map(|(key, values)| Some((key.clone(), first_value(values)?)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(resolve).collect()),
            scalar => scalar.clone(),
        }
    }
    let values = possible.as_array()?;
    values.iter().find(|v| **v != json!("")).map(resolve)
}

/// Whether `calls` match BFCL's possible answers `truth` (`null`: no call is right), the way its
/// checker reads them: the same number of calls, each matching a different answer by function
/// name, every argument given one of its possible values, every argument without `""` among its
/// values given. Used to pick demos while compiling; the reported scores are the checker's own.
pub fn matches(truth: &Value, calls: &ToolCalls) -> bool {
    let Some(answers) = truth.as_array() else {
        return calls.tool_calls.is_empty();
    };
    if answers.len() != calls.tool_calls.len() {
        return false;
    }
    let mut used = vec![false; calls.tool_calls.len()];
    answers.iter().all(|answer| {
        let Some((name, args)) = answer.as_object().and_then(|a| a.iter().next()) else {
            return false;
        };
        let found = calls.tool_calls.iter().enumerate().position(|(i, call)| {
            !used[i] && call.name == wire_name(name) && arguments_match(args, &call.args)
        });
        found.map(|i| used[i] = true).is_some()
    })
}

fn arguments_match(possible: &Value, given: &Value) -> bool {
    let (Some(possible), Some(given)) = (possible.as_object(), given.as_object()) else {
        return false;
    };
    let optional = |values: &Value| values.as_array().is_some_and(|v| v.contains(&json!("")));
    given.keys().all(|k| possible.contains_key(k))
        && possible.iter().all(|(key, values)| match given.get(key) {
            None => optional(values),
            Some(value) => values
                .as_array()
                .is_some_and(|v| v.iter().any(|want| same_value(want, value))),
        })
}

fn same_value(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
        // A dict's possible values are listed per key, as a call's arguments are.
        (Value::Object(_), Value::Object(_)) if lists_per_key(want) => arguments_match(want, got),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        _ => want == got,
    }
}

/// GEPA's metric: 1 when the calls match BFCL's possible answers, with feedback saying which
/// calls the request needed and which the reply made (what the reflection LM reads).
fn graded(example: &Example, output: &FunctionCallOutput) -> Score {
    let truth = example.get("ground_truth").unwrap_or(&Value::Null);
    let made: Vec<Value> = output
        .tool_calls
        .tool_calls
        .iter()
        .map(|c| json!({ c.name.clone(): c.args }))
        .collect();
    if matches(truth, &output.tool_calls) {
        return Score::new(1.0).with_feedback("Right: these are the calls the request needs.");
    }
    let needed = match truth {
        Value::Null => "no function call at all (none of the functions fits the request)".into(),
        truth => format!(
            "these calls (each argument with its accepted values; \"\" marks an optional one): {truth}"
        ),
    };
    Score::new(0.0).with_feedback(format!(
        "Wrong. The request needed {needed}. The reply made {}.",
        Value::Array(made)
    ))
}

struct Args {
    questions: String,
    results: String,
    modes: Vec<String>,
    model: String,
    concurrency: Option<usize>,
    train: Option<String>,
    demos: usize,
    labeled: usize,
    per_category: bool,
    optimizer: String,
    budget: usize,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        questions: String::new(),
        results: String::new(),
        modes: vec!["native".into()],
        model: "local".into(),
        concurrency: None,
        train: None,
        demos: 2,
        labeled: 0,
        per_category: false,
        optimizer: "bootstrap".into(),
        budget: 150,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |text: String| {
            text.parse::<usize>()
                .map_err(|_| format!("{flag}: not a number: {text}"))
        };
        match flag.as_str() {
            "--questions" => args.questions = value()?,
            "--results" => args.results = value()?,
            "--modes" => args.modes = value()?.split(',').map(str::to_owned).collect(),
            "--model" => args.model = value()?,
            "--concurrency" => args.concurrency = Some(number(value()?)?),
            "--train" => args.train = Some(value()?),
            "--demos" => args.demos = number(value()?)?,
            "--labeled" => args.labeled = number(value()?)?,
            "--per-category" => args.per_category = true,
            "--optimizer" => args.optimizer = value()?,
            "--budget" => args.budget = number(value()?)?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.questions.is_empty() || args.results.is_empty() {
        return Err("--questions FILE and --results FILE are required".into());
    }
    for mode in &args.modes {
        adapter(mode)?;
    }
    if !["bootstrap", "gepa", "mipro"].contains(&args.optimizer.as_str()) {
        return Err(format!(
            "--optimizer is `bootstrap`, `gepa` or `mipro`, not `{}`",
            args.optimizer
        ));
    }
    Ok(args)
}

/// The questions of an exported file, one per line.
fn read_questions(path: &str) -> Result<Vec<Question>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .filter(|(_, line)| line.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(|(n, line)| {
            question(&line.map_err(|e| e.to_string())?)
                .map_err(|e| format!("{path} line {}: {e}", n + 1))
        })
        .collect()
}

/// Answers every question with `program`, `concurrency` at a time, in order.
async fn answer_all(
    program: &Predict<FunctionCall>,
    questions: &[&Question],
    mode: &str,
    model: &str,
    concurrency: usize,
) -> Vec<Value> {
    let start = Instant::now();
    let lines: Vec<Value> = futures::stream::iter(questions)
        .map(|q| answer(program, q, mode, model))
        .buffered(concurrency)
        .collect()
        .await;
    let read = lines.iter().filter(|l| !l["calls"].is_null()).count();
    eprintln!(
        "{mode}: {} questions in {:.1} s, {read} replies read as calls",
        lines.len(),
        start.elapsed().as_secs_f64()
    );
    lines
}

/// The questions and training questions of each category, in the order the categories first
/// appear among the questions.
pub fn by_category<'q>(
    questions: &'q [Question],
    train: &'q [Question],
) -> Vec<(Vec<&'q Question>, Vec<&'q Question>)> {
    let mut categories: Vec<&str> = Vec::new();
    for q in questions {
        if !categories.contains(&q.category.as_str()) {
            categories.push(&q.category);
        }
    }
    let of = |qs: &'q [Question], category: &str| -> Vec<&'q Question> {
        qs.iter().filter(|q| q.category == category).collect()
    };
    categories
        .into_iter()
        .map(|c| (of(questions, c), of(train, c)))
        .collect()
}

/// The program of `mode` compiled on `train` by the chosen optimizer, and its row label
/// (`<mode>+bootstrap`, `<mode>+gepa` or `<mode>+mipro`).
async fn compile(
    args: &Args,
    mode: &str,
    zero_shot: &Predict<FunctionCall>,
    train: &[&Question],
    lm: &Arc<dyn Lm>,
    concurrency: usize,
) -> Result<(String, Predict<FunctionCall>), Box<dyn std::error::Error>> {
    let trainset: Vec<Example> = train.iter().map(|q| example(q)).collect();
    Ok(match args.optimizer.as_str() {
        "gepa" => {
            let reflection = reflection_lm(lm)?;
            let compiled = Gepa::new(graded, reflection)
                .with_reflection_options(LmOptions::new().max_tokens(600))
                .with_budget(GepaBudget::MetricCalls(args.budget))
                .with_concurrency(concurrency)
                .compile(zero_shot, &trainset, &trainset)
                .await?;
            eprintln!(
                "{mode}+gepa: {}; instructions now: {:?}",
                compiled.report,
                compiled.program.predictor().instructions()
            );
            (format!("{mode}+gepa"), compiled.program)
        }
        "mipro" => {
            // Bootstrapped demos (and labeled ones, BFCL's first possible answers, with
            // `--labeled L`) and proposed instructions, searched with every trial on the
            // whole training set, until 10 trials or the metric-call budget.
            let compiled = MiproV2::new(graded, reflection_lm(lm)?)
                .with_prompt_options(LmOptions::new().max_tokens(600))
                .with_budget(MiproBudget::Manual {
                    candidates: 3,
                    trials: 10,
                })
                .with_max_bootstrapped_demos(args.demos)
                .with_max_labeled_demos(args.labeled)
                .with_minibatch(false)
                .with_max_metric_calls(args.budget)
                .with_concurrency(concurrency)
                .compile(zero_shot, &trainset, &trainset)
                .await?;
            eprintln!(
                "{mode}+mipro: {}; instructions now: {:?}, {} demos",
                compiled.report,
                compiled.program.predictor().instructions(),
                compiled.program.predictor().demos().len()
            );
            (format!("{mode}+mipro"), compiled.program)
        }
        _ => {
            let metric = |example: &Example, output: &FunctionCallOutput| {
                matches(
                    example.get("ground_truth").unwrap_or(&Value::Null),
                    &output.tool_calls,
                )
            };
            let compiled = BootstrapFewShot::new(metric)
                .with_max_bootstrapped_demos(args.demos)
                .with_max_labeled_demos(args.labeled)
                .with_concurrency(concurrency)
                .compile(zero_shot, &trainset)
                .await?;
            let (bootstrapped, labeled) = compiled
                .report
                .demos
                .iter()
                .fold((0, 0), |(b, l), (_, bd, ld)| (b + bd, l + ld));
            eprintln!(
                "{mode}+bootstrap: {bootstrapped} bootstrapped demos from {} training \
                 questions tried, {labeled} labeled",
                compiled.report.examples_tried
            );
            (format!("{mode}+bootstrap"), compiled.program)
        }
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("bfcl: {e}"))?;
    let questions = read_questions(&args.questions)?;
    let train = match &args.train {
        Some(path) => read_questions(path)?,
        None => Vec::new(),
    };

    // The model: SmolLM2-135M served locally, or any OpenAI-compatible endpoint.
    let (lm, model, _server, concurrency): (Arc<dyn Lm>, String, _, usize) =
        match args.model.as_str() {
            "local" => {
                let local = signet_local::LlamaCpp::smollm2();
                let server = local.serve().await?;
                (
                    local.lm(&server)?,
                    "SmolLM2-135M".to_owned(),
                    Some(server),
                    1,
                )
            }
            "api" => {
                let (lm, name) = api_lm()?;
                (lm, name, None, 8)
            }
            other => return Err(format!("bfcl: --model is `local` or `api`, not `{other}`").into()),
        };
    let concurrency = args.concurrency.unwrap_or(concurrency);
    let mut out = std::fs::File::create(&args.results)?;
    for mode in &args.modes {
        let zero_shot = program(mode, lm.clone())?;
        let all: Vec<&Question> = questions.iter().collect();
        let mut lines = answer_all(&zero_shot, &all, mode, &model, concurrency).await;
        if !train.is_empty() {
            let groups = if args.per_category {
                by_category(&questions, &train)
            } else {
                vec![(questions.iter().collect(), train.iter().collect())]
            };
            for (held_out, train) in groups {
                let (label, compiled) =
                    compile(&args, mode, &zero_shot, &train, &lm, concurrency).await?;
                lines.extend(answer_all(&compiled, &held_out, &label, &model, concurrency).await);
            }
        }
        for line in &lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
