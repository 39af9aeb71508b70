//! DSPy parity: replays runs recorded from Python DSPy 3.4.1 and checks that Signet sends
//! byte-identical messages and the same LM kwargs, and reaches the same outcome.
//!
//! Fixtures are read from `tests/fixtures/dspy/` and `tests/fixtures/dspy_programs/` (recorded
//! runs and saved programs, copied into the repository so that a clone checks itself), or from the
//! folders `$SIGNET_PARITY_FIXTURES` names instead (separated by `:`; every fixture family may be in
//! any of them). Each fixture prints one line — `pass`, `FAIL` with the first difference, or
//! `unsupported` with the reason; runs that differ from their recording only in a deliberate way
//! ([`BY_DESIGN`]) follow as `differs (by design: <reason>)` lines, and the run ends with
//! `N passed, D differ by design, M failed, K unsupported`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use signet::adapter::{
    self, Adapter, ChatAdapter, Fields, JsonAdapter, TwoStepAdapter, XmlAdapter,
};
use signet::lm::{
    Capabilities, Completion, LmError, LmOptions, LmRequest, ResponseFormat, ToolCall, ToolChoice,
};
use signet::module::{
    BestOfN, CallConfig, DynPredict, DynReAct, Error, Limits, Module, Predictors, ReActMode,
    Refine, react::RunFailure, with_reasoning,
};
use signet::signature::{Constraint, FieldKind};
use signet::testing::ScriptedLm;
use signet::tool::FnTool;
use signet::{DynSignature, Field};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

enum Outcome {
    Pass,
    /// Passes once the listed deliberate differences ([`BY_DESIGN`]) are taken into account.
    ByDesign(Vec<&'static str>),
    Fail(String),
    Unsupported(String),
}

/// A behaviour where Signet differs from DSPy 3.4.1 on purpose (each is documented with its reason
/// in `docs/dspy.md`, "Deliberate differences").
struct ByDesign {
    /// What differs, and why; printed as `differs (by design: <reason>)`.
    reason: &'static str,
    /// How the difference is recognised: rewrites what DSPy recorded into what Signet does on
    /// purpose, anywhere in a fixture; returns whether anything changed.
    rewrite: fn(&mut Value) -> bool,
}

/// The deliberate differences. A fixture that fails as recorded is run again with every rewrite
/// applied; if it then passes, the runner prints the reasons of the rewrites that changed it.
const BY_DESIGN: &[ByDesign] = &[
    ByDesign {
        reason: "a tool's error observation is its message, not a Python traceback",
        rewrite: |fixture| {
            rewrite_strings(
                fixture,
                &|text| text.contains("Traceback (most recent call last)"),
                &scrub_tracebacks,
            )
        },
    },
    ByDesign {
        reason: "an assistant message that only calls tools has content \"\", not null (llama.cpp rejects null)",
        rewrite: |fixture| {
            rewrite_objects(fixture, &mut |object| {
                let target = object.get("role") == Some(&json!("assistant"))
                    && object.get("content") == Some(&Value::Null);
                if target {
                    object.insert("content".into(), json!(""));
                }
                target
            })
        },
    },
    ByDesign {
        reason: "Refine's feedback step is shown the program and the reward as the Rust program describes them (`with_program_code`, `with_reward_code`), not Python source",
        rewrite: |fixture| {
            rewrite_strings(
                fixture,
                &|text| text.starts_with("[[ ## program_code ## ]]"),
                &|text| {
                    let text =
                        replace_block(text, "program_code", "modules_defn", REFINE_PROGRAM_CODE);
                    replace_block(&text, "reward_code", "target_threshold", REFINE_REWARD_CODE)
                },
            )
        },
    },
    ByDesign {
        reason: "invalid tool arguments are described by Signet (each problem with its path, as `invalid arguments for tool ..`), not in jsonschema's or Python's words",
        rewrite: |fixture| {
            rewrite_strings(
                fixture,
                &|text| argument_error_at(text, 0).is_some(),
                &signet_worded_argument_errors,
            )
        },
    },
    ByDesign {
        reason: "NaN or infinity in a float field is a parse error (Signet's values are JSON, which has neither), so the Chat adapter falls back to JSON",
        rewrite: non_finite_floats_are_parse_errors,
    },
    ByDesign {
        reason: "a step naming a tool that does not exist gets an observation saying so (the model can correct itself), where DSPy's parse error ends the run",
        rewrite: unknown_tool_continues,
    },
    ByDesign {
        reason: "a missing input is `Error::MissingInput` before any LM call, where DSPy logs a warning and prompts without it",
        rewrite: |fixture| {
            let warned = fixture["logs"].as_array().into_iter().flatten().any(|log| {
                log.to_string()
                    .contains("Not all input fields were provided to module")
            });
            if warned {
                fixture["calls"] = json!([]);
                fixture["result"] = json!({"error": {"type": "MissingInput"}});
            }
            warned
        },
    },
    ByDesign {
        reason: "a tool result message names its call by `tool_call_id` only (the OpenAI API defines no `name` on it)",
        rewrite: |fixture| {
            rewrite_objects(fixture, &mut |object| {
                object.get("role") == Some(&json!("tool"))
                    && object.contains_key("tool_call_id")
                    && object.shift_remove("name").is_some()
            })
        },
    },
];

/// Stands, in a rewritten recording, for text Signet words its own way (the rest of a line, or of a
/// JSON string); [`text_matches`] lets it match any text there.
const SIGNET_WORDING: &str = "\u{27ea}Signet's wording\u{27eb}";

/// Whether `got` is `want`, where each [`SIGNET_WORDING`] in `want` stands for any text.
fn text_matches(want: &str, got: &str) -> bool {
    let mut parts = want.split(SIGNET_WORDING);
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = got.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last) && rest.len() >= last.len()
}

/// Line by line [`text_matches`] (a wording never spans lines).
fn lines_match(want: &str, got: &str) -> bool {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    w.len() == g.len() && w.iter().zip(&g).all(|(w, g)| text_matches(w, g))
}

/// JSON values equal but for [`SIGNET_WORDING`] in `want`'s strings.
fn values_match(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(w), Value::String(g)) => lines_match(w, g),
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(w, g)| values_match(w, g))
        }
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, w)| g.get(k).is_some_and(|g| values_match(w, g)))
        }
        _ => want == got,
    }
}

/// Where, from `from` on, `text` holds a tool observation that is an argument error in DSPy's
/// words (`Execution error in add: Arg a is invalid: ..`, `.. is not in the tool's args.`,
/// `add() missing 1 required positional argument: 'b'`, `.. got an unexpected keyword argument
/// ..`), once its traceback is reduced to its message: the start and end of the message.
fn argument_error_at(text: &str, from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(found) = text[at..].find("Execution error in ") {
        let start = at + found;
        let after = &text[start..];
        let colon = after.find(": ")?;
        let message_start = start + colon + 2;
        let message = &text[message_start..];
        let end = [message.find('\n'), unescaped_quote(message)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(message.len());
        let body = &message[..end];
        let is_argument_error = (body.starts_with("Arg ")
            && (body.contains(" is invalid: ") || body.ends_with(" is not in the tool's args.")))
            || body.contains(" required positional argument")
            || body.contains("got an unexpected keyword argument");
        if is_argument_error {
            return Some((message_start, message_start + end));
        }
        at = message_start;
    }
    None
}

/// Every argument error in DSPy's words replaced by the start of Signet's (`invalid arguments
/// for tool \``) and [`SIGNET_WORDING`] for the rest.
fn signet_worded_argument_errors(text: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    while let Some((start, end)) = argument_error_at(text, at) {
        out.push_str(&text[at..start]);
        // Signet's own words for it start so; the rest is Signet's.
        out.push_str("invalid arguments for tool `");
        out.push_str(SIGNET_WORDING);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// A ReAct run where a step names a tool the agent does not have: DSPy's parse of the step fails
/// (the name is a `Literal` of the tools), its JSON fallback runs, and the run ends or goes on
/// from the fallback's reply. Signet reads the name and shows the model an observation instead.
/// Only the calls up to that step can be compared: the recording keeps them, and marks the run
/// to check that Signet's next call shows the observation (`"signet_observes_unknown_tool"`).
fn unknown_tool_continues(fixture: &mut Value) -> bool {
    if fixture["module"] != json!("ReAct") {
        return false;
    }
    let known: Vec<&str> = fixture["react"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .chain(["finish"])
        .collect();
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let unknown = calls.iter().enumerate().find_map(|(i, call)| {
        let name = reply_tool_name(&call["reply"])?;
        (!known.contains(&name.as_str())).then_some((i, name))
    });
    let Some((index, name)) = unknown else {
        return false;
    };
    fixture["calls"] = Value::Array(calls[..=index].to_vec());
    fixture["signet_observes_unknown_tool"] = json!(name);
    true
}

/// Parse cases whose recorded value holds a non-finite float (`{"__float__": "NaN"}`): the
/// direct parse and the pipeline without the JSON fallback fail to parse, and the pipeline with it
/// makes the fallback call and returns what its reply holds.
fn non_finite_floats_are_parse_errors(fixture: &mut Value) -> bool {
    let mut changed = false;
    for case in fixture["cases"].as_array_mut().into_iter().flatten() {
        if !case["direct_parse"]["outputs"]
            .to_string()
            .contains("\"__float__\"")
        {
            continue;
        }
        let parse_error = json!({"error": {"type": "AdapterParseError"}});
        case["direct_parse"] = parse_error.clone();
        case["pipeline_no_fallback"] = json!({"num_lm_calls": 1, "result": parse_error});
        let fallback = &mut case["pipeline_with_fallback"];
        let reply = fallback["fallback_reply"].as_str().unwrap_or_default();
        let outputs: Value = serde_json::from_str(reply).unwrap_or(Value::Null);
        fallback["num_lm_calls"] = json!(2);
        fallback["fell_back_to_json_adapter"] = json!(true);
        fallback["result"] = json!({"outputs": outputs});
        changed = true;
    }
    changed
}

/// The tool a ReAct step's reply names: Chat's `[[ ## next_tool_name ## ]]` block, or the JSON
/// adapter's `next_tool_name`.
fn reply_tool_name(reply: &Value) -> Option<String> {
    let text = reply["content"].as_str()?;
    if let Some(rest) = text.split("[[ ## next_tool_name ## ]]\n").nth(1) {
        return rest.split('\n').next().map(|n| n.trim().to_owned());
    }
    let object: Value = serde_json::from_str(text.trim()).ok()?;
    object["next_tool_name"].as_str().map(str::to_owned)
}

/// What the Refine fixtures' runs show the feedback step as the program's and the reward's code
/// (DSPy shows their Python source; see the by-design rule that writes these into the recording).
const REFINE_PROGRAM_CODE: &str = "(the program, as the Rust program describes it)";
const REFINE_REWARD_CODE: &str = "(the reward function, as the Rust program describes it)";

/// The text of the block `[[ ## name ## ]]` up to the block `next` in a Chat-format message,
/// replaced with `with`.
fn replace_block(text: &str, name: &str, next: &str, with: &str) -> String {
    let head = format!("[[ ## {name} ## ]]\n");
    let tail = format!("\n\n[[ ## {next} ## ]]");
    match (text.find(&head), text.find(&tail)) {
        (Some(start), Some(end)) if start + head.len() <= end => {
            format!("{}{with}{}", &text[..start + head.len()], &text[end..])
        }
        _ => text.to_owned(),
    }
}

/// Applies `rewrite` to every string of `value` that `matches`; returns whether one changed.
fn rewrite_strings(
    value: &mut Value,
    matches: &dyn Fn(&str) -> bool,
    rewrite: &dyn Fn(&str) -> String,
) -> bool {
    match value {
        Value::String(text) if matches(text) => {
            let new = rewrite(text);
            let changed = new != *text;
            *text = new;
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            rewrite_strings(item, matches, rewrite) | changed
        }),
        Value::Object(object) => object.values_mut().fold(false, |changed, item| {
            rewrite_strings(item, matches, rewrite) | changed
        }),
        _ => false,
    }
}

/// Applies `rewrite` to every object in `value` (outermost first); returns whether one changed.
fn rewrite_objects(
    value: &mut Value,
    rewrite: &mut dyn FnMut(&mut Map<String, Value>) -> bool,
) -> bool {
    match value {
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            rewrite_objects(item, rewrite) | changed
        }),
        Value::Object(object) => {
            let mut changed = rewrite(object);
            for item in object.values_mut() {
                changed |= rewrite_objects(item, rewrite);
            }
            changed
        }
        _ => false,
    }
}

fn fixture_dirs() -> Vec<PathBuf> {
    match std::env::var_os("SIGNET_PARITY_FIXTURES") {
        Some(dirs) => std::env::split_paths(&dirs).collect(),
        None => {
            // Cargo sets the manifest directory at run time too; prefer it to the compile-time one,
            // so a moved checkout still finds its fixtures.
            let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf());
            ["dspy", "dspy_programs"]
                .iter()
                .map(|family| manifest.join("tests/fixtures").join(family))
                .collect()
        }
    }
}

#[test]
fn dspy_parity() {
    let dirs = fixture_dirs();
    let mut paths: Vec<PathBuf> = Vec::new();
    for dir in &dirs {
        let entries = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read the fixture folder {}: {e}", dir.display()));
        paths.extend(
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "json")),
        );
    }
    paths.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
    assert!(!paths.is_empty(), "no fixtures in {dirs:?}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut passed, mut by_design, mut failed, mut unsupported) = (0, 0, 0, 0);
    let mut differing = Vec::new();
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let outcome = match std::fs::read_to_string(path).map(|t| serde_json::from_str::<Value>(&t))
        {
            Ok(Ok(fixture)) => runtime.block_on(run_fixture(&fixture)),
            Ok(Err(e)) => Outcome::Fail(format!("not valid JSON: {e}")),
            Err(e) => Outcome::Fail(format!("unreadable: {e}")),
        };
        match outcome {
            Outcome::Pass => {
                passed += 1;
                println!("pass         {name}");
            }
            Outcome::ByDesign(reasons) => {
                by_design += 1;
                differing.push((name, reasons));
            }
            Outcome::Fail(why) => {
                failed += 1;
                println!("FAIL         {name}: {why}");
            }
            Outcome::Unsupported(why) => {
                unsupported += 1;
                println!("unsupported  {name}: {why}");
            }
        }
    }
    // Deliberate differences apart, so that a reader sees them together with their reasons.
    for (name, reasons) in &differing {
        for reason in reasons {
            println!("differs      {name} (by design: {reason})");
        }
    }
    println!(
        "parity: {passed} passed, {by_design} differ by design, {failed} failed, {unsupported} unsupported"
    );
    assert_eq!(
        failed, 0,
        "{failed} parity fixture(s) failed (see the lines above)"
    );
}

/// Runs a fixture as recorded; if it fails, again with the deliberate differences rewritten.
async fn run_fixture(fixture: &Value) -> Outcome {
    let why = match run_family(fixture).await {
        Outcome::Fail(why) => why,
        other => return other,
    };
    let rewritten = |rules: &[&ByDesign]| {
        let mut fixture = fixture.clone();
        let changed: Vec<&'static str> = rules
            .iter()
            .filter(|rule| (rule.rewrite)(&mut fixture))
            .map(|rule| rule.reason)
            .collect();
        (fixture, changed)
    };
    let mut rules: Vec<&ByDesign> = BY_DESIGN.iter().collect();
    let (all, changed) = rewritten(&rules);
    rules.retain(|rule| changed.contains(&rule.reason));
    if rules.is_empty() {
        return Outcome::Fail(why);
    }
    match run_family(&all).await {
        Outcome::Pass => {}
        Outcome::Fail(rest) => {
            return Outcome::Fail(format!("{rest} (beyond the deliberate differences)"));
        }
        other => return other,
    }
    // Name only the differences the run needs: drop each rule the run passes without.
    let mut i = 0;
    while i < rules.len() {
        let mut others = rules.clone();
        others.remove(i);
        if matches!(run_family(&rewritten(&others).0).await, Outcome::Pass) {
            rules = others;
        } else {
            i += 1;
        }
    }
    Outcome::ByDesign(rules.iter().map(|rule| rule.reason).collect())
}

/// Runs a fixture by its family.
async fn run_family(fixture: &Value) -> Outcome {
    if fixture.get("cases").is_some() {
        return run_parse_cases(fixture).await;
    }
    if fixture.get("tools").is_some() && fixture.get("call_results").is_some() {
        return run_tool_introspection(fixture).await;
    }
    if fixture.get("tool_schemas").is_some() {
        return match crate::parity_tools::check(fixture) {
            crate::parity_tools::Checked::Same => Outcome::Pass,
            crate::parity_tools::Checked::Differs(why) => Outcome::Fail(why),
            crate::parity_tools::Checked::NoTwin(names) => Outcome::Unsupported(format!(
                "no #[tool] twin in tests/interop/parity_tools.rs for {}",
                names.join(", ")
            )),
        };
    }
    if fixture.get("saved_program").is_some() {
        return match run_saved_program(fixture).await {
            Ok(()) => Outcome::Pass,
            Err(Skip::Fail(why)) => Outcome::Fail(why),
            Err(Skip::Unsupported(why)) => Outcome::Unsupported(why),
        };
    }
    if fixture.get("module").is_none() {
        return Outcome::Unsupported("neither a module run nor a known fixture family".to_owned());
    }
    match run_module(fixture).await {
        Ok(()) => Outcome::Pass,
        Err(Skip::Fail(why)) => Outcome::Fail(why),
        Err(Skip::Unsupported(why)) => Outcome::Unsupported(why),
    }
}

enum Skip {
    Fail(String),
    Unsupported(String),
}

fn fail<T>(why: impl Into<String>) -> Result<T, Skip> {
    Err(Skip::Fail(why.into()))
}

/// The recorded signature as a `DynSignature` (field names, type names, descriptions, schemas,
/// instructions).
fn signature(recorded: &Value, drop_reasoning: bool) -> DynSignature {
    let field = |f: &Value| {
        let schema = f
            .get("json_schema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "string"}));
        let type_name = f["type"].as_str().unwrap_or("str");
        // DSPy's special types, recognised by the name DSPy recorded for them.
        let kind = match type_name {
            "History" => Some(FieldKind::History),
            "ToolCalls" => Some(FieldKind::ToolCalls),
            "list[Tool]" => Some(FieldKind::Tools),
            "Image"
            | "Audio"
            | "list[Image]"
            | "list[Audio]"
            | "Union[Image, NoneType]"
            | "Union[Audio, NoneType]" => Some(FieldKind::Media),
            _ => None,
        };
        let mut field = Field::from_schema(f["name"].as_str().unwrap_or_default(), schema)
            .with_type_name(type_name)
            .with_desc(f["rendered_desc"].as_str().unwrap_or_default());
        if let Some(kind) = kind {
            field = field.with_kind(kind);
        }
        for constraint in f["constraints"]
            .as_str()
            .map(constraints)
            .into_iter()
            .flatten()
        {
            field = field.with_constraint(constraint);
        }
        field
    };
    let mut sig = DynSignature::new(recorded["name"].as_str().unwrap_or("Signature"))
        .with_instructions(recorded["instructions"].as_str().unwrap_or_default());
    for f in recorded["input_fields"].as_array().into_iter().flatten() {
        sig = sig.with_input(field(f));
    }
    for (i, f) in recorded["output_fields"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if drop_reasoning && i == 0 && f["name"] == "reasoning" {
            continue;
        }
        sig = sig.with_output(field(f));
    }
    sig
}

/// The constraints DSPy printed (`greater than or equal to: 0.0, less than or equal to: 1.0`) as
/// Signet's, the bounds read back as JSON numbers.
fn constraints(text: &str) -> Vec<Constraint> {
    let number = |v: &str| serde_json::from_str::<Value>(v).unwrap_or_else(|_| json!(v));
    let length = |v: &str| v.parse::<u64>().unwrap_or_default();
    text.split(", ")
        .filter_map(|part| {
            let (kind, value) = part.rsplit_once(": ")?;
            Some(match kind {
                "greater than" => Constraint::Gt(number(value)),
                "greater than or equal to" => Constraint::Ge(number(value)),
                "less than" => Constraint::Lt(number(value)),
                "less than or equal to" => Constraint::Le(number(value)),
                "minimum length" => Constraint::MinLength(length(value)),
                "maximum length" => Constraint::MaxLength(length(value)),
                "a multiple of the given number" => Constraint::MultipleOf(number(value)),
                _ => return None,
            })
        })
        .collect()
}

fn capabilities(recorded: &Value) -> Capabilities {
    let params: Vec<&str> = recorded["supported_params"]
        .as_array()
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Capabilities::default()
        .with_function_calling(
            recorded["supports_function_calling"]
                .as_bool()
                .unwrap_or(false),
        )
        .with_response_schema(
            recorded["supports_response_schema"]
                .as_bool()
                .unwrap_or(false),
        )
        .with_json_object(params.contains(&"response_format"))
        .with_json_object_schema(false)
}

/// A scripted LM replaying the recorded replies (texts, tool calls, or raised errors).
fn scripted(replies: &[Value], capabilities: Capabilities) -> Arc<ScriptedLm> {
    let mut lm = ScriptedLm::new([]).with_capabilities(capabilities);
    for reply in replies {
        lm = match reply.get("raise") {
            Some(raised) => lm.then_error(lm_error(raised)),
            None => lm.then(completion(reply)),
        };
    }
    Arc::new(lm)
}

fn completion(reply: &Value) -> Completion {
    if let Some(text) = reply.as_str() {
        return Completion::text(text);
    }
    let calls: Vec<ToolCall> = reply["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            ToolCall::new(
                c["id"].as_str().unwrap_or_default(),
                c["function"]["name"].as_str().unwrap_or_default(),
                c["function"]["arguments"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    Completion {
        tool_calls: calls,
        ..reply["content"]
            .as_str()
            .map(Completion::text)
            .unwrap_or_default()
    }
}

fn lm_error(raised: &Value) -> LmError {
    let message = raised["message"].as_str().unwrap_or_default().to_owned();
    match raised["type"].as_str() {
        Some("ContextWindowExceededError") => LmError::ContextWindowExceeded { message },
        _ => LmError::Server {
            status: 500,
            message,
        },
    }
}

/// The kwargs DSPy would record for a request.
fn kwargs(request: &LmRequest) -> Value {
    let mut out = Map::new();
    match &request.response_format {
        Some(ResponseFormat::JsonObject) => {
            out.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Some(ResponseFormat::JsonSchema { name, schema, .. }) => {
            out.insert(
                "response_format".into(),
                json!({"__pydantic_model__": name, "json_schema": schema}),
            );
        }
        Some(other) => {
            out.insert(
                "response_format".into(),
                serde_json::to_value(other).unwrap(),
            );
        }
        None => {}
    }
    if !request.tools.is_empty() {
        out.insert(
            "tools".into(),
            serde_json::to_value(&request.tools).unwrap(),
        );
    }
    if let Some(parallel) = request.parallel_tool_calls {
        out.insert("parallel_tool_calls".into(), json!(parallel));
    }
    match &request.tool_choice {
        Some(ToolChoice::Function(name)) => {
            out.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": name}}),
            );
        }
        Some(choice) => {
            out.insert("tool_choice".into(), serde_json::to_value(choice).unwrap());
        }
        None => {}
    }
    for (key, value) in &request.extra {
        out.insert(key.clone(), value.clone());
    }
    if let Value::Object(options) = serde_json::to_value(&request.options).unwrap() {
        for (key, value) in options {
            // f32 settings as the decimals they were written as (0.3, not 0.30000001192092896).
            let value = match value.as_f64() {
                Some(x) if value.is_f64() => json!((x as f32).to_string().parse::<f64>().unwrap()),
                _ => value,
            };
            out.insert(key, value);
        }
    }
    Value::Object(out)
}

/// What a module run was configured with, read from the kwargs DSPy recorded for its first call:
/// the module's LM settings (`Predict(sig, temperature=.., max_tokens=..)`) and the adapter's
/// `parallel_tool_calls`; the adapter's own keys (`tools`, `response_format`, `tool_choice`) are
/// not configuration.
struct ModuleConfig {
    options: LmOptions,
    parallel_tool_calls: Option<bool>,
}

fn module_config(calls: &[Value]) -> Result<ModuleConfig, Skip> {
    let mut config = ModuleConfig {
        options: LmOptions::default(),
        parallel_tool_calls: None,
    };
    let Some(kwargs) = calls.first().and_then(|c| c["kwargs"].as_object()) else {
        return Ok(config);
    };
    let mut options = Map::new();
    for (key, value) in kwargs {
        match key.as_str() {
            "tools" | "response_format" | "tool_choice" => {}
            "parallel_tool_calls" => config.parallel_tool_calls = value.as_bool(),
            "temperature" | "max_tokens" | "top_p" | "stop" | "seed" => {
                options.insert(key.clone(), value.clone());
            }
            other => {
                return Err(Skip::Unsupported(format!(
                    "the LM setting `{other}` has no LmOptions field"
                )));
            }
        }
    }
    config.options = serde_json::from_value(Value::Object(options))
        .map_err(|e| Skip::Fail(format!("recorded LM settings: {e}")))?;
    Ok(config)
}

/// Compares the recorded calls with the requests Signet sent.
fn compare_calls(recorded: &[Value], sent: &[LmRequest]) -> Result<(), Skip> {
    if recorded.len() != sent.len() {
        return fail(format!(
            "{} LM calls recorded, Signet made {}",
            recorded.len(),
            sent.len()
        ));
    }
    for (i, (call, request)) in recorded.iter().zip(sent).enumerate() {
        let messages = call["messages"].as_array().cloned().unwrap_or_default();
        if messages.len() != request.messages.len() {
            return fail(format!(
                "call {}: {} messages recorded, Signet sent {}",
                i + 1,
                messages.len(),
                request.messages.len()
            ));
        }
        for (j, (want, got)) in messages.iter().zip(&request.messages).enumerate() {
            let got = message_json(got);
            if want["role"] != got["role"] {
                return fail(format!(
                    "call {} message {}: role {} vs {}",
                    i + 1,
                    j + 1,
                    want["role"],
                    got["role"]
                ));
            }
            let same_text = match (want["content"].as_str(), got["content"].as_str()) {
                (Some(w), Some(g)) => lines_match(w, g),
                _ => want["content"] == got["content"],
            };
            if !same_text {
                return fail(format!(
                    "call {} message {}: {}",
                    i + 1,
                    j + 1,
                    match (want["content"].as_str(), got["content"].as_str()) {
                        (Some(want), Some(got)) => first_difference(want, got),
                        _ => format!(
                            "content DSPy {} / Signet {}",
                            want["content"], got["content"]
                        ),
                    }
                ));
            }
            if !values_match(want, &got) {
                return fail(format!(
                    "call {} message {}: DSPy {want} / Signet {got}",
                    i + 1,
                    j + 1
                ));
            }
        }
        let want_kwargs = call.get("kwargs").cloned().unwrap_or_else(|| json!({}));
        let got_kwargs = kwargs(request);
        if want_kwargs != got_kwargs {
            return fail(format!(
                "call {} kwargs: recorded {want_kwargs}, Signet {got_kwargs}",
                i + 1
            ));
        }
        // A structured-outputs schema goes to the provider as text: its key order is part of it.
        let (want_format, got_format) = (
            want_kwargs["response_format"].to_string(),
            got_kwargs["response_format"].to_string(),
        );
        if want_format != got_format {
            return fail(format!(
                "call {} response_format key order: recorded {want_format}, Signet {got_format}",
                i + 1
            ));
        }
    }
    Ok(())
}

/// A message as it goes to an OpenAI-compatible provider, in the shape DSPy records.
fn message_json(message: &signet::lm::Message) -> Value {
    let mut object = Map::new();
    object.insert("role".into(), serde_json::to_value(message.role).unwrap());
    object.insert("content".into(), json!(message.content));
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect();
        object.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &message.tool_call_id {
        object.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(object)
}

fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied(), g.get(i).copied());
        let same = match (a, b) {
            (Some(a), Some(b)) => text_matches(a, b),
            _ => a == b,
        };
        if !same {
            return format!("line {}: DSPy {:?} / Signet {:?}", i + 1, a, b);
        }
    }
    "same lines, different line endings".to_owned()
}

/// Compares outputs or the error kind with the recorded result.
fn compare_result(recorded: &Value, result: &Result<Fields, Error>) -> Result<(), Skip> {
    match (recorded.get("error"), result) {
        (None, Ok(outputs)) => {
            let want = decode(&recorded["outputs"]);
            let got = Value::Object(outputs.clone());
            if want != got {
                return fail(format!("outputs: DSPy {want}, Signet {got}"));
            }
            Ok(())
        }
        (Some(error), Err(got)) => {
            let kind = error["type"].as_str().unwrap_or_default();
            let same = match kind {
                "AdapterParseError" => matches!(got, Error::Parse(_)),
                "MissingInput" => matches!(got, Error::MissingInput { .. }),
                "ContextWindowExceededError" => {
                    matches!(got, Error::Lm(LmError::ContextWindowExceeded { .. }))
                }
                _ => matches!(got, Error::Lm(_)),
            };
            if same {
                Ok(())
            } else {
                fail(format!("error: DSPy {kind}, Signet {got}"))
            }
        }
        (Some(error), Ok(outputs)) => fail(format!(
            "DSPy failed with {}, Signet returned {outputs:?}",
            error["type"]
        )),
        (None, Err(got)) => fail(format!(
            "DSPy returned {}, Signet failed: {got}",
            recorded["outputs"]
        )),
    }
}

/// Undoes the fixture encodings of special values (non-finite floats).
fn decode(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("__float__") => {
            let x = match map["__float__"].as_str() {
                Some("Infinity") => f64::INFINITY,
                Some("-Infinity") => f64::NEG_INFINITY,
                _ => f64::NAN,
            };
            serde_json::Number::from_f64(x)
                .map(Value::Number)
                .unwrap_or(Value::Null)
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), decode(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(decode).collect()),
        other => other.clone(),
    }
}

/// Inputs with `dspy.Tool` values turned into OpenAI function descriptors, rebuilt from the tool's
/// recorded description (`NAME, whose description is <desc>..</desc>. It takes arguments {..}.`).
fn decode_inputs(recorded: &Value) -> Result<Fields, Skip> {
    let mut inputs = recorded.as_object().cloned().unwrap_or_default();
    for value in inputs.values_mut() {
        if let Value::Array(items) = value
            && items.iter().any(|i| i.get("__dspy_tool__").is_some())
        {
            let tools: Result<Vec<Value>, Skip> = items.iter().map(tool_descriptor).collect();
            *value = Value::Array(tools?);
        }
    }
    Ok(inputs)
}

fn tool_descriptor(tool: &Value) -> Result<Value, Skip> {
    let name = tool["__dspy_tool__"].as_str().unwrap_or_default();
    let text = tool["str"].as_str().unwrap_or_default();
    let description = text
        .split_once("<desc>")
        .and_then(|(_, rest)| rest.split_once("</desc>"))
        .map(|(desc, _)| Value::String(desc.to_owned()))
        .unwrap_or(Value::Null);
    let args = text
        .rsplit_once("It takes arguments ")
        .map(|(_, args)| args.trim_end_matches('.'))
        .and_then(adapter::value::lenient_json)
        .ok_or_else(|| {
            Skip::Unsupported(format!(
                "cannot read the arguments of tool `{name}` from {text:?}"
            ))
        })?;
    let required: Vec<Value> = args
        .as_object()
        .map(|a| {
            a.iter()
                .filter(|(_, v)| v.get("default").is_none())
                .map(|(k, _)| json!(k))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": args, "required": required}
        }
    }))
}

fn adapter_for(recorded: &Value, parallel: Option<bool>) -> Result<Arc<dyn Adapter>, Skip> {
    // No adapter recorded (none configured): DSPy's default, a `ChatAdapter()`.
    let class = recorded["class"].as_str().unwrap_or("ChatAdapter");
    let fallback = recorded["use_json_adapter_fallback"]
        .as_bool()
        .unwrap_or(true);
    let native = recorded["use_native_function_calling"].as_bool();
    match class {
        "ChatAdapter" => {
            let chat = ChatAdapter::new()
                .with_native_function_calling(native.unwrap_or(false))
                .with_parallel_tool_calls(parallel);
            Ok(Arc::new(if fallback {
                chat
            } else {
                chat.without_json_fallback()
            }))
        }
        "JSONAdapter" => Ok(Arc::new(
            JsonAdapter::new()
                .with_native_function_calling(native.unwrap_or(true))
                .with_parallel_tool_calls(parallel),
        )),
        "XMLAdapter" => {
            let xml = XmlAdapter::new()
                .with_native_function_calling(native.unwrap_or(false))
                .with_parallel_tool_calls(parallel);
            Ok(Arc::new(if fallback {
                xml
            } else {
                xml.without_json_fallback()
            }))
        }
        other => Err(Skip::Unsupported(format!("{other} is not implemented yet"))),
    }
}

async fn run_module(fixture: &Value) -> Result<(), Skip> {
    let module = fixture["module"].as_str().unwrap_or_default();
    let is_cot = match module {
        "Predict" => false,
        "ChainOfThought" => true,
        "ReAct" => return run_react(fixture).await,
        "ReActV2" => return run_react_v2(fixture).await,
        "BestOfN" | "Refine" => return run_attempts(fixture).await,
        "MultiChainComparison" => return run_multi_chain(fixture).await,
        other => {
            return Err(Skip::Unsupported(format!(
                "module {other} is not implemented"
            )));
        }
    };
    let recorded_sig = &fixture["signature"];
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let config = module_config(&calls)?;
    // TwoStepAdapter: its extraction model answers from the recorded extraction calls.
    let extraction_calls = fixture["extraction_calls"].as_array().cloned();
    let extraction = extraction_calls.as_ref().map(|calls| {
        let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
        scripted(
            &replies,
            capabilities(&fixture["adapter"]["extraction_lm_capabilities"]),
        )
    });
    let adapter: Arc<dyn Adapter> = match &extraction {
        Some(lm) => Arc::new(TwoStepAdapter::new(lm.clone())),
        None => adapter_for(&fixture["adapter"], config.parallel_tool_calls)?,
    };
    let base = signature(recorded_sig, is_cot);
    let sig = if is_cot { with_reasoning(&base) } else { base };
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let demos: Vec<Fields> = fixture["demos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_object().cloned())
        .collect();
    let inputs = decode_inputs(&fixture["inputs"])?;
    let predictor = DynPredict::new(sig)
        .with_demos(demos)
        .with_adapter(adapter)
        .with_options(config.options)
        .with_lm(lm.clone());
    let result = predictor.forward(&inputs).await.map(|p| p.outputs);
    compare_calls(&calls, &lm.requests())?;
    if let (Some(calls), Some(lm)) = (&extraction_calls, &extraction) {
        compare_calls(calls, &lm.requests()).map_err(|skip| match skip {
            Skip::Fail(why) => Skip::Fail(format!("extraction: {why}")),
            other => other,
        })?;
        if let Err(Error::Parse(error)) = &result
            && !error.to_string().starts_with("TwoStepAdapter ")
        {
            return fail(format!("the error does not name TwoStepAdapter: {error}"));
        }
    }
    compare_result(&fixture["result"], &result)
}

/// A run-time predictor as a [`Module`] (fields in, fields out) at DSPy's path for it.
#[derive(Clone)]
struct Untyped {
    path: &'static str,
    predictor: DynPredict,
}

impl Predictors for Untyped {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![(self.path.to_owned(), &self.predictor)]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![(self.path.to_owned(), &mut self.predictor)]
    }
}

impl Module for Untyped {
    type Input = Fields;
    type Output = Fields;
    type Error = Error;

    async fn call(&self, input: Fields) -> Result<Fields, Error> {
        self.predictor.forward(&input).await.map(|p| p.outputs)
    }
}

/// BestOfN and Refine over a Predict or a ChainOfThought, with the fixtures' reward (`brevity`:
/// 1 over the answer's word count): each call's messages, temperature and rollout id, and the
/// output kept.
async fn run_attempts(fixture: &Value) -> Result<(), Skip> {
    let spec = &fixture["attempts"];
    if spec["reward"] != "brevity" {
        return Err(Skip::Unsupported(format!("the reward {}", spec["reward"])));
    }
    let is_cot = spec["inner"] == "ChainOfThought";
    let base = signature(&fixture["signature"], false);
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let inner = Untyped {
        path: if is_cot { "predict" } else { "self" },
        predictor: DynPredict::new(if is_cot { with_reasoning(&base) } else { base })
            .with_adapter(adapter_for(&fixture["adapter"], None)?)
            .with_lm(lm.clone()),
    };
    let brevity = |_: &Fields, out: &Fields| {
        let words = out["answer"]
            .as_str()
            .unwrap_or_default()
            .split_whitespace();
        1.0 / words.count().max(1) as f64
    };
    let n = spec["n"].as_u64().unwrap_or(1) as usize;
    let threshold = spec["threshold"].as_f64().unwrap_or(1.0);
    let inputs = decode_inputs(&fixture["inputs"])?;
    let run = if fixture["module"] == "Refine" {
        Refine::new(inner, n, brevity, threshold)
            .with_program_code(REFINE_PROGRAM_CODE)
            .with_reward_code(REFINE_REWARD_CODE)
            .call_full(inputs)
            .await
    } else {
        BestOfN::new(inner, n, brevity, threshold)
            .call_full(inputs)
            .await
    };
    let sent = lm.requests();
    compare_calls(&calls, &sent)?;
    for (i, (call, request)) in calls.iter().zip(&sent).enumerate() {
        let kwargs = &call["kwargs"];
        let want = (
            kwargs["temperature"].as_f64(),
            kwargs["rollout_id"].as_u64(),
        );
        let got = (
            request.options.temperature.map(f64::from),
            request.options.rollout_id,
        );
        if want != got {
            return fail(format!(
                "call {}: (temperature, rollout_id) DSPy {want:?}, Signet {got:?}",
                i + 1
            ));
        }
    }
    match run {
        Ok(run) => compare_result(&fixture["result"], &Ok(run.output)),
        Err(error) => fail(format!("the run failed: {error}")),
    }
}

// The signature of the MultiChainComparison fixture, typed as a program would write it.
/// Answer the question concisely.
#[derive(signet::Signature)]
struct Qa {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// MultiChainComparison of the recorded completions over `Qa` (the recorded signature must be
/// it): the messages and temperature sent, and the outputs.
async fn run_multi_chain(fixture: &Value) -> Result<(), Skip> {
    use signet::Signature as _;
    let recorded = signature(&fixture["signature"], false);
    let typed = Qa::signature();
    let names =
        |sig: &DynSignature| -> Vec<String> { sig.fields().map(|f| f.name().to_owned()).collect() };
    if recorded.instructions() != typed.instructions() || names(&recorded) != names(typed) {
        return Err(Skip::Unsupported(
            "a MultiChainComparison over another signature than `question -> answer`".into(),
        ));
    }
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let completions: Vec<Fields> = fixture["completions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_object().cloned())
        .collect();
    let compare = signet::module::MultiChainComparison::<Qa>::new(completions.len())
        .with_adapter(adapter_for(&fixture["adapter"], None)?)
        .with_lm(lm.clone());
    let question = fixture["inputs"]["question"].as_str().unwrap_or_default();
    let result = compare
        .compare(
            QaInput {
                question: question.to_owned(),
            },
            &completions,
        )
        .await
        .map(|out| {
            let mut fields = Fields::new();
            fields.insert("rationale".into(), out.rationale.into());
            fields.insert("answer".into(), out.output.answer.into());
            fields
        });
    let sent = lm.requests();
    compare_calls(&calls, &sent)?;
    // LmOptions holds an f32, which goes on the wire as its shortest form (0.7).
    let temperature = sent.first().and_then(|r| r.options.temperature);
    let recorded = calls
        .first()
        .map(|c| c["kwargs"]["temperature"].as_f64().map(|t| t as f32));
    if recorded != Some(temperature) {
        return fail(format!("temperature: Signet sent {temperature:?}"));
    }
    compare_result(&fixture["result"], &result)
}

/// The adapter whose parser a parse-edge-case fixture exercises, named at the start of its
/// description (`JSONAdapter.parse() edge cases ..`; the Chat adapter's fixture predates the
/// convention).
fn parsing_adapter(fixture: &Value) -> Box<dyn Adapter> {
    let description = fixture["description"].as_str().unwrap_or_default();
    if description.starts_with("JSONAdapter") {
        Box::new(JsonAdapter::new())
    } else if description.starts_with("XMLAdapter") {
        Box::new(XmlAdapter::new())
    } else {
        Box::new(ChatAdapter::new())
    }
}

/// The parse-edge-case fixtures: each reply parsed directly by the fixture's adapter; for the Chat
/// adapter also through the pipeline without fallback, and with the JSON fallback.
async fn run_parse_cases(fixture: &Value) -> Outcome {
    let sig = signature(&fixture["signature"], false);
    let parser = parsing_adapter(fixture);
    let inputs = fixture["inputs"].as_object().cloned().unwrap_or_default();
    let caps = Capabilities::default().with_json_object(false);
    let mut problems = Vec::new();
    for case in fixture["cases"].as_array().into_iter().flatten() {
        let name = case["name"].as_str().unwrap_or("?");
        let reply = case["reply"].as_str().unwrap_or_default();
        let direct = parser.parse(&sig, reply).map_err(Error::Parse);
        if let Err(Skip::Fail(why)) = compare_result(&case["direct_parse"], &direct) {
            problems.push(format!("{name} (direct): {why}"));
        }
        for (key, with_fallback) in [
            ("pipeline_no_fallback", false),
            ("pipeline_with_fallback", true),
        ] {
            let Some(expected) = case.get(key) else {
                continue;
            };
            let mut replies = vec![json!(reply)];
            if let Some(second) = expected.get("fallback_reply") {
                replies.push(second.clone());
            }
            let lm = scripted(&replies, caps);
            let chat = if with_fallback {
                ChatAdapter::new()
            } else {
                ChatAdapter::new().without_json_fallback()
            };
            let result = signet::adapted::run(
                &chat,
                lm.as_ref(),
                &sig,
                &[],
                &inputs,
                &LmOptions::default(),
            )
            .await
            .map(|r| r.outputs);
            if let Err(Skip::Fail(why)) = compare_result(&expected["result"], &result) {
                problems.push(format!("{name} ({key}): {why}"));
            }
            let calls = expected["num_lm_calls"].as_u64().unwrap_or(1) as usize;
            if lm.requests().len() != calls {
                problems.push(format!(
                    "{name} ({key}): DSPy made {calls} calls, Signet {}",
                    lm.requests().len()
                ));
            }
        }
    }
    if let Some(first) = fixture.get("first_call_messages") {
        let sent = ChatAdapter::new().format(&sig, &[], &inputs);
        let want: Vec<(String, Value)> = first
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or_default().to_owned(),
                    m["content"].clone(),
                )
            })
            .collect();
        let got: Vec<(String, Value)> = sent
            .iter()
            .map(|m| {
                (
                    serde_json::to_value(m.role)
                        .unwrap()
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    m.content.to_value(),
                )
            })
            .collect();
        if want != got {
            problems.push("first_call_messages differ".to_owned());
        }
    }
    for key in ["fallback_also_fails", "fallback_with_structured_capable_lm"] {
        let Some(case) = fixture.get(key) else {
            continue;
        };
        let caps = case
            .get("lm_capabilities")
            .map(capabilities)
            .unwrap_or(caps);
        let replies: Vec<Value> = case["replies"].as_array().cloned().unwrap_or_default();
        let lm = scripted(&replies, caps);
        let predictor = DynPredict::new(sig.clone())
            .with_adapter(ChatAdapter::new())
            .with_lm(lm.clone());
        let result = predictor.forward(&inputs).await.map(|p| p.outputs);
        let calls = case["calls"].as_array().cloned().unwrap_or_default();
        if let Err(Skip::Fail(why)) = compare_calls(&calls, &lm.requests()) {
            problems.push(format!("{key}: {why}"));
        }
        if let Err(Skip::Fail(why)) = compare_result(&case["result"], &result) {
            problems.push(format!("{key}: {why}"));
        }
    }
    if problems.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(problems.join(" | "))
    }
}

/// ReAct fixtures: tools rebuilt from the recorded descriptions, each answering with the observations
/// the recorded run saw, in order.
async fn run_react(fixture: &Value) -> Result<(), Skip> {
    run_react_loaded(fixture, None).await
}

/// [`run_react`], with the agent's predictors loaded from a saved program first.
async fn run_react_loaded(fixture: &Value, saved: Option<&str>) -> Result<(), Skip> {
    let react = &fixture["react"];
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let observations = recorded_observations(fixture, &calls);
    let mut tools: Vec<Arc<dyn signet::Tool>> = Vec::new();
    for tool in react["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        if name == "finish" {
            continue;
        }
        let args = tool["args"].clone();
        let required = required_args(&args);
        let queue = Arc::new(Mutex::new(
            observations.get(&name).cloned().unwrap_or_default(),
        ));
        let tool_name = name.clone();
        let mut schema = json!({"type": "object", "properties": args, "required": required});
        if tool["has_kwargs"] != json!(true) {
            // DSPy refuses arguments a tool does not declare ("Arg c is not in the tool's args.").
            schema["additionalProperties"] = json!(false);
        }
        tools.push(Arc::new(
            FnTool::builder(&name)
                .description(tool["desc"].as_str().unwrap_or_default())
                .schema(schema)
                .sync_fn(move |_| {
                    queue
                        .lock()
                        .unwrap()
                        .pop_front()
                        .ok_or_else(|| format!("no recorded observation left for {tool_name}"))
                }),
        ));
    }
    let adapter = adapter_for(&fixture["adapter"], None)?;
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let mut core = DynReAct::new(signature(&fixture["signature"], false))
        .tools(tools)
        .with_limits(
            Limits::default().max_iters(react["max_iters"].as_u64().unwrap_or(20) as usize),
        )
        .with_adapter(adapter)
        .with_lm(lm.clone());
    if let Some(text) = saved {
        let paths: Vec<String> = core
            .named_predictors()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let want: Vec<String> = fixture["program"]["named_predictors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        if paths != want {
            return fail(format!("predictor paths: DSPy {want:?}, Signet {paths:?}"));
        }
        core.load_json(text)
            .map_err(|e| Skip::Fail(format!("load: {e}")))?;
        check_loaded(fixture, &core)?;
    }
    let inputs = decode_inputs(&fixture["inputs"])?;
    let result = core.forward(&inputs, &CallConfig::default()).await;
    if let Some(name) = fixture["signet_observes_unknown_tool"].as_str() {
        // The recorded calls up to the step that named it, then the observation.
        let sent = lm.requests();
        if sent.len() <= calls.len() {
            return fail(format!("Signet stopped after the step naming `{name}`"));
        }
        compare_calls(&calls, &sent[..calls.len()])?;
        let next = &sent[calls.len()].messages;
        let shown = next
            .last()
            .map(|m| m.content.to_string())
            .unwrap_or_default();
        let observation = format!("Execution error in {name}: there is no tool named `{name}`");
        return if shown.contains(&observation) {
            Ok(())
        } else {
            fail(format!(
                "the step after `{name}` does not show {observation:?}"
            ))
        };
    }
    compare_calls(&calls, &lm.requests())?;
    let outputs = result
        .clone()
        .map(|run| {
            let mut outputs = Map::new();
            if let Some(reasoning) = run.reasoning {
                outputs.insert("reasoning".into(), Value::String(reasoning));
            }
            outputs.extend(run.outputs);
            outputs
        })
        // DSPy raises the call's error; a trajectory that cannot fit is its context-window error.
        .map_err(|error| match error.reason {
            RunFailure::Call(error) => error,
            RunFailure::TrajectoryTooLong { message } => {
                Error::Lm(LmError::ContextWindowExceeded { message })
            }
            other => Error::InvalidSignature {
                message: other.to_string(),
            },
        });
    compare_result(&fixture["result"], &outputs)?;
    if let (Some(want), Ok(run)) = (fixture["result"].get("trajectory"), &result) {
        let got = Value::Object(run.trajectory.to_fields());
        if !values_match(&decode(want), &got) {
            return fail(format!("trajectory: DSPy {want}, Signet {got}"));
        }
    }
    Ok(())
}

/// The observation each tool returned, in call order: typed values from the final trajectory where
/// it still has them, otherwise the text the later prompts show.
fn recorded_observations(fixture: &Value, calls: &[Value]) -> HashMap<String, VecDeque<Value>> {
    let trajectory = fixture["result"]["trajectory"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut shown: HashMap<usize, String> = HashMap::new();
    for call in calls {
        let Some(last) = call["messages"].as_array().and_then(|m| m.last()) else {
            continue;
        };
        let text = last["content"].as_str().unwrap_or_default();
        let mut rest = text;
        while let Some(start) = rest.find("[[ ## observation_") {
            let after = &rest[start + "[[ ## observation_".len()..];
            let Some((index, body)) = after.split_once(" ## ]]\n") else {
                break;
            };
            let end = body
                .find("\n\n[[ ## ")
                .or_else(|| body.find("\n\nRespond with"))
                .unwrap_or(body.len());
            if let Ok(index) = index.parse::<usize>() {
                shown.entry(index).or_insert_with(|| body[..end].to_owned());
            }
            rest = &body[end..];
        }
    }
    // The tool of each step: from the final trajectory when the run has one, else from the
    // replies (Chat's blocks or the JSON adapter's object, whichever a step's reply was).
    let names: Vec<String> = match (0..)
        .map_while(|i| trajectory.get(&format!("tool_name_{i}")))
        .map(|name| name.as_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
    {
        Some(names) if !names.is_empty() => names,
        _ => calls
            .iter()
            .filter_map(|call| reply_tool_name(&call["reply"]))
            .collect(),
    };
    let mut queues: HashMap<String, VecDeque<Value>> = HashMap::new();
    for (step, name) in names.iter().enumerate() {
        let observation = trajectory
            .get(&format!("observation_{step}"))
            .cloned()
            .or_else(|| shown.get(&step).map(|t| Value::String(t.clone())));
        // An argument error never reached the tool (DSPy's nor Signet's): nothing to replay.
        let refused = observation
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|text| text.contains(SIGNET_WORDING));
        if let Some(observation) = observation.filter(|_| !refused) {
            queues
                .entry(name.trim().to_owned())
                .or_default()
                .push_back(observation);
        }
    }
    queues
}

/// A tool rebuilt from DSPy's introspection of it (name, description, argument schemas).
fn rebuilt_tool(recorded: &Value) -> FnTool {
    let args = recorded["args"].clone();
    let catch_all = kwargs_name(recorded);
    let required: Vec<Value> = args
        .as_object()
        .map(|a| {
            a.iter()
                .filter(|(k, v)| v.get("default").is_none() && Some(k.as_str()) != catch_all)
                .map(|(k, _)| json!(k))
                .collect()
        })
        .unwrap_or_default();
    let mut schema = json!({"type": "object", "properties": args, "required": required});
    if recorded["has_kwargs"] != json!(true) {
        // DSPy rejects arguments a tool does not declare ("Arg c is not in the tool's args.").
        schema["additionalProperties"] = json!(false);
    }
    FnTool::builder(recorded["name"].as_str().unwrap_or_default())
        .description(recorded["desc"].as_str().unwrap_or_default())
        .schema(schema)
        .sync_fn(|_| Ok::<_, String>(Value::Null))
}

/// The tool-introspection fixture: how tools are listed (`str(tool)`), their function descriptors,
/// and which calls pass argument validation.
async fn run_tool_introspection(fixture: &Value) -> Outcome {
    let mut problems = Vec::new();
    let mut tools = HashMap::new();
    for (key, recorded) in fixture["tools"].as_object().into_iter().flatten() {
        let tool = rebuilt_tool(recorded);
        let listing = signet::module::react::tool_listing(&tool);
        if Some(listing.as_str()) != recorded["str"].as_str() {
            problems.push(format!("{key}: listing {listing:?} vs {}", recorded["str"]));
        }
        let mut descriptor = signet::Tool::to_openai_function(&tool);
        descriptor["function"]["parameters"]
            .as_object_mut()
            .map(|p| p.remove("additionalProperties"));
        let mut want = recorded["litellm_function_call"].clone();
        // DSPy lists a `**kwargs` catch-all as a required argument; Signet does not require it.
        if let (Some(catch_all), Some(required)) = (
            kwargs_name(recorded),
            want["function"]["parameters"]["required"].as_array_mut(),
        ) {
            required.retain(|name| name != catch_all);
        }
        if want["function"]["description"].is_null() {
            want["function"]["description"] = json!("");
        }
        if descriptor != want {
            problems.push(format!("{key}: descriptor {descriptor} vs {want}"));
        }
        tools.insert(recorded["name"].as_str().unwrap_or(key).to_owned(), tool);
    }
    for case in fixture["call_results"].as_array().into_iter().flatten() {
        let name = case["tool"].as_str().unwrap_or_default();
        let Some(tool) = tools.get(name) else {
            problems.push(format!("call to unknown tool {name}"));
            continue;
        };
        let outcome = signet::Tool::call(tool, case["kwargs"].clone()).await;
        match (case.get("error"), outcome) {
            (None, Ok(_)) | (Some(_), Err(signet::ToolError::InvalidArguments { .. })) => {}
            (want, got) => problems.push(format!(
                "{name}({}): DSPy {want:?}, Signet {got:?}",
                case["kwargs"]
            )),
        }
    }
    if problems.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(problems.join(" | "))
    }
}

/// The name of a tool's `**kwargs` catch-all argument, when it has one (the last declared argument).
fn kwargs_name(recorded: &Value) -> Option<&str> {
    if recorded["has_kwargs"] != json!(true) {
        return None;
    }
    recorded["args"]
        .as_object()
        .and_then(|a| a.keys().next_back())
        .map(String::as_str)
}

/// A program of any shape: predictors at the paths a fixture names.
struct AtPaths(Vec<(String, DynPredict)>);

impl Predictors for AtPaths {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.0.iter().map(|(n, p)| (n.clone(), p)).collect()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.0.iter_mut().map(|(n, p)| (n.clone(), p)).collect()
    }
}

/// A predictor as the program's code defines it: the fields of the loaded signature (names, types
/// and schemas in the fresh order) with the fresh instructions, descriptions and prefixes.
fn fresh_predictor(recorded: &Value) -> DynPredict {
    let fresh = &recorded["fresh_signature"];
    let mut sig = signature(&recorded["signature"], false)
        .with_instructions(fresh["instructions"].as_str().unwrap_or_default());
    for field in fresh["fields"].as_array().into_iter().flatten() {
        let name = field["name"].as_str().unwrap_or_default();
        let desc = field["desc"].as_str().unwrap_or_default();
        let prefix = field["prefix"].as_str().unwrap_or_default();
        let placeholder = format!("${{{name}}}");
        let _ = sig.update_field(name, |f| {
            let described = if desc == placeholder {
                Field::from_schema(f.name(), f.schema().clone())
                    .with_type_name(f.type_name())
                    .with_kind(f.kind())
            } else {
                f.clone().with_desc(desc)
            };
            *f = described.with_prefix(prefix);
        });
    }
    DynPredict::new(sig)
}

/// Each loaded predictor's instructions, descriptions and prefixes against DSPy's.
fn check_loaded(fixture: &Value, program: &impl Predictors) -> Result<(), Skip> {
    let loaded = program.named_predictors();
    for recorded in fixture["predictors"].as_array().into_iter().flatten() {
        let name = recorded["name"].as_str().unwrap_or_default();
        let Some((_, predictor)) = loaded.iter().find(|(n, _)| n == name) else {
            return fail(format!("no predictor at `{name}`"));
        };
        let want = &recorded["signature"];
        let sig = predictor.signature();
        if want["instructions"].as_str() != Some(sig.instructions().as_str()) {
            return fail(format!(
                "{name} instructions: DSPy {}, Signet {:?}",
                want["instructions"],
                sig.instructions()
            ));
        }
        let fields: Vec<&Value> = want["input_fields"]
            .as_array()
            .into_iter()
            .chain(want["output_fields"].as_array())
            .flatten()
            .collect();
        for (want, got) in fields.iter().zip(sig.fields()) {
            let got_pair = (got.name().to_owned(), got.saved_desc(), got.prefix());
            let want_pair = (
                want["name"].as_str().unwrap_or_default().to_owned(),
                want["desc"].as_str().unwrap_or_default().to_owned(),
                want["prefix"].as_str().unwrap_or_default().to_owned(),
            );
            if got_pair != want_pair {
                return fail(format!(
                    "{name} field (name, desc, prefix): DSPy {want_pair:?}, Signet {got_pair:?}"
                ));
            }
        }
        if recorded["num_demos"].as_u64() != Some(predictor.demos().len() as u64) {
            return fail(format!(
                "{name}: DSPy loaded {} demos, Signet {}",
                recorded["num_demos"],
                predictor.demos().len()
            ));
        }
    }
    Ok(())
}

/// Saved-program fixtures: the file loaded into a program built as the code defines it, saved
/// again (the same bytes, less the LM settings a load drops), then run on the recorded replies.
async fn run_saved_program(fixture: &Value) -> Result<(), Skip> {
    let text = fixture["saved_program_text"].as_str().unwrap_or_default();
    let module = fixture["module"].as_str().unwrap_or_default();
    if module == "ReAct" {
        return run_react_loaded(fixture, Some(text)).await;
    }
    let mut program = AtPaths(
        fixture["predictors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default().to_owned(),
                    fresh_predictor(p),
                )
            })
            .collect(),
    );
    program
        .load_json(text)
        .map_err(|e| Skip::Fail(format!("load: {e}")))?;
    check_loaded(fixture, &program)?;
    let mut expected: Value = serde_json::from_str(text).unwrap_or_default();
    let mut dropped = false;
    for (_, state) in expected.as_object_mut().into_iter().flatten() {
        if let Some(lm) = state.get_mut("lm").and_then(Value::as_object_mut) {
            for key in ["api_base", "base_url", "model_list"] {
                dropped |= lm.shift_remove(key).is_some();
            }
        }
    }
    let resaved = program.to_saved_json();
    if !dropped && resaved != text {
        return fail(format!("saved again: {}", first_difference(text, &resaved)));
    }
    if dropped && serde_json::from_str::<Value>(&resaved).ok() != Some(expected) {
        return fail("saved again: the state differs beyond the dropped LM settings");
    }
    // The run: DSPy's post-load adjustment (a saved LM replaced by the recording one) is what a
    // Rust program does anyway — the LM comes from code.
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let config = module_config(&calls)?;
    let adapter = adapter_for(&fixture["adapter"], config.parallel_tool_calls)?;
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let inputs = decode_inputs(&fixture["inputs"])?;
    match module {
        "Predict" | "ChainOfThought" => {
            let [(_, predictor)] = &mut program.0[..] else {
                return fail("a module with one predictor was expected");
            };
            let predictor = predictor
                .clone()
                .with_adapter(adapter)
                .with_options(config.options)
                .with_lm(lm.clone());
            let result = predictor.forward(&inputs).await.map(|p| p.outputs);
            compare_calls(&calls, &lm.requests())?;
            compare_result(&fixture["result"], &result)
        }
        _ => run_user_module(fixture, &program, adapter.as_ref(), &calls),
    }
}

/// A user module's run, whose `forward` is Python code: each recorded call is matched to the
/// loaded predictor that formats the same system message and demos, its last reply is read by that
/// predictor, and the outputs are compared with DSPy's.
fn run_user_module(
    fixture: &Value,
    program: &AtPaths,
    adapter: &dyn Adapter,
    calls: &[Value],
) -> Result<(), Skip> {
    let mut last = None;
    for (i, call) in calls.iter().enumerate() {
        let recorded = call["messages"].as_array().cloned().unwrap_or_default();
        let Some((_, predictor)) = program.0.iter().find(|(_, p)| {
            let inputs: Fields = p
                .signature()
                .inputs()
                .iter()
                .map(|f| (f.name().to_owned(), json!("")))
                .collect();
            let formatted = adapter.format(p.signature(), p.demos(), &inputs);
            formatted.len() == recorded.len()
                && formatted
                    .iter()
                    .zip(&recorded)
                    .take(recorded.len().saturating_sub(1))
                    .all(|(got, want)| want["content"].as_str() == Some(got.content.as_str()))
        }) else {
            return fail(format!(
                "call {}: no loaded predictor formats its system message and demos",
                i + 1
            ));
        };
        let reply = completion(&call["reply"]).text.unwrap_or_default();
        last = Some(adapter.parse(predictor.signature(), &reply));
    }
    let result = match last {
        Some(Ok(outputs)) => Ok(outputs),
        Some(Err(error)) => Err(Error::Parse(error)),
        None => return fail("no calls recorded"),
    };
    compare_result(&fixture["result"], &result)
}

/// A tool of a ReActV2 fixture: its recorded description, answering with the results the recorded
/// run saw, in order (an error result as the tool's error message, without DSPy's prefix).
struct ReplayTool {
    spec: signet::tool::ToolSpec,
    results: Mutex<VecDeque<(Value, bool)>>,
}

impl signet::Tool for ReplayTool {
    fn spec(&self) -> &signet::tool::ToolSpec {
        &self.spec
    }

    fn call(&self, _args: Value) -> signet::tool::ToolFuture<'_> {
        let next = self.results.lock().unwrap().pop_front();
        let name = signet::Tool::name(self).to_owned();
        Box::pin(async move {
            match next {
                Some((value, false)) => Ok(value),
                Some((value, true)) => {
                    // What a Rust tool reports: the error's message (no traceback).
                    let text = scrub_tracebacks(value.as_str().unwrap_or_default());
                    let prefix = format!("Execution error in {name}: ");
                    Err(signet::ToolError::Failed {
                        message: text.strip_prefix(&prefix).unwrap_or(&text).to_owned(),
                        tool: name,
                    })
                }
                None => Err(signet::ToolError::Failed {
                    message: format!("no recorded result left for {name}"),
                    tool: name,
                }),
            }
        })
    }
}

/// Python tracebacks in error results reduced to their last line, without the exception's class
/// name (`Execution error in add: \nTraceback ..\nValueError: msg` -> `Execution error in add:
/// msg`), in raw text and in JSON-escaped text.
fn scrub_tracebacks(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("Execution error in ") {
        let after = &rest[start..];
        let Some(colon) = after.find(": ") else {
            break;
        };
        out.push_str(&rest[..start + colon + 2]);
        let body = &after[colon + 2..];
        let (segment, tail, newline) = if let Some(escaped) = body.strip_prefix("\\n") {
            let end = unescaped_quote(escaped).unwrap_or(escaped.len());
            (&escaped[..end], &escaped[end..], "\\n")
        } else if let Some(raw) = body.strip_prefix('\n') {
            // A traceback in a prompt ends where the next field or the closing request begins.
            let end = ["\n\n[[ ## ", "\n\nRespond with"]
                .iter()
                .filter_map(|next| raw.find(next))
                .min()
                .unwrap_or(raw.len());
            (&raw[..end], &raw[end..], "\n")
        } else {
            let end = unescaped_quote(body).unwrap_or(body.len());
            (&body[..end], &body[end..], "\n")
        };
        let last = segment.rsplit(newline).next().unwrap_or(segment);
        out.push_str(without_exception_class(last));
        rest = tail;
    }
    out.push_str(rest);
    out
}

fn unescaped_quote(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn without_exception_class(line: &str) -> &str {
    if let Some((class, message)) = line.split_once(": ")
        && !class.is_empty()
        && class
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (class.ends_with("Error") || class.ends_with("Exception"))
    {
        return message;
    }
    line
}

/// ReActV2 fixtures: the history mode of `DynReAct`, tools replaying the recorded results.
async fn run_react_v2(fixture: &Value) -> Result<(), Skip> {
    let r2 = &fixture["react_v2"];
    let calls = fixture["calls"].as_array().cloned().unwrap_or_default();
    let mut results: HashMap<String, VecDeque<(Value, bool)>> = HashMap::new();
    for event in fixture["result"]["history"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for result in event["tool_calls"]["tool_call_results"]
            .as_array()
            .into_iter()
            .flatten()
        {
            results
                .entry(result["name"].as_str().unwrap_or_default().to_owned())
                .or_default()
                .push_back((result["value"].clone(), result["is_error"] == json!(true)));
        }
    }
    let mut tools: Vec<Arc<dyn signet::Tool>> = Vec::new();
    for tool in r2["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        if name == signet::module::react::SUBMIT {
            continue;
        }
        let args = tool["args"].clone();
        let required = required_args(&args);
        tools.push(Arc::new(ReplayTool {
            spec: signet::tool::ToolSpec::new(
                &name,
                tool["desc"].as_str().unwrap_or_default(),
                json!({"type": "object", "properties": args, "required": required}),
            ),
            results: Mutex::new(results.remove(&name).unwrap_or_default()),
        }));
    }
    let config = module_config(&calls)?;
    let adapter = adapter_for(&fixture["adapter"], config.parallel_tool_calls)?;
    let replies: Vec<Value> = calls.iter().map(|c| c["reply"].clone()).collect();
    let lm = scripted(&replies, capabilities(&fixture["lm_capabilities"]));
    let core = DynReAct::new(signature(&fixture["signature"], false))
        .tools(tools)
        .with_mode(ReActMode::History)
        .with_limits(Limits::default().max_iters(r2["max_iters"].as_u64().unwrap_or(20) as usize))
        .with_options(config.options)
        .with_adapter(adapter)
        .with_lm(lm.clone());
    let inputs = decode_inputs(&fixture["inputs"])?;
    let result = core.forward(&inputs, &CallConfig::default()).await;
    compare_calls(&calls, &lm.requests())?;
    let outputs = result
        .clone()
        .map(|run| run.outputs)
        .map_err(|e| match e.reason {
            RunFailure::Call(error) => error,
            other => Error::InvalidSignature {
                message: other.to_string(),
            },
        });
    compare_result(&fixture["result"], &outputs)?;
    let Ok(run) = result else {
        return Ok(());
    };
    let want_reason = fixture["result"]["termination_reason"].as_str();
    let got_reason = if run.trajectory.stopped_early.is_some() {
        "forced_submit"
    } else {
        "submit"
    };
    if want_reason != Some(got_reason) {
        return fail(format!(
            "termination: DSPy {want_reason:?}, Signet {got_reason}"
        ));
    }
    let mut want = decode(&fixture["result"]["history"]["messages"]);
    // The recorder notes each tool result's Python type (`value_type`) beside its JSON value: an
    // encoding of the fixture, not part of DSPy's history.
    rewrite_objects(&mut want, &mut |object| {
        object.contains_key("call_id") && object.shift_remove("value_type").is_some()
    });
    let got = json!(run.trajectory.history);
    if want != got {
        return fail(format!("history: DSPy {want}, Signet {got}"));
    }
    Ok(())
}

/// The names of a recorded tool's arguments that have no default.
fn required_args(args: &Value) -> Vec<Value> {
    args.as_object()
        .map(|a| {
            a.iter()
                .filter(|(_, v)| v.get("default").is_none())
                .map(|(k, _)| json!(k))
                .collect()
        })
        .unwrap_or_default()
}
