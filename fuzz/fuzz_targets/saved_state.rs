//! Files a program or a web service loads back: a saved program (`load_json`) and a suspended
//! ReAct run. For the run, a real suspended state is made first and the input, read as a JSON
//! object, is laid over it key by key — so the fuzzer edits the turn, the pending calls, the steps
//! and the usage of a state whose fingerprint is right. Loading or resuming may fail with a typed
//! error; it must not panic, overflow, or run a tool that needs approval without one.
#![no_main]

use std::sync::Arc;
use std::sync::atomic::Ordering;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use signet::Tool;
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::testing::ScriptedLm;
use signet::module::{
    ChainOfThought, Decision, Predict, Predictors, ReAct, ReActMode, RunOutcome, SuspendedRun,
};
use signet_fuzz::{Ask, AskInput, Everything, PAYMENTS, PayTool};

fn agent(lm: Arc<ScriptedLm>) -> ReAct<Ask> {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(PayTool)];
    ReAct::<Ask>::new()
        .tools(tools)
        .with_mode(ReActMode::Native)
        .with_lm(lm)
}

fn scripted(replies: Vec<Completion>) -> Arc<ScriptedLm> {
    Arc::new(
        ScriptedLm::new(replies)
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    signet_fuzz::on_small_stack(move || match first % 3 {
        0 => {
            let mut program = Predict::<Everything>::new();
            let _ = program.load_json(&text);
        }
        1 => {
            let mut program = ChainOfThought::<Ask>::new();
            let _ = program.load_json(&text);
        }
        _ => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let pay = Completion::tool_calls(vec![ToolCall::new(
                    "c1",
                    "pay",
                    json!({"to": "Ada", "amount": 5}).to_string(),
                )]);
                let Ok(RunOutcome::Suspended(state)) = agent(scripted(vec![pay]))
                    .start(AskInput {
                        question: "Pay Ada 5".into(),
                    })
                    .await
                else {
                    panic!("the run should suspend before paying");
                };
                let mut value = serde_json::to_value(&state).unwrap();
                if let (Value::Object(state), Ok(Value::Object(edits))) =
                    (&mut value, serde_json::from_str::<Value>(&text))
                {
                    for (key, edit) in edits {
                        state.insert(key, edit);
                    }
                }
                let Ok(state) = serde_json::from_value::<SuspendedRun>(value) else {
                    return;
                };
                // Every pending call is denied: whatever the state says, nothing gets paid.
                let decisions = state.decide_all(Decision::Deny(Some("not approved".into())));
                let finish = Completion::tool_calls(vec![ToolCall::new(
                    "c2",
                    "finish",
                    json!({"answer": "done"}).to_string(),
                )]);
                let agent = agent(scripted(vec![finish.clone(), finish]));
                let paid = PAYMENTS.load(Ordering::SeqCst);
                let _ = agent.resume(state, decisions).await;
                assert_eq!(
                    PAYMENTS.load(Ordering::SeqCst),
                    paid,
                    "a payment ran though every pending call was denied"
                );
            });
        }
    });
});
