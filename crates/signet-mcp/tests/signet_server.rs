//! A Signet MCP server (`#[tool]` functions served by `McpServer`) driven by the official Python
//! client (`scripts/mcp/python_client.py`) and by signet-mcp's own client, over stdio and
//! streamable HTTP: schemas and results must round-trip.
//!
//! This test runs without libtest's harness: run with `--serve-stdio`, the binary *is* the stdio
//! server the clients spawn (libtest would print to stdout, which carries the protocol).

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use signet::{Tool, ToolError, tool};
use signet_mcp::{Error, McpClient, McpServer, StdioCommand};

/// How to travel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Train,
    Plane,
}

/// A city.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Place {
    /// City name.
    city: String,
    /// Two-letter country code.
    country: String,
}

/// A trip to plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Trip {
    destination: Place,
    mode: Mode,
    /// How many nights, if known.
    nights: Option<u8>,
}

/// Plan a trip and summarise it.
#[tool]
fn plan_trip(trip: Trip, travellers: Option<u32>) -> String {
    format!(
        "{} to {}, {} by {:?}, {}",
        travellers.unwrap_or(1),
        trip.destination.city,
        trip.destination.country,
        trip.mode,
        trip.nights
            .map_or("open-ended".to_owned(), |n| format!("{n} nights"))
    )
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Divide two numbers.
#[tool]
fn divide(a: f64, b: f64) -> Result<f64, String> {
    if b == 0.0 {
        Err("division by zero".into())
    } else {
        Ok(a / b)
    }
}

/// The weather in a city.
#[derive(Debug, Serialize)]
struct Weather {
    city: String,
    celsius: i32,
    sunny: bool,
}

/// Today's weather in a city.
#[tool]
async fn weather(city: String) -> Weather {
    Weather {
        city,
        celsius: 21,
        sunny: true,
    }
}

/// A 1x1 PNG, as MCP image content.
#[tool]
fn logo() -> Value {
    json!({"type": "image", "data": PIXEL, "mimeType": "image/png"})
}

/// Delete everything (needs a person's approval, so it is not served).
#[tool(confirm)]
fn delete_everything() -> String {
    "deleted".into()
}

const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn local_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(PlanTripTool),
        Arc::new(AddTool),
        Arc::new(DivideTool),
        Arc::new(WeatherTool),
        Arc::new(LogoTool),
        Arc::new(DeleteEverythingTool),
    ]
}

fn server() -> McpServer {
    McpServer::new()
        .tools(local_tools())
        .with_name("signet-test-server", "0.1.0")
        .with_instructions("Tools for testing.")
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    if std::env::args().any(|a| a == "--serve-stdio") {
        if let Err(e) = runtime.block_on(server().serve_stdio()) {
            eprintln!("signet test server: {e}");
            std::process::exit(1);
        }
        return;
    }
    type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;
    let tests: [(&str, Test); 5] = [
        ("python_client_over_stdio", || {
            Box::pin(python_client_over_stdio())
        }),
        ("python_client_over_http", || {
            Box::pin(python_client_over_http())
        }),
        ("signet_client_over_stdio", || {
            Box::pin(signet_client_over_stdio())
        }),
        ("signet_client_over_http", || {
            Box::pin(signet_client_over_http())
        }),
        ("stdio_server_exits_when_the_client_leaves", || {
            Box::pin(stdio_server_exits_when_the_client_leaves())
        }),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let outcome = std::panic::catch_unwind(|| runtime.block_on(test()));
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("\n{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

fn this_binary() -> String {
    std::env::current_exe()
        .expect("the test binary's path")
        .to_string_lossy()
        .into_owned()
}

/// The calls both clients make, and what each must return.
fn plan() -> Value {
    json!({"calls": [
        {"name": "add", "arguments": {"a": 2, "b": 3}},
        {"name": "weather", "arguments": {"city": "Oslo"}},
        {"name": "plan_trip", "arguments": {
            "trip": {"destination": {"city": "Oslo", "country": "NO"}, "mode": "train", "nights": 2},
            "travellers": 3}},
        {"name": "divide", "arguments": {"a": 1, "b": 0}},
        {"name": "add", "arguments": {"a": "two", "b": 3}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "logo", "arguments": {}}
    ]})
}

/// What the Python client must have seen.
fn check_python_report(report: &Value) {
    assert_eq!(
        report["server"],
        json!({"name": "signet-test-server", "version": "0.1.0"})
    );
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["plan_trip", "add", "divide", "weather", "logo"]);
    // Each tool's description and schema are exactly the generated ones.
    for (tool, local) in tools.iter().zip(local_tools()) {
        assert_eq!(tool["description"], local.description());
        assert_eq!(
            &tool["inputSchema"],
            local.args_schema(),
            "{}",
            local.name()
        );
    }
    let plan = &tools[0]["inputSchema"];
    assert_eq!(
        plan["properties"]["trip"]["properties"]["mode"]["enum"],
        json!(["train", "plane"])
    );
    assert_eq!(plan["required"], json!(["trip"]));
    assert_eq!(
        plan["properties"]["trip"]["properties"]["destination"]["properties"]["city"]["description"],
        "City name."
    );

    let results = report["results"].as_array().unwrap();
    assert_eq!(
        results[0]["content"],
        json!([{"type": "text", "text": "5"}])
    );
    assert_eq!(results[0]["isError"], false);
    assert_eq!(
        results[1]["structuredContent"],
        json!({"city": "Oslo", "celsius": 21, "sunny": true})
    );
    assert_eq!(
        results[2]["content"][0]["text"],
        "3 to Oslo, NO by Train, 2 nights"
    );
    assert_eq!(results[3]["isError"], true);
    assert_eq!(
        results[3]["content"][0]["text"],
        "tool `divide` failed: division by zero"
    );
    assert_eq!(results[4]["isError"], true);
    assert_eq!(
        results[4]["content"][0]["text"],
        "invalid arguments for tool `add`: argument `a`: expected integer, got string \"two\""
    );
    assert_eq!(results[5]["protocol_error"]["code"], -32602);
    assert!(
        results[5]["protocol_error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool `no_such_tool`")
    );
    assert_eq!(
        results[6]["content"],
        json!([{"type": "image", "data": PIXEL, "mimeType": "image/png"}])
    );
}

async fn python_client_over_stdio() {
    let exe = this_binary();
    let report = common::python_client(&["--stdio", &exe, "--serve-stdio"], &plan()).await;
    check_python_report(&report);
}

async fn python_client_over_http() {
    let http = server().serve_http("127.0.0.1:0").await.unwrap();
    let report = common::python_client(&["--http", &http.url()], &plan()).await;
    check_python_report(&report);
    http.shutdown().await.unwrap();
}

/// What Signet's own client must see: the same schemas, and results that round-trip.
async fn check_signet_client(client: &McpClient) {
    let names = client.tool_names();
    assert_eq!(names, ["plan_trip", "add", "divide", "weather", "logo"]);
    for local in local_tools().iter().filter(|t| !t.requires_confirmation()) {
        let remote = client.tool(local.name()).unwrap();
        assert_eq!(remote.description(), local.description());
        assert_eq!(
            remote.args_schema(),
            local.args_schema(),
            "{}",
            local.name()
        );
    }
    let call = |name: &str, args: Value| {
        let tool = client.tool(name).unwrap();
        async move { tool.call(args).await }
    };
    // Strings and objects come back as they were; other values as their JSON text.
    let trip = json!({"trip": {"destination": {"city": "Oslo", "country": "NO"}, "mode": "plane"}});
    assert_eq!(
        call("plan_trip", trip.clone()).await.unwrap(),
        PlanTripTool.call(trip).await.unwrap()
    );
    assert_eq!(
        call("weather", json!({"city": "Oslo"})).await.unwrap(),
        WeatherTool.call(json!({"city": "Oslo"})).await.unwrap()
    );
    assert_eq!(call("add", json!({"a": 2, "b": 3})).await.unwrap(), "5");
    assert_eq!(
        call("logo", json!({})).await.unwrap(),
        LogoTool.call(json!({})).await.unwrap()
    );
    assert_eq!(
        call("divide", json!({"a": 1, "b": 0})).await.unwrap_err(),
        ToolError::Failed {
            tool: "divide".into(),
            message: "tool `divide` failed: division by zero".into()
        }
    );
    // rmcp servers answer an unknown tool with the protocol error -32602.
    let err = client
        .call_tool("no_such_tool", json!({}))
        .await
        .unwrap_err();
    let Error::Protocol { code, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*code, -32602);
    assert!(
        err.into_tool_error("no_such_tool")
            .to_string()
            .contains("rejected the request: unknown tool `no_such_tool`; the tools are: plan_trip, add, divide, weather, logo (JSON-RPC error -32602)")
    );
}

async fn signet_client_over_stdio() {
    let client = McpClient::builder()
        .name("signet")
        .spawn(StdioCommand::new(this_binary()).arg("--serve-stdio"))
        .await
        .unwrap();
    let info = client.server_info().unwrap();
    assert_eq!(info.instructions.as_deref(), Some("Tools for testing."));
    check_signet_client(&client).await;
    client.close().await.unwrap();
}

async fn signet_client_over_http() {
    let http = server().serve_http("127.0.0.1:0").await.unwrap();
    let client = McpClient::connect(http.url()).await.unwrap();
    check_signet_client(&client).await;
    client.close().await.unwrap();
    http.shutdown().await.unwrap();
}

async fn stdio_server_exits_when_the_client_leaves() {
    let client = McpClient::spawn(StdioCommand::new(this_binary()).arg("--serve-stdio"))
        .await
        .unwrap();
    let pid = client.pid().unwrap();
    // `close` ends the session by closing the server's stdin; the server must exit on its own
    // (an error would mean it had to be killed).
    client.close().await.unwrap();
    assert!(!common::alive(pid));
}
