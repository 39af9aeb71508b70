//! Interrupts: the caller's follow-up messages reach the model between iterations (after the tool
//! results in native mode), several are combined into one, and a pending finish is postponed.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::json;
use signet::lm::{Capabilities, Completion, Lm, LmError, LmRequest, Role, ToolCall};
use signet::module::{ReAct, ReActEvent};
use signet::testing::ScriptedLm;
use signet::{ToolBox, tool};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::support;
use support::*;

/// A tool during which the caller sends two follow-up messages.
struct Chatty {
    sender: Mutex<Option<UnboundedSender<String>>>,
}

#[tool]
impl Chatty {
    /// Look something up.
    #[tool]
    fn look(&self) -> &'static str {
        if let Some(sender) = self.sender.lock().unwrap().take() {
            sender.send("Also check Rome.".into()).unwrap();
            sender.send("And be brief.".into()).unwrap();
        }
        "Paris: sunny"
    }
}

async fn events_of(
    stream: futures::stream::BoxStream<'_, ReActEvent<AskOutput>>,
) -> Vec<ReActEvent<AskOutput>> {
    stream.collect().await
}

/// An LM that, while answering its call number `at` (from 0), receives two follow-up messages
/// from the caller.
struct InterruptedWhileDeciding {
    inner: ScriptedLm,
    sender: Mutex<Option<UnboundedSender<String>>>,
    at: usize,
}

impl Lm for InterruptedWhileDeciding {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        if self.inner.requests().len() == self.at
            && let Some(sender) = self.sender.lock().unwrap().take()
        {
            sender.send("Also check Rome.".into()).unwrap();
            sender.send("And be brief.".into()).unwrap();
        }
        self.inner.complete(request)
    }

    fn model(&self) -> &str {
        "interrupted"
    }
}

#[tokio::test]
async fn a_finish_chosen_while_messages_arrive_is_postponed_and_the_messages_reach_the_model() {
    let (sender, receiver) = unbounded_channel();
    let lm = Arc::new(InterruptedWhileDeciding {
        inner: ScriptedLm::texts([
            step("thinking", "add", json!({"a": 1, "b": 1})),
            step("thinking", "finish", json!({"answer": "2"})),
            step(
                "thinking",
                "finish",
                json!({"answer": "2, briefly; Rome unknown"}),
            ),
        ]),
        sender: Mutex::new(Some(sender)),
        at: 1,
    });
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm.clone());
    let events = events_of(agent.stream_with_interrupts(
        AskInput {
            question: "1 + 1?".into(),
        },
        receiver,
    ))
    .await;
    match events.last() {
        Some(ReActEvent::Done { output, .. }) => {
            assert_eq!(output.answer, "2, briefly; Rome unknown")
        }
        other => panic!("expected done, got {other:?}"),
    }
    let third_prompt = &lm.inner.requests()[2].messages[1].content;
    assert!(third_prompt.contains("Finish postponed"), "{third_prompt}");
    assert!(
        third_prompt.contains("[[ ## user_message_0 ## ]]\nAlso check Rome.\n\nAnd be brief."),
        "the two messages arrive combined: {third_prompt}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReActEvent::UserMessage { .. }))
    );
}

#[tokio::test]
async fn native_mode_puts_messages_after_the_tool_results() {
    let (sender, receiver) = unbounded_channel();
    let tools = Chatty::tools(&Arc::new(Chatty {
        sender: Mutex::new(Some(sender)),
    }));
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new("c1", "look", "{}")]),
            Completion::text("[[ ## answer ## ]]\nParis sunny; Rome unknown"),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new().tools(tools).with_lm(lm.clone());
    let events = events_of(agent.stream_with_interrupts(
        AskInput {
            question: "Weather?".into(),
        },
        receiver,
    ))
    .await;
    assert!(matches!(events.last(), Some(ReActEvent::Done { .. })));
    let messages = &lm.requests()[1].messages;
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User
        ]
    );
    assert_eq!(messages[4].content, "Also check Rome.\n\nAnd be brief.");
}

#[tokio::test]
async fn a_message_outlives_the_steps_compaction_drops() {
    let (sender, receiver) = unbounded_channel();
    let lm = Arc::new(InterruptedWhileDeciding {
        inner: ScriptedLm::texts([
            step("first", "add", json!({"a": 1, "b": 1})),
            step("second", "add", json!({"a": 2, "b": 2})),
        ])
        .then_error(LmError::ContextWindowExceeded {
            message: "too long".into(),
        })
        .then(Completion::text(step(
            "done",
            "finish",
            json!({"answer": "4"}),
        ))),
        sender: Mutex::new(Some(sender)),
        at: 0,
    });
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm.clone());
    let events = events_of(agent.stream_with_interrupts(
        AskInput {
            question: "2 + 2?".into(),
        },
        receiver,
    ))
    .await;
    assert!(
        matches!(events.last(), Some(ReActEvent::Done { .. })),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        ReActEvent::Compacted {
            dropped_steps: 1,
            ..
        }
    )));
    // The step the message came after was dropped; the message was not.
    let last_prompt = &lm.inner.requests()[3].messages[1].content;
    assert!(!last_prompt.contains("thought_0"), "{last_prompt}");
    assert!(
        last_prompt.contains("[[ ## user_message_0 ## ]]\nAlso check Rome.\n\nAnd be brief."),
        "{last_prompt}"
    );
}
