//! Constrained calls and answers, whole and streamed.

use super::*;
use crate::lm::Message;
use crate::lm::ToolDefinition;
use crate::testing::ScriptedLm;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn add_tool() -> ToolDefinition {
    let args = json!({"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]});
    ToolDefinition::new("add", "Add.", args)
}

fn echo_tool() -> ToolDefinition {
    let args = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    ToolDefinition::new("echo", "Echo.", args)
}

fn request(choice: Option<ToolChoice>) -> LmRequest {
    let mut request = LmRequest::new(vec![Message::user("Add 2 and 3.")]);
    request.tools = vec![add_tool(), echo_tool()];
    request.tool_choice = choice;
    request
}

fn wrapped(replies: &[&str], capabilities: Capabilities) -> ConstrainedToolCalls<ScriptedLm> {
    ConstrainedToolCalls::new(
        ScriptedLm::texts(replies.iter().copied()).with_capabilities(capabilities),
    )
}

fn sent_schema(lm: &ConstrainedToolCalls<ScriptedLm>) -> Value {
    match lm.inner().requests()[0].response_format.clone() {
        Some(ResponseFormat::Raw(raw)) => raw["schema"].clone(),
        Some(ResponseFormat::JsonSchema { schema, .. }) => schema,
        other => panic!("no schema sent: {other:?}"),
    }
}

#[tokio::test]
async fn a_list_becomes_tool_calls_with_ids_numbered_through_the_conversation() {
    let lm = wrapped(
        &[
            r#"[{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "echo", "arguments": {"text": "hi"}}]"#,
        ],
        Capabilities::llama_cpp(),
    );
    let mut request = request(Some(ToolChoice::Auto));
    request
        .messages
        .push(Message::assistant_tool_calls(vec![ToolCall::new(
            "call_0", "add", "{}",
        )]));
    request.messages.push(Message::tool_result("call_0", "5"));
    let reply = lm.complete(&request).await.unwrap();
    let calls: Vec<(&str, &str)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("call_1", "add"), ("call_2", "echo")]);
    assert_eq!(reply.tool_calls[1].args().unwrap(), json!({"text": "hi"}));
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(reply.text, None);
    // The tools are still sent (for the chat template), the choice is left to the schema.
    let sent = &lm.inner().requests()[0];
    assert_eq!(sent.tools.len(), 2);
    assert_eq!(sent.tool_choice, Some(ToolChoice::Auto));
}

#[tokio::test]
async fn auto_offers_the_answer_as_a_string_or_under_the_requests_own_schema() {
    let lm = wrapped(&[r#""It is 5.""#], Capabilities::llama_cpp());
    let reply = lm.complete(&request(None)).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("It is 5."));
    assert!(reply.tool_calls.is_empty());
    let schema = sent_schema(&lm);
    assert_eq!(schema["anyOf"][0]["type"], "array");
    assert_eq!(
        schema["anyOf"][0]["maxItems"], 2,
        "each of the two tools once"
    );
    assert_eq!(schema["anyOf"][1], json!({"type": "string"}));
    let names = &schema["anyOf"][0]["items"]["anyOf"];
    assert_eq!(names[0]["properties"]["name"]["enum"], json!(["add"]));
    assert_eq!(names[1]["properties"]["name"]["enum"], json!(["echo"]));

    let answer_schema = json!({"type": "object", "properties": {"sum": {"type": "integer"}}});
    let lm = wrapped(&[r#"{"sum": 5}"#], Capabilities::openai());
    let mut with_format = request(Some(ToolChoice::Auto));
    with_format.response_format = Some(ResponseFormat::JsonSchema {
        name: "out".into(),
        schema: answer_schema.clone(),
        strict: true,
    });
    let reply = lm.complete(&with_format).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some(r#"{"sum": 5}"#));
    assert_eq!(sent_schema(&lm)["anyOf"][1], answer_schema);

    let bounded = wrapped(&["[]"], Capabilities::llama_cpp()).max_calls(5);
    let _ = bounded.complete(&request(None)).await;
    assert_eq!(sent_schema(&bounded)["anyOf"][0]["maxItems"], 5);
}

#[tokio::test]
async fn required_named_and_single_calls_narrow_the_schema() {
    let lm = wrapped(
        &[r#"[{"name": "add", "arguments": {"a": 1, "b": 1}}]"#],
        Capabilities::llama_cpp(),
    );
    let mut named = request(Some(ToolChoice::Function("add".into())));
    named.parallel_tool_calls = Some(false);
    lm.complete(&named).await.unwrap();
    let schema = sent_schema(&lm);
    assert_eq!(schema["type"], "array", "no answer branch: {schema}");
    assert_eq!(schema["maxItems"], 1);
    assert_eq!(
        schema["items"]["properties"]["name"]["enum"],
        json!(["add"])
    );
    assert_eq!(
        schema["items"]["properties"]["arguments"]["required"],
        json!(["a", "b"])
    );
}

#[tokio::test]
async fn a_reply_that_breaks_the_contract_is_an_invalid_response() {
    let lm = wrapped(&["{\"a\": 1", r#"{"a": 1}"#], Capabilities::llama_cpp());
    for _ in 0..2 {
        let error = lm
            .complete(&request(Some(ToolChoice::Required)))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, LmError::InvalidResponse { message } if message.contains("list of tool calls")),
            "{error:?}"
        );
    }
    let unknown = lm
        .complete(&request(Some(ToolChoice::Function("nope".into()))))
        .await
        .unwrap_err();
    assert!(matches!(unknown, LmError::InvalidResponse { message } if message.contains("`nope`")));
}

#[tokio::test]
async fn no_tools_or_tool_choice_none_pass_through_and_an_lm_without_schemas_is_refused() {
    let lm = wrapped(&["plain", "plain again"], Capabilities::llama_cpp());
    assert_eq!(
        lm.complete(&LmRequest::default())
            .await
            .unwrap()
            .text
            .as_deref(),
        Some("plain")
    );
    let reply = lm.complete(&request(Some(ToolChoice::None))).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("plain again"));
    assert!(
        lm.inner()
            .requests()
            .iter()
            .all(|r| r.response_format.is_none())
    );

    let no_schemas = wrapped(&["[]"], Capabilities::default());
    let error = no_schemas.complete(&request(None)).await.unwrap_err();
    assert!(
        matches!(error, LmError::InvalidResponse { message } if message.contains("json_object_schema"))
    );
    assert!(no_schemas.inner().requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn streaming_from_a_scripted_lm_reports_the_converted_calls() {
    use futures::StreamExt;
    let lm = wrapped(
        &[r#"[{"name": "echo", "arguments": {"text": "hi"}}]"#],
        Capabilities::llama_cpp(),
    );
    let events: Vec<StreamEvent> = lm
        .stream(&request(None))
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(matches!(&events[0], StreamEvent::ToolCallDelta { name: Some(n), .. } if n == "echo"));
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("no Done: {events:?}")
    };
    assert_eq!(done.tool_calls[0].id, "call_0");
}

#[tokio::test]
async fn a_calls_only_reply_tells_the_template_so_and_keeps_its_own_kwargs() {
    let reply = r#"[{"name": "add", "arguments": {"a": 2, "b": 3}}]"#;
    let sent_kwargs = |choice: Option<ToolChoice>, extra: Option<Value>| async move {
        let lm = wrapped(&[reply], Capabilities::llama_cpp())
            .with_calls_only_template_kwargs(json!({"tool_call_only": true, "x": 1}));
        let mut request = request(choice);
        if let Some(extra) = extra {
            request.extra.insert("chat_template_kwargs".into(), extra);
        }
        lm.complete(&request).await.unwrap();
        lm.inner().requests()[0]
            .extra
            .get("chat_template_kwargs")
            .cloned()
    };
    assert_eq!(
        sent_kwargs(Some(ToolChoice::Required), None).await,
        Some(json!({"tool_call_only": true, "x": 1}))
    );
    assert_eq!(
        sent_kwargs(
            Some(ToolChoice::Function("add".into())),
            Some(json!({"x": 2}))
        )
        .await,
        Some(json!({"x": 2, "tool_call_only": true})),
        "the request's own kwargs win"
    );
    assert_eq!(sent_kwargs(Some(ToolChoice::Auto), None).await, None);
    assert_eq!(sent_kwargs(None, None).await, None);
}

/// How a [`ChunkedLm`]'s stream ends after its text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// `Done` with the whole text.
    Done,
    /// An error.
    Error,
    /// Nothing: the stream just ends.
    Nothing,
    /// Never: the stream stays pending.
    Stall,
}

/// Streams its text in pieces of `chunk` bytes (kept whole at character boundaries), after
/// its reasoning, then ends as `ending` says; `dropped` is set when its stream is dropped.
struct ChunkedLm {
    text: String,
    reasoning: Option<String>,
    chunk: usize,
    /// How much of the text is streamed.
    cut: usize,
    ending: Ending,
    dropped: Arc<AtomicBool>,
}

impl ChunkedLm {
    fn new(text: &str, chunk: usize) -> ChunkedLm {
        ChunkedLm {
            text: text.to_owned(),
            reasoning: None,
            chunk,
            cut: text.len(),
            ending: Ending::Done,
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Streams the text only up to the end of the first `marker`, then ends as `ending` says.
    fn cut_after(mut self, marker: &str, ending: Ending) -> ChunkedLm {
        self.cut = self.text.find(marker).unwrap() + marker.len();
        self.ending = ending;
        self
    }
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = start.saturating_add(size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

impl Lm for ChunkedLm {
    fn complete<'a>(
        &'a self,
        _request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move { Ok(Completion::text(&self.text)) })
    }

    fn stream<'a>(
        &'a self,
        _request: &'a LmRequest,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        use futures::StreamExt;
        let mut events: Vec<Result<StreamEvent, LmError>> = Vec::new();
        if let Some(reasoning) = &self.reasoning {
            events.push(Ok(StreamEvent::ReasoningDelta(reasoning.clone())));
        }
        for piece in chunks(&self.text[..self.cut], self.chunk) {
            events.push(Ok(StreamEvent::TextDelta(piece.to_owned())));
        }
        match self.ending {
            Ending::Done => events.push(Ok(StreamEvent::Done(Completion::text(&self.text)))),
            Ending::Error => events.push(Err(timeout())),
            Ending::Nothing | Ending::Stall => {}
        }
        let tail = if self.ending == Ending::Stall {
            futures::stream::pending().boxed()
        } else {
            futures::stream::empty().boxed()
        };
        let flag = DropFlag(self.dropped.clone());
        futures::stream::iter(events)
            .chain(tail)
            .map(move |event| {
                let _alive = &flag;
                event
            })
            .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::llama_cpp()
    }

    fn model(&self) -> &str {
        "chunked"
    }
}

fn timeout() -> LmError {
    LmError::Timeout {
        after: std::time::Duration::from_secs(1),
    }
}

async fn streamed(
    lm: &ConstrainedToolCalls<ChunkedLm>,
    request: &LmRequest,
) -> Vec<Result<StreamEvent, LmError>> {
    use futures::StreamExt;
    lm.stream(request).collect().await
}

/// What a stream said, modulo how it was cut into events.
#[derive(Debug, PartialEq, Default)]
struct Streamed {
    /// Each call's index, id, name and arguments (its pieces joined).
    calls: Vec<(usize, String, String, String)>,
    text: String,
    reasoning: String,
    /// The final `Done` or error.
    last: Option<Result<Completion, LmError>>,
}

fn summary(events: Vec<Result<StreamEvent, LmError>>) -> Streamed {
    let mut streamed = Streamed::default();
    let count = events.len();
    for (at, event) in events.into_iter().enumerate() {
        assert!(streamed.last.is_none(), "an event after the last one");
        match event {
            Ok(StreamEvent::TextDelta(text)) => streamed.text.push_str(&text),
            Ok(StreamEvent::ReasoningDelta(text)) => streamed.reasoning.push_str(&text),
            Ok(StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            }) => match (id, name) {
                (Some(id), Some(name)) => {
                    assert_eq!(index, streamed.calls.len(), "calls come in order");
                    assert_eq!(arguments, "", "the first delta carries no arguments");
                    streamed.calls.push((index, id, name, arguments));
                }
                (None, None) => {
                    assert!(!arguments.is_empty(), "an empty piece");
                    let call = streamed.calls.last_mut().expect("a piece before its name");
                    assert_eq!(call.0, index, "a piece of an earlier call");
                    call.3.push_str(&arguments);
                }
                other => panic!("an id without a name or the reverse: {other:?}"),
            },
            Ok(StreamEvent::Done(done)) => streamed.last = Some(Ok(done)),
            Err(error) => streamed.last = Some(Err(error)),
        }
        if streamed.last.is_some() {
            assert_eq!(at + 1, count, "the stream goes on after its end");
        }
    }
    streamed
}

fn call(index: usize, id: &str, name: &str, arguments: &str) -> (usize, String, String, String) {
    (index, id.into(), name.into(), arguments.into())
}

#[tokio::test]
async fn calls_stream_alike_in_any_chunks_and_end_as_complete_does() {
    let reply = "  [ {\"name\":\"add\" , \"arguments\" : { \"a\" : 2,\n \"b\":3 } },\n\
                 {\"name\": \"echo\", \"arguments\": {\"text\": \"h\\\"i }] \\\\ \\u00e9 é 😀\"}} ]\n";
    let mut request = request(None);
    request
        .messages
        .push(Message::assistant_tool_calls(vec![ToolCall::new(
            "call_0", "add", "{}",
        )]));
    let mut seen = Vec::new();
    for size in [1, 3, usize::MAX] {
        let mut inner = ChunkedLm::new(reply, size);
        inner.reasoning = Some("Adding.".into());
        let lm = ConstrainedToolCalls::new(inner);
        let streamed = summary(streamed(&lm, &request).await);
        assert_eq!(
            streamed.calls,
            [
                call(0, "call_1", "add", "{ \"a\" : 2,\n \"b\":3 }"),
                call(1, "call_2", "echo", r#"{"text": "h\"i }] \\ \u00e9 é 😀"}"#),
            ],
            "pieces of {size} bytes"
        );
        assert_eq!(
            (streamed.text.as_str(), streamed.reasoning.as_str()),
            ("", "Adding.")
        );
        let completed = lm.complete(&request).await.unwrap();
        assert_eq!(
            completed.tool_calls[1].args().unwrap()["text"],
            "h\"i }] \\ é é 😀"
        );
        assert_eq!(streamed.last, Some(Ok(completed)));
        seen.push(streamed);
    }
    assert!(seen.windows(2).all(|pair| pair[0] == pair[1]));
}

#[tokio::test]
async fn strings_and_nesting_inside_the_arguments_do_not_end_them() {
    let arguments = r#"{"text": "\"}]", "list": [{"x": "]}\\"}, [1, {"y": "\\\\\""}]], "n": -1.5e3, "t": true, "e": {}}"#;
    let reply = format!(r#"[{{"n\u0061me" : "\u0065cho","arguments":{arguments}}}]"#);
    for size in [1, 2, 7] {
        let lm = ConstrainedToolCalls::new(ChunkedLm::new(&reply, size));
        let request = request(Some(ToolChoice::Required));
        let streamed = summary(streamed(&lm, &request).await);
        assert_eq!(streamed.calls, [call(0, "call_0", "echo", arguments)]);
        let Some(Ok(done)) = &streamed.last else {
            panic!("{streamed:?}")
        };
        assert_eq!(
            done.tool_calls[0].args().unwrap(),
            serde_json::from_str::<Value>(arguments).unwrap()
        );
        assert_eq!(streamed.last, Some(lm.complete(&request).await));
    }
}

#[tokio::test]
async fn arguments_before_the_name_are_held_until_it_is_known() {
    let reply =
        r#"[{"arguments": {"a": 1, "b": 2}, "name": "add"}, {"name": "echo", "arguments": {}}]"#;
    let lm = ConstrainedToolCalls::new(ChunkedLm::new(reply, 1));
    let events: Vec<StreamEvent> = streamed(&lm, &request(None))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let delta =
        |index, id: Option<&str>, name: Option<&str>, arguments: &str| StreamEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
        };
    assert_eq!(
        events[..3],
        [
            delta(0, Some("call_0"), Some("add"), ""),
            delta(0, None, None, r#"{"a": 1, "b": 2}"#),
            delta(1, Some("call_1"), Some("echo"), ""),
        ]
    );
    let streamed = summary(events.into_iter().map(Ok).collect());
    assert_eq!(streamed.calls[1], call(1, "call_1", "echo", "{}"));
}

#[tokio::test]
async fn an_answer_streams_as_text() {
    let reply = " \"It is \\\"5\\\"\\n\\u00e9 \\ud83d\\ude00 \\\\ done\" \n";
    for size in [1, 4] {
        let lm = ConstrainedToolCalls::new(ChunkedLm::new(reply, size));
        let streamed = summary(streamed(&lm, &request(None)).await);
        assert_eq!(streamed.text, "It is \"5\"\né 😀 \\ done");
        assert!(streamed.calls.is_empty());
        let completed = lm.complete(&request(None)).await.unwrap();
        assert_eq!(completed.text.as_deref(), Some(streamed.text.as_str()));
        assert_eq!(streamed.last, Some(Ok(completed)));
    }

    let reply = " {\"sum\": 5, \"note\": \"[\\\"x\\\"]\"}";
    let mut with_format = request(Some(ToolChoice::Auto));
    with_format.response_format = Some(ResponseFormat::JsonSchema {
        name: "out".into(),
        schema: json!({"type": "object"}),
        strict: true,
    });
    for size in [1, 2, usize::MAX] {
        let lm = ConstrainedToolCalls::new(ChunkedLm::new(reply, size));
        let streamed = summary(streamed(&lm, &with_format).await);
        assert_eq!(streamed.text, reply, "the object as it is");
        assert_eq!(streamed.last, Some(lm.complete(&with_format).await));
    }
}

#[tokio::test]
async fn an_inner_error_mid_stream_is_passed_on_and_ends_it() {
    let reply = r#"[{"name": "add", "arguments": {"a": 1, "b": 2}}]"#;
    let inner = ChunkedLm::new(reply, 2).cut_after(r#""a""#, Ending::Error);
    let lm = ConstrainedToolCalls::new(inner);
    let streamed = summary(streamed(&lm, &request(None)).await);
    assert_eq!(streamed.calls, [call(0, "call_0", "add", r#"{"a""#)]);
    assert_eq!(streamed.last, Some(Err(timeout())));
}

#[tokio::test]
async fn an_inner_stream_without_done_ends_with_an_invalid_response() {
    let reply = r#"[{"name": "add", "arguments": {"a": 1, "b": 2}}]"#;
    let inner = ChunkedLm::new(reply, 5).cut_after("]", Ending::Nothing);
    let lm = ConstrainedToolCalls::new(inner);
    let streamed = summary(streamed(&lm, &request(None)).await);
    assert_eq!(streamed.calls.len(), 1);
    assert!(
        matches!(&streamed.last, Some(Err(LmError::InvalidResponse { message })) if message.contains("ended before")),
        "{streamed:?}"
    );
}

#[tokio::test]
async fn a_call_is_reported_before_the_reply_is_complete() {
    use futures::StreamExt;
    let reply = r#"[{"name": "add", "arguments": {"a": 1, "b": 2}}]"#;
    let inner = ChunkedLm::new(reply, 1).cut_after(r#"{"a""#, Ending::Stall);
    let lm = ConstrainedToolCalls::new(inner);
    let request = request(None);
    let mut events = lm.stream(&request);
    let wait = std::time::Duration::from_secs(5);
    let first = tokio::time::timeout(wait, events.next()).await;
    let Ok(Some(Ok(StreamEvent::ToolCallDelta { id, name, .. }))) = &first else {
        panic!("no call before the reply's end: {first:?}")
    };
    assert_eq!(
        (id.as_deref(), name.as_deref()),
        (Some("call_0"), Some("add"))
    );
    let second = tokio::time::timeout(wait, events.next()).await;
    assert!(
        matches!(&second, Ok(Some(Ok(StreamEvent::ToolCallDelta { arguments, .. }))) if arguments == "{"),
        "{second:?}"
    );
}

#[tokio::test]
async fn dropping_the_stream_drops_the_inner_one() {
    use futures::StreamExt;
    let reply =
        r#"[{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "echo", "arguments": {}}]"#;
    let inner = ChunkedLm::new(reply, 1);
    let dropped = inner.dropped.clone();
    let lm = ConstrainedToolCalls::new(inner);
    let request = request(None);
    let mut events = lm.stream(&request);
    let first = events.next().await;
    assert!(
        matches!(&first, Some(Ok(StreamEvent::ToolCallDelta { name: Some(n), .. })) if n == "add")
    );
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the inner stream is read as the caller reads"
    );
    drop(events);
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_malformed_reply_ends_with_the_error_complete_gives() {
    let required = request(Some(ToolChoice::Required));
    for reply in [
        "not json",
        r#"[{"name": "add", "arguments": {"a": 1"#,
        "[5]",
    ] {
        let lm = ConstrainedToolCalls::new(ChunkedLm::new(reply, 3));
        let streamed = summary(streamed(&lm, &required).await);
        let error = lm.complete(&required).await.unwrap_err();
        assert!(
            matches!(&error, LmError::InvalidResponse { .. }),
            "{error:?}"
        );
        assert_eq!(streamed.last, Some(Err(error)), "{reply}");
        assert_eq!(streamed.text, "");
    }
    // With `auto`, a list cut off is the answer's text, as `complete` reads it.
    let cut = r#"[{"name": "add", "arguments": {"a": 1"#;
    let lm = ConstrainedToolCalls::new(ChunkedLm::new(cut, 3));
    let streamed = summary(streamed(&lm, &request(None)).await);
    assert_eq!(streamed.calls, [call(0, "call_0", "add", r#"{"a": 1"#)]);
    assert_eq!(streamed.last, Some(lm.complete(&request(None)).await));
}

#[tokio::test]
async fn a_request_without_tools_streams_from_the_inner_lm_unchanged() {
    use futures::StreamExt;
    let lm = ConstrainedToolCalls::new(ChunkedLm::new("[not read]", 4));
    let request = LmRequest::new(vec![Message::user("hi")]);
    let events: Vec<_> = lm.stream(&request).collect().await;
    let inner: Vec<_> = lm.inner().stream(&request).collect().await;
    assert_eq!(events, inner);
    assert_eq!(events.len(), 4);
}

#[tokio::test]
async fn one_of_some_tools_keeps_every_tool_listed_and_constrains_the_reply_to_those() {
    let inner = Arc::new(
        ScriptedLm::texts([r#"[{"name": "echo", "arguments": {"text": "hi"}}]"#])
            .with_capabilities(Capabilities::llama_cpp()),
    );
    let lm = ConstrainedToolCalls::new(inner.clone());
    let mut request = LmRequest::new(vec![Message::user("Echo hi.")]);
    request.tools = vec![add_tool(), echo_tool()];
    request.tool_choice = Some(ToolChoice::OneOf(vec!["echo".into()]));
    let reply = lm.complete(&request).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "echo");
    let sent = &inner.requests()[0];
    assert_eq!(sent.tools.len(), 2, "the prompt still lists every tool");
    let schema = match &sent.response_format {
        Some(ResponseFormat::Raw(raw)) => raw["schema"].to_string(),
        other => panic!("{other:?}"),
    };
    assert!(
        schema.contains("\"echo\"") && !schema.contains("\"add\""),
        "{schema}"
    );
}
