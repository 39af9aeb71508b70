//! TwoStepAdapter: the main model answers freely, the extraction model reads the typed outputs;
//! both calls are counted, an extraction failure is typed, and every module that reads replies
//! (Predict, ChainOfThought, ReAct in text and native mode) reads them through the extraction.

use std::sync::Arc;

use serde_json::json;
use signet::adapter::{Adapter, AdapterName, ParseError, TwoStepAdapter};
use signet::lm::{Capabilities, Completion, LmError, ToolCall, Usage};
use signet::module::{CallConfig, ChainOfThought, Error, Predict, ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::{DynSignature, Signature};

use crate::support;
use support::{AddTool, Ask, ask, step};

/// Plan the trip the traveller asks for.
#[derive(Signature)]
struct Trip {
    #[input]
    request: String,
    #[output]
    city: String,
    #[output]
    nights: u8,
}

fn costing(text: &str, tokens: u64) -> Completion {
    let mut completion = Completion::text(text);
    completion.usage = Usage {
        prompt_tokens: tokens,
        completion_tokens: tokens,
        ..Usage::default()
    };
    completion
}

#[tokio::test]
async fn the_extraction_model_reads_typed_outputs_and_both_calls_are_counted() {
    let main = Arc::new(ScriptedLm::new([costing(
        "Lisbon, for three nights: warm, cheap, and close to the sea.",
        100,
    )]));
    let extraction = Arc::new(ScriptedLm::new([costing(
        "[[ ## city ## ]]\nLisbon\n\n[[ ## nights ## ]]\n3\n\n[[ ## completed ## ]]",
        10,
    )]));
    let plan = Predict::<Trip>::new()
        .with_lm(main.clone())
        .with_adapter(TwoStepAdapter::new(extraction.clone()));
    let (out, prediction) = plan
        .call_full(
            TripInput {
                request: "A sunny city break".into(),
            },
            &CallConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!((out.city.as_str(), out.nights), ("Lisbon", 3));
    assert_eq!(
        prediction.usage.prompt_tokens, 110,
        "the main and the extraction call"
    );

    let asked = &main.requests()[0].messages;
    assert!(
        asked[0]
            .content
            .starts_with("You are a helpful assistant that can solve tasks based on user input.")
    );
    assert_eq!(asked[1].content, "request: A sunny city break");
    let read = &extraction.requests()[0].messages;
    assert!(read[1].content.starts_with(
        "[[ ## text ## ]]\nLisbon, for three nights: warm, cheap, and close to the sea."
    ));
}

#[tokio::test]
async fn an_answer_the_extraction_cannot_read_is_a_typed_error_holding_the_answer() {
    let main = Arc::new(ScriptedLm::texts(["No idea, sorry."]));
    let extraction = Arc::new(ScriptedLm::texts(["nothing here", "still nothing"]));
    let plan = Predict::<Trip>::new()
        .with_lm(main)
        .with_adapter(TwoStepAdapter::new(extraction.clone()));
    let error = plan
        .call(TripInput {
            request: "?".into(),
        })
        .await
        .unwrap_err();
    let Error::Parse(ParseError::Extraction {
        adapter, response, ..
    }) = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (*adapter, response.as_str()),
        (AdapterName::TwoStep, "No idea, sorry.")
    );
    assert_eq!(
        extraction.requests().len(),
        2,
        "Chat, then its JSON fallback"
    );
    assert!(
        error
            .to_string()
            .starts_with("TwoStepAdapter could not read the outputs")
    );
}

#[tokio::test]
async fn a_failing_extraction_model_is_an_lm_error() {
    let main = Arc::new(ScriptedLm::texts(["Lisbon, three nights."]));
    let extraction = Arc::new(ScriptedLm::new([]).then_error(LmError::RateLimited {
        retry_after: None,
        message: "slow down".into(),
    }));
    let plan = Predict::<Trip>::new()
        .with_lm(main)
        .with_adapter(TwoStepAdapter::new(extraction));
    let error = plan
        .call(TripInput {
            request: "?".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Lm(LmError::RateLimited { .. })),
        "{error:?}"
    );
}

#[test]
fn parse_alone_says_the_extraction_model_reads_the_answer() {
    let adapter = TwoStepAdapter::new(ScriptedLm::texts(Vec::<String>::new()));
    let error = adapter
        .parse(&DynSignature::parse("q -> a").unwrap(), "A.")
        .unwrap_err();
    assert!(
        error.to_string().contains("read by the extraction model"),
        "{error}"
    );
}

#[tokio::test]
async fn chain_of_thought_extracts_the_reasoning_too() {
    let extraction = Arc::new(ScriptedLm::texts([
        "[[ ## reasoning ## ]]\nWarm in May.\n\n[[ ## city ## ]]\nLisbon\n\n[[ ## nights ## ]]\n2\n\n[[ ## completed ## ]]",
    ]));
    let plan = ChainOfThought::<Trip>::new()
        .with_lm(ScriptedLm::texts([
            "It is warm in May, so Lisbon for two nights.",
        ]))
        .with_adapter(TwoStepAdapter::new(extraction.clone()));
    let out = plan
        .call(TripInput {
            request: "May?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.reasoning, "Warm in May.");
    assert_eq!(out.output.nights, 2);
    let system = &extraction.requests()[0].messages[0].content;
    assert!(system.contains("1. `reasoning` (str): "), "{system}");
}

#[tokio::test]
async fn react_reads_each_step_and_the_answer_through_the_extraction_model() {
    // Text mode: every step's free answer is read into next_thought / tool name / args.
    let main = Arc::new(ScriptedLm::texts([
        "I should add 2 and 3 with the add tool.",
        "Done: finish.",
        "The sum is 5.",
    ]));
    let extraction = Arc::new(ScriptedLm::texts([
        step("Add them.", "add", json!({"a": 2, "b": 3})),
        step("Done.", "finish", json!({})),
        "[[ ## reasoning ## ]]\nAdded.\n\n[[ ## answer ## ]]\n5\n\n[[ ## completed ## ]]"
            .to_owned(),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::Text)
        .with_lm(main.clone())
        .with_adapter(TwoStepAdapter::new(extraction.clone()));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "5");
    assert_eq!(out.trajectory.steps.len(), 2);
    assert_eq!((main.requests().len(), extraction.requests().len()), (3, 3));

    // Native mode: tool calls come natively; the final answer's text is read by extraction.
    let main = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#)]),
            Completion::text("It is five."),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let extraction = Arc::new(ScriptedLm::texts([
        "[[ ## answer ## ]]\n5\n\n[[ ## completed ## ]]",
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::Native)
        .with_lm(main.clone())
        .with_adapter(TwoStepAdapter::new(extraction.clone()));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "5");
    assert_eq!(extraction.requests().len(), 1);
    assert!(
        extraction.requests()[0].messages[1]
            .content
            .contains("It is five.")
    );
}

#[tokio::test]
async fn a_streamed_call_ends_with_the_extracted_outputs() {
    use futures::StreamExt;
    use signet::module::ReActEvent;
    let extraction = Arc::new(ScriptedLm::texts([
        "[[ ## city ## ]]\nLisbon\n\n[[ ## nights ## ]]\n3\n\n[[ ## completed ## ]]",
    ]));
    let plan = Predict::<Trip>::new()
        .with_lm(ScriptedLm::texts(["Lisbon, three nights."]))
        .with_adapter(TwoStepAdapter::new(extraction));
    let events: Vec<_> = plan
        .stream(TripInput {
            request: "?".into(),
        })
        .collect()
        .await;
    let Some(ReActEvent::Done { output, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(output.nights, 3);
}
