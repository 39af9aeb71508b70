//! signet-mcp's client beyond tools, against the reference servers from npm: resources (lists,
//! templates, reads, subscriptions, as agent tools) and prompts from `server-everything`; the
//! server sampling the client's model and asking the user questions (elicitation) through its
//! `trigger-*` tools; roots, shown back by `server-everything` and obeyed by `server-filesystem`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use signet::ToolError;
use signet::lm::{Completion, Message, Role, Usage};
use signet::testing::ScriptedLm;
use signet_mcp::{
    Elicitation, ElicitationAnswer, ElicitationKind, Error, McpClient, McpClientBuilder, Root,
    Sampling,
};

use common::{TempDir, call, npm_server};

async fn everything(builder: McpClientBuilder) -> McpClient {
    builder
        .name("everything")
        .spawn(npm_server("server-everything").arg("stdio"))
        .await
        .expect("server-everything starts")
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn resources_templates_reads_and_subscriptions() {
    let client = everything(McpClient::builder()).await;

    let resources = client.resources().await.unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r.uri.starts_with("demo://resource/static/document/")),
        "{:?}",
        resources.iter().map(|r| &r.uri).collect::<Vec<_>>()
    );
    let templates = client.resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );

    // A text resource from a filled-in template, and a binary one.
    let contents = client
        .read_resource("demo://resource/dynamic/text/3")
        .await
        .unwrap();
    let value = signet_mcp::content::resource_value(&contents);
    assert!(value.as_str().is_some_and(|t| !t.is_empty()), "{value}");
    let blob = client
        .read_resource("demo://resource/dynamic/blob/3")
        .await
        .unwrap();
    let blob = signet_mcp::content::resource_value(&blob);
    assert!(blob[0]["blob"].as_str().is_some(), "{blob}");

    // An unknown resource is the server's protocol error, not a panic or an empty read.
    let missing = client
        .read_resource("demo://resource/nowhere")
        .await
        .unwrap_err();
    assert!(matches!(missing, Error::Protocol { .. }), "{missing}");

    // Subscribed resources report their changes.
    let mut updates = client.resource_updates();
    let uri = "demo://resource/dynamic/text/1";
    client.subscribe(uri).await.unwrap();
    call(&client, "toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    let updated = tokio::time::timeout(Duration::from_secs(15), updates.recv())
        .await
        .expect("an update within 15 s")
        .unwrap();
    assert_eq!(updated, uri);
    client.unsubscribe(uri).await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn resources_as_agent_tools() {
    let client = everything(McpClient::builder().tool_prefix("demo_")).await;
    let tools = client.resource_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["demo_list_resources", "demo_read_resource"]);

    let listing = tools[0].call(json!({})).await.unwrap();
    let listing = listing.as_array().expect("a list");
    assert!(listing.iter().any(|r| {
        r["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("demo://resource/static/document/"))
    }));
    assert!(
        listing
            .iter()
            .any(|r| r["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}")
    );

    let read = tools[1]
        .call(json!({"uri": "demo://resource/dynamic/text/2"}))
        .await
        .unwrap();
    assert!(read.is_string(), "{read}");
    // Bad arguments and unknown URIs are tool errors an agent sees as observations.
    let bad = tools[1].call(json!({"url": "x"})).await.unwrap_err();
    assert!(matches!(bad, ToolError::InvalidArguments { .. }), "{bad}");
    let unknown = tools[1]
        .call(json!({"uri": "demo://resource/nowhere"}))
        .await
        .unwrap_err();
    assert!(matches!(unknown, ToolError::Remote { .. }), "{unknown}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn prompts_become_chat_messages() {
    let client = everything(McpClient::builder()).await;
    let prompts = client.prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"simple-prompt"), "{names:?}");
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let required: Vec<&str> = args
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true))
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(required, ["city"]);

    let messages = client
        .prompt_messages("args-prompt", json!({"city": "Paris", "state": "Texas"}))
        .await
        .unwrap();
    assert_eq!(messages[0].role, Role::User);
    assert!(messages[0].content.contains("Paris"), "{messages:?}");

    // An embedded text resource becomes its text.
    let with_resource = client
        .prompt_messages(
            "resource-prompt",
            json!({"resourceType": "Text", "resourceId": "1"}),
        )
        .await
        .unwrap();
    assert!(with_resource.len() >= 2, "{with_resource:?}");
    assert!(
        with_resource.iter().all(|m| !m.content.is_empty()),
        "{with_resource:?}"
    );

    // A missing required argument is the server's error.
    let error = client
        .get_prompt("args-prompt", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Protocol { .. }), "{error}");
    let error = client.get_prompt("args-prompt", json!(["Paris"])).await;
    assert!(matches!(error, Err(Error::Unsupported { .. })), "{error:?}");
    client.close().await.unwrap();
}

fn reply(text: &str, tokens: u64) -> Completion {
    let mut completion = Completion::text(text);
    completion.usage = Usage {
        prompt_tokens: tokens / 2,
        completion_tokens: tokens - tokens / 2,
        lm_calls: 1,
        ..Usage::default()
    };
    completion
}

#[tokio::test]
async fn sampling_is_answered_by_the_clients_model_within_its_limits() {
    // Off by default: the server does not even offer its sampling tool.
    let plain = everything(McpClient::builder()).await;
    assert!(plain.tool("trigger-sampling-request").is_none());
    plain.close().await.unwrap();

    let lm = Arc::new(ScriptedLm::new([
        reply("Roses are red.", 30),
        reply("Violets are blue.", 30),
        reply("never sent", 30),
    ]));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let sampling = Sampling::new(lm.clone())
        .max_tokens(50)
        .token_budget(40)
        .approve(move |request| {
            let allow = !request
                .messages
                .iter()
                .any(|m| m.content.contains("secret"));
            seen.lock().unwrap().push(request);
            async move { allow }
        });
    let client = everything(McpClient::builder().sampling(sampling)).await;

    let out = call(
        &client,
        "trigger-sampling-request",
        json!({"prompt": "a poem", "maxTokens": 100}),
    )
    .await
    .unwrap();
    let out = text(&out);
    assert!(out.contains("Roses are red."), "{out}");
    assert!(out.contains("\"model\": \"scripted\""), "{out}");
    // The model got the server's system prompt and message, with the client's length cap.
    let sent = &lm.requests()[0];
    assert_eq!(
        sent.messages[0],
        Message::system("You are a helpful test server.")
    );
    assert!(sent.messages[1].content.ends_with("a poem"), "{sent:?}");
    assert_eq!(sent.options.max_tokens, Some(50));
    assert_eq!(sent.options.temperature, Some(0.7));
    assert_eq!(asked.lock().unwrap()[0].server, "everything");

    // Refused by the approval hook: the tool call fails and says why; the model is not called.
    let refused = call(
        &client,
        "trigger-sampling-request",
        json!({"prompt": "the secret"}),
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("declined"), "{refused}");
    assert_eq!(lm.requests().len(), 1);

    // 30 of 40 tokens spent: one more request is answered, then the budget refuses.
    call(
        &client,
        "trigger-sampling-request",
        json!({"prompt": "two"}),
    )
    .await
    .unwrap();
    let spent = call(
        &client,
        "trigger-sampling-request",
        json!({"prompt": "three"}),
    )
    .await
    .unwrap_err();
    assert!(spent.to_string().contains("budget"), "{spent}");
    assert_eq!(lm.requests().len(), 2);
    assert_eq!(client.sampling_usage().total_tokens(), 60);
    client.close().await.unwrap();
}

#[tokio::test]
async fn elicitation_asks_the_application() {
    // Off by default: the server does not offer its elicitation tool.
    let plain = everything(McpClient::builder()).await;
    assert!(plain.tool("trigger-elicitation-request").is_none());
    plain.close().await.unwrap();

    let questions: Arc<Mutex<Vec<Elicitation>>> = Arc::default();
    let answers = Arc::new(Mutex::new(vec![
        ElicitationAnswer::Accept(json!({"name": "Ada Lovelace", "check": true, "integer": 7})),
        ElicitationAnswer::Decline,
        ElicitationAnswer::Accept(json!({"check": "yes"})), // no name, and not a boolean
    ]));
    let seen = questions.clone();
    let client = everything(McpClient::builder().elicitation(move |question| {
        seen.lock().unwrap().push(question);
        let answer = answers.lock().unwrap().remove(0);
        async move { answer }
    }))
    .await;

    let accepted = call(&client, "trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let accepted = text(&accepted);
    assert!(accepted.contains("- Name: Ada Lovelace"), "{accepted}");
    assert!(accepted.contains("- Favorite Integer: 7"), "{accepted}");
    let question = questions.lock().unwrap()[0].clone();
    assert_eq!(question.server, "everything");
    let ElicitationKind::Form { schema } = &question.kind else {
        panic!("a form: {question:?}");
    };
    assert_eq!(schema["required"], json!(["name"]));

    let declined = call(&client, "trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(text(&declined).contains("declined"), "{declined}");

    // An answer that does not match the schema is not sent; the server hears why.
    let invalid = call(&client, "trigger-elicitation-request", json!({}))
        .await
        .unwrap_err();
    let message = invalid.to_string();
    assert!(
        message.contains("does not match the requested schema"),
        "{message}"
    );
    assert!(
        message.contains("\"name\" is a required property"),
        "{message}"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn roots_are_declared_shown_and_changed() {
    let client =
        everything(McpClient::builder().roots([Root::new("file:///srv/first").name("first")]))
            .await;
    let shown = text(&call(&client, "get-roots-list", json!({})).await.unwrap());
    assert!(shown.contains("URI: file:///srv/first"), "{shown}");

    client
        .set_roots([Root::new("file:///srv/second").name("second")])
        .await
        .unwrap();
    // The server asks for the new list when notified; give it a moment.
    let mut shown = String::new();
    for _ in 0..50 {
        shown = text(&call(&client, "get-roots-list", json!({})).await.unwrap());
        if shown.contains("file:///srv/second") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(shown.contains("URI: file:///srv/second"), "{shown}");
    assert!(!shown.contains("first"), "{shown}");
    client.close().await.unwrap();

    // A client without roots cannot add them after the handshake.
    let plain = everything(McpClient::builder()).await;
    assert!(plain.roots().is_none());
    let error = plain.set_roots([Root::new("file:///x")]).await.unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    plain.close().await.unwrap();
}

#[tokio::test]
async fn the_filesystem_server_works_inside_the_declared_roots() {
    let dir = TempDir::new("roots");
    std::fs::write(dir.0.join("hello.txt"), "hi from a root").unwrap();
    // No directory on the command line: the server takes its allowed directories from the roots.
    let client = McpClient::builder()
        .roots([Root::directory(&dir.0).unwrap()])
        .spawn(npm_server("server-filesystem"))
        .await
        .expect("server-filesystem starts");

    let mut allowed = String::new();
    for _ in 0..50 {
        allowed = text(
            &call(&client, "list_allowed_directories", json!({}))
                .await
                .unwrap(),
        );
        if allowed.contains(dir.0.to_str().unwrap()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(allowed.contains(dir.0.to_str().unwrap()), "{allowed}");
    let file = dir.0.join("hello.txt");
    let read = call(
        &client,
        "read_text_file",
        json!({"path": file.to_str().unwrap()}),
    )
    .await
    .unwrap();
    assert_eq!(read, "hi from a root");
    // Outside the roots it refuses.
    let outside = call(&client, "read_text_file", json!({"path": "/etc/hostname"})).await;
    assert!(outside.is_err(), "{outside:?}");
    client.close().await.unwrap();
}
