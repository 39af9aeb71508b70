//! signet-mcp's client against a real server on the official Python SDK
//! (`scripts/mcp/python_server.py`, `mcp` 2.x), over stdio and streamable HTTP.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::json;
use signet::ToolError;
use signet::tool::ArgErrorKind;
use signet_mcp::{Error, McpClient, StdioCommand};

use common::{python_server, repo_root};

async fn spawn() -> McpClient {
    McpClient::spawn(python_server())
        .await
        .expect("the Python server starts")
}

#[tokio::test]
async fn lists_the_tools_with_their_schemas_mapped_faithfully() {
    let client = spawn().await;
    assert_eq!(client.name(), "python_server");
    let names = client.tool_names();
    for expected in [
        "plan_trip",
        "add",
        "fail",
        "pixel",
        "several",
        "slow",
        "crash",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let info = client.server_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().unwrap().name,
        "signet-test-python"
    );

    let plan = client.tool("plan_trip").unwrap();
    assert_eq!(
        plan.description(),
        "Plan a trip: check the itinerary and summarise it."
    );
    let schema = plan.args_schema();
    // `$ref`s into `$defs` are inlined.
    assert!(schema.get("$defs").is_none(), "{schema:#}");
    assert_eq!(schema["required"], json!(["trip"]));
    let trip = &schema["properties"]["trip"];
    assert_eq!(trip["required"], json!(["destination", "mode", "depart"]));
    // Nested object.
    let destination = &trip["properties"]["destination"];
    assert_eq!(destination["properties"]["city"]["type"], "string");
    assert_eq!(destination["properties"]["country"]["maxLength"], 2);
    // Enum.
    assert_eq!(
        trip["properties"]["mode"]["enum"],
        json!(["train", "plane", "boat"])
    );
    // `format`.
    assert_eq!(trip["properties"]["depart"]["format"], "date");
    // `anyOf [T, null]`, with the constraint and the default kept.
    let nights = &trip["properties"]["nights"];
    assert_eq!(
        nights["anyOf"],
        json!([{"type": "integer", "minimum": 1}, {"type": "null"}])
    );
    assert_eq!(nights["default"], json!(null));
    assert_eq!(
        trip["properties"]["website"]["anyOf"][0]["format"],
        json!("uri")
    );
    assert_eq!(schema["properties"]["travellers"]["default"], 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn nested_enum_and_optional_arguments_reach_the_server() {
    let client = spawn().await;
    let plan = client.tool("plan_trip").unwrap();
    let out = plan
        .call(json!({
            "trip": {
                "destination": {"city": "Bergen", "country": "NO"},
                "mode": "boat",
                "depart": "2026-06-01",
                "nights": 3,
                "website": "https://example.org/bergen"
            },
            "travellers": 2
        }))
        .await
        .unwrap();
    assert_eq!(
        out,
        "2 traveller(s) to Bergen, NO by boat on 2026-06-01, 3 nights"
    );
    // The optional ones may be left out or null.
    let out = plan
        .call(json!({"trip": {
            "destination": {"city": "Oslo", "country": "NO"},
            "mode": "train", "depart": "2026-01-02", "nights": null
        }}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "1 traveller(s) to Oslo, NO by train on 2026-01-02, open-ended"
    );
}

#[tokio::test]
async fn bad_arguments_are_rejected_locally_with_precise_errors() {
    let client = spawn().await;
    let plan = client.tool("plan_trip").unwrap();
    let err = plan
        .call(json!({"trip": {
            "destination": {"city": "Oslo", "country": "NOR"},
            "mode": "car", "depart": "2026-01-02", "nights": 0
        }}))
        .await
        .unwrap_err();
    let ToolError::InvalidArguments { tool, errors } = &err else {
        panic!("expected InvalidArguments, got {err:?}");
    };
    assert_eq!(tool, "plan_trip");
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"trip.mode"), "{err}");
    assert!(paths.contains(&"trip.destination.country"), "{err}");
    assert!(paths.contains(&"trip.nights"), "{err}");
    let mode = errors.iter().find(|e| e.path == "trip.mode").unwrap();
    assert!(matches!(mode.kind, ArgErrorKind::NotAllowed { .. }));
    assert!(
        err.to_string()
            .contains(r#"expected one of "train", "plane", "boat", got "car""#),
        "{err}"
    );

    let err = client
        .tool("add")
        .unwrap()
        .call(json!({"a": 1}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool `add`: missing required argument `b` (integer)"
    );
}

#[tokio::test]
async fn results_are_converted_as_dspy_does_keeping_typed_content() {
    let client = spawn().await;
    // One text item: a string (Python's `{"result": 3}` structured wrapper is not the text's JSON).
    assert_eq!(
        client
            .tool("add")
            .unwrap()
            .call(json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!("3")
    );
    // Several items: a list.
    assert_eq!(
        client
            .tool("several")
            .unwrap()
            .call(json!({}))
            .await
            .unwrap(),
        json!(["first", "second"])
    );
    // A non-text item: typed content.
    let image = client
        .tool("pixel")
        .unwrap()
        .call(json!(null))
        .await
        .unwrap();
    assert_eq!(image["type"], "image");
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
}

#[tokio::test]
async fn an_is_error_result_is_a_tool_error() {
    let client = spawn().await;
    let err = client
        .tool("fail")
        .unwrap()
        .call(json!({"message": "the disk is full"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed {
            tool: "fail".into(),
            // The Python SDK's own wording around the tool's message.
            message: "Error executing tool fail: the disk is full".into()
        }
    );
    // Python servers answer an unknown tool with `isError`, not a protocol error.
    let raw = client.call_tool("no_such_tool", json!({})).await.unwrap();
    assert_eq!(raw.is_error, Some(true));
    assert!(signet_mcp::content::error_text(&raw).contains("no_such_tool"));
}

#[tokio::test]
async fn the_server_gets_only_the_environment_it_is_given() {
    // HOME, PATH and cargo's variables are set in this process but not passed on.
    let client = McpClient::spawn(python_server().env("GREETING", "hello"))
        .await
        .unwrap();
    let env = client.tool("env").unwrap();
    assert_eq!(
        env.call(json!({"name": "GREETING"})).await.unwrap(),
        "hello"
    );
    for absent in ["HOME", "PATH", "CARGO_MANIFEST_DIR"] {
        assert_eq!(
            env.call(json!({"name": absent})).await.unwrap(),
            "<unset>",
            "{absent} leaked into the server"
        );
    }
    drop(client);

    let client = McpClient::spawn(python_server().inherit_env(["HOME", "PATH"]))
        .await
        .unwrap();
    let env = client.tool("env").unwrap();
    assert_eq!(
        env.call(json!({"name": "HOME"})).await.unwrap(),
        std::env::var("HOME").unwrap()
    );
    assert_eq!(
        env.call(json!({"name": "CARGO_MANIFEST_DIR"}))
            .await
            .unwrap(),
        "<unset>"
    );
}

#[tokio::test]
async fn tools_are_listed_again_on_list_changed() {
    let client = spawn().await;
    assert!(client.tool("extra").is_none());
    let changed = client.tools_changed();
    let grow = client.tool("grow").unwrap();
    let (_, out) = tokio::join!(
        async {
            tokio::time::timeout(Duration::from_secs(10), changed)
                .await
                .expect("tools/list_changed handled within 10 s")
        },
        grow.call(json!({"name": "extra"}))
    );
    assert_eq!(out.unwrap(), "added extra");
    let extra = client.tool("extra").expect("the new tool is listed");
    assert_eq!(extra.description(), "A tool added at run time: extra.");
    assert_eq!(extra.call(json!({})).await.unwrap(), "extra");
}

#[tokio::test]
async fn a_killed_server_is_a_clear_error_not_a_hang() {
    let client = spawn().await;
    let add = client.tool("add").unwrap();
    assert_eq!(add.call(json!({"a": 1, "b": 1})).await.unwrap(), "2");
    common::kill_9(client.pid().unwrap());
    let started = Instant::now();
    let err = add.call(json!({"a": 1, "b": 1})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let text = err.to_string();
    assert!(matches!(err, ToolError::Remote { .. }), "{err:?}");
    assert!(
        text.contains("MCP server `python_server` is not running"),
        "{text}"
    );
    assert!(text.contains("SIGKILL"), "{text}");
    assert!(text.contains("automatic restart is off"), "{text}");
    assert!(!client.is_running());
}

#[tokio::test]
async fn a_server_killed_during_a_call_ends_the_call_promptly() {
    let client = spawn().await;
    let pid = client.pid().unwrap();
    let slow = client.tool("slow").unwrap();
    let killer = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        common::kill_9(pid);
    };
    let started = Instant::now();
    let (err, ()) = tokio::join!(slow.call(json!({"seconds": 30})), killer);
    let err = err.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        err.to_string().contains("before answering the call"),
        "{err}"
    );
}

#[tokio::test]
async fn a_crashed_server_is_restarted_when_allowed() {
    let client = McpClient::builder()
        .max_restarts(1)
        .spawn(python_server())
        .await
        .unwrap();
    let first_pid = client.pid().unwrap();
    let err = client
        .tool("crash")
        .unwrap()
        .call(json!({"code": 3}))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("restart 1 of 1"), "{text}");
    assert!(
        text.contains("crashing on purpose with code 3"),
        "stderr tail: {text}"
    );
    assert_eq!(client.restarts(), 1);

    // The same tool objects work against the new process.
    let pid = client.tool("pid").unwrap().call(json!({})).await.unwrap();
    assert_ne!(pid, json!(first_pid.to_string()));
    assert_eq!(pid, json!(client.pid().unwrap().to_string()));

    // No restarts are left: the next death is final.
    common::kill_9(client.pid().unwrap());
    let err = client
        .tool("add")
        .unwrap()
        .call(json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("automatic restart(s) are used up"),
        "{err}"
    );
}

#[tokio::test]
async fn a_call_over_the_time_limit_is_a_timeout_and_the_session_survives() {
    let client = McpClient::builder()
        .call_timeout(Some(Duration::from_millis(300)))
        .spawn(python_server())
        .await
        .unwrap();
    let err = client
        .tool("slow")
        .unwrap()
        .call(json!({"seconds": 10}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Timeout {
            tool: "slow".into(),
            elapsed: Duration::from_millis(300)
        }
    );
    assert_eq!(
        client
            .tool("add")
            .unwrap()
            .call(json!({"a": 2, "b": 2}))
            .await
            .unwrap(),
        "4"
    );
}

#[tokio::test]
async fn concurrent_calls_share_one_session() {
    let client = spawn().await;
    let slow = client.tool("slow").unwrap();
    let started = Instant::now();
    let calls = (0..4).map(|_| slow.call(json!({"seconds": 1.0})));
    for out in futures::future::join_all(calls).await {
        assert_eq!(out.unwrap(), "slept 1.0s");
    }
    // One after the other they would take at least 4 s.
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "four 1 s calls took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn close_and_drop_stop_the_server() {
    let client = spawn().await;
    let pid = client.pid().unwrap();
    let add = client.tool("add").unwrap();
    client.close().await.unwrap();
    assert!(common::gone_within(pid, Duration::from_secs(5)).await);
    let err = add.call(json!({"a": 1, "b": 2})).await.unwrap_err();
    assert!(
        matches!(err, ToolError::Remote { .. }) && err.to_string().contains("was closed"),
        "{err}"
    );

    let client = spawn().await;
    let pid = client.pid().unwrap();
    drop(client);
    assert!(common::gone_within(pid, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_tool_keeps_its_session_after_the_client_is_dropped() {
    let client = spawn().await;
    let pid = client.pid().unwrap();
    let add = client.tool("add").unwrap();
    let mut resources = client.resource_tools();
    assert_eq!(resources.len(), 2);
    drop(client);
    // The tools own the session: the server runs and answers while they are kept.
    assert_eq!(add.call(json!({"a": 1, "b": 2})).await.unwrap(), "3");
    assert!(!common::gone_within(pid, Duration::from_millis(300)).await);
    drop(add);
    // The resource tools hold it too.
    assert!(!common::gone_within(pid, Duration::from_millis(300)).await);
    // The last one gone, the session ends and the server is stopped.
    resources.clear();
    assert!(common::gone_within(pid, Duration::from_secs(5)).await);
}

/// `sh -c script` writing 32 MB to stderr with no newline first, then running `rest`.
fn flooding(rest: &str) -> StdioCommand {
    StdioCommand::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "/usr/bin/head -c 32000000 /dev/zero | /usr/bin/tr '\\0' x >&2; echo >&2; echo ' flood over' >&2; {rest}"
        ))
        .arg(&common::peers().python)
        .arg(repo_root().join("scripts/mcp/python_server.py"))
        .env("PYTHONUNBUFFERED", "1")
}

#[tokio::test]
async fn a_server_flooding_stderr_without_newlines_keeps_working_and_its_tail_stays_small() {
    // The client drains the flood while the server starts, keeping 4 KiB of the line.
    let client = McpClient::spawn(flooding("exec \"$0\" \"$1\""))
        .await
        .expect("the server starts after its flood");
    let sum = client.tool("add").unwrap();
    assert_eq!(sum.call(json!({"a": 2, "b": 3})).await.unwrap(), json!("5"));
    client.close().await.unwrap();

    // A server that floods and dies: its error shows the cut line and how much was dropped.
    let err = McpClient::spawn(flooding("exit 3")).await.unwrap_err();
    let Error::Handshake { stderr, .. } = &err else {
        panic!("expected a handshake error, got {err:?}");
    };
    assert_eq!(
        stderr.len(),
        2,
        "{:?}",
        stderr.iter().map(String::len).collect::<Vec<_>>()
    );
    let suffix = format!(" … ({} more bytes)", 32_000_000 - 4096);
    assert!(stderr[0].ends_with(&suffix), "{}", &stderr[0][4000..]);
    assert_eq!(stderr[0].len(), 4096 + suffix.len());
    assert_eq!(stderr[1], " flood over");
    assert!(
        err.to_string().len() < 10_000,
        "{} bytes",
        err.to_string().len()
    );
}

#[tokio::test]
async fn an_answer_past_the_message_limit_is_dropped_and_the_session_goes_on() {
    let client = McpClient::builder()
        .call_timeout(Some(Duration::from_secs(3)))
        .spawn(python_server())
        .await
        .unwrap();
    let big = client.tool("big").unwrap();
    let one = big.call(json!({"megabytes": 1})).await.unwrap();
    assert_eq!(one.as_str().map(str::len), Some(1_000_000));
    // 17 MB is past rmcp's 16 MiB line limit: the answer is dropped, never buffered whole, and
    // the call ends at its time limit.
    let error = big.call(json!({"megabytes": 17})).await.unwrap_err();
    assert!(matches!(error, ToolError::Timeout { .. }), "{error}");
    let sum = client.tool("add").unwrap();
    assert_eq!(sum.call(json!({"a": 1, "b": 2})).await.unwrap(), json!("3"));
}

#[tokio::test]
async fn a_program_that_cannot_start_is_a_spawn_error() {
    let err = McpClient::spawn(StdioCommand::new("/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
}

#[tokio::test]
async fn a_server_that_dies_at_startup_shows_its_stderr() {
    let err = McpClient::spawn(
        StdioCommand::new(&common::peers().python).arg(repo_root().join("scripts/mcp/missing.py")),
    )
    .await
    .unwrap_err();
    let Error::Handshake { stderr, .. } = &err else {
        panic!("expected a handshake error, got {err:?}");
    };
    assert!(stderr.iter().any(|l| l.contains("No such file")), "{err}");
    assert!(err.to_string().contains("exit status: 2"), "{err}");
}

#[tokio::test]
async fn streamable_http_works_like_stdio() {
    let port = common::free_port().to_string();
    let script = repo_root().join("scripts/mcp/python_server.py");
    let _server = common::background(
        &common::peers().python,
        &[script.to_str().unwrap(), "--http", &port],
        &[],
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = common::connect_when_up(&url).await;
    assert_eq!(client.name(), format!("127.0.0.1:{port}"));
    assert!(client.pid().is_none());
    assert_eq!(
        client
            .tool("add")
            .unwrap()
            .call(json!({"a": 20, "b": 22}))
            .await
            .unwrap(),
        "42"
    );
    let err = client
        .tool("fail")
        .unwrap()
        .call(json!({"message": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `fail` failed: Error executing tool fail: nope"
    );
    let image = client.tool("pixel").unwrap().call(json!({})).await.unwrap();
    assert_eq!(image["type"], "image");
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_python_server_samples_the_clients_model_and_asks_its_user() {
    use signet::lm::Message;
    use signet::testing::ScriptedLm;
    use signet_mcp::{ElicitationAnswer, ElicitationKind, Sampling};
    use std::sync::{Arc, Mutex};

    let lm = Arc::new(ScriptedLm::texts(["Cats sleep a lot."]));
    let questions = Arc::new(Mutex::new(Vec::new()));
    let seen = questions.clone();
    let client = McpClient::builder()
        .sampling(Sampling::new(lm.clone()).max_tokens(32))
        .elicitation(move |question| {
            seen.lock().unwrap().push(question.clone());
            let answer = if question.message.contains("Chez Nous") {
                ElicitationAnswer::Accept(json!({"seats": 4, "window": true}))
            } else if question.message.contains("Nowhere") {
                ElicitationAnswer::Accept(json!({"seats": 40})) // over the schema's maximum
            } else {
                ElicitationAnswer::Decline
            };
            async move { answer }
        })
        .spawn(python_server())
        .await
        .expect("the Python server starts");

    let summary = client
        .tool("summarize")
        .unwrap()
        .call(json!({"text": "Cats sleep sixteen hours a day."}))
        .await
        .unwrap();
    assert_eq!(summary, "scripted: Cats sleep a lot.");
    let sent = &lm.requests()[0];
    assert_eq!(
        sent.messages,
        [
            Message::system("You write one-line summaries."),
            Message::user("Summarise: Cats sleep sixteen hours a day."),
        ]
    );
    assert_eq!(sent.options.max_tokens, Some(32));

    let book = client.tool("book_table").unwrap();
    let booked = book.call(json!({"restaurant": "Chez Nous"})).await.unwrap();
    assert_eq!(booked, "booked 4 seats at Chez Nous by the window");
    let declined = book.call(json!({"restaurant": "Le Bistro"})).await.unwrap();
    assert_eq!(declined, "no booking (decline)");
    let invalid = book
        .call(json!({"restaurant": "Nowhere"}))
        .await
        .unwrap_err();
    assert!(
        invalid
            .to_string()
            .contains("does not match the requested schema"),
        "{invalid}"
    );
    let first = questions.lock().unwrap()[0].clone();
    let ElicitationKind::Form { schema } = first.kind else {
        panic!("a form");
    };
    assert_eq!(schema["properties"]["seats"]["maximum"], 9);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_blocking_runs_an_mcp_tool_from_sync_code() {
    let client = spawn().await;
    let add = client.tool("add").unwrap();
    let from_sync = add.clone();
    // Sync code on a blocking thread: the call runs on the client's runtime and waits for it.
    let sum = tokio::task::spawn_blocking(move || from_sync.call_blocking(json!({"a": 2, "b": 5})))
        .await
        .unwrap();
    assert_eq!(sum.unwrap(), "7");
    // Bad arguments are checked locally, as in an async call.
    let bad = tokio::task::spawn_blocking(move || add.call_blocking(json!({"a": "two"})))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(bad, ToolError::InvalidArguments { .. }), "{bad}");
}
