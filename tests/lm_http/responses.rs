//! `OpenAiResponsesLm` against a mock Responses server (the wire shapes of OpenAI's API reference,
//! <https://platform.openai.com/docs/api-reference/responses> and its streaming events): input
//! items, parallel function calls, images, structured output, streaming, usage with cached and
//! reasoning tokens, and each error kind with its retry behaviour.

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{
    FinishReason, Lm, LmError, LmRequest, Message, OpenAiResponsesLm, StreamEvent, ToolCall,
    ToolDefinition,
};
use signet::media::{ContentPart, Image};
use signet::module::{Observation, ReAct};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::scripted::{Script, conversation, native_run, quick_retries, structured_answer};
use crate::support;
use support::*;

fn client(server: &MockServer) -> OpenAiResponsesLm {
    OpenAiResponsesLm::builder("gpt-test")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-resp-secret")
        .retry(quick_retries())
        .build()
        .expect("a valid client")
}

/// A whole response with `output` items.
fn response(output: Value) -> Value {
    json!({"id": "resp_01", "object": "response", "status": "completed", "model": "gpt-test",
           "output": output, "error": null, "incomplete_details": null,
           "usage": {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 32},
                     "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2},
                     "total_tokens": 47}})
}

fn text_response(text: &str) -> Value {
    response(
        json!([{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}]),
    )
}

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
           "name": name, "arguments": arguments.to_string(), "status": "completed"})
}

/// A whole response as the events OpenAI streams for it.
fn as_events(response: &Value) -> String {
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": response["id"],
        "model": response["model"], "status": "in_progress", "output": []}}),
    ];
    for (index, item) in response["output"].as_array().unwrap().iter().enumerate() {
        if item["type"] == "function_call" {
            let mut added = item.clone();
            added["arguments"] = json!("");
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            );
            let arguments = item["arguments"].as_str().unwrap();
            let (head, tail) = arguments.split_at(arguments.len() / 2);
            for delta in [head, tail] {
                events.push(json!({"type": "response.function_call_arguments.delta",
                    "output_index": index, "item_id": item["id"], "delta": delta}));
            }
        } else if item["type"] == "reasoning" {
            events.push(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "reasoning", "id": item["id"], "summary": []}}),
            );
            events.push(json!({"type": "response.reasoning_summary_text.delta",
                "output_index": index, "item_id": item["id"], "summary_index": 0,
                "delta": item["summary"][0]["text"]}));
        } else {
            events.push(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "message", "id": item["id"], "role": "assistant", "content": []}}),
            );
            let text = item["content"][0]["text"].as_str().unwrap();
            for delta in [&text[..text.len() / 2], &text[text.len() / 2..]] {
                events.push(
                    json!({"type": "response.output_text.delta", "output_index": index,
                    "content_index": 0, "item_id": item["id"], "delta": delta}),
                );
            }
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": response}));
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

async fn scripted(replies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header("authorization", "Bearer sk-resp-secret"))
        .respond_with(Script::new(replies, as_events))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_conversation_with_function_call_results_and_an_image_is_sent_as_input_items() {
    let server = scripted(vec![text_response("4 and 2")]).await;
    let image = Image::from_url("https://example.com/cat.jpg").unwrap();
    let calls = vec![
        ToolCall::new("call_1", "add", r#"{"a":2,"b":2}"#),
        ToolCall::new("call_2", "add", r#"{"a":1,"b":1}"#),
    ];
    let media = vec![ContentPart::Image(image)];
    let mut request = conversation(media, calls, [("call_1", "4"), ("call_2", "2")]);
    request.tools = vec![ToolDefinition::new(
        "add",
        "Add.",
        json!({"type": "object"}),
    )];
    request.parallel_tool_calls = Some(true);
    request.options.max_tokens = Some(64);
    let completion = client(&server).complete(&request).await.unwrap();
    assert_eq!(completion.text.as_deref(), Some("4 and 2"));
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        (
            completion.usage.prompt_tokens,
            completion.usage.cached_prompt_tokens
        ),
        (40, 32)
    );

    let body = &bodies(&server).await[0];
    assert_eq!(body["instructions"], "You add.");
    assert_eq!(body["max_output_tokens"], 64);
    assert_eq!(body["parallel_tool_calls"], true);
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[0]["content"][1],
        json!({"type": "input_image", "image_url": "https://example.com/cat.jpg"})
    );
    assert_eq!(
        (input[1]["type"].clone(), input[2]["call_id"].clone()),
        (json!("function_call"), json!("call_2"))
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_2", "output": "2"})
    );
    assert_eq!(body["tools"][0]["type"], "function");
}

#[tokio::test]
async fn a_streamed_response_gives_text_and_parallel_calls_in_pieces_and_the_whole_at_the_end() {
    let reply = response(json!([
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": "Adding."}]},
        call("call_a", "add", json!({"a": 2, "b": 3})),
        call("call_b", "add", json!({"a": 1, "b": 1})),
    ]));
    let server = scripted(vec![reply]).await;
    let request = LmRequest::new(vec![Message::user("2+3 and 1+1?")]);
    let events: Vec<StreamEvent> = client(&server)
        .stream(&request)
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert!(events.contains(&StreamEvent::TextDelta("Add".into())));
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("no Done: {events:?}")
    };
    assert_eq!(done.text.as_deref(), Some("Adding."));
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].args().unwrap(), json!({"a": 2, "b": 3}));
    assert_eq!(done.tool_calls[1].id, "call_b");
    assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(done.usage.cached_prompt_tokens, 32);
}

#[tokio::test]
async fn predict_asks_for_structured_output_in_text_format_and_a_native_react_run_answers() {
    let server = scripted(vec![text_response(r#"{"answer": "Paris"}"#)]).await;
    assert_eq!(structured_answer(client(&server)).await, "Paris");
    let body = &bodies(&server).await[0];
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert_eq!(body["text"]["format"]["strict"], true);

    let server = scripted(vec![
        response(json!([call("call_9", "add", json!({"a": 40, "b": 2}))])),
        response(json!([call("call_10", "finish", json!({"answer": "42"}))])),
    ])
    .await;
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
    let (output, trajectory) = native_run(&agent, true).await;
    assert_eq!(output.answer, "42");
    assert_eq!(
        trajectory.steps[0].observation,
        Observation::Output(json!(42))
    );
    let sent = bodies(&server).await;
    let result = sent[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("the result sent back");
    assert_eq!(
        (result["call_id"].clone(), result["output"].clone()),
        (json!("call_9"), json!("42"))
    );
}

#[tokio::test]
async fn reasoning_items_go_back_before_the_calls_they_led_to_streamed_or_not() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Add with the tool."}],
        "encrypted_content": "gAAAAABo-opaque"});
    for streamed in [true, false] {
        let server = scripted(vec![
            response(json!([
                reasoning,
                call("call_9", "add", json!({"a": 40, "b": 2}))
            ])),
            response(json!([call("call_10", "finish", json!({"answer": "42"}))])),
        ])
        .await;
        let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
        let (output, trajectory) = native_run(&agent, streamed).await;
        assert_eq!(
            (output.answer.as_str(), trajectory.steps[0].thought.as_str()),
            ("42", "Add with the tool.")
        );
        let sent = bodies(&server).await;
        let input = sent[1]["input"].as_array().unwrap();
        let at = |kind: &str| input.iter().position(|item| item["type"] == kind);
        let (Some(item), Some(called)) = (at("reasoning"), at("function_call")) else {
            panic!("streamed {streamed}: the reasoning item was not sent back: {input:?}");
        };
        assert!(item < called);
        assert_eq!(input[item], reasoning, "sent back unchanged");
    }
}

#[tokio::test]
async fn errors_are_typed_transient_ones_retried_and_a_failed_stream_is_an_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0").set_body_json(
            json!({"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_response("fine")))
        .mount(&server)
        .await;
    let completion = client(&server)
        .complete(&LmRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(completion.usage.retries, 1);

    let cases = [
        (
            400,
            json!({"error": {"message": "Your input exceeds the context window of this model.", "code": "context_length_exceeded"}}),
            "context_window_exceeded",
        ),
        (
            401,
            json!({"error": {"message": "Incorrect API key provided: sk-resp-secret", "code": "invalid_api_key"}}),
            "401",
        ),
        (503, json!({"error": {"message": "overloaded"}}), "503"),
    ];
    for (status, body, kind) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .mount(&server)
            .await;
        let lm = OpenAiResponsesLm::builder("gpt-test")
            .base_url(format!("{}/v1", server.uri()))
            .api_key("sk-resp-secret")
            .max_retries(0)
            .build()
            .unwrap();
        let error = lm
            .complete(&LmRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap_err();
        assert_eq!(error.error_type(), kind, "{error}");
        assert!(!error.to_string().contains("sk-resp-secret"), "{error}");
    }

    let server = MockServer::start().await;
    let failed = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n\
        event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(failed, "text/event-stream"))
        .mount(&server)
        .await;
    let lm = OpenAiResponsesLm::builder("gpt-test")
        .base_url(format!("{}/v1", server.uri()))
        .max_retries(0)
        .build()
        .unwrap();
    let events: Vec<_> = lm
        .stream(&LmRequest::new(vec![Message::user("hi")]))
        .collect()
        .await;
    assert!(
        matches!(
            events.last(),
            Some(Err(LmError::Server { status: 500, .. }))
        ),
        "{events:?}"
    );
    // The API has no stop sequences: asked for some, the client says so before sending.
    let mut stopped = LmRequest::new(vec![Message::user("hi")]);
    stopped.options.stop = vec!["\n".into()];
    let error = lm.complete(&stopped).await.unwrap_err();
    assert!(
        matches!(error, LmError::Rejected { status: 0, .. }),
        "{error}"
    );
}
