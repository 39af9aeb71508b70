//! ReAct: every tool failure becomes an observation the model can act on, `finish` may carry the
//! outputs, truncation is pluggable, and a trajectory that cannot fit is a typed error that keeps
//! the steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use signet::lm::{Completion, LmError};
use signet::module::{
    Limits, Observation, ReAct, Trajectory, react::KeepFirst, react::RunFailure,
    react::SlidingWindow, react::StopReason, react::Summarize, react::TruncationPolicy,
};
use signet::testing::ScriptedLm;
use signet::{Tool, ToolBox, tool};

use crate::support;
use support::*;

/// Divide, failing on zero.
#[tool]
fn divide(a: f64, b: f64) -> Result<f64, String> {
    if b == 0.0 {
        Err("division by zero".into())
    } else {
        Ok(a / b)
    }
}

/// A tool with a bug.
#[tool]
fn buggy() -> i64 {
    panic!("index out of bounds")
}

/// A tool that never answers in time.
#[tool]
async fn slow() -> i64 {
    tokio::time::sleep(Duration::from_secs(30)).await;
    1
}

/// A counter shared by its tools.
#[derive(Default)]
struct Counter {
    hits: AtomicUsize,
}

#[tool]
impl Counter {
    /// Count one more visit.
    #[tool]
    async fn visit(&self) -> usize {
        self.hits.fetch_add(1, Ordering::SeqCst) + 1
    }
}

fn agent(tools: Vec<Arc<dyn Tool>>, replies: Vec<String>) -> (ReAct<Ask>, Arc<ScriptedLm>) {
    let lm = Arc::new(ScriptedLm::texts(replies));
    (
        ReAct::<Ask>::new()
            .tools(tools)
            .with_lm(lm.clone())
            .with_limits(Limits::default().max_iters(6)),
        lm,
    )
}

fn observations(trajectory: &Trajectory) -> Vec<Observation> {
    trajectory
        .steps
        .iter()
        .map(|s| s.observation.clone())
        .collect()
}

#[tokio::test]
async fn tool_failures_become_observations_and_the_agent_keeps_going() {
    let tools: Vec<Arc<dyn Tool>> =
        vec![Arc::new(AddTool), Arc::new(DivideTool), Arc::new(BuggyTool)];
    let (agent, lm) = agent(
        tools,
        vec![
            step("try an unknown tool", "multiply", json!({"a": 2})),
            step("bad args", "add", json!({"a": "two", "b": 3})),
            step("divide by zero", "divide", json!({"a": 1, "b": 0})),
            step("call the buggy tool", "buggy", json!({})),
            step("now properly", "add", json!({"a": 2, "b": 3})),
            step("done", "finish", json!({})),
            extract("5"),
        ],
    );
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "5");
    let seen = observations(&out.trajectory);
    let text = |o: &Observation| o.as_text();
    assert_eq!(
        text(&seen[0]),
        "Execution error in multiply: there is no tool named `multiply`; the tools are: add, divide, buggy, finish"
    );
    assert_eq!(
        text(&seen[1]),
        "Execution error in add: invalid arguments for tool `add`: argument `a`: expected integer, got string \"two\""
    );
    assert_eq!(
        text(&seen[2]),
        "Execution error in divide: tool `divide` failed: division by zero"
    );
    assert_eq!(
        text(&seen[3]),
        "Execution error in buggy: tool `buggy` panicked: index out of bounds"
    );
    assert_eq!(seen[4], Observation::Output(json!(5)));
    assert_eq!(seen[5], Observation::Output(json!("Completed.")));
    // The model saw each error in the next step's prompt.
    let second_prompt = &lm.requests()[1].messages[1].content;
    assert!(
        second_prompt.contains("there is no tool named `multiply`"),
        "{second_prompt}"
    );
    assert_eq!(out.usage.lm_calls, 7);
}

#[tokio::test]
async fn a_tool_that_exceeds_its_timeout_becomes_an_observation() {
    let (agent, _) = agent(
        vec![Arc::new(SlowTool)],
        vec![
            step("wait", "slow", json!({})),
            step("give up", "finish", json!({})),
            extract("none"),
        ],
    );
    let agent = agent.with_limits(Limits::default().tool_timeout(Duration::from_millis(20)));
    let out = agent.call(ask()).await.unwrap();
    match &out.trajectory.steps[0].observation {
        Observation::Error(text) => assert!(text.contains("timed out after 20ms"), "{text}"),
        other => panic!("expected a timeout observation, got {other:?}"),
    }
}

#[tokio::test]
async fn finish_with_valid_outputs_skips_the_extractor() {
    let counter = Arc::new(Counter::default());
    let (agent, lm) = agent(
        Counter::tools(&counter),
        vec![
            step("visit", "visit", json!({})),
            step("answer", "finish", json!({"answer": "1 visit"})),
        ],
    );
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "1 visit");
    assert_eq!(out.reasoning, None);
    assert_eq!(lm.requests().len(), 2, "no extractor call");
    assert_eq!(counter.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn finish_without_outputs_runs_the_extractor() {
    let (agent, lm) = agent(
        vec![],
        vec![step("nothing to do", "finish", json!({})), extract("42")],
    );
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(
        (out.output.answer.as_str(), out.reasoning.as_deref()),
        ("42", Some("done"))
    );
    let extractor_prompt = &lm.requests()[1].messages[0].content;
    assert!(extractor_prompt.contains("1. `reasoning` (str): \n2. `answer` (str):"));
}

#[tokio::test]
async fn max_iters_bounds_the_loop() {
    let replies: Vec<String> = (0..3)
        .map(|_| step("again", "add", json!({"a": 1, "b": 1})))
        .collect();
    let mut replies = replies;
    replies.push(extract("2"));
    let lm = Arc::new(ScriptedLm::texts(replies));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_limits(Limits::default().max_iters(3));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.trajectory.steps.len(), 3);
    assert_eq!(lm.requests().len(), 4);
    assert_eq!(
        out.trajectory.stopped_early,
        Some(StopReason::MaxIters { max_iters: 3 })
    );
}

#[tokio::test]
async fn an_unreadable_step_stops_the_loop_and_says_why() {
    let (agent, _lm) = agent(
        vec![Arc::new(AddTool)],
        vec![
            step("first add", "add", json!({"a": 1, "b": 2})),
            "I am not following the format at all.".to_owned(),
            // The Chat adapter's JSON fallback also fails.
            "still not".to_owned(),
            extract("3"),
        ],
    );
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "3");
    assert_eq!(out.trajectory.steps.len(), 1);
    let reason = out.trajectory.stopped_early.expect("a reason");
    assert!(
        matches!(&reason, StopReason::UnreadableStep { step: 1, .. }),
        "{reason:?}"
    );
    assert!(
        reason.to_string().starts_with("step 1 could not be read:"),
        "{reason}"
    );
    // The unreadable step and its fallback are counted too.
    assert_eq!((out.usage.lm_calls, out.usage.adapter_fallbacks), (4, 1));
}

#[tokio::test]
async fn a_step_whose_only_fault_is_its_tool_args_stops_with_the_field_named() {
    let bad_args = "[[ ## next_thought ## ]]\nadd them\n\n[[ ## next_tool_name ## ]]\nadd\n\n\
                    [[ ## next_tool_args ## ]]\na=1, b=2\n\n[[ ## completed ## ]]";
    let (agent, lm) = agent(
        vec![Arc::new(AddTool)],
        vec![
            bad_args.to_owned(),
            // The JSON fallback repeats the fault.
            r#"{"next_thought": "add them", "next_tool_name": "add", "next_tool_args": "a=1, b=2"}"#
                .to_owned(),
            extract("3"),
        ],
    );
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "3");
    // Nothing ran: DSPy ends the trajectory when the step cannot be read, and so does Signet.
    assert!(out.trajectory.steps.is_empty());
    let reason = out.trajectory.stopped_early.expect("a reason");
    assert!(
        matches!(&reason, StopReason::UnreadableStep { step: 0, error } if error.contains("next_tool_args")),
        "{reason:?}"
    );
    assert_eq!(lm.requests().len(), 3);
}

#[tokio::test]
async fn a_finished_run_did_not_stop_early() {
    let (agent, _lm) = agent(vec![], vec![step("done", "finish", json!({"answer": "4"}))]);
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.trajectory.stopped_early, None);
}

fn overflow() -> LmError {
    LmError::ContextWindowExceeded {
        message: "too long".into(),
    }
}

#[tokio::test]
async fn an_extractor_that_never_fits_is_a_typed_error_with_the_trajectory() {
    let lm = Arc::new(
        ScriptedLm::texts([
            step("add", "add", json!({"a": 1, "b": 2})),
            step("done", "finish", json!({})),
        ])
        .then_error(overflow())
        .then_error(overflow())
        .then_error(overflow()),
    );
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm.clone());
    let error = agent.call(ask()).await.unwrap_err();
    match &error.reason {
        RunFailure::TrajectoryTooLong { message } => {
            assert!(
                error.trajectory.steps.len() < 2,
                "steps were dropped while truncating"
            );
            assert!(message.contains("too long"), "{message}");
        }
        other => panic!("expected TrajectoryTooLong, got {other:?}"),
    }
}

#[tokio::test]
async fn truncation_policies() {
    let mut trajectory = Trajectory::default();
    for index in 0..4 {
        trajectory.steps.push(signet::module::Step {
            index,
            thought: format!("t{index}"),
            tool_name: "add".into(),
            tool_args: json!({}),
            observation: Observation::Output(json!(index)),
            call_id: None,
            turn: index,
            elapsed: Duration::ZERO,
        });
    }
    let indices = |t: &Trajectory| t.steps.iter().map(|s| s.index).collect::<Vec<_>>();
    let mut keep_first = trajectory.clone();
    KeepFirst.truncate(&mut keep_first).await.unwrap();
    assert_eq!(indices(&keep_first), [0, 2, 3]);
    let mut window = trajectory.clone();
    SlidingWindow(2).truncate(&mut window).await.unwrap();
    assert_eq!(indices(&window), [2, 3]);
    let mut empty = Trajectory::default();
    assert!(SlidingWindow(2).truncate(&mut empty).await.is_err());

    // Summarize folds the older steps into one, keeping the newest two.
    let lm = Arc::new(ScriptedLm::texts([
        "[[ ## summary ## ]]\nadd gave 0 then 1",
    ]));
    let mut summarized = trajectory.clone();
    Summarize::new(lm.clone())
        .truncate(&mut summarized)
        .await
        .unwrap();
    assert_eq!(indices(&summarized), [0, 2, 3]);
    assert_eq!(
        summarized.steps[0].observation,
        Observation::Output(json!("add gave 0 then 1"))
    );
    assert!(
        lm.requests()[0].messages[1]
            .content
            .contains("[[ ## observation_1 ## ]]\n1")
    );
    // If the summary call fails, the oldest step is dropped instead.
    let failing = Arc::new(ScriptedLm::texts(Vec::<String>::new()));
    let mut fallback = trajectory.clone();
    Summarize::new(failing)
        .truncate(&mut fallback)
        .await
        .unwrap();
    assert_eq!(indices(&fallback), [1, 2, 3]);
}

#[tokio::test]
async fn a_custom_truncation_policy_is_used() {
    #[derive(Debug)]
    struct ForgetAll;
    impl TruncationPolicy for ForgetAll {
        fn truncate<'a>(
            &'a self,
            trajectory: &'a mut Trajectory,
        ) -> futures::future::BoxFuture<'a, Result<(), signet::module::react::CannotTruncate>>
        {
            trajectory.steps.clear();
            Box::pin(async { Ok(()) })
        }
    }
    let lm = Arc::new(
        ScriptedLm::texts([step("add", "add", json!({"a": 1, "b": 2}))])
            .then_error(overflow())
            .then(Completion::text(step(
                "done",
                "finish",
                json!({"answer": "3"}),
            ))),
    );
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_truncation(ForgetAll);
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "3");
    let retried = &lm.requests()[2].messages[1].content;
    assert!(
        retried.contains("[[ ## trajectory ## ]]\n\n\nRespond"),
        "the retry had an empty trajectory: {retried}"
    );
}

/// Delete a file (dangerous: needs approval).
#[tool(confirm)]
fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

#[tokio::test]
async fn confirmed_tools_ask_the_approver_and_a_denial_is_an_observation() {
    use signet::module::{Approval, ApprovalRequest};
    use std::sync::Mutex;
    let asked: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let log = asked.clone();
    let (agent, _) = agent(
        vec![Arc::new(DeleteFileTool)],
        vec![
            step("clean up", "delete_file", json!({"path": "/etc/passwd"})),
            step("clean tmp", "delete_file", json!({"path": "/tmp/x"})),
            step("done", "finish", json!({"answer": "cleaned"})),
        ],
    );
    let agent = agent.with_approver(move |request: ApprovalRequest| {
        let log = log.clone();
        async move {
            let allow = request.args["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/tmp/"));
            log.lock().unwrap().push(request);
            if allow {
                Approval::Approve
            } else {
                Approval::Deny(Some("system files are off limits".into()))
            }
        }
    });
    let out = agent.call(ask()).await.unwrap();
    let seen = observations(&out.trajectory);
    assert_eq!(
        seen[0],
        Observation::Error(
            "Execution error in delete_file: this call needs a person's approval and was denied: system files are off limits"
                .into()
        )
    );
    assert_eq!(seen[1], Observation::Output(json!("deleted /tmp/x")));
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].thought, "clean up");
}

#[tokio::test]
async fn an_approval_of_the_same_call_is_remembered_for_the_run() {
    use signet::module::{Approval, ApprovalRequest};
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let (agent, _) = agent(
        vec![Arc::new(DeleteFileTool)],
        vec![
            step("rm", "delete_file", json!({"path": "/tmp/x"})),
            step("again", "delete_file", json!({"path": "/tmp/x"})),
            step("other", "delete_file", json!({"path": "/tmp/y"})),
            step("done", "finish", json!({"answer": "cleaned"})),
        ],
    );
    let agent = agent.with_approver(move |_: ApprovalRequest| {
        count.fetch_add(1, Ordering::SeqCst);
        async { Approval::ApproveSame }
    });
    let out = agent.call(ask()).await.unwrap();
    let seen = observations(&out.trajectory);
    assert_eq!(seen[1], Observation::Output(json!("deleted /tmp/x")));
    assert_eq!(seen[2], Observation::Output(json!("deleted /tmp/y")));
    // The repeat ran without asking; other arguments were asked about.
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn confirmed_tools_never_run_without_an_approver() {
    let (agent, _) = agent(
        vec![Arc::new(DeleteFileTool)],
        vec![
            step("rm", "delete_file", json!({"path": "/tmp/x"})),
            step("done", "finish", json!({"answer": "no"})),
        ],
    );
    let out = agent.call(ask()).await.unwrap();
    match &out.trajectory.steps[0].observation {
        Observation::Error(text) => {
            assert!(text.contains("no one is available to approve it"), "{text}")
        }
        other => panic!("the tool must not run without approval: {other:?}"),
    }
}

fn many_tools(n: usize) -> Vec<Arc<dyn Tool>> {
    (0..n)
        .map(|i| {
            Arc::new(
                signet::tool::FnTool::builder(format!("t{i}"))
                    .description(format!(
                        "Tool number {i}.\n\nMore detail that the catalogue leaves out."
                    ))
                    .sync_fn(move |_| Ok::<_, String>(json!(i))),
            ) as Arc<dyn Tool>
        })
        .collect()
}

#[tokio::test]
async fn with_many_tools_a_first_call_selects_the_relevant_ones() {
    let lm = Arc::new(ScriptedLm::texts([
        r#"{"tools": ["t3", "t7"]}"#.to_owned(),
        step("use t7", "t7", json!({})),
        step("done", "finish", json!({"answer": "7"})),
    ]));
    let agent = ReAct::<Ask>::new()
        .tools(many_tools(14))
        .with_lm(lm.clone());
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "7");
    let requests = lm.requests();
    let catalogue = &requests[0].messages[0].content;
    assert!(
        catalogue.contains("- t13: Tool number 13.") && !catalogue.contains("More detail"),
        "{catalogue}"
    );
    let step_prompt = &requests[1].messages[0].content;
    assert!(
        step_prompt.contains("(1) t3,")
            && step_prompt.contains("(2) t7,")
            && step_prompt.contains("(3) finish,")
    );
    assert!(!step_prompt.contains("t12"));
    assert_eq!(out.usage.lm_calls, 3);
}

#[tokio::test]
async fn a_failed_selection_offers_every_tool() {
    let mut replies: Vec<String> = (0..4).map(|_| "I cannot decide".to_owned()).collect();
    replies.push(step("done", "finish", json!({"answer": "ok"})));
    let lm = Arc::new(ScriptedLm::texts(replies));
    let agent = ReAct::<Ask>::new()
        .tools(many_tools(14))
        .with_lm(lm.clone());
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "ok");
    let step_prompt = &lm.requests()[4].messages[0].content;
    assert!(
        step_prompt.contains("(14) t13,") && step_prompt.contains("(15) finish,"),
        "{step_prompt}"
    );
    // The four failed selection calls are counted with the step's.
    assert_eq!(lm.requests().len(), 5);
    assert_eq!(out.usage.lm_calls, 5);
}

/// A tool whose output is far longer than the default observation limit.
#[tool]
fn dump() -> String {
    "line of log output\n".repeat(2_000)
}

#[tokio::test]
async fn long_observations_are_cut_for_the_model_and_kept_whole() {
    let lm = Arc::new(ScriptedLm::texts([
        step("read the log", "dump", json!({})),
        step("done", "finish", json!({"answer": "ok"})),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(DumpTool)
        .with_lm(lm.clone())
        .with_limits(Limits::default().max_observation_chars(100));
    let out = agent.call(ask()).await.unwrap();
    let Observation::Truncated { shown, full } = &out.trajectory.steps[0].observation else {
        panic!(
            "expected a truncated observation: {:?}",
            out.trajectory.steps[0].observation
        );
    };
    assert_eq!(full, &json!("line of log output\n".repeat(2_000)));
    assert!(
        shown.ends_with("[... truncated: 37900 more characters of 38000 were not shown]"),
        "{shown}"
    );
    // The model read the cut text, not the whole output.
    let requests = lm.requests();
    let second_prompt = &requests[1].messages.last().unwrap().content;
    assert!(second_prompt.contains("[... truncated: 37900 more characters"));
    assert!(second_prompt.len() < 2_000, "{} bytes", second_prompt.len());
}

#[tokio::test]
async fn a_run_stops_at_its_lm_call_limit_with_the_trajectory() {
    let replies: Vec<String> = (0..5)
        .map(|_| step("again", "add", json!({"a": 1, "b": 1})))
        .collect();
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(ScriptedLm::texts(replies))
        .with_limits(Limits::default().max_lm_calls(3));
    let error = agent.call(ask()).await.unwrap_err();
    assert_eq!(error.reason, RunFailure::LmCallLimit { limit: 3 });
    assert_eq!(
        error.trajectory.steps.len(),
        3,
        "three steps ran before the limit"
    );
}

#[tokio::test]
async fn a_selection_limit_keeps_the_first_tools_named_once_each() {
    let lm = Arc::new(ScriptedLm::texts([
        r#"{"tools": ["t3", "t3", "t7", "t1", "t9"]}"#.to_owned(),
        step("done", "finish", json!({"answer": "ok"})),
    ]));
    let agent = ReAct::<Ask>::new()
        .tools(many_tools(14))
        .with_tool_selection_limit(2)
        .with_lm(lm.clone());
    agent.call(ask()).await.unwrap();
    let requests = lm.requests();
    let step_prompt = &requests[1].messages[0].content;
    assert!(
        step_prompt.contains("(1) t3,")
            && step_prompt.contains("(2) t7,")
            && step_prompt.contains("(3) finish,"),
        "{step_prompt}"
    );
}

#[tokio::test]
async fn selection_keeps_six_tools_by_default_and_bounds_each_catalogue_line() {
    let named: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let lm = Arc::new(ScriptedLm::texts([
        json!({ "tools": named }).to_string(),
        step("done", "finish", json!({"answer": "ok"})),
    ]));
    let mut tools = many_tools(14);
    tools.push(Arc::new(
        signet::tool::FnTool::builder("verbose")
            .description("word ".repeat(100))
            .sync_fn(|_| Ok::<_, String>(json!(0))),
    ));
    let agent = ReAct::<Ask>::new().tools(tools).with_lm(lm.clone());
    agent.call(ask()).await.unwrap();
    let requests = lm.requests();
    let catalogue = &requests[0].messages[0].content;
    let verbose = catalogue
        .lines()
        .find(|l| l.starts_with("- verbose: "))
        .unwrap();
    assert!(
        verbose.ends_with('…') && verbose.chars().count() < 200,
        "{verbose}"
    );
    let step_prompt = &requests[1].messages[0].content;
    assert!(
        step_prompt.contains("(6) t5,") && step_prompt.contains("(7) finish,"),
        "{step_prompt}"
    );
    assert!(!step_prompt.contains("t6,"), "{step_prompt}");
}

#[tokio::test]
async fn a_call_may_set_its_own_step_limit() {
    use signet::module::CallConfig;
    let replies: Vec<String> = (0..2)
        .map(|_| step("again", "add", json!({"a": 1, "b": 1})))
        .chain([extract("2")])
        .collect();
    let lm = Arc::new(ScriptedLm::texts(replies));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_limits(Limits::default().max_iters(10));
    let call = CallConfig::new().with_max_iters(2);
    let out = agent.call_with(ask(), &call).await.unwrap();
    assert_eq!(out.trajectory.steps.len(), 2);
    assert_eq!(
        out.trajectory.stopped_early,
        Some(StopReason::MaxIters { max_iters: 2 })
    );
}

#[tokio::test]
async fn an_empty_thought_is_the_providers_reasoning_in_text_mode() {
    let mut thinking = Completion::text(step("", "finish", json!({"answer": "4"})));
    thinking.reasoning = Some("  2 + 2 is 4, so I can finish.\n".into());
    let agent = ReAct::<Ask>::new()
        .with_mode(signet::module::ReActMode::Text)
        .with_lm(ScriptedLm::new([thinking]));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(
        out.trajectory.steps[0].thought,
        "2 + 2 is 4, so I can finish."
    );
}

fn named(name: &str) -> Arc<dyn Tool> {
    Arc::new(
        signet::tool::FnTool::builder(name)
            .description("A tool.")
            .sync_fn(|_| Ok::<_, String>(json!("ok"))),
    )
}

#[tokio::test]
async fn tools_that_share_a_name_are_refused_before_the_first_lm_call() {
    let lm = Arc::new(ScriptedLm::texts([step(
        "done",
        "finish",
        json!({"answer": "ok"}),
    )]));
    let agent = ReAct::<Ask>::new()
        .tools([named("lookup"), named("add"), named("lookup")])
        .with_lm(lm.clone());
    let error = agent.call(ask()).await.unwrap_err();
    assert!(
        matches!(&error.reason, RunFailure::Call(signet::Error::ToolNames { message }) if message.starts_with("two tools are named `lookup`")),
        "{error}"
    );
    let agent = ReAct::<Ask>::new()
        .tool(named("finish"))
        .with_lm(lm.clone());
    let error = agent.call(ask()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("a tool is named `finish`, which the loop reserves"),
        "{error}"
    );
    let predict = signet::module::Predict::<Ask>::new()
        .tools([named("add"), named("add")])
        .with_lm(lm.clone());
    let error = predict.call(ask()).await.unwrap_err();
    assert!(matches!(error, signet::Error::ToolNames { .. }), "{error}");
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn a_failed_extractor_falls_back_to_the_last_tool_result_marked_as_such() {
    use futures::StreamExt;
    use signet::module::ReActEvent;
    let replies = || {
        vec![
            step("add", "add", json!({"a": 1, "b": 2})),
            step("done", "finish", json!({})),
            "no markers at all".to_owned(),
            // The Chat adapter's JSON fallback fails too.
            "still none".to_owned(),
        ]
    };
    let (agent_on, _) = agent(vec![Arc::new(AddTool)], replies());
    let events: Vec<_> = agent_on.stream(ask()).collect().await;
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(output.answer, "3");
    let fallback = trajectory.answer_fallback.as_ref().expect("marked");
    assert_eq!(fallback.step, 0);
    assert!(
        fallback.error.contains("not a JSON object"),
        "{}",
        fallback.error
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReActEvent::AnswerFallback { step: 0, .. }))
    );
    // Off, the extractor's error stands, with the trajectory.
    let (agent_off, _) = agent(vec![Arc::new(AddTool)], replies());
    let error = agent_off
        .with_answer_fallback(false)
        .call(ask())
        .await
        .unwrap_err();
    assert_eq!(error.trajectory.steps.len(), 2);
    assert!(
        matches!(error.reason, RunFailure::Call(signet::Error::Parse(_))),
        "{error}"
    );
}

#[tokio::test]
async fn the_steps_may_have_an_adapter_of_their_own() {
    use signet::adapter::XmlAdapter;
    let lm = Arc::new(ScriptedLm::texts([
        "<next_thought>add</next_thought><next_tool_name>add</next_tool_name>\
         <next_tool_args>{\"a\": 1, \"b\": 2}</next_tool_args>"
            .to_owned(),
        "<next_thought>done</next_thought><next_tool_name>finish</next_tool_name>\
         <next_tool_args>{}</next_tool_args>"
            .to_owned(),
        extract("3"),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_step_adapter(XmlAdapter::new())
        .with_lm(lm.clone());
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "3");
    assert_eq!(out.trajectory.steps.len(), 2);
    let requests = lm.requests();
    // The steps asked in XML, the extractor in the Chat format (its own, the default).
    assert!(requests[0].messages[0].content.contains("<next_thought>"));
    assert!(
        requests[2].messages[0]
            .content
            .contains("[[ ## reasoning ## ]]")
    );
}

#[tokio::test]
async fn the_extractor_may_answer_without_reasoning() {
    let (agent, lm) = agent(
        vec![Arc::new(AddTool)],
        vec![
            step("add", "add", json!({"a": 1, "b": 2})),
            step("done", "finish", json!({})),
            "[[ ## answer ## ]]\n3\n\n[[ ## completed ## ]]".to_owned(),
        ],
    );
    let out = agent
        .with_extractor_reasoning(false)
        .call(ask())
        .await
        .unwrap();
    assert_eq!((out.output.answer.as_str(), out.reasoning), ("3", None));
    let extractor_prompt = &lm.requests()[2].messages[0].content;
    assert!(
        !extractor_prompt.contains("`reasoning`"),
        "{extractor_prompt}"
    );
    assert!(extractor_prompt.contains("`answer`"), "{extractor_prompt}");
}

/// Fetch a web page.
#[tool]
fn fetch(url: String) -> String {
    format!(
        "<!DOCTYPE html><html><head><title>{url}</title><style>body {{ color: red }}</style>\
         <script>track();</script></head><body><h1>Weather in Oslo</h1><p>Rain, 7 °C.</p>\
         </body></html>"
    )
}

#[tokio::test]
async fn an_html_page_reaches_the_model_as_its_text_and_the_trajectory_keeps_the_page() {
    use signet::module::react::AsIs;
    let replies = || {
        vec![
            step("read it", "fetch", json!({"url": "https://example.org"})),
            step("done", "finish", json!({"answer": "rain"})),
        ]
    };
    let (agent_default, lm) = agent(vec![Arc::new(FetchTool)], replies());
    let out = agent_default.call(ask()).await.unwrap();
    let Observation::Truncated { shown, full } = &out.trajectory.steps[0].observation else {
        panic!("{:?}", out.trajectory.steps[0].observation)
    };
    assert!(shown.starts_with("[an HTML page of "), "{shown}");
    assert!(shown.contains("Weather in Oslo") && shown.contains("Rain, 7 °C."));
    assert!(full.as_str().unwrap().contains("<script>track();</script>"));
    let second_prompt = &lm.requests()[1].messages[1].content;
    assert!(second_prompt.contains("Rain, 7 °C.") && !second_prompt.contains("track();"));
    // AsIs keeps DSPy's behaviour: the markup as it came.
    let (agent_as_is, lm) = agent(vec![Arc::new(FetchTool)], replies());
    agent_as_is
        .with_observation_formatter(AsIs)
        .call(ask())
        .await
        .unwrap();
    assert!(lm.requests()[1].messages[1].content.contains("track();"));
}

/// A long page.
#[tool]
fn page() -> String {
    "x".repeat(5_000)
}

#[tokio::test]
async fn the_answer_step_reads_long_results_cut_at_its_own_limit() {
    let (reader, lm) = agent(
        vec![Arc::new(PageTool)],
        vec![
            step("read it", "page", json!({})),
            step("done", "finish", json!({})),
            extract("a page of x"),
        ],
    );
    let out = reader.call(ask()).await.unwrap();
    // The step after the call read the whole page (under the loop's 20,000 characters) ...
    let step_prompt = &lm.requests()[1].messages[1].content;
    assert!(step_prompt.contains(&"x".repeat(5_000)));
    // ... the answer step its first 2,000 characters, with the marker.
    let answer_prompt = &lm.requests()[2].messages[1].content;
    assert!(answer_prompt.contains(&format!(
        "{}\n[... truncated: 3000 more characters of 5000 were not shown]",
        "x".repeat(2_000)
    )));
    assert!(!answer_prompt.contains(&"x".repeat(2_001)));
    // The run's trajectory keeps what the steps read.
    assert_eq!(
        out.trajectory.steps[0].observation,
        Observation::Output(json!("x".repeat(5_000)))
    );
    // A larger cap shows more.
    let (wider, lm) = agent(
        vec![Arc::new(PageTool)],
        vec![
            step("read it", "page", json!({})),
            step("done", "finish", json!({})),
            extract("a page of x"),
        ],
    );
    let wider = wider.with_limits(Limits::default().max_answer_observation_chars(10_000));
    wider.call(ask()).await.unwrap();
    assert!(
        lm.requests()[2].messages[1]
            .content
            .contains(&"x".repeat(5_000))
    );
}

#[tokio::test]
async fn the_default_max_iters_is_dspys_twenty() {
    assert_eq!(Limits::default().max_iters, 20);
    let mut replies: Vec<String> = (0..20)
        .map(|i| step("again", "add", json!({"a": i, "b": 1})))
        .collect();
    replies.push(extract("20"));
    let lm = Arc::new(ScriptedLm::texts(replies));
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm.clone());
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.trajectory.steps.len(), 20);
    assert_eq!(lm.requests().len(), 21, "20 steps, then the extractor");
    assert_eq!(
        out.trajectory.stopped_early,
        Some(StopReason::MaxIters { max_iters: 20 })
    );
    assert_eq!(out.output.answer, "20");
}
