//! ReAct in native function-calling mode: tools as `tools=`, every call of one reply run
//! concurrently, results returned as `tool` messages with their ids in order.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use signet::lm::{Capabilities, Completion, Role, ToolCall, ToolChoice};
use signet::module::{Limits, Observation, ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::{Signature, ToolBox, tool};
use tokio::sync::Barrier;

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Two tools that can only both finish when they run at the same time.
struct Rendezvous {
    barrier: Barrier,
}

#[tool]
impl Rendezvous {
    /// Weather in a city.
    #[tool]
    async fn weather(&self, city: String) -> String {
        self.barrier.wait().await;
        format!("sunny in {city}")
    }

    /// Time in a city.
    #[tool]
    async fn time(&self, city: String) -> String {
        self.barrier.wait().await;
        format!("noon in {city}")
    }
}

fn function_calling() -> Capabilities {
    Capabilities::default().with_function_calling(true)
}

fn calls(list: &[(&str, &str, &str)]) -> Completion {
    Completion::tool_calls(
        list.iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, *args))
            .collect(),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn calls_of_one_reply_run_concurrently_and_return_in_order() {
    let tools = Rendezvous::tools(&Arc::new(Rendezvous {
        barrier: Barrier::new(2),
    }));
    let lm = Arc::new(
        ScriptedLm::new([
            calls(&[
                ("c1", "weather", r#"{"city": "Oslo"}"#),
                ("c2", "time", r#"{"city": "Oslo"}"#),
            ]),
            Completion::text("[[ ## answer ## ]]\nSunny at noon.\n\n[[ ## completed ## ]]"),
        ])
        .with_capabilities(function_calling()),
    );
    let agent = ReAct::<Ask>::new()
        .tools(tools)
        .with_lm(lm.clone())
        .with_limits(Limits::default().tool_timeout(Duration::from_secs(10)));
    let out = agent
        .call(AskInput {
            question: "Oslo?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "Sunny at noon.");
    let seen: Vec<&Observation> = out
        .trajectory
        .steps
        .iter()
        .map(|s| &s.observation)
        .collect();
    assert_eq!(
        seen,
        [
            &Observation::Output(json!("sunny in Oslo")),
            &Observation::Output(json!("noon in Oslo"))
        ]
    );

    let requests = lm.requests();
    let first = &requests[0];
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["weather", "time", "finish"]);
    assert_eq!(
        (first.tool_choice.clone(), first.parallel_tool_calls),
        (Some(ToolChoice::Auto), Some(true))
    );
    let second = &requests[1].messages;
    let n = second.len();
    assert_eq!(second[n - 3].role, Role::Assistant);
    assert_eq!(second[n - 3].tool_calls.len(), 2);
    assert_eq!(
        second[n - 3].content,
        "",
        "assistant tool-call messages carry empty content"
    );
    assert_eq!(
        (
            second[n - 2].tool_call_id.as_deref(),
            second[n - 2].content.as_str()
        ),
        (Some("c1"), "sunny in Oslo")
    );
    assert_eq!(
        (
            second[n - 1].tool_call_id.as_deref(),
            second[n - 1].content.as_str()
        ),
        (Some("c2"), "noon in Oslo")
    );
    assert_eq!(out.usage.lm_calls, 2);
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A model that calls `add(2, 3)`, then `finish` with the answer 5.
fn add_then_finish() -> Arc<ScriptedLm> {
    Arc::new(
        ScriptedLm::new([
            calls(&[("c1", "add", r#"{"a": 2, "b": 3}"#)]),
            calls(&[("c2", "finish", r#"{"answer": "5"}"#)]),
        ])
        .with_capabilities(function_calling()),
    )
}

#[tokio::test]
async fn finish_with_outputs_ends_the_run() {
    let lm = add_then_finish();
    let out = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "5");
    assert_eq!(lm.requests().len(), 2);
    let finish = lm.requests()[0].tools.last().unwrap().to_value();
    assert_eq!(
        finish["function"]["parameters"]["properties"]["answer"]["type"],
        "string"
    );
}

/// Answer briefly.
#[derive(Signature)]
struct Brief {
    #[input]
    question: String,
    #[output(max_length = 20)]
    answer: String,
}

#[tokio::test]
async fn finish_carries_the_outputs_bounds_for_decoding_constraints() {
    let lm = Arc::new(
        ScriptedLm::new([calls(&[("c1", "finish", r#"{"answer": "5"}"#)])])
            .with_capabilities(function_calling()),
    );
    ReAct::<Brief>::new()
        .with_lm(lm.clone())
        .call(BriefInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    let finish = lm.requests()[0].tools.last().unwrap().to_value();
    assert_eq!(
        finish["function"]["parameters"]["properties"]["answer"],
        json!({"type": "string", "maxLength": 20})
    );
}

#[tokio::test]
async fn required_tool_calls_make_every_turn_a_call_and_the_answer_a_finish() {
    let lm = add_then_finish();
    ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_required_tool_calls(true)
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    let choices: Vec<_> = lm
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [Some(ToolChoice::Required), Some(ToolChoice::Required)]
    );
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_tool_messages_the_model_can_read() {
    let lm = Arc::new(
        ScriptedLm::new([
            calls(&[
                ("c1", "add", r#"{"a": "x"}"#),
                ("c2", "mul", "{}"),
                ("c3", "add", "{not json"),
            ]),
            Completion::text("[[ ## answer ## ]]\nno idea"),
        ])
        .with_capabilities(function_calling()),
    );
    let out = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .call(AskInput {
            question: "?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "no idea");
    let messages = &lm.requests()[1].messages;
    let tool_texts: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        tool_texts[0].contains("argument `a`: expected integer"),
        "{tool_texts:?}"
    );
    assert!(
        tool_texts[1].contains("there is no tool named `mul`"),
        "{tool_texts:?}"
    );
    assert!(tool_texts[2].contains("not valid JSON"), "{tool_texts:?}");
}

#[tokio::test]
async fn text_mode_can_be_forced_on_a_function_calling_lm() {
    let step = "[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{\"answer\": \"ok\"}";
    let lm = Arc::new(ScriptedLm::texts([step]).with_capabilities(function_calling()));
    let out = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_mode(ReActMode::Text)
        .call(AskInput {
            question: "?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "ok");
    assert!(lm.requests()[0].tools.is_empty());
}

/// Counts how many calls run at once.
#[derive(Default)]
struct Gauge {
    running: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

#[tool]
impl Gauge {
    /// Take a while.
    #[tool]
    async fn work(&self, n: i64) -> i64 {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.running.fetch_sub(1, SeqCst);
        n
    }
}

#[tokio::test]
async fn tool_concurrency_is_bounded_by_the_limit() {
    let gauge = Arc::new(Gauge::default());
    let lm = Arc::new(
        ScriptedLm::new([
            calls(&[
                ("c1", "work", r#"{"n": 1}"#),
                ("c2", "work", r#"{"n": 2}"#),
                ("c3", "work", r#"{"n": 3}"#),
                ("c4", "work", r#"{"n": 4}"#),
                ("c5", "work", r#"{"n": 5}"#),
            ]),
            Completion::text("[[ ## answer ## ]]\ndone\n\n[[ ## completed ## ]]"),
        ])
        .with_capabilities(function_calling()),
    );
    let agent = ReAct::<Ask>::new()
        .tools(Gauge::tools(&gauge))
        .with_lm(lm)
        .with_limits(signet::module::Limits::default().max_concurrent_tools(2));
    let out = agent
        .call(AskInput {
            question: "work".into(),
        })
        .await
        .unwrap();
    let results: Vec<Observation> = out
        .trajectory
        .steps
        .iter()
        .map(|s| s.observation.clone())
        .collect();
    assert_eq!(
        results,
        (1..=5)
            .map(|n| Observation::Output(json!(n)))
            .collect::<Vec<_>>(),
        "results stay in call order"
    );
    assert_eq!(
        gauge.peak.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "never more than two at once, and two did overlap"
    );
}

#[tokio::test]
async fn the_last_turn_must_finish_when_asked_so_the_model_answers_itself() {
    let lm = add_then_finish();
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_required_tool_calls(true)
        .with_finish_on_last_turn(true)
        .with_limits(Limits::default().max_iters(2));
    let out = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "5");
    assert!(
        out.trajectory.stopped_early.is_none(),
        "no step limit, no extractor"
    );
    let choices: Vec<Option<ToolChoice>> = lm
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [
            Some(ToolChoice::Required),
            Some(ToolChoice::Function("finish".into()))
        ]
    );
    assert_eq!(out.usage.lm_calls, 2);
}

#[tokio::test]
async fn a_text_answer_the_adapter_cannot_read_goes_through_its_fallback() {
    // The answer in plain text (no Chat markers) is asked for once more in JSON, the tool turn
    // kept: the JSON reply is the answer, and no extractor runs.
    let lm = Arc::new(
        ScriptedLm::new([
            calls(&[("c1", "add", r#"{"a": 2, "b": 3}"#)]),
            Completion::text("It is 5."),
            Completion::text(r#"{"answer": "5"}"#),
        ])
        .with_capabilities(function_calling()),
    );
    let out = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "5");
    assert_eq!((out.usage.lm_calls, out.usage.adapter_fallbacks), (3, 1));
    assert_eq!(out.reasoning, None, "the extractor did not run");
    let requests = lm.requests();
    let (chat, json) = (&requests[1].messages, &requests[2].messages);
    assert!(json[0].content.contains("Outputs will be a JSON object"));
    assert!(!chat[0].content.contains("Outputs will be a JSON object"));
    // The turns after the base messages are the same: the tool call and its result.
    assert_eq!(chat[chat.len() - 2..], json[json.len() - 2..]);
    assert_eq!(json.last().unwrap().content, "5");
}

/// The reason of the `text_mode` event of an Auto-mode agent whose step predictor `tune` changed,
/// on an LM that calls tools natively, and the first request it sent.
async fn text_mode_reason(
    tune: impl FnOnce(&mut signet::module::DynPredict),
) -> (String, signet::lm::LmRequest) {
    use futures::StreamExt;
    use signet::module::{Predictors, ReActEvent};
    let text_finish = "[[ ## next_thought ## ]]\ndone\n\n[[ ## next_tool_name ## ]]\nfinish\n\n\
                       [[ ## next_tool_args ## ]]\n{\"answer\": \"5\"}\n\n[[ ## completed ## ]]";
    let lm = Arc::new(ScriptedLm::texts([text_finish]).with_capabilities(function_calling()));
    let mut agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm.clone());
    tune(agent.named_predictors_mut()[0].1);
    let question = AskInput {
        question: "2 + 3?".into(),
    };
    let events: Vec<_> = agent.stream(question).collect().await;
    let Some(ReActEvent::TextMode { reason, .. }) = events.first() else {
        panic!("{events:?}")
    };
    (reason.clone(), lm.requests()[0].clone())
}

#[tokio::test]
async fn auto_mode_keeps_a_program_tuned_for_the_text_step_in_text_mode_and_says_why() {
    use signet::module::Predictors;
    // Instructions tuned (by GEPA, or in DSPy and loaded): native mode would not show them.
    let (reason, sent) =
        text_mode_reason(|step| step.set_instructions("Add with care; answer with the sum only."))
            .await;
    assert!(reason.contains("instructions were tuned"), "{reason}");
    assert!(sent.tools.is_empty(), "text mode sends no tools");
    assert!(
        sent.messages[0]
            .content
            .contains("Add with care; answer with the sum only.")
    );
    // Text-mode demos too.
    let demo = json!({"question": "1 + 1?", "next_thought": "done", "next_tool_name": "finish",
        "next_tool_args": {}});
    let (reason, _) =
        text_mode_reason(|step| step.set_demos(vec![demo.as_object().unwrap().clone()])).await;
    assert!(reason.contains("text-mode demos"), "{reason}");
    // An untuned agent runs natively; ReActMode::Native overrides the rule.
    let lm = Arc::new(
        ScriptedLm::new([calls(&[("c1", "finish", r#"{"answer": "5"}"#)])])
            .with_capabilities(function_calling()),
    );
    let mut agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    agent.named_predictors_mut()[0].1.set_instructions("Tuned.");
    agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert!(!lm.requests()[0].tools.is_empty());
}
