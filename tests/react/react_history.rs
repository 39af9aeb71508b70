//! ReAct in history mode (DSPy's `dspy.ReActV2`): tool calls and results kept as a conversation
//! history, outputs through a `submit` tool, a forced submit after `max_iters`.

use std::sync::Arc;

use serde_json::json;
use signet::adapter::{ChatAdapter, XmlAdapter};
use signet::lm::{Capabilities, Completion, Role, ToolCall, ToolChoice};
use signet::module::{Limits, Observation, ReAct, ReActMode, react::RunFailure, react::StopReason};
use signet::testing::ScriptedLm;
use signet::{Signature, tool};

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn turn(thought: &str, calls: &str) -> Completion {
    Completion::text(format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"
    ))
}

fn agent(lm: Arc<ScriptedLm>, max_iters: usize) -> ReAct<Ask> {
    ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::History)
        .with_adapter(ChatAdapter::new())
        .with_lm(lm)
        .with_limits(Limits::default().max_iters(max_iters))
}

fn input() -> AskInput {
    AskInput {
        question: "What is 2 + 3 + 4?".into(),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn parallel_calls_then_submit_returns_the_typed_output() {
    let lm = Arc::new(ScriptedLm::new([
        turn(
            "Add both pairs.",
            r#"{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}, {"name": "add", "args": {"a": 5, "b": 4}}]}"#,
        ),
        turn(
            "Done.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": 9}}]}"#,
        ),
    ]));
    let out = agent(lm.clone(), 5).call(input()).await.unwrap();
    assert_eq!(out.output.answer, 9);
    assert!(out.trajectory.stopped_early.is_none());
    let steps: Vec<(&str, usize, Option<&str>)> = out
        .trajectory
        .steps
        .iter()
        .map(|s| (s.tool_name.as_str(), s.turn, s.call_id.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            ("add", 0, Some("call_0_0")),
            ("add", 0, Some("call_0_1")),
            ("submit", 1, Some("call_1_0"))
        ]
    );
    assert_eq!(out.trajectory.history.len(), 2);
    assert_eq!(out.trajectory.history[1]["answer"], json!(9));
    // The second call re-sends the first turn: the inputs, the calls, then their results.
    let second = &lm.requests()[1].messages;
    assert_eq!(second[1].role, Role::User);
    assert!(second[1].content.contains("What is 2 + 3 + 4?"));
    assert_eq!(second[2].role, Role::Assistant);
    assert_eq!(
        second[3].content,
        "[[ ## tool_call_results ## ]]\n{\"tool_call_results\": [{\"call_id\": \"call_0_0\", \"name\": \"add\", \"value\": 5, \"is_error\": false}, {\"call_id\": \"call_0_1\", \"name\": \"add\", \"value\": 9, \"is_error\": false}]}"
    );
    assert!(!second[4].content.contains("What is 2 + 3 + 4?"));
}

#[tokio::test(flavor = "current_thread")]
async fn an_unknown_tool_is_an_error_result_and_the_run_recovers() {
    let lm = Arc::new(ScriptedLm::new([
        turn(
            "Use a calculator.",
            r#"{"tool_calls": [{"name": "calculator", "args": {"x": "2+3"}}]}"#,
        ),
        turn(
            "Submit.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": 5}}]}"#,
        ),
    ]));
    let out = agent(lm, 5).call(input()).await.unwrap();
    assert_eq!(out.output.answer, 5);
    assert_eq!(
        out.trajectory.steps[0].observation,
        Observation::Error("Unknown tool: calculator".into())
    );
    let results = &out.trajectory.history[0]["tool_calls"]["tool_call_results"][0];
    assert_eq!(results["is_error"], json!(true));
}

#[tokio::test(flavor = "current_thread")]
async fn max_iters_leads_to_a_forced_submit() {
    let fc = Capabilities::default().with_function_calling(true);
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#)]),
            Completion::tool_calls(vec![ToolCall::new("c2", "add", r#"{"a": 5, "b": 4}"#)]),
            Completion::tool_calls(vec![ToolCall::new("c3", "submit", r#"{"answer": 9}"#)]),
        ])
        .with_capabilities(fc),
    );
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::History)
        .with_adapter(ChatAdapter::new().with_native_function_calling(true))
        .with_lm(lm.clone())
        .with_limits(Limits::default().max_iters(2));
    let out = agent.call(input()).await.unwrap();
    assert_eq!(out.output.answer, 9);
    assert_eq!(
        out.trajectory.stopped_early,
        Some(StopReason::MaxIters { max_iters: 2 })
    );
    let requests = lm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].tool_choice, None);
    assert_eq!(
        requests[2].tool_choice,
        Some(ToolChoice::Function("submit".into()))
    );
    assert_eq!(
        requests[2].extra.get("reasoning_effort"),
        Some(&json!(null))
    );
    // Native history: assistant tool calls answered by `tool` messages.
    let last = &requests[2].messages;
    assert!(
        last.iter()
            .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some("c2"))
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_forced_submit_without_submit_is_a_typed_error() {
    let lm = Arc::new(ScriptedLm::new([
        turn("Nothing to call.", r#"{"tool_calls": []}"#),
        turn("Still nothing.", r#"{"tool_calls": []}"#),
    ]));
    let error = agent(lm, 3).call(input()).await.unwrap_err();
    match &error.reason {
        RunFailure::NoFinalOutputs { message } => assert_eq!(
            message,
            "ReActV2 failed to produce final outputs after empty_tool_calls: no submit call."
        ),
        other => panic!("unexpected failure {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_submit_with_missing_outputs_is_an_error_result() {
    let lm = Arc::new(ScriptedLm::new([
        turn(
            "Submit.",
            r#"{"tool_calls": [{"name": "submit", "args": {}}]}"#,
        ),
        turn(
            "Submit again.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": "7"}}]}"#,
        ),
    ]));
    let out = agent(lm, 3).call(input()).await.unwrap();
    assert_eq!(out.output.answer, 7);
    assert_eq!(
        out.trajectory.steps[0].observation,
        Observation::Error(
            "Execution error in submit: Missing required final output field(s): answer".into()
        )
    );
}

/// Answer with the tools.
#[derive(Signature)]
struct Clash {
    #[input]
    history: String,
    #[output]
    answer: String,
}

#[tokio::test(flavor = "current_thread")]
async fn reserved_names_are_rejected_before_any_call() {
    let lm = Arc::new(ScriptedLm::new([]));
    let agent = ReAct::<Clash>::new()
        .with_mode(ReActMode::History)
        .with_lm(lm.clone());
    let error = agent
        .call(ClashInput {
            history: "x".into(),
        })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("reserved"), "{error}");
    assert!(lm.requests().is_empty());
}

/// Where `ping` sends the caller's follow-up message from (as a user typing during the turn).
static FOLLOW_UP: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>> =
    std::sync::Mutex::new(None);

/// Report progress to the user.
#[tool]
fn ping() -> String {
    if let Some(sender) = FOLLOW_UP.lock().unwrap().as_ref() {
        sender.send("Also add 1.".into()).unwrap();
    }
    "pinged".into()
}

#[tokio::test(flavor = "current_thread")]
async fn follow_up_messages_arrive_as_user_message_and_postpone_submit() {
    use futures::StreamExt;
    use signet::module::ReActEvent;
    let lm = Arc::new(ScriptedLm::new([
        turn(
            "Ping and submit.",
            r#"{"tool_calls": [{"name": "ping", "args": {}}, {"name": "submit", "args": {"answer": 9}}]}"#,
        ),
        turn(
            "The user wants one more.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": 10}}]}"#,
        ),
    ]));
    let agent = agent(lm.clone(), 5).tool(PingTool);
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    *FOLLOW_UP.lock().unwrap() = Some(sender);
    let events: Vec<_> = agent
        .stream_with_interrupts(input(), receiver)
        .collect()
        .await;
    FOLLOW_UP.lock().unwrap().take();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReActEvent::UserMessage { text } if text == "Also add 1."))
    );
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(output.answer, 10, "the first submit was postponed");
    assert_eq!(trajectory.user_messages.len(), 1);
    assert_eq!(
        trajectory.steps[1].observation,
        Observation::Output(json!(
            "Submit postponed: the user sent new messages; address them first."
        ))
    );
    let requests = lm.requests();
    assert_eq!(requests.len(), 2);
    let system = &requests[0].messages[0].content;
    assert!(
        system.contains("`user_message` (Union[str, NoneType])"),
        "{system}"
    );
    let last = requests[1].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(
        last.content
            .contains("[[ ## user_message ## ]]\nAlso add 1."),
        "{}",
        last.content
    );
    let sent = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(sent.contains("Submit postponed"), "{sent}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_without_follow_ups_has_no_user_message_field() {
    let lm = Arc::new(ScriptedLm::new([turn(
        "Done.",
        r#"{"tool_calls": [{"name": "submit", "args": {"answer": 9}}]}"#,
    )]));
    agent(lm.clone(), 3).call(input()).await.unwrap();
    let system = &lm.requests()[0].messages[0].content;
    assert!(!system.contains("user_message"), "{system}");
}

/// DSPy's `XMLAdapter._uses_nested_xml` excludes its own models (`ToolCalls` is a `dspy.` model):
/// the `tool_calls` output keeps the `{tool_calls}` placeholder with the JSON-schema note, no nested
/// XML skeleton, and the model's tool calls are read from JSON inside `<tool_calls>`.
#[tokio::test(flavor = "current_thread")]
async fn xml_adapter_writes_tool_calls_as_json_not_nested_xml() {
    let xml_turn = |thought: &str, calls: &str| {
        Completion::text(format!(
            "<next_thought>\n{thought}\n</next_thought>\n<tool_calls>\n{calls}\n</tool_calls>"
        ))
    };
    let lm = Arc::new(ScriptedLm::new([
        xml_turn(
            "Add.",
            r#"{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}, {"name": "add", "args": {"a": 5, "b": 4}}]}"#,
        ),
        xml_turn(
            "Done.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": 9}}]}"#,
        ),
    ]));
    let out = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::History)
        .with_adapter(XmlAdapter::new())
        .with_lm(lm.clone())
        .call(input())
        .await
        .unwrap();
    assert_eq!(out.output.answer, 9);
    let requests = lm.requests();
    let system = &requests[0].messages[0].content;
    assert!(
        system.contains(
            "<tool_calls>\n{tool_calls}        # note: the value you produce must adhere"
        )
    );
    assert!(!system.contains("<item>"));
    let user = &requests[0].messages[1].content;
    assert!(user.ends_with("wrapped in XML tags `<next_thought>`, then `<tool_calls>`."));
    let assistant = &requests[1].messages[2].content;
    assert!(assistant.contains(
        "<tool_calls>\n{\"tool_calls\": [{\"name\": \"add\", \"args\": {\"a\": 2, \"b\": 3}}"
    ));
}
