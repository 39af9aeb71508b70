//! Saving and loading programs in DSPy's `program.save()` format: layout, round trips, and a
//! clear error (with nothing changed) for every kind of bad file.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use signet::module::{DynPredict, Predictors, StateError};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Write a search query for the question.
#[derive(Signature)]
struct GenQuery {
    #[input]
    question: String,
    #[output]
    query: String,
}

/// Answer the question from the passages.
#[derive(Signature)]
struct Answer {
    #[input]
    question: String,
    /// Retrieved passages
    #[input]
    context: Vec<String>,
    #[output]
    answer: String,
}

#[derive(Module)]
struct Pipeline {
    generate: Predict<GenQuery>,
    answer: ChainOfThought<Answer>,
    steps: Vec<Predict<GenQuery>>,
    by_lang: BTreeMap<String, Predict<GenQuery>>,
}

fn pipeline() -> Pipeline {
    Pipeline {
        generate: Predict::new(),
        answer: ChainOfThought::new(),
        steps: vec![Predict::new(), Predict::new()],
        by_lang: [("fr".to_owned(), Predict::new())].into_iter().collect(),
    }
}

fn tuned() -> Pipeline {
    let mut program = pipeline();
    let demo =
        json!({"augmented": true, "question": "Where is the Louvre?", "query": "louvre location"});
    program
        .generate
        .predictor_mut()
        .set_demos(vec![demo.as_object().unwrap().clone()]);
    for (name, predictor) in program.named_predictors_mut() {
        predictor.set_instructions(format!("Tuned instructions for {name}."));
    }
    program
}

#[test]
fn a_program_is_saved_keyed_by_dspy_paths_with_metadata() {
    let state = tuned().dump_state();
    let keys: Vec<&String> = state.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "generate",
            "answer.predict",
            "steps[0]",
            "steps[1]",
            "by_lang['fr']",
            "metadata"
        ]
    );
    let generate = &state["generate"];
    let order: Vec<&String> = generate.as_object().unwrap().keys().collect();
    assert_eq!(order, ["traces", "train", "demos", "signature", "lm"]);
    assert_eq!(generate["demos"][0]["augmented"], true);
    assert_eq!(
        state["answer.predict"]["signature"]["fields"],
        json!([
            {"prefix": "Question:", "description": "${question}"},
            {"prefix": "Context:", "description": "Retrieved passages"},
            {"prefix": "Reasoning:", "description": "${reasoning}"},
            {"prefix": "Answer:", "description": "${answer}"},
        ])
    );
    assert_eq!(
        state["metadata"],
        json!({"dependency_versions": {"python": "3.11", "dspy": "3.4.1", "cloudpickle": "3.1"}})
    );
}

#[test]
fn a_lone_predict_is_saved_flat() {
    let qa = Predict::<GenQuery>::new();
    let state = qa.dump_state();
    assert!(state.get("self").is_none());
    assert_eq!(
        state["signature"]["instructions"],
        "Write a search query for the question."
    );
    assert!(state["metadata"].is_object());
}

#[test]
fn saving_and_loading_round_trips_byte_for_byte() {
    let path = std::env::temp_dir().join(format!("signet-saved-{}.json", std::process::id()));
    let program = tuned();
    program.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("}\n") && text.contains("\n  \"generate\": {\n    \"traces\": [],"));
    let mut loaded = pipeline();
    loaded.load(&path).unwrap();
    assert_eq!(loaded.to_saved_json(), text);
    assert_eq!(loaded.generate.predictor().demos().len(), 1);
    assert_eq!(
        loaded.by_lang["fr"].predictor().instructions(),
        "Tuned instructions for by_lang['fr']."
    );
    std::fs::remove_file(path).ok();
}

#[test]
fn a_missing_predictor_is_named_and_nothing_changes() {
    let mut state = tuned().dump_state();
    state.as_object_mut().unwrap().shift_remove("steps[1]");
    let mut program = pipeline();
    let before = program.to_saved_json();
    let err = program.load_state(&state).unwrap_err();
    assert!(
        matches!(&err, StateError::Missing { key } if key == "steps[1]"),
        "{err}"
    );
    assert!(err.to_string().contains("`steps[1]`"), "{err}");
    assert_eq!(
        program.to_saved_json(),
        before,
        "a failed load changed the program"
    );
}

#[test]
fn wrong_values_say_where_they_are() {
    let mut state = tuned().dump_state();
    state["answer.predict"]["demos"] = json!([{"question": "q"}, "not a demo"]);
    let err = pipeline().load_state(&state).unwrap_err();
    assert!(
        matches!(&err, StateError::Invalid { at, expected: "an object", .. } if at == "answer.predict.demos[1]"),
        "{err}"
    );

    let mut state = tuned().dump_state();
    state["generate"]["signature"]["fields"][1] = json!({"prefix": "Query:"});
    let err = pipeline().load_state(&state).unwrap_err();
    assert!(
        matches!(&err, StateError::Missing { key } if key == "generate.signature.fields[1].description"),
        "{err}"
    );

    let mut state = tuned().dump_state();
    state["generate"]
        .as_object_mut()
        .unwrap()
        .shift_remove("lm");
    let err = pipeline().load_state(&state).unwrap_err();
    assert!(
        matches!(&err, StateError::Missing { key } if key == "generate.lm"),
        "{err}"
    );

    let err = Predict::<GenQuery>::new()
        .load_state(&json!([1, 2]))
        .unwrap_err();
    assert!(err.to_string().contains("should be an object"), "{err}");
}

#[test]
fn legacy_files_and_bad_json_are_errors() {
    let mut state = Predict::<GenQuery>::new().dump_state();
    state["extended_signature"] = json!({});
    let err = Predict::<GenQuery>::new().load_state(&state).unwrap_err();
    assert!(matches!(err, StateError::Unsupported { .. }), "{err}");

    let err = Predict::<GenQuery>::new()
        .load_json("{\"traces\": [],\n oops")
        .unwrap_err();
    assert!(
        matches!(&err, StateError::Json { message, .. } if message.contains("line 2")),
        "{err}"
    );
    let err = Predict::<GenQuery>::new()
        .load("/no/such/dir/program.json")
        .unwrap_err();
    assert!(
        matches!(err, StateError::Io { action: "read", .. }),
        "{err}"
    );
}

#[test]
fn lm_settings_are_kept_without_the_ones_that_choose_an_endpoint() {
    let mut state = Predict::<GenQuery>::new().dump_state();
    state["lm"] = json!({
        "_dspy_lm_class": "dspy.clients.lm.LM",
        "model": "openai/gpt-4o-mini",
        "temperature": 0.7,
        "api_base": "http://attacker.example/v1",
        "model_list": [],
    });
    let mut qa = Predict::<GenQuery>::new();
    qa.load_state(&state).unwrap();
    let lm = qa.predictor().saved_lm().unwrap();
    assert_eq!(lm["model"], "openai/gpt-4o-mini");
    assert!(lm.get("api_base").is_none() && lm.get("model_list").is_none());
    assert_eq!(qa.dump_state()["lm"], *lm);
}

#[test]
fn descriptions_and_prefixes_apply_by_position_as_in_dspy() {
    // A file saved from `context, question -> answer` loaded into `question, context -> answer`:
    // DSPy applies the entries by position, so the descriptions swap.
    let saved = json!({
        "traces": [], "train": [], "demos": [],
        "signature": {"instructions": "Answer.", "fields": [
            {"prefix": "Context:", "description": "Background facts"},
            {"prefix": "Question:", "description": "${question}"},
        ]},
        "lm": null,
    });
    let mut qa = DynPredict::new("question, context -> answer".parse().unwrap());
    qa.restore(&saved).unwrap();
    let fields: Vec<(String, Option<String>, String)> = qa
        .signature()
        .fields()
        .map(|f| (f.name().to_owned(), f.desc().map(str::to_owned), f.prefix()))
        .collect();
    assert_eq!(
        fields,
        [
            (
                "question".into(),
                Some("Background facts".into()),
                "Context:".into()
            ),
            // `${question}` on the field `context` is text, shown as it is.
            (
                "context".into(),
                Some("${question}".into()),
                "Question:".into()
            ),
            ("answer".into(), None, "Answer:".into()),
        ]
    );
    let lm = std::sync::Arc::new(ScriptedLm::texts(["[[ ## answer ## ]]\nParis"]));
    let qa = qa.with_lm(lm.clone());
    let inputs = json!({"question": "Capital?", "context": "France"});
    signet::blocking::block_on(qa.forward(inputs.as_object().unwrap()))
        .unwrap()
        .unwrap();
    let system = &lm.requests()[0].messages[0].content;
    assert!(
        system.starts_with(
            "Your input fields are:\n1. `question` (str): Background facts\n2. `context` (str): ${question}\n"
        ),
        "{system}"
    );
}

#[test]
fn a_loaded_program_prompts_with_its_demos_and_instructions() {
    let mut program = pipeline();
    program.load_json(&tuned().to_saved_json()).unwrap();
    let lm = std::sync::Arc::new(ScriptedLm::texts([
        "[[ ## query ## ]]\neiffel tower height",
    ]));
    let generate = program.generate.with_lm(lm.clone());
    let out = generate
        .call_blocking(GenQueryInput {
            question: "How tall is the Eiffel Tower?".into(),
        })
        .unwrap();
    assert_eq!(out.query, "eiffel tower height");
    let messages = &lm.requests()[0].messages;
    assert!(
        messages[0]
            .content
            .ends_with("Tuned instructions for generate.")
    );
    assert_eq!(
        messages[1].content,
        "[[ ## question ## ]]\nWhere is the Louvre?"
    );
    assert_eq!(messages.len(), 4);
}

#[test]
fn states_are_plain_json_values() {
    let state: Value = Predict::<GenQuery>::new().dump_state();
    assert_eq!(state["demos"], json!([]));
    assert_eq!(state["lm"], Value::Null);
}

/// Look a word up in the dictionary.
#[tool]
fn define(word: String) -> String {
    format!("{word}: a word")
}

/// Count the letters of a word.
#[tool]
fn count_letters(word: String) -> usize {
    word.chars().count()
}

/// Answer about words.
#[derive(Signature)]
struct AboutWords {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[derive(Module)]
struct TwoAgents {
    lookup: ReAct<AboutWords>,
    helpers: Vec<ReAct<AboutWords>>,
}

fn two_agents() -> TwoAgents {
    TwoAgents {
        lookup: ReAct::new().tool(DefineTool).tool(CountLettersTool),
        helpers: vec![ReAct::new().tool(DefineTool)],
    }
}

#[test]
fn changed_tool_descriptions_are_saved_under_signets_key_and_loaded_back() {
    let mut program = two_agents();
    // Tool descriptions are named by the loop's path; nested loops and lists are walked.
    let names: Vec<String> = program
        .named_tool_descriptions()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        names,
        [
            "lookup.tools.define",
            "lookup.tools.count_letters",
            "helpers[0].tools.define"
        ]
    );
    // Unchanged: the file is DSPy's, with no key of Signet's.
    let plain = program.dump_state();
    assert!(plain.get(signet::module::TOOL_DESCRIPTIONS).is_none());

    program
        .set_named_tool_description("helpers[0].tools.define", "Define one English word.")
        .unwrap();
    let error = program
        .set_named_tool_description("helpers[0].tools.count_letters", "x")
        .unwrap_err();
    assert_eq!(error.tool, "helpers[0].tools.count_letters");
    assert_eq!(error.known.len(), 3);
    let state = program.dump_state();
    assert_eq!(
        state[signet::module::TOOL_DESCRIPTIONS],
        json!({"helpers[0].tools.define": "Define one English word."})
    );
    // The step instructions carry the new listing, as DSPy's ReAct would show it.
    let instructions = state["helpers[0].react"]["signature"]["instructions"]
        .as_str()
        .unwrap();
    assert!(
        instructions
            .contains("(1) define, whose description is <desc>Define one English word.</desc>.")
    );

    let mut loaded = two_agents();
    loaded.load_state(&state).unwrap();
    assert_eq!(
        loaded.helpers[0].core().tool_description("define"),
        Some("Define one English word.")
    );
    assert_eq!(
        loaded.helpers[0].core().tool_list()[0].to_openai_function()["function"]["description"],
        "Define one English word."
    );
    assert_eq!(
        loaded.lookup.core().tool_description("define"),
        Some("Look a word up in the dictionary.")
    );
    assert_eq!(loaded.to_saved_json(), program.to_saved_json());

    // A file without the key gives every tool its own description back.
    loaded.load_state(&plain).unwrap();
    assert!(
        loaded.helpers[0]
            .core()
            .changed_tool_descriptions()
            .is_empty()
    );
}

#[test]
fn a_saved_description_of_a_tool_the_program_lacks_is_an_error_and_nothing_changes() {
    let mut program = two_agents();
    let mut state = program.dump_state();
    state["lookup.react"]["signature"]["instructions"] = json!("Changed.");
    state[signet::module::TOOL_DESCRIPTIONS] = json!({"lookup.tools.search": "Search."});
    let error = program.load_state(&state).unwrap_err();
    assert!(matches!(&error, StateError::UnknownTool { name } if name == "lookup.tools.search"));
    assert_eq!(
        error.to_string(),
        "the saved program describes the tool `lookup.tools.search`, which this program does not have (was it saved from a program with other tools?)"
    );
    assert_ne!(
        program.lookup.core().step_predictor().instructions(),
        "Changed."
    );

    state[signet::module::TOOL_DESCRIPTIONS] = json!({"lookup.tools.define": 3});
    let error = program.load_state(&state).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`signet.tool_descriptions.lookup.tools.define` in the saved program should be a string, but it is 3"
    );
    state[signet::module::TOOL_DESCRIPTIONS] = json!(["x"]);
    assert!(matches!(
        program.load_state(&state),
        Err(StateError::Invalid { .. })
    ));
}
