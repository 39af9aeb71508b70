//! Streaming a module of your own (`streamify`): every predictor's start, fields as written, tool
//! calls with DSPy's status messages and end, labelled by its path in the module, then the typed
//! output; in the Chat, JSON and XML formats; failures typed.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::adapter::{JsonAdapter, XmlAdapter};
use signet::module::{
    ChainOfThought, ModuleEvent, Predict, PredictorEvent, ReAct, ReActMode, streamify,
};
use signet::prelude::{Module, Signature};
use signet::testing::ScriptedLm;

use crate::support;
use support::{AddTool, Ask, AskInput, AskOutput, extract, step};

/// Draft an answer.
#[derive(Signature, Clone)]
struct Draft {
    #[input]
    question: String,
    #[output]
    draft: String,
}

/// Improve the draft.
#[derive(Signature, Clone)]
struct Improve {
    #[input]
    question: String,
    #[input]
    draft: String,
    #[output]
    answer: String,
}

/// Drafts, then improves with reasoning.
#[derive(Module)]
struct TwoPass {
    write: Predict<Draft>,
    polish: ChainOfThought<Improve>,
}

impl Module for TwoPass {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        let draft = self
            .write
            .call(DraftInput {
                question: input.question.clone(),
            })
            .await?;
        let polished = self
            .polish
            .call(ImproveInput {
                question: input.question,
                draft: draft.draft,
            })
            .await?;
        Ok(AskOutput {
            answer: polished.output.answer,
        })
    }
}

/// The events of a run as short strings: `path: kind[ field=text]`, and `done: output`.
fn summary<E: std::fmt::Display + std::fmt::Debug>(
    events: &[ModuleEvent<AskOutput, E>],
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for event in events {
        let line = match event {
            ModuleEvent::Predictor { predictor, event } => match event {
                PredictorEvent::Started => format!("{predictor}: started"),
                PredictorEvent::FieldDelta { field, text } => {
                    let field = field.as_deref().unwrap_or("?");
                    // Pieces of one field in a row are shown joined.
                    let head = format!("{predictor}: {field}=");
                    if let Some(last) = lines.last_mut()
                        && last.starts_with(&head)
                    {
                        last.push_str(text);
                        continue;
                    }
                    format!("{head}{text}")
                }
                PredictorEvent::ToolCallStarted { tool, .. } => format!("{predictor}: call {tool}"),
                PredictorEvent::ToolCallFinished {
                    tool, observation, ..
                } => format!("{predictor}: {tool} -> {observation}"),
                PredictorEvent::Finished { .. } => format!("{predictor}: finished"),
                PredictorEvent::Failed { error } => format!("{predictor}: failed: {error}"),
                other => format!("{predictor}: {other:?}"),
            },
            ModuleEvent::Done { output, .. } => format!("done: {}", output.answer),
            ModuleEvent::Failed { error, .. } => format!("failed: {error}"),
            other => format!("{other:?}"),
        };
        lines.push(line);
    }
    lines
}

/// Every event of `program` streamed on `question`.
async fn run<M: Module<Input = AskInput>>(
    program: &M,
    question: &str,
) -> Vec<ModuleEvent<M::Output, M::Error>> {
    streamify(
        program,
        AskInput {
            question: question.into(),
        },
    )
    .collect()
    .await
}

fn two_pass(lm: Arc<ScriptedLm>) -> TwoPass {
    TwoPass {
        write: Predict::new().with_lm(lm.clone()),
        polish: ChainOfThought::new().with_lm(lm),
    }
}

#[tokio::test]
async fn each_predictor_of_a_module_streams_its_fields_under_its_path() {
    let lm = Arc::new(ScriptedLm::texts([
        "[[ ## draft ## ]]\nParis, I think\n\n[[ ## completed ## ]]",
        "[[ ## reasoning ## ]]\nThe draft is right.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
    ]));
    let program = two_pass(lm);
    let events: Vec<_> = run(&program, "Capital of France?").await;
    assert_eq!(
        summary(&events),
        [
            "write: started",
            "write: draft=Paris, I think",
            "write: finished",
            "polish.predict: started",
            "polish.predict: reasoning=The draft is right.",
            "polish.predict: answer=Paris",
            "polish.predict: finished",
            "done: Paris",
        ]
    );
    let ModuleEvent::Done { usage, .. } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(usage.lm_calls, 2);
    // Written piece by piece, each ready for Server-Sent Events: a `type` tag on the event and on
    // what the predictor did.
    let delta = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(
        delta,
        json!({"type": "predictor", "predictor": "write",
               "event": {"type": "field_delta", "field": "draft", "text": "Paris,"}})
    );
}

#[tokio::test]
async fn json_and_xml_replies_stream_field_by_field_too() {
    for (adapter, replies) in [
        (
            Arc::new(JsonAdapter::new()) as Arc<dyn signet::adapter::Adapter>,
            [
                r#"{"draft": "Paris, I think"}"#,
                r#"{"reasoning": "Right.", "answer": "Paris"}"#,
            ],
        ),
        (
            Arc::new(XmlAdapter::new()),
            [
                "<draft>Paris, I think</draft>",
                "<reasoning>Right.</reasoning><answer>Paris</answer>",
            ],
        ),
    ] {
        let lm = Arc::new(ScriptedLm::texts(replies));
        let program = TwoPass {
            write: Predict::new()
                .with_lm(lm.clone())
                .with_adapter(adapter.clone()),
            polish: ChainOfThought::new().with_lm(lm).with_adapter(adapter),
        };
        let events: Vec<_> = run(&program, "?").await;
        let lines = summary(&events);
        assert!(
            lines.contains(&"write: draft=Paris, I think".to_owned()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"polish.predict: answer=Paris".to_owned()),
            "{lines:?}"
        );
        assert_eq!(lines.last().unwrap(), "done: Paris");
    }
}

/// Answers with an agent.
#[derive(Module)]
struct WithAgent {
    agent: ReAct<Ask>,
}

impl Module for WithAgent {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::module::ReActError;

    async fn call(&self, input: AskInput) -> Result<AskOutput, Self::Error> {
        Ok(self.agent.call(input).await?.output)
    }
}

#[tokio::test]
async fn an_agent_inside_a_module_reports_its_tool_calls_with_status_messages() {
    let lm = Arc::new(ScriptedLm::texts([
        step("Add.", "add", json!({"a": 2, "b": 3})),
        step("Done.", "finish", json!({})),
        extract("5"),
    ]));
    let program = WithAgent {
        agent: ReAct::new()
            .tool(AddTool)
            .with_mode(ReActMode::Text)
            .with_lm(lm),
    };
    let events: Vec<_> = run(&program, "2 + 3?").await;
    let lines = summary(&events);
    let position = |line: &str| lines.iter().position(|l| l == line);
    let call = position("agent.react: call add").expect("the tool call is reported");
    assert!(position("agent.react: add -> 5").unwrap() > call);
    assert!(position("agent.react: next_tool_name=add").unwrap() < call);
    assert!(
        position("agent.extract.predict: answer=5").is_some(),
        "{lines:?}"
    );
    assert_eq!(lines.last().unwrap(), "done: 5");
    let statuses: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            ModuleEvent::Predictor { event, .. } => event.status_message(),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "Calling tool add...",
            "Tool calling finished! Querying the LLM with tool calling results...",
            "Calling tool finish...",
            "Tool calling finished! Querying the LLM with tool calling results..."
        ]
    );
}

#[tokio::test]
async fn a_failing_module_ends_with_its_typed_error_and_the_usage_so_far() {
    let lm = Arc::new(ScriptedLm::texts([
        "[[ ## draft ## ]]\nParis\n\n[[ ## completed ## ]]",
        "no markers at all",
        "still no JSON",
    ]));
    let program = two_pass(lm);
    let events: Vec<_> = run(&program, "?").await;
    let lines = summary(&events);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("polish.predict: failed: ")),
        "{lines:?}"
    );
    let Some(ModuleEvent::Failed { error, usage }) = events.last() else {
        panic!("{lines:?}");
    };
    assert!(matches!(**error, signet::Error::Parse(_)), "{error}");
    assert_eq!(usage.lm_calls, 3, "the draft, the reply and its JSON retry");
}
