//! Programs cross between Python DSPy 3.4.1 and Signet: compiled in DSPy and run in Signet, and
//! compiled in Signet and run in DSPy, with the same prompts on both sides. DSPy is installed on
//! first use into a venv under `$SIGNET_CACHE` (`benches/compare/install-dspy.sh`, cached).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use signet::data::Example;
use signet::evaluate::exact_match;
use signet::lm::LmRequest;
use signet::module::Predictors;
use signet::optimize::BootstrapFewShot;
use signet::prelude::*;
use signet::testing::ScriptedLm;
use support::{RuleLm, field_in};

/// Answer the arithmetic question.
#[derive(Signature)]
struct QA {
    #[input]
    question: String,
    /// just the number
    #[output]
    answer: String,
}

const TRAIN: [(u32, u32); 5] = [(2, 2), (3, 4), (5, 1), (6, 6), (7, 2)];
const TEST_QUESTION: &str = "What is 8 + 9?";

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's python, DSPy installed (once per cache).
fn dspy_python() -> String {
    let out = Command::new("bash")
        .arg(manifest().join("benches/compare/install-dspy.sh"))
        .output()
        .expect("bash runs benches/compare/install-dspy.sh");
    assert!(
        out.status.success(),
        "installing DSPy failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Runs `tests/dspy_interop/programs.py MODE PATH` and returns its stdout.
fn dspy(mode: &str, path: &Path) -> String {
    let out = Command::new(dspy_python())
        .arg(manifest().join("tests/dspy_interop/programs.py"))
        .args([mode, path.to_str().unwrap()])
        .current_dir(std::env::temp_dir())
        .output()
        .expect("python runs programs.py");
    assert!(
        out.status.success(),
        "programs.py {mode} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("signet-interop-{}-{name}", std::process::id()))
}

/// The replies programs.py's DummyLM gives, as Chat-format text.
fn reply(question: &str) -> Option<String> {
    let numbers: Vec<u32> = question
        .trim_start_matches("What is ")
        .trim_end_matches('?')
        .split(" + ")
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    let (a, b) = (numbers[0], numbers[1]);
    Some(format!(
        "[[ ## reasoning ## ]]\n{a} plus {b} is {}.\n\n[[ ## answer ## ]]\n{}\n\n[[ ## completed ## ]]",
        a + b,
        a + b
    ))
}

/// The messages Signet sends for the test question, from a program loaded from `saved`.
async fn signet_messages(saved: &Path) -> Value {
    let mut program = ChainOfThought::<QA>::new();
    program.load(saved).unwrap();
    let lm = Arc::new(ScriptedLm::texts([reply(TEST_QUESTION).unwrap()]));
    let out = program
        .with_lm(lm.clone())
        .call(QAInput {
            question: TEST_QUESTION.into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "17");
    messages(&lm.requests()[0])
}

fn messages(request: &LmRequest) -> Value {
    Value::Array(
        request
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect(),
    )
}

#[tokio::test]
async fn a_program_compiled_in_dspy_sends_the_same_prompt_in_signet() {
    let saved = temp("from-dspy.json");
    dspy("compile", &saved);
    let ran: Value = serde_json::from_str(&dspy("run", &saved)).unwrap();
    assert_eq!(signet_messages(&saved).await, ran["messages"]);
    std::fs::remove_file(saved).ok();
}

#[tokio::test]
async fn a_program_compiled_in_signet_is_the_file_dspy_writes_and_runs_the_same_in_dspy() {
    // The same bootstrap as programs.py's, over the same LM answers.
    let lm = RuleLm::new(|message: &str| reply(field_in(message, "question")?));
    let trainset: Vec<Example> = TRAIN
        .iter()
        .map(|(a, b)| {
            Example::new(
                json!({"question": format!("What is {a} + {b}?"), "answer": (a + b).to_string()}),
            )
            .with_inputs(["question"])
        })
        .collect();
    let student = ChainOfThought::<QA>::new().with_lm(lm);
    let mut compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_bootstrapped_demos(2)
        .with_max_labeled_demos(3)
        .compile(&student, &trainset)
        .await
        .unwrap()
        .program;
    compiled.named_predictors_mut()[0]
        .1
        .set_instructions("Add the two numbers.");
    let ours = temp("from-signet.json");
    compiled.save(&ours).unwrap();

    // Byte for byte the file DSPy writes for the same compile.
    let theirs = temp("from-dspy-for-comparison.json");
    dspy("compile", &theirs);
    assert_eq!(
        std::fs::read_to_string(&ours).unwrap(),
        std::fs::read_to_string(&theirs).unwrap()
    );

    // DSPy loads Signet's file and sends what Signet sends.
    let ran: Value = serde_json::from_str(&dspy("run", &ours)).unwrap();
    assert_eq!(ran["answer"], "17");
    assert_eq!(signet_messages(&ours).await, ran["messages"]);
    std::fs::remove_file(ours).ok();
    std::fs::remove_file(theirs).ok();
}

/// Answer about words.
#[derive(Signature)]
struct AboutWords {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Look a word up in the dictionary.
#[tool]
fn define(word: String) -> String {
    format!("{word}: a word")
}

#[tokio::test]
async fn a_react_agent_with_a_changed_tool_description_loads_in_dspy_and_prompts_the_same() {
    let lm = Arc::new(ScriptedLm::texts([
        "[[ ## next_thought ## ]]\nI know it.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]",
        "[[ ## reasoning ## ]]\nIt is a word.\n\n[[ ## answer ## ]]\na word\n\n[[ ## completed ## ]]",
    ]));
    let mut agent = ReAct::<AboutWords>::new()
        .tool(DefineTool)
        .with_mode(ReActMode::Text)
        .with_lm(lm.clone());
    agent
        .set_tool_description("define", "Define one English word; pass the word alone.")
        .unwrap();
    let saved = temp("react-tool-description.json");
    agent.save(&saved).unwrap();
    let out = agent
        .call(AboutWordsInput {
            question: "What is a word?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "a word");

    // DSPy ignores Signet's key, and its agent shows the saved tool list, new description included.
    let ran: Value = serde_json::from_str(&dspy("react", &saved)).unwrap();
    assert_eq!(ran["answer"], "a word");
    assert_eq!(messages(&lm.requests()[0]), ran["messages"]);
    assert!(
        ran["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<desc>Define one English word; pass the word alone.</desc>")
    );
    std::fs::remove_file(saved).ok();
}
