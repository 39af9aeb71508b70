//! signet-mcp's client against the reference MCP servers from npm (TypeScript SDK):
//! `@modelcontextprotocol/server-everything`, `server-filesystem` and `server-memory`.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use signet::ToolError;
use signet::tool::ArgErrorKind;
use signet_mcp::McpClient;

use common::{TempDir, call, npm_server};

async fn everything() -> McpClient {
    McpClient::spawn(npm_server("server-everything").arg("stdio"))
        .await
        .expect("server-everything starts")
}

#[tokio::test]
async fn everything_lists_its_tools_with_enums_defaults_and_formats() {
    let client = everything().await;
    assert_eq!(client.name(), "index");
    let names = client.tool_names();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "get-env",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let annotated = client.tool("get-annotated-message").unwrap();
    let schema = annotated.args_schema();
    assert_eq!(
        schema["properties"]["messageType"]["enum"],
        json!(["error", "success", "debug"])
    );
    assert_eq!(schema["properties"]["includeImage"]["default"], false);
    assert_eq!(schema["required"], json!(["messageType"]));
    let gzip = client.tool("gzip-file-as-resource").unwrap();
    assert_eq!(gzip.args_schema()["properties"]["data"]["format"], "uri");
}

#[tokio::test]
async fn everything_calls_return_text_images_structured_content_and_links() {
    let client = everything().await;
    assert_eq!(
        call(&client, "echo", json!({"message": "hi"}))
            .await
            .unwrap(),
        "Echo: hi"
    );
    assert_eq!(
        call(&client, "get-sum", json!({"a": 1.5, "b": 2}))
            .await
            .unwrap(),
        "The sum of 1.5 and 2 is 3.5."
    );
    // An enum and an optional argument, with and without it.
    assert_eq!(
        call(
            &client,
            "get-annotated-message",
            json!({"messageType": "success"})
        )
        .await
        .unwrap(),
        "Operation completed successfully"
    );
    let with_image = call(
        &client,
        "get-annotated-message",
        json!({"messageType": "error", "includeImage": true}),
    )
    .await
    .unwrap();
    assert_eq!(with_image[0], "Error: Operation failed");
    assert_eq!(with_image[1]["type"], "image");

    // Text, an image, text: a list with the image kept as typed content.
    let image = call(&client, "get-tiny-image", json!({})).await.unwrap();
    let items = image.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0], "Here's the image you requested:");
    assert_eq!(items[1]["type"], "image");
    assert_eq!(items[1]["mimeType"], "image/png");
    assert!(
        items[1]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );

    // Structured content whose text is its JSON: the typed value.
    let weather = call(
        &client,
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .unwrap();
    assert!(weather["temperature"].is_number(), "{weather}");
    assert!(weather["conditions"].is_string(), "{weather}");

    let links = call(&client, "get-resource-links", json!({"count": 2}))
        .await
        .unwrap();
    assert_eq!(links[1]["type"], "resource_link");
    assert!(links[1]["uri"].as_str().unwrap().starts_with("demo://"));
}

#[tokio::test]
async fn everything_errors_are_tool_errors() {
    let client = everything().await;
    // A value outside the enum is caught before the call.
    let err = call(
        &client,
        "get-structured-content",
        json!({"location": "Paris"}),
    )
    .await
    .unwrap_err();
    let ToolError::InvalidArguments { errors, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(matches!(errors[0].kind, ArgErrorKind::NotAllowed { .. }));
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool `get-structured-content`: argument `location`: expected one \
         of \"New York\", \"Chicago\", \"Los Angeles\", got \"Paris\""
    );

    // An unknown tool: the TypeScript SDK answers with `isError`.
    let raw = client.call_tool("no-such-tool", json!({})).await.unwrap();
    assert_eq!(raw.is_error, Some(true));
    assert!(signet_mcp::content::error_text(&raw).contains("-32602"));

    // A task-only tool (rmcp drops `execution.taskSupport`, so only the call tells).
    let err = call(
        &client,
        "simulate-research-query",
        json!({"topic": "tides"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert!(
        err.to_string().contains(
            "this tool runs only as an MCP task, which Signet's MCP client does not drive"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn everything_sees_exactly_the_environment_given() {
    let client = McpClient::spawn(
        npm_server("server-everything")
            .arg("stdio")
            .env("SIGNET_GREETING", "hello"),
    )
    .await
    .unwrap();
    let env = call(&client, "get-env", json!({})).await.unwrap();
    let env: Value = serde_json::from_str(env.as_str().unwrap()).unwrap();
    assert_eq!(env, json!({"SIGNET_GREETING": "hello"}));
}

#[tokio::test]
async fn everything_killed_mid_session_is_a_clear_error() {
    let client = everything().await;
    assert_eq!(
        call(&client, "echo", json!({"message": "a"}))
            .await
            .unwrap(),
        "Echo: a"
    );
    common::kill_9(client.pid().unwrap());
    let started = Instant::now();
    let err = call(&client, "echo", json!({"message": "b"}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.to_string()
            .contains("MCP server `index` is not running"),
        "{err}"
    );
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let port = common::free_port().to_string();
    let script = common::npm_server_script("server-everything");
    let _server = common::background(
        &common::peers().node,
        &[script.to_str().unwrap(), "streamableHttp"],
        &[("PORT", port.as_str())],
    );
    let client = common::connect_when_up(&format!("http://127.0.0.1:{port}/mcp")).await;
    assert_eq!(
        call(&client, "echo", json!({"message": "over http"}))
            .await
            .unwrap(),
        "Echo: over http"
    );
    let image = call(&client, "get-tiny-image", json!({})).await.unwrap();
    assert_eq!(image[1]["type"], "image");
    client.close().await.unwrap();
}

#[tokio::test]
async fn filesystem_reads_writes_and_edits_files() {
    let dir = TempDir::new("fs");
    let client = McpClient::builder()
        .name("files")
        .spawn(npm_server("server-filesystem").arg(&dir.0))
        .await
        .expect("server-filesystem starts");
    let notes = dir.0.join("notes.txt");
    let notes = notes.to_str().unwrap();

    call(
        &client,
        "write_file",
        json!({"path": notes, "content": "one\ntwo\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        call(&client, "read_text_file", json!({"path": notes}))
            .await
            .unwrap(),
        "one\ntwo\n"
    );
    // An array of nested objects, an optional flag left out.
    call(
        &client,
        "edit_file",
        json!({"path": notes, "edits": [{"oldText": "two", "newText": "deux"}]}),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(notes).unwrap(), "one\ndeux\n");
    // An enum argument.
    let listing = call(
        &client,
        "list_directory_with_sizes",
        json!({"path": dir.0, "sortBy": "size"}),
    )
    .await
    .unwrap();
    assert!(listing.as_str().unwrap().contains("notes.txt"), "{listing}");

    // Outside the allowed directory: the server's `isError`.
    let err = call(&client, "read_text_file", json!({"path": "/etc/hostname"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert!(err.to_string().contains("Access denied"), "{err}");
    // A nested item missing a required key: caught locally.
    let err = call(
        &client,
        "edit_file",
        json!({"path": notes, "edits": [{"oldText": "one"}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool `edit_file`: missing required argument `edits.0.newText` (string)"
    );
}

#[tokio::test]
async fn memory_keeps_its_graph_across_a_restart() {
    let dir = TempDir::new("memory");
    let file = dir.0.join("memory.jsonl");
    let client = McpClient::builder()
        .name("memory")
        .max_restarts(1)
        .spawn(npm_server("server-memory").env("MEMORY_FILE_PATH", &file))
        .await
        .expect("server-memory starts");
    call(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
            {"name": "Engine", "entityType": "machine", "observations": []}
        ]}),
    )
    .await
    .unwrap();
    call(
        &client,
        "create_relations",
        json!({"relations": [{"from": "Ada", "to": "Engine", "relationType": "programmed"}]}),
    )
    .await
    .unwrap();

    common::kill_9(client.pid().unwrap());
    let err = call(&client, "read_graph", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("restart 1 of 1"), "{err}");

    let found = call(&client, "search_nodes", json!({"query": "program"}))
        .await
        .unwrap();
    let text = found.to_string();
    assert!(
        text.contains("Ada") && text.contains("wrote the first program"),
        "{text}"
    );
    let graph = call(&client, "read_graph", json!({})).await.unwrap();
    assert!(graph.to_string().contains("programmed"), "{graph}");
    client.close().await.unwrap();
}
