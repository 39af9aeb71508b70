//! Predict and ChainOfThought: typed in and out, demos, configuration precedence, sync entry
//! points, saved state, and errors that say what went wrong.

use std::sync::Arc;

use serde_json::json;
use signet::Signature;
use signet::adapter::{AdapterName, JsonAdapter, XmlAdapter};
use signet::lm::{Completion, LmError};
use signet::module::{CallConfig, ChainOfThought, DynPredict, Error, Predict, configure};
use signet::testing::ScriptedLm;

/// Answer the question concisely.
#[derive(Signature, Debug, Clone)]
struct QA {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Count the items.
#[derive(Signature)]
struct Count {
    #[input]
    text: String,
    #[output]
    small: u8,
}

fn chat(answer: &str) -> String {
    format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

fn ask(question: &str) -> QAInput {
    QAInput {
        question: question.into(),
    }
}

#[tokio::test]
async fn typed_demos_become_user_assistant_pairs() {
    let lm = Arc::new(ScriptedLm::texts([chat("Paris")]));
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .with_demos([QA {
            question: "What is 2 + 2?".into(),
            answer: "4".into(),
        }])
        .unwrap();
    assert_eq!(
        qa.call(ask("Capital of France?")).await.unwrap().answer,
        "Paris"
    );
    let messages = &lm.requests()[0].messages;
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1].content, "[[ ## question ## ]]\nWhat is 2 + 2?");
    assert_eq!(
        messages[2].content,
        "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]\n"
    );
}

#[tokio::test]
async fn chain_of_thought_reasons_first_and_uses_provider_reasoning_when_empty() {
    let reply = "[[ ## reasoning ## ]]\nIt is Paris.\n\n[[ ## answer ## ]]\nParis";
    let lm = Arc::new(ScriptedLm::texts([reply]));
    let cot = ChainOfThought::<QA>::new().with_lm(lm.clone());
    let out = cot.call(ask("Capital?")).await.unwrap();
    assert_eq!(
        (out.reasoning.as_str(), out.output.answer.as_str()),
        ("It is Paris.", "Paris")
    );
    assert!(
        lm.requests()[0].messages[0]
            .content
            .contains("1. `reasoning` (str): \n2. `answer` (str):")
    );

    let empty = Completion {
        reasoning: Some("thought by the provider".into()),
        ..Completion::text("[[ ## reasoning ## ]]\n\n[[ ## answer ## ]]\nParis")
    };
    let lm = Arc::new(ScriptedLm::new([empty]));
    let out = ChainOfThought::<QA>::new()
        .with_lm(lm)
        .call(ask("Capital?"))
        .await
        .unwrap();
    assert_eq!(out.reasoning, "thought by the provider");
}

#[tokio::test]
async fn configuration_precedence_is_module_then_call_then_global() {
    // Nothing configured anywhere.
    let err = Predict::<QA>::new().call(ask("q")).await.unwrap_err();
    assert_eq!(err, Error::Lm(LmError::NotConfigured));

    let global = Arc::new(ScriptedLm::texts([chat("global"), chat("global again")]));
    configure(global.clone());
    assert_eq!(
        Predict::<QA>::new().call(ask("q")).await.unwrap().answer,
        "global"
    );

    let call_lm = Arc::new(ScriptedLm::texts([chat("call")]));
    let call = CallConfig::new().with_lm(call_lm.clone());
    let (out, _) = Predict::<QA>::new()
        .call_full(ask("q"), &call)
        .await
        .unwrap();
    assert_eq!(out.answer, "call");

    let module_lm = Arc::new(ScriptedLm::texts([chat("module")]));
    let (out, _) = Predict::<QA>::new()
        .with_lm(module_lm.clone())
        .call_full(ask("q"), &call)
        .await
        .unwrap();
    assert_eq!(out.answer, "module");
    assert_eq!(
        (
            global.requests().len(),
            call_lm.requests().len(),
            module_lm.requests().len()
        ),
        (1, 1, 1)
    );

    // The adapter follows the same order.
    let json_lm = Arc::new(ScriptedLm::texts([r#"{"answer": "json"}"#]));
    let call = CallConfig::new()
        .with_lm(json_lm)
        .with_adapter(JsonAdapter::new());
    let (out, prediction) = Predict::<QA>::new()
        .call_full(ask("q"), &call)
        .await
        .unwrap();
    assert_eq!(
        (out.answer.as_str(), prediction.adapter),
        ("json", AdapterName::Json)
    );
    let xml_lm = Arc::new(ScriptedLm::texts(["<answer>\nxml\n</answer>"]));
    let module = Predict::<QA>::new()
        .with_lm(xml_lm)
        .with_adapter(XmlAdapter::new());
    let (out, prediction) = module.call_full(ask("q"), &call).await.unwrap();
    assert_eq!(
        (out.answer.as_str(), prediction.adapter),
        ("xml", AdapterName::Xml)
    );
}

#[test]
fn sync_callers_have_a_blocking_entry_point() {
    let lm = Arc::new(ScriptedLm::texts([chat("Paris")]));
    let out = Predict::<QA>::new()
        .with_lm(lm)
        .call_blocking(ask("Capital?"))
        .unwrap();
    assert_eq!(out.answer, "Paris");
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_inside_a_current_thread_runtime_is_a_typed_error() {
    let lm = Arc::new(ScriptedLm::texts([chat("Paris")]));
    let err = Predict::<QA>::new()
        .with_lm(lm)
        .call_blocking(ask("Capital?"))
        .unwrap_err();
    assert!(matches!(err, Error::Blocking(_)), "{err}");
}

#[test]
fn state_round_trips_through_json() {
    let qa = Predict::<QA>::new()
        .with_demos([QA {
            question: "2 + 2?".into(),
            answer: "4".into(),
        }])
        .unwrap();
    let saved = qa.predictor().state();
    let mut restored = DynPredict::new("question -> answer".parse().unwrap());
    restored.restore(&saved).unwrap();
    assert_eq!(restored.state(), qa.predictor().state());
    assert_eq!(restored.demos()[0]["answer"], "4");
    assert_eq!(
        restored.signature().instructions(),
        "Answer the question concisely."
    );
}

#[tokio::test]
async fn values_that_do_not_fit_the_output_type_are_typed_errors() {
    let lm = Arc::new(ScriptedLm::texts(["[[ ## small ## ]]\n300"]));
    let err = Predict::<Count>::new()
        .with_lm(lm)
        .call(CountInput { text: "x".into() })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::OutputType { source } if source.to_string().contains("300")),
        "{err}"
    );
}

#[tokio::test]
async fn missing_inputs_are_reported_before_any_call() {
    let lm = Arc::new(ScriptedLm::texts([chat("x")]));
    let predictor =
        DynPredict::new("question, context -> answer".parse().unwrap()).with_lm(lm.clone());
    let err = predictor
        .forward(json!({"question": "q"}).as_object().unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::MissingInput {
            field: "context".into()
        }
    );
    assert!(lm.requests().is_empty());
}

/// Look up a city's population, in millions.
#[signet::tool]
fn population(city: String) -> Result<f64, String> {
    match city.as_str() {
        "Paris" => Ok(2.1),
        "Rome" => Ok(2.8),
        other => Err(format!("unknown city {other}")),
    }
}

fn function_calling() -> signet::lm::Capabilities {
    signet::lm::Capabilities::default().with_function_calling(true)
}

#[tokio::test]
async fn predict_with_tools_runs_tool_calls_until_the_model_answers() {
    use signet::lm::{ProviderState, Role, ToolCall};
    // The provider's state of the turn that called (signed thinking) goes back with its calls.
    let thinking = ProviderState::new(
        "anthropic",
        serde_json::json!([{"type": "thinking", "thinking": "Look both up.", "signature": "s1"}]),
    );
    let lm = Arc::new(
        ScriptedLm::new([
            Completion {
                provider_state: Some(thinking.clone()),
                reasoning: Some("Look both up.".into()),
                ..Completion::tool_calls(vec![
                    ToolCall::new("a", "population", r#"{"city": "Paris"}"#),
                    ToolCall::new("b", "population", r#"{"city": "Atlantis"}"#),
                ])
            },
            Completion::text(chat("Paris has 2.1 million people; Atlantis is unknown.")),
        ])
        .with_capabilities(function_calling()),
    );
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tools(vec![Arc::new(PopulationTool)]);
    let (out, prediction) = qa
        .call_full(
            ask("Population of Paris and Atlantis?"),
            &CallConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.answer,
        "Paris has 2.1 million people; Atlantis is unknown."
    );
    assert_eq!(prediction.usage.lm_calls, 2);
    let second = &lm.requests()[1].messages;
    let called = second.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(called.provider_state.as_ref(), Some(&thinking));
    assert_eq!(
        called.content.as_str(),
        "",
        "no text was said beside the calls"
    );
    let tools: Vec<(&str, &str)> = second
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.as_deref().unwrap(), m.content.as_str()))
        .collect();
    assert_eq!(
        tools,
        [
            ("a", "2.1"),
            (
                "b",
                "Execution error in population: tool `population` failed: unknown city Atlantis"
            )
        ]
    );
}

#[tokio::test]
async fn predict_with_tools_reads_an_unreadable_answer_through_the_adapters_fallback() {
    use signet::lm::ToolCall;
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new(
                "a",
                "population",
                r#"{"city": "Paris"}"#,
            )]),
            Completion::text("Paris has 2.1 million people."),
            Completion::text(r#"{"answer": "2.1 million"}"#),
        ])
        .with_capabilities(function_calling()),
    );
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(PopulationTool);
    let (out, prediction) = qa
        .call_full(ask("Population of Paris?"), &CallConfig::default())
        .await
        .unwrap();
    assert_eq!(out.answer, "2.1 million");
    assert_eq!(prediction.adapter, AdapterName::Json);
    assert_eq!(
        (
            prediction.usage.lm_calls,
            prediction.usage.adapter_fallbacks
        ),
        (3, 1)
    );
    let json = &lm.requests()[2].messages;
    assert!(json[0].content.contains("Outputs will be a JSON object"));
    assert_eq!(json.last().unwrap().content, "2.1", "the tool turn is kept");
}

/// The events of a streamed call: each one's kind, with the tool, the answer's text or the
/// observation.
async fn streamed(qa: &Predict<QA>, question: &str) -> (Vec<String>, Vec<String>, QAOutput) {
    use futures::StreamExt;
    use signet::module::ReActEvent;
    let mut kinds = Vec::new();
    let mut answer = Vec::new();
    let mut done = None;
    let mut events = qa.stream(ask(question));
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::ToolCallStarted { name, .. } => kinds.push(format!("call {name}")),
            ReActEvent::ToolCallFinished { observation, .. } => {
                kinds.push(format!("result {}", observation.as_text()));
            }
            ReActEvent::AnswerDelta { field, text } => {
                assert_eq!(field.as_deref(), Some("answer"));
                answer.push(text);
            }
            ReActEvent::AnswerDone => kinds.push("answered".into()),
            ReActEvent::Done {
                output,
                trajectory,
                usage,
                ..
            } => {
                kinds.push(format!(
                    "done after {} calls, {} steps",
                    usage.lm_calls,
                    trajectory.steps.len()
                ));
                done = Some(output);
            }
            ReActEvent::Failed { error } => panic!("the call failed: {error}"),
            _ => {}
        }
    }
    (kinds, answer, done.expect("a done event"))
}

#[tokio::test]
async fn predict_streams_its_tool_calls_and_its_answer_as_it_is_written() {
    use signet::lm::ToolCall;
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new(
                "a",
                "population",
                r#"{"city": "Paris"}"#,
            )]),
            Completion::text(chat("About 2.1 million people live in Paris.")),
        ])
        .with_capabilities(function_calling()),
    );
    let qa = Predict::<QA>::new().with_lm(lm).tool(PopulationTool);
    let (kinds, answer, output) = streamed(&qa, "Population of Paris?").await;
    assert_eq!(
        kinds,
        [
            "call population",
            "result 2.1",
            "answered",
            "done after 2 calls, 1 steps"
        ]
    );
    assert!(answer.len() > 1, "the answer arrives in pieces: {answer:?}");
    assert_eq!(answer.concat(), "About 2.1 million people live in Paris.");
    assert_eq!(output.answer, answer.concat());

    // Without tools, the one call's answer streams the same way.
    let qa = Predict::<QA>::new().with_lm(ScriptedLm::texts([chat("Paris.")]));
    let (kinds, answer, _) = streamed(&qa, "Capital of France?").await;
    let answer = answer.concat();
    assert_eq!(
        (kinds.as_slice(), answer.as_str()),
        (
            [
                "answered".to_owned(),
                "done after 1 calls, 0 steps".to_owned()
            ]
            .as_slice(),
            "Paris."
        )
    );
}

#[tokio::test]
async fn predict_with_tools_is_bounded_and_needs_function_calling() {
    use signet::lm::ToolCall;
    let looping: Vec<Completion> = (0..3)
        .map(|i| {
            Completion::tool_calls(vec![ToolCall::new(
                format!("c{i}"),
                "population",
                r#"{"city": "Rome"}"#,
            )])
        })
        .collect();
    let lm = Arc::new(ScriptedLm::new(looping).with_capabilities(function_calling()));
    let qa = Predict::<QA>::new()
        .with_lm(lm)
        .tools(vec![Arc::new(PopulationTool)]);
    let mut predictor = qa.predictor().clone().with_max_tool_turns(2);
    let err = predictor
        .forward(json!({"question": "?"}).as_object().unwrap())
        .await
        .unwrap_err();
    assert_eq!(err, Error::TooManyToolTurns { turns: 2 });

    predictor = DynPredict::new("question -> answer".parse().unwrap())
        .with_lm(ScriptedLm::texts(["unused"]))
        .tools(vec![Arc::new(PopulationTool)]);
    let err = predictor
        .forward(json!({"question": "?"}).as_object().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
}

/// Delete a city's records.
#[signet::tool(confirm)]
fn delete_city(city: String) -> String {
    DELETED.lock().unwrap().push(city.clone());
    format!("deleted {city}")
}

static DELETED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// What the model read back for each call of a two-call script (a tool call, then an answer).
async fn tool_messages(qa: Predict<QA>, lm: &ScriptedLm) -> Vec<String> {
    qa.call(ask("?")).await.unwrap();
    lm.requests()[1]
        .messages
        .iter()
        .filter(|m| m.role == signet::lm::Role::Tool)
        .map(|m| m.content.to_string())
        .collect()
}

fn deleting(city: &str) -> Arc<ScriptedLm> {
    use signet::lm::ToolCall;
    Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new(
                "c",
                "delete_city",
                format!(r#"{{"city": "{city}"}}"#),
            )]),
            Completion::text(chat("Done.")),
        ])
        .with_capabilities(function_calling()),
    )
}

#[tokio::test]
async fn a_confirm_tool_never_runs_under_predict_without_approval() {
    use signet::module::{Approval, ApprovalRequest};
    // No approver: denied, and the model is told so.
    let lm = deleting("Nowhere");
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(DeleteCityTool);
    assert_eq!(
        tool_messages(qa, &lm).await,
        [
            "Execution error in delete_city: this call needs a person's approval and was denied: no one is available to approve it"
        ]
    );

    // An approver that refuses, with its reason; one that approves, and sees the call.
    let lm = deleting("Rome");
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(DeleteCityTool)
        .with_approver(|_| async { Approval::Deny(Some("not today".into())) });
    assert!(tool_messages(qa, &lm).await[0].ends_with("was denied: not today"));
    assert!(DELETED.lock().unwrap().is_empty(), "no call ran unapproved");

    let lm = deleting("Paris");
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(DeleteCityTool)
        .with_approver(|request: ApprovalRequest| async move {
            assert_eq!(request.tool, "delete_city");
            assert_eq!(request.args, json!({"city": "Paris"}));
            Approval::Approve
        });
    assert_eq!(tool_messages(qa, &lm).await, ["deleted Paris"]);
    assert_eq!(*DELETED.lock().unwrap(), ["Paris"]);
}

/// Never answers.
#[signet::tool]
async fn hang() -> String {
    std::future::pending::<()>().await;
    unreachable!()
}

#[tokio::test]
async fn predict_tool_calls_have_a_time_limit() {
    use signet::module::Limits;
    use std::time::Duration;
    assert_eq!(
        Limits::default().tool_timeout,
        Some(Duration::from_secs(60)),
        "every loop has a default limit"
    );
    use signet::lm::ToolCall;
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new("h", "hang", "{}")]),
            Completion::text(chat("It hung.")),
        ])
        .with_capabilities(function_calling()),
    );
    let qa = Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(HangTool)
        .with_tool_limits(Limits::default().tool_timeout(Duration::from_millis(20)));
    let messages = tool_messages(qa, &lm).await;
    assert!(
        messages[0].starts_with("Execution error in hang:") && messages[0].contains("20ms"),
        "{messages:?}"
    );
}

#[tokio::test]
async fn wrappers_compose_with_a_shared_lm() {
    use signet::lm::{CachedLm, Lm, ResponseCache, RetryLm, RetryPolicy};
    let shared: Arc<dyn Lm> = Arc::new(
        ScriptedLm::new([])
            .then_error(LmError::Server {
                status: 503,
                message: "busy".into(),
            })
            .then(Completion::text(chat("retried"))),
    );
    let retrying = RetryLm::new(
        shared.clone(),
        RetryPolicy::default().with_initial_backoff(std::time::Duration::from_millis(1)),
    );
    let cached = CachedLm::new(retrying, Arc::new(ResponseCache::in_memory()));
    let qa = Predict::<QA>::new().with_lm(cached);
    assert_eq!(qa.call(ask("q")).await.unwrap().answer, "retried");
    // The same question again comes from the cache: the shared LM is not called a third time.
    assert_eq!(qa.call(ask("q")).await.unwrap().answer, "retried");
}

/// Archive a city's records.
#[signet::tool(confirm)]
fn archive_city(city: String) -> String {
    format!("archived {city}")
}

/// A round with a free call and a confirm call, then the answer.
fn archiving(replies: std::ops::Range<usize>) -> Arc<ScriptedLm> {
    use signet::lm::ToolCall;
    let all = [
        // With the provider's state of the turn, which a resumed run must still send back.
        Completion {
            provider_state: Some(signet::lm::ProviderState::new(
                "gemini",
                serde_json::json!({"calls": {"a": "sig-a"}}),
            )),
            ..Completion::tool_calls(vec![
                ToolCall::new("p", "population", r#"{"city": "Rome"}"#),
                ToolCall::new("a", "archive_city", r#"{"city": "Rome"}"#),
            ])
        },
        Completion::text(chat("Archived.")),
    ];
    Arc::new(ScriptedLm::new(all[replies].to_vec()).with_capabilities(function_calling()))
}

/// The archive request started on `lm`, parked at the archive call.
async fn parked(lm: &Arc<ScriptedLm>) -> signet::module::SuspendedRun {
    match archiver(lm).start(ask("Archive Rome")).await.unwrap() {
        signet::module::RunOutcome::Suspended(state) => state,
        finished => panic!("the archive call waits for approval, got {finished:?}"),
    }
}

fn archiver(lm: &Arc<ScriptedLm>) -> Predict<QA> {
    Predict::<QA>::new()
        .with_lm(lm.clone())
        .tool(PopulationTool)
        .tool(ArchiveCityTool)
}

#[tokio::test]
async fn predict_with_tools_suspends_for_a_person_and_resumes_as_an_inline_approval() {
    use signet::module::{Approval, Decision, RunOutcome, SuspendedRun};
    let inline_lm = archiving(0..2);
    let inline = archiver(&inline_lm).with_approver(|_| async { Approval::Approve });
    let expected = inline.call(ask("Archive Rome")).await.unwrap();

    let first_lm = archiving(0..1);
    let state = parked(&first_lm).await;
    assert_eq!(state.pending.len(), 1);
    assert_eq!(
        (state.pending[0].id.as_str(), state.pending[0].tool.as_str()),
        ("a", "archive_city")
    );
    assert_eq!(
        state.settled[0].observation.as_text(),
        "2.8",
        "the free call ran"
    );
    let saved = serde_json::to_string(&state).unwrap();
    let state: SuspendedRun = serde_json::from_str(&saved).unwrap();

    let second_lm = archiving(1..2);
    let decisions = state.decide_all(Decision::Approve);
    let RunOutcome::Finished(answer) = archiver(&second_lm).resume(state, decisions).await.unwrap()
    else {
        panic!("the call finishes once approved")
    };
    assert_eq!(answer.answer, expected.answer);
    let requests: Vec<_> = first_lm
        .requests()
        .into_iter()
        .chain(second_lm.requests())
        .collect();
    assert_eq!(requests, inline_lm.requests());
}

#[tokio::test]
async fn a_forged_suspended_predict_call_is_invalid_and_runs_nothing() {
    use signet::module::{Decision, ResumeError};
    let state = parked(&archiving(0..1)).await;
    type Forge = Box<dyn Fn(&mut signet::module::SuspendedRun)>;
    let forgeries: Vec<(&str, Forge)> = vec![
        (
            "names tool `drop_tables`",
            Box::new(|s| s.pending[0].tool = "drop_tables".into()),
        ),
        (
            "waits for approval of `population`, which needs none",
            Box::new(|s| s.pending[0].tool = "population".into()),
        ),
        (
            "two calls have step index",
            Box::new(|s| s.pending[0].index = s.settled[0].index),
        ),
        (
            "two calls have id",
            Box::new(|s| s.pending[0].id = "p".into()),
        ),
        (
            "not the suspended turn",
            Box::new(|s| s.settled[0].turn = 5),
        ),
        (
            "past the predictor's limit",
            Box::new(|s| s.turn = usize::MAX),
        ),
        (
            "not the state of a `Predict` call",
            Box::new(|s| s.native = false),
        ),
        ("no pending call", Box::new(|s| s.pending.clear())),
    ];
    for (reason, forge) in forgeries {
        let mut forged = state.clone();
        forge(&mut forged);
        let lm = archiving(1..2);
        let error = archiver(&lm)
            .resume(forged.clone(), forged.decide_all(Decision::Approve))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, Error::Resume(ResumeError::Invalid { reason: r }) if r.contains(reason)),
            "{reason}: {error}"
        );
        assert!(lm.requests().is_empty(), "{reason}: nothing ran");
    }
}

#[tokio::test]
async fn a_predictor_with_a_state_key_resumes_only_its_own_sealed_calls() {
    use signet::module::{Decision, ResumeError, RunOutcome, SuspendedRun};
    let key = b"a long random key for the test";
    let sealed = match archiver(&archiving(0..1))
        .with_state_key(key)
        .start(ask("Archive Rome"))
        .await
        .unwrap()
    {
        RunOutcome::Suspended(state) => state,
        finished => panic!("the archive call waits, got {finished:?}"),
    };
    assert_eq!(sealed.seal.as_ref().map(String::len), Some(64));
    assert!(sealed.verify(key).is_ok());
    // Stored and read back with its keys in another order: still valid.
    let text = serde_json::to_string(&sealed).unwrap();
    let reread: SuspendedRun = serde_json::from_str(&text).unwrap();

    let resume = |state: SuspendedRun| async move {
        let lm = archiving(1..2);
        let decisions = state.decide_all(Decision::Approve);
        let result = archiver(&lm)
            .with_state_key(key)
            .resume(state, decisions)
            .await;
        (result, lm.requests().len())
    };
    let mut unsealed = reread.clone();
    unsealed.seal = None;
    let (result, calls) = resume(unsealed).await;
    assert!(
        matches!(result, Err(Error::Resume(ResumeError::Unsealed))),
        "{result:?}"
    );
    assert_eq!(calls, 0);

    // An edit that keeps the state consistent is caught by the seal.
    let mut edited = reread.clone();
    edited.pending[0].args = json!({"city": "Paris"});
    let (result, calls) = resume(edited).await;
    assert!(
        matches!(result, Err(Error::Resume(ResumeError::BadSeal))),
        "{result:?}"
    );
    assert_eq!(calls, 0);

    let (result, calls) = resume(reread).await;
    assert!(matches!(result, Ok(RunOutcome::Finished(_))), "{result:?}");
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn a_suspended_predict_call_takes_edits_and_refuses_another_predictor() {
    use signet::module::{Decision, ResumeError};
    let state = parked(&archiving(0..1)).await;
    // Another tool set: refused before any call.
    let other = Predict::<QA>::new()
        .with_lm(archiving(1..2))
        .tool(ArchiveCityTool);
    let error = other
        .resume(state.clone(), state.decide_all(Decision::Approve))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Resume(ResumeError::StaleState { .. })),
        "{error}"
    );

    let second_lm = archiving(1..2);
    let edit = [("a".to_owned(), Decision::Edit(json!({"city": "Paris"})))];
    archiver(&second_lm).resume(state, edit).await.unwrap();
    let messages = &second_lm.requests()[0].messages;
    let n = messages.len();
    assert_eq!(
        messages[n - 3].tool_calls[1].arguments,
        r#"{"city":"Paris"}"#
    );
    assert_eq!(messages[n - 2].content, "2.8");
    assert_eq!(messages[n - 1].content, "archived Paris");
}

#[tokio::test]
async fn chain_of_thought_streams_its_reasoning_then_its_answer_and_ends_typed() {
    use futures::StreamExt;
    use signet::module::ReActEvent;
    let lm = ScriptedLm::texts([
        "[[ ## reasoning ## ]]\nParis is the capital.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
    ]);
    let cot = ChainOfThought::<QA>::new();
    let events: Vec<ReActEvent<QAOutput>> = cot
        .stream_with(ask("Capital of France?"), CallConfig::new().with_lm(lm))
        .collect()
        .await;
    let mut texts: Vec<(String, String)> = Vec::new();
    for event in &events {
        if let ReActEvent::AnswerDelta {
            field: Some(field),
            text,
        } = event
        {
            match texts.last_mut() {
                Some((last, joined)) if last == field => joined.push_str(text),
                _ => texts.push((field.clone(), text.clone())),
            }
        }
    }
    let fields: Vec<&str> = texts.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(fields, ["reasoning", "answer"]);
    assert_eq!(texts[0].1.trim(), "Paris is the capital.");
    match events.last() {
        Some(ReActEvent::Done {
            output, reasoning, ..
        }) => {
            assert_eq!(output.answer, "Paris");
            assert_eq!(reasoning.as_deref(), Some("Paris is the capital."));
        }
        other => panic!("expected Done, got {other:?}"),
    }
    // A reply that cannot be read ends the stream with the typed error.
    let unreadable = ScriptedLm::texts(["no fields here", "no JSON either"]);
    let events: Vec<_> = cot
        .stream_with(ask("?"), CallConfig::new().with_lm(unreadable))
        .collect()
        .await;
    assert!(
        matches!(events.last(), Some(ReActEvent::Failed { .. })),
        "{events:?}"
    );
}
