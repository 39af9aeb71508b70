//! The BFCL harness (`examples/bfcl.rs`) on a scripted model: BFCL's parameter types become JSON
//! Schema, dotted names travel as wire names and come back, and each mode's reply becomes the
//! result line BFCL's checker reads — calls, no call, or `null` for an unreadable reply.

#[path = "../../examples/bfcl.rs"]
// The example, inside the test module named after it.
#[allow(dead_code, clippy::module_inception)]
mod bfcl;

use std::sync::Arc;

use serde_json::{Value, json};
use signet::adapter::ToolCalls;
use signet::lm::{Capabilities, Completion, ToolCall, Usage};
use signet::module::Predict;
use signet::testing::ScriptedLm;

const LINE: &str = r#"{"id": "parallel_0", "category": "parallel", "messages": [{"role": "user", "content": "Play Taylor Swift for 20 minutes and Maroon 5 for 15."}], "functions": [{"name": "spotify.play", "description": "Play an artist.", "parameters": {"type": "dict", "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}}, "required": ["artist", "duration"]}}]}"#;

fn predictor(mode: &str, lm: ScriptedLm) -> (Predict<bfcl::FunctionCall>, Arc<ScriptedLm>) {
    let lm = Arc::new(lm);
    (bfcl::program(mode, lm.clone()).unwrap(), lm)
}

#[test]
fn bfcl_types_become_json_schema() {
    let schema = bfcl::json_schema(&json!({
        "type": "dict",
        "properties": {
            "ratio": {"type": "float", "description": "A ratio."},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "anything": {"type": "any"},
            "nested": {"type": "dict", "properties": {"names": {"type": "array", "items": {"type": "string"}}}},
            "unit": {"type": "string", "enum": ["m", "km"], "default": "m"}
        },
        "required": ["ratio"]
    }));
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "ratio": {"type": "number", "description": "A ratio."},
                "point": {"type": "array", "items": {"type": "number"}},
                "anything": {"type": "string"},
                "nested": {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}},
                "unit": {"type": "string", "enum": ["m", "km"], "default": "m"}
            },
            "required": ["ratio"]
        })
    );
    assert_eq!(bfcl::wire_name("math.factorial"), "math_factorial");
}

#[tokio::test]
async fn text_modes_read_calls_and_restore_dotted_names() {
    let question = bfcl::question(LINE).unwrap();
    assert_eq!(
        question.input.tools.0[0]["function"]["name"],
        "spotify_play"
    );
    let calls = r#"{"tool_calls": [{"name": "spotify_play", "args": {"artist": "Taylor Swift", "duration": 20}}, {"name": "spotify_play", "args": {"artist": "Maroon 5", "duration": 15}}]}"#;
    let want = json!([
        {"spotify.play": {"artist": "Taylor Swift", "duration": 20}},
        {"spotify.play": {"artist": "Maroon 5", "duration": 15}}
    ]);
    for (mode, reply) in [
        (
            "chat",
            format!("[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"),
        ),
        ("json", format!("{{\"tool_calls\": {calls}}}")),
        ("xml", format!("<tool_calls>\n{calls}\n</tool_calls>")),
        ("constrained", format!("{{\"tool_calls\": {calls}}}")),
    ] {
        let (predictor, lm) = predictor(mode, ScriptedLm::texts([reply]));
        let line = bfcl::answer(&predictor, &question, mode, "scripted").await;
        assert_eq!(line["calls"], want, "{mode}: {line}");
        assert_eq!(line["id"], "parallel_0");
        // The functions are in the prompt, under their wire names.
        assert!(
            lm.requests()[0].messages[1]
                .content
                .contains("spotify_play"),
            "{mode}"
        );
    }
}

#[tokio::test]
async fn native_mode_sends_tools_and_reads_calls_or_no_call() {
    let question = bfcl::question(LINE).unwrap();
    let native = Capabilities::default().with_function_calling(true);
    let (predictor, lm) = predictor(
        "native",
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new(
                "call_0",
                "spotify_play",
                r#"{"artist": "Taylor Swift", "duration": 20}"#,
            )]),
            Completion::text("None of these functions can do that."),
        ])
        .with_capabilities(native),
    );
    let line = bfcl::answer(&predictor, &question, "native", "scripted").await;
    assert_eq!(
        line["calls"],
        json!([{"spotify.play": {"artist": "Taylor Swift", "duration": 20}}])
    );
    assert_eq!(lm.requests()[0].tools[0].name, "spotify_play");
    // A text answer is no call: what BFCL's irrelevance categories want.
    let line = bfcl::answer(&predictor, &question, "native", "scripted").await;
    assert_eq!(line["calls"], json!([]), "{line}");
}

#[tokio::test]
async fn an_unreadable_reply_is_null_calls_with_the_parse_error() {
    let question = bfcl::question(LINE).unwrap();
    // The Chat adapter retries once in JSON; both replies are unreadable.
    let spent = |text: &str, prompt_tokens, completion_tokens| Completion {
        usage: Usage {
            prompt_tokens,
            completion_tokens,
            lm_calls: 1,
            ..Usage::default()
        },
        ..Completion::text(text)
    };
    let (predictor, _) = predictor(
        "chat",
        ScriptedLm::new([
            spent("I would play music.", 300, 40),
            spent("Sure!", 320, 2),
        ]),
    );
    let line = bfcl::answer(&predictor, &question, "chat", "scripted").await;
    assert_eq!(line["calls"], Value::Null);
    assert_eq!(line["error_kind"], "parse");
    // The tokens of both unread replies are counted, not dropped with the failed prediction.
    assert_eq!(line["prompt_tokens"], 620, "{line}");
    assert_eq!(line["completion_tokens"], 42, "{line}");
    assert!(
        line["error"]
            .as_str()
            .unwrap()
            .contains("unparseable reply"),
        "{line}"
    );
}

#[test]
fn a_bad_question_line_says_what_is_missing() {
    assert_eq!(bfcl::question("{}").err().unwrap(), "no `id`");
    let no_name = r#"{"id": "x", "messages": [], "functions": [{"description": "d"}]}"#;
    assert_eq!(
        bfcl::question(no_name).err().unwrap(),
        "a function without a name"
    );
    assert!(
        bfcl::question("not json")
            .err()
            .unwrap()
            .starts_with("not JSON")
    );
}

fn calls(value: Value) -> ToolCalls {
    serde_json::from_value(json!({ "tool_calls": value })).unwrap()
}

#[test]
fn the_demo_metric_reads_possible_answers_as_bfcl_does() {
    let truth = json!([
        {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
        {"spotify.play": {"artist": ["Maroon 5"], "duration": [15], "device": ["", "phone"]}}
    ]);
    let both = |first: i64| {
        calls(json!([
            {"name": "spotify_play", "args": {"artist": "maroon 5", "duration": 15.0}},
            {"name": "spotify_play", "args": {"artist": "Taylor Swift", "duration": first}}
        ]))
    };
    // Any order, numbers by value, strings without case, an optional argument left out.
    assert!(bfcl::matches(&truth, &both(20)));
    assert!(!bfcl::matches(&truth, &both(21)), "a wrong value");
    let one = calls(
        json!([{"name": "spotify_play", "args": {"artist": "Taylor Swift", "duration": 20}}]),
    );
    assert!(!bfcl::matches(&truth, &one), "a missing call");
    let extra = calls(
        json!([{"name": "spotify_play", "args": {"artist": "Taylor Swift", "duration": 20, "loud": true}}]),
    );
    assert!(
        !bfcl::matches(&json!([truth[0]]), &extra),
        "an argument BFCL does not list"
    );
    let missing = calls(json!([{"name": "spotify_play", "args": {"artist": "Taylor Swift"}}]));
    assert!(
        !bfcl::matches(&json!([truth[0]]), &missing),
        "a required argument left out"
    );
    // No possible answers: making no call is right.
    assert!(bfcl::matches(&Value::Null, &calls(json!([]))));
    assert!(!bfcl::matches(&Value::Null, &one));
}

#[tokio::test]
async fn bootstrapping_keeps_the_questions_answered_right_as_demos() {
    let right = bfcl::question(&LINE.replace(
        r#""functions""#,
        r#""ground_truth": [{"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}}], "functions""#,
    ))
    .unwrap();
    let mut wrong = bfcl::question(&LINE.replace("parallel_0", "parallel_1")).unwrap();
    wrong.ground_truth = json!([{"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}]);
    let reply = |artist: &str, duration: u32| {
        format!(
            "[[ ## tool_calls ## ]]\n{{\"tool_calls\": [{{\"name\": \"spotify_play\", \"args\": {{\"artist\": \"{artist}\", \"duration\": {duration}}}}}]}}\n\n[[ ## completed ## ]]"
        )
    };
    let (student, _) = predictor(
        "chat",
        ScriptedLm::texts([reply("Taylor Swift", 20), reply("Maroon 5", 99)]),
    );
    let trainset: Vec<_> = [&right, &wrong].into_iter().map(bfcl::example).collect();
    let metric = |example: &signet::data::Example, output: &bfcl::FunctionCallOutput| {
        bfcl::matches(
            &example.get("ground_truth").cloned().unwrap_or_default(),
            &output.tool_calls,
        )
    };
    let compiled = signet::optimize::BootstrapFewShot::new(metric)
        .with_max_labeled_demos(0)
        .with_max_rounds(1)
        .with_concurrency(1)
        .compile(&student, &trainset)
        .await
        .unwrap();
    let demos = compiled.program.predictor().demos();
    assert_eq!(demos.len(), 1, "{demos:?}");
    assert_eq!(
        demos[0]["tool_calls"]["tool_calls"][0]["args"]["artist"],
        "Taylor Swift"
    );
}

#[tokio::test]
async fn labeled_demos_show_the_first_possible_answer_in_the_prompt() {
    let mut question = bfcl::question(LINE).unwrap();
    question.ground_truth = json!([
        {"spotify.play": {"artist": ["Taylor Swift", "T. Swift"], "duration": [20], "device": ["", "phone"]}},
        {"spotify.play": {"artist": ["Maroon 5"], "duration": [15, 15.0]}}
    ]);
    let label = bfcl::answer_calls(&question).unwrap();
    assert_eq!(
        serde_json::to_value(&label).unwrap(),
        json!({"tool_calls": [
            {"name": "spotify_play", "args": {"artist": "Taylor Swift", "duration": 20}},
            {"name": "spotify_play", "args": {"artist": "Maroon 5", "duration": 15}}
        ]}),
        "the first value of each argument, the optional one left out"
    );
    let mut java = bfcl::question(&LINE.replace(r#""id""#, r#""language": "java", "id""#)).unwrap();
    java.ground_truth = question.ground_truth.clone();
    assert!(
        bfcl::answer_calls(&java).is_none(),
        "no label in Java syntax"
    );
    let mut irrelevant = bfcl::question(&LINE.replace("parallel_0", "irrelevance_0")).unwrap();
    irrelevant.ground_truth = Value::Null;
    assert!(
        bfcl::answer_calls(&irrelevant)
            .unwrap()
            .tool_calls
            .is_empty()
    );

    // Compiled with labeled demos only, the constrained program shows the label as the demo's
    // answer before the question.
    let trainset = vec![bfcl::example(&question)];
    let (student, lm) = predictor("constrained", ScriptedLm::texts([r#"{"tool_calls": []}"#]));
    let compiled = signet::optimize::BootstrapFewShot::new(
        |_: &signet::data::Example, _: &bfcl::FunctionCallOutput| false,
    )
    .with_max_bootstrapped_demos(0)
    .with_max_labeled_demos(4)
    .compile(&student, &trainset)
    .await
    .unwrap();
    assert_eq!(compiled.program.predictor().demos().len(), 1);
    bfcl::answer(&compiled.program, &irrelevant, "constrained", "scripted").await;
    let sent = serde_json::to_string(&lm.requests()[0].messages).unwrap();
    assert!(
        sent.contains("Maroon 5") && sent.contains("Taylor Swift"),
        "{sent}"
    );
}

#[test]
fn per_category_compilation_splits_questions_and_training_questions_alike() {
    let line = |id: &str, category: &str| {
        bfcl::question(&LINE.replace(
            r#""id": "parallel_0", "category": "parallel""#,
            &format!(r#""id": "{id}", "category": "{category}""#),
        ))
        .unwrap()
    };
    let questions = [line("a0", "a"), line("b0", "b"), line("a1", "a")];
    let train = [line("b9", "b"), line("a9", "a"), line("c9", "c")];
    let ids = |qs: &[&bfcl::Question]| qs.iter().map(|q| q.id.clone()).collect::<Vec<_>>();
    let groups = bfcl::by_category(&questions, &train);
    let groups: Vec<_> = groups.iter().map(|(q, t)| (ids(q), ids(t))).collect();
    assert_eq!(
        groups,
        [
            (vec!["a0".to_owned(), "a1".into()], vec!["a9".to_owned()]),
            (vec!["b0".into()], vec!["b9".into()]),
        ]
    );
}

/// BFCL's data and checker, installed into the cache by the project's script (seconds once
/// cached): the venv's python.
fn bfcl_python() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new("bash")
        .arg(format!("{root}/benches/bfcl/install.sh"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "benches/bfcl/install.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.lines().last().expect("the python path").to_owned()
}

fn bfcl_py(python: &str, args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/bfcl/bfcl.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "bfcl.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// BFCL's checker's summary of `results` (result lines) for the questions in `questions`.
fn score(python: &str, dir: &std::path::Path, questions: &std::path::Path, results: &str) -> Value {
    let results_file = dir.join("r.jsonl");
    std::fs::write(&results_file, results).unwrap();
    let summary_file = dir.join("summary.json");
    bfcl_py(
        python,
        &[
            "score",
            "--questions",
            questions.to_str().unwrap(),
            "--results",
            results_file.to_str().unwrap(),
            "--out",
            summary_file.to_str().unwrap(),
        ],
    );
    serde_json::from_str(&std::fs::read_to_string(&summary_file).unwrap()).unwrap()
}

const SINGLE_TURN: &str = "simple_python,simple_java,simple_javascript,multiple,parallel,\
parallel_multiple,irrelevance,live_simple,live_multiple,live_parallel,live_parallel_multiple,\
live_irrelevance,live_relevance";

/// Every question of every single-turn category, exported into a new directory named after
/// `name`: BFCL's python, the directory and the file.
fn export_single_turn(name: &str) -> (String, std::path::PathBuf, std::path::PathBuf) {
    let python = bfcl_python();
    let dir = std::env::temp_dir().join(format!("signet-bfcl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("all.jsonl");
    bfcl_py(
        &python,
        &[
            "export",
            "--categories",
            SINGLE_TURN,
            "--out",
            file.to_str().unwrap(),
        ],
    );
    (python, dir, file)
}

#[test]
fn every_bfcl_function_converts_to_a_schema_signet_accepts() {
    use signet::adapter::{Adapter, JsonAdapter};
    use signet::lm::{Capabilities, LmRequest, ResponseFormat};
    let (_, dir, file) = export_single_turn("all");
    let signature = <bfcl::FunctionCall as signet::Signature>::signature();
    let local = Capabilities::default().with_json_object_schema(true);
    let (mut questions, mut functions) = (0, 0);
    for (n, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
        let question = bfcl::question(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        for tool in &question.input.tools.0 {
            let parameters = &tool["function"]["parameters"];
            jsonschema::validator_for(parameters).unwrap_or_else(|e| {
                panic!(
                    "{}: {} does not compile: {e}",
                    question.id, tool["function"]["name"]
                )
            });
            functions += 1;
        }
        // The decoding schema of constrained mode for the whole question compiles too.
        let inputs = serde_json::to_value(&question.input).unwrap();
        let mut request = LmRequest::default();
        JsonAdapter::constrained().configure(
            signature,
            inputs.as_object().unwrap(),
            &mut request,
            local,
        );
        let Some(ResponseFormat::Raw(format)) = &request.response_format else {
            panic!("{}: no decoding schema", question.id)
        };
        jsonschema::validator_for(&format["schema"]).unwrap_or_else(|e| {
            panic!("{}: the decoding schema does not compile: {e}", question.id)
        });
        questions += 1;
    }
    println!(
        "{functions} BFCL functions in {questions} questions convert to schemas Signet accepts"
    );
    assert!(
        questions > 3000,
        "every single-turn category was exported: {questions}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The labels labeled demos show, BFCL's first possible answer to every question of every AST
/// category read as Python, are right by BFCL's checker and by the demo metric.
#[test]
fn the_first_possible_answers_score_right_by_bfcls_checker() {
    let (python, dir, questions) = export_single_turn("labels");
    let mut results = String::new();
    let (mut count, mut unanswerable) = (0, 0);
    for line in std::fs::read_to_string(&questions).unwrap().lines() {
        let question = bfcl::question(line).unwrap();
        if question.category.contains("relevance") {
            continue; // no possible answers: scored on whether a call was made
        }
        if !answerable(&question) {
            unanswerable += 1;
            continue;
        }
        let Some(calls) = bfcl::answer_calls(&question) else {
            assert_ne!(question.language, "python", "{}: no label", question.id);
            continue;
        };
        assert!(
            bfcl::matches(&question.ground_truth, &calls),
            "{}: the demo metric rejects {calls:?} for {}",
            question.id,
            question.ground_truth
        );
        let line = json!({"id": question.id, "category": question.category, "mode": "labels",
            "model": "truth", "calls": question.bfcl_calls(&calls)});
        results.push_str(&format!("{line}\n"));
        count += 1;
    }
    let summary = score(&python, &dir, &questions, &results);
    let wrong: Vec<&Value> = summary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        // Questions skipped above have no result.
        .filter(|v| v["valid"] == false && v["error_type"] != "harness:missing_result")
        .collect();
    println!(
        "{count} first possible answers scored by BFCL's checker; {unanswerable} questions' \
         possible answers contradict their functions' schemas, so no reply can satisfy them"
    );
    assert!(unanswerable < 10, "{unanswerable} unanswerable questions");
    assert!(count > 2000, "every AST category was exported: {count}");
    assert!(wrong.is_empty(), "{} wrong: {wrong:#?}", wrong.len());
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether some reply can satisfy BFCL's checker, that is whether BFCL's possible answers agree
/// with the function's own schema: no argument listed with no possible value (`[]`, wrong both
/// given and left out), none the function does not have, and every required one listed with a
/// value other than `""`.
fn answerable(question: &bfcl::Question) -> bool {
    let truth = question.ground_truth.as_array().into_iter().flatten();
    truth
        .filter_map(|call| call.as_object()?.iter().next())
        .all(|(name, possible)| {
            let Some(parameters) = question.parameters(&bfcl::wire_name(name)) else {
                return false;
            };
            let listed = |key: &str| {
                possible[key]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|x| x != ""))
            };
            let required = parameters["required"].as_array().into_iter().flatten();
            possible.as_object().is_some_and(|args| {
                args.iter().all(|(key, values)| {
                    parameters["properties"].get(key).is_some()
                        && values.as_array().is_none_or(|v| !v.is_empty())
                })
            }) && required.filter_map(Value::as_str).all(listed)
        })
}

#[tokio::test]
async fn a_reply_in_each_mode_scores_as_bfcl_says() {
    let python = bfcl_python();
    let dir = std::env::temp_dir().join(format!("signet-bfcl-modes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let questions = dir.join("q.jsonl");
    // parallel_0 of BFCL: two calls of one function whose name has a dot.
    bfcl_py(
        &python,
        &[
            "export",
            "--categories",
            "parallel",
            "--limit",
            "1",
            "--seed",
            "0",
            "--out",
            questions.to_str().unwrap(),
        ],
    );
    let line = std::fs::read_to_string(&questions).unwrap();
    let question = bfcl::question(line.trim()).unwrap();
    // The first accepted value of every argument BFCL lists, under the wire name.
    let right = serde_json::to_value(bfcl::answer_calls(&question).unwrap()).unwrap()["tool_calls"]
        .as_array()
        .unwrap()
        .clone();
    let mut wrong = right.clone();
    let first_arg = wrong[0]["args"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    wrong[0]["args"][&first_arg] = json!("certainly not this");
    let mut results = String::new();
    for (label, calls) in [("right", &right), ("wrong", &wrong)] {
        let calls = json!({"tool_calls": calls});
        for mode in ["chat", "json", "xml", "constrained"] {
            let reply = match mode {
                "chat" => format!("[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"),
                "xml" => format!("<tool_calls>\n{calls}\n</tool_calls>"),
                _ => json!({"tool_calls": calls}).to_string(),
            };
            let (program, _) = predictor(mode, ScriptedLm::texts([reply]));
            let line =
                bfcl::answer(&program, &question, &format!("{mode}-{label}"), "scripted").await;
            results.push_str(&format!("{line}\n"));
        }
        let native: Vec<ToolCall> = calls["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                ToolCall::new(
                    format!("call_{i}"),
                    c["name"].as_str().unwrap(),
                    c["args"].to_string(),
                )
            })
            .collect();
        let (program, _) = predictor(
            "native",
            ScriptedLm::new([Completion::tool_calls(native)])
                .with_capabilities(Capabilities::default().with_function_calling(true)),
        );
        let line = bfcl::answer(&program, &question, &format!("native-{label}"), "scripted").await;
        results.push_str(&format!("{line}\n"));
    }
    let summary = score(&python, &dir, &questions, &results);
    let text = summary.to_string();
    for mode in ["chat", "json", "xml", "constrained", "native"] {
        for (label, want) in [("right", true), ("wrong", false)] {
            let row = format!("{mode}-{label}");
            let valid = verdict(&summary, &row);
            assert_eq!(valid, Some(want), "{row}: {text}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether BFCL's checker found the one question of `mode` right, from the scorer's summary.
fn verdict(summary: &Value, mode: &str) -> Option<bool> {
    fn find(value: &Value, mode: &str) -> Option<bool> {
        match value {
            Value::Object(map) => {
                if map.get("mode").and_then(Value::as_str) == Some(mode)
                    && let Some(valid) = map.get("valid").and_then(Value::as_bool)
                {
                    return Some(valid);
                }
                map.values().find_map(|v| find(v, mode))
            }
            Value::Array(items) => items.iter().find_map(|v| find(v, mode)),
            _ => None,
        }
    }
    find(summary, mode)
}
