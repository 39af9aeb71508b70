//! MCP over streamable HTTP on localhost: what one `tools/call` of a trivial tool (`add`) costs,
//! one call after another, and how many calls per second 20 concurrent clients get, for each pair
//! of server and client: Signet's server (stateless, its default, and with sessions) and the Python
//! SDK's (its default, and stateless JSON), and Signet's with sessions mounted in a plain
//! `axum::serve` that leaves Nagle's algorithm on, as most rmcp servers run; Signet's client, rmcp's own client (which opens a
//! connection per request) and the Python SDK's. The first row is the floor: the same JSON-RPC
//! body POSTed to a plain axum handler with reqwest, no MCP at all; `raw` rows send that body to
//! a stateless MCP server, which answers it without a handshake.
//!
//! ```text
//! cargo bench --bench mcp_http                               # Signet servers, Signet client
//! cargo bench --bench mcp_http -- --python PYTHON            # also the Python SDK on both sides
//! cargo bench --bench mcp_http -- --sequential 500 --clients 20 --calls 100
//! cargo bench --bench mcp_http -- --current-thread           # clients on a one-thread runtime
//! cargo bench --bench mcp_http -- --burst 20x50              # 20 clients, 50 calls at once each
//! cargo bench --bench mcp_http -- --burst 20x50 --tool-ms 1000  # the same on a 1 s tool
//! cargo bench --bench mcp_http -- --serve stateless          # only a server (stateless,
//!                                                            # sessions, sessions-nagle or
//!                                                            # plain); prints its URL
//! ```
//!
//! `PYTHON` is an interpreter with the `mcp` package (`bash scripts/mcp-peers.sh` installs one
//! and writes its path to `~/.cache/signet/mcp/peers.env` as `SIGNET_MCP_PYTHON`). Each server runs
//! in its own child process, so client and server compete for the machine's cores as they would on
//! one host. Every answer is checked; a wrong one stops the bench. Without `--bench` (which
//! `cargo bench` adds; `cargo test --benches` does not) it makes a few calls per pair as a smoke
//! test. `--burst CxN` instead connects C Signet clients to a Signet server with default
//! settings (stateless) and has each make N calls at once, all together: how many succeed, in how
//! long, and the latency of each (p50, p99); with `--tool-ms MS` the tool takes that long, so
//! that the server must shed calls and the clients come back. `docs/performance.md` has the
//! figures.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use signet::prelude::*;
use signet_mcp::{HttpMode, McpClient, McpServer};

/// Add two integers.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

struct Options {
    sequential: usize,
    clients: usize,
    calls: usize,
    warmup: usize,
    python: Option<String>,
}

/// A server under test, running in a child process until dropped.
struct Server {
    label: &'static str,
    url: String,
    /// Answers a lone `tools/call` POST (no handshake) with a JSON body, so the raw client works.
    stateless_json: bool,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
struct Sequential {
    mean_ms: f64,
    median_ms: f64,
    p95_ms: f64,
}

#[derive(Debug)]
struct Concurrent {
    calls_per_s: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tool_ms = args
        .iter()
        .position(|a| a == "--tool-ms")
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse::<u64>()
                .expect("--tool-ms takes a number of milliseconds")
        });
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let mode = args.get(i + 1).map_or("stateless", String::as_str);
        serve(mode, tool_ms);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--burst") {
        let shape = args.get(i + 1).map_or("20x50", String::as_str);
        let (clients, calls) = shape
            .split_once('x')
            .and_then(|(c, n)| Some((c.parse().ok()?, n.parse().ok()?)))
            .expect("--burst takes CLIENTSxCALLS, such as 20x50");
        burst(clients, calls, tool_ms);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let number = |name: &str, full_default: usize, smoke_default: usize| {
        value(name).map_or(if full { full_default } else { smoke_default }, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number, not {v:?}"))
        })
    };
    let options = Options {
        sequential: number("--sequential", 500, 5),
        clients: number("--clients", 20, 2),
        calls: number("--calls", 100, 3),
        warmup: number("--warmup", 20, 1),
        python: value("--python"),
    };

    // The clients' runtime: multi-threaded (tokio's default), or one thread with
    // `--current-thread`, where the hops between the client's tasks stay on one thread.
    let runtime = if args.iter().any(|a| a == "--current-thread") {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Runtime::new()
    }
    .expect("a tokio runtime");
    println!(
        "{:<26} {:<8} {:>9} {:>11} {:>8} {:>12}",
        "server", "client", "mean ms", "median ms", "p95 ms", "calls/s (C)"
    );
    let plain = signet_server("plain HTTP (no MCP)", "plain");
    let (seq, conc) = runtime.block_on(plain_client(&plain.url, &options));
    print_row(plain.label, "raw", &seq, &conc, options.clients);
    drop(plain);

    let mut servers = vec![
        signet_server("signet (stateless)", "stateless"),
        signet_server("signet (sessions)", "sessions"),
        signet_server("signet (sessions, Nagle)", "sessions-nagle"),
    ];
    if let Some(python) = &options.python {
        servers.push(python_server(python, "python (default)", &[]));
        servers.push(python_server(
            python,
            "python (stateless json)",
            &["--stateless", "--json"],
        ));
    }
    for server in &servers {
        let (seq, conc) = runtime.block_on(signet_client(&server.url, &options));
        print_row(server.label, "signet", &seq, &conc, options.clients);
        let (seq, conc) = runtime.block_on(rmcp_client(&server.url, &options));
        print_row(server.label, "rmcp", &seq, &conc, options.clients);
        if server.stateless_json {
            let (seq, conc) = runtime.block_on(plain_client(&server.url, &options));
            print_row(server.label, "raw", &seq, &conc, options.clients);
        }
        if let Some(python) = &options.python {
            let (seq, conc) = python_client(python, &server.url, &options);
            print_row(server.label, "python", &seq, &conc, options.clients);
        }
    }
}

fn print_row(server: &str, client: &str, seq: &Sequential, conc: &Concurrent, clients: usize) {
    println!(
        "{server:<26} {client:<8} {:>9.3} {:>11.3} {:>8.3} {:>8.0} ({clients})",
        seq.mean_ms, seq.median_ms, seq.p95_ms, conc.calls_per_s
    );
}

/// The child process: serve `add` on a free localhost port, print the URL, stop when stdin closes.
/// With `tool_ms`, `add` takes that long to answer.
fn serve(mode: &str, tool_ms: Option<u64>) {
    if mode == "plain" {
        serve_plain();
        return;
    }
    let (http_mode, nagle) = match mode {
        "stateless" => (HttpMode::Stateless, false),
        "sessions" => (HttpMode::Sessions, false),
        "sessions-nagle" => (HttpMode::Sessions, true),
        other => {
            panic!("--serve takes stateless, sessions, sessions-nagle or plain, not {other:?}")
        }
    };
    let server = match tool_ms {
        None => McpServer::new().tool(AddTool),
        Some(ms) => McpServer::new().tool(
            signet::tool::FnTool::builder("add")
                .description("Add two integers, slowly.")
                .schema(json!({"type": "object", "properties": {
                    "a": {"type": "integer"}, "b": {"type": "integer"}}}))
                .async_fn(move |args: Value| async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                    Ok::<_, String>(json!(sum))
                }),
        ),
    }
    .with_http_mode(http_mode);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let stdin_closed = tokio::task::spawn_blocking(|| std::io::stdin().lines().count());
        if nagle {
            // Mounted in plain `axum::serve`, which leaves Nagle's algorithm on, as most rmcp
            // servers run.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a localhost port");
            println!("http://{}/mcp", listener.local_addr().expect("its address"));
            // With connect info: an endpoint without authentication serves this machine only,
            // and must know who connects.
            let app = server
                .http_router("/mcp")
                .into_make_service_with_connect_info::<std::net::SocketAddr>();
            tokio::select! {
                _ = axum::serve(listener, app) => {}
                _ = stdin_closed => {}
            }
            return;
        }
        let http = server
            .serve_http("127.0.0.1:0")
            .await
            .expect("serving on localhost");
        println!("{}", http.url());
        // Wait for the parent to close stdin (or die).
        stdin_closed.await.ok();
        http.shutdown().await.ok();
    });
}

/// The floor: a handler that reads a JSON-RPC `tools/call` of `add` and answers its result.
fn serve_plain() {
    async fn answer(axum::Json(request): axum::Json<Value>) -> axum::Json<Value> {
        let arguments = &request["params"]["arguments"];
        let sum = arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0);
        axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
            "content": [{"type": "text", "text": sum.to_string()}], "isError": false}}))
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a localhost port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
        println!("{url}");
        let app = axum::Router::new().route("/mcp", axum::routing::post(answer));
        tokio::select! {
            _ = axum::serve(listener, app) => {}
            _ = tokio::task::spawn_blocking(|| std::io::stdin().lines().count()) => {}
        }
    });
}

fn signet_server(label: &'static str, mode: &str) -> Server {
    signet_server_with(label, mode, &[])
}

fn signet_server_with(label: &'static str, mode: &str, extra: &[String]) -> Server {
    let exe = std::env::current_exe().expect("this bench's path");
    let mut child = Command::new(exe)
        .args(["--serve", mode])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the server child");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the server's URL");
    Server {
        label,
        url: line.trim().to_owned(),
        stateless_json: matches!(mode, "stateless" | "plain"),
        child,
    }
}

fn python_server(python: &str, label: &'static str, flags: &[&str]) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp/python_server.py");
    let child = Command::new(python)
        .arg(script)
        .args(["--http", &port.to_string()])
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the Python SDK server");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python SDK server did not listen within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Server {
        label,
        url: format!("http://127.0.0.1:{port}/mcp"),
        stateless_json: flags.contains(&"--json") && flags.contains(&"--stateless"),
        child,
    }
}

/// `clients` Signet clients, each making `calls` calls at once, all together, against a Signet
/// server with default settings in a child process; prints what succeeded and the latencies.
fn burst(clients: usize, calls: usize, tool_ms: Option<u64>) {
    let extra: Vec<String> = tool_ms
        .map(|ms| vec!["--tool-ms".to_owned(), ms.to_string()])
        .unwrap_or_default();
    let server = signet_server_with("signet (stateless)", "stateless", &extra);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let mut connected = Vec::new();
        for _ in 0..clients {
            let client = McpClient::connect(&server.url).await.expect("connecting");
            connected.push(Arc::new(client));
        }
        let start = Instant::now();
        let mut tasks = Vec::new();
        for client in &connected {
            for i in 0..calls {
                let client = client.clone();
                tasks.push(tokio::spawn(async move {
                    let began = Instant::now();
                    let answer = client.call_tool("add", json!({"a": i, "b": 1})).await;
                    let ms = began.elapsed().as_secs_f64() * 1000.0;
                    (answer.map_err(|e| e.to_string()), ms)
                }));
            }
        }
        let mut times = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        for task in tasks {
            let (answer, ms) = task.await.expect("a call task");
            times.push(ms);
            if let Err(error) = answer {
                failures.push(error);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        let total = clients * calls;
        println!(
            "burst {clients}x{calls}{}: {} of {total} calls succeeded in {seconds:.2} s \
             ({:.0} calls/s); latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            tool_ms
                .map(|ms| format!(" ({ms} ms tool)"))
                .unwrap_or_default(),
            total - failures.len(),
            total as f64 / seconds,
            at(0.5),
            at(0.99),
            times[times.len() - 1],
        );
        if let Some(first) = failures.first() {
            println!("{} failed; the first: {first}", failures.len());
        }
    });
}

async fn call_add(client: &McpClient, i: i64) {
    let result = client
        .call_tool("add", json!({"a": i, "b": 1}))
        .await
        .expect("tools/call");
    let value = signet_mcp::content::result_value(&result);
    assert_eq!(
        value,
        json!((i + 1).to_string()),
        "add({i}, 1) answered {value}"
    );
}

async fn signet_client(url: &str, options: &Options) -> (Sequential, Concurrent) {
    let connect = || async { McpClient::connect(url).await.expect("connecting") };
    measure(
        connect,
        |client: Arc<McpClient>, i| async move { call_add(&client, i).await },
        options,
    )
    .await
}

/// rmcp's own client with its default HTTP client (a new connection per request).
async fn rmcp_client(url: &str, options: &Options) -> (Sequential, Concurrent) {
    use signet_mcp::rmcp::ServiceExt;
    use signet_mcp::rmcp::model::CallToolRequestParams;
    use signet_mcp::rmcp::transport::StreamableHttpClientTransport;
    let connect = || async {
        let transport = StreamableHttpClientTransport::from_uri(url);
        ().serve(transport).await.expect("connecting")
    };
    let call = |client: Arc<signet_mcp::rmcp::service::RunningService<_, ()>>, i: i64| async move {
        let arguments = json!({"a": i, "b": 1})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let params = CallToolRequestParams::new("add").with_arguments(arguments);
        let result = client.call_tool(params).await.expect("tools/call");
        let value = signet_mcp::content::result_value(&result);
        assert_eq!(
            value,
            json!((i + 1).to_string()),
            "add({i}, 1) answered {value}"
        );
    };
    measure(connect, call, options).await
}

async fn plain_client(url: &str, options: &Options) -> (Sequential, Concurrent) {
    let connect = || async { (reqwest::Client::new(), url.to_owned()) };
    let call = |client: Arc<(reqwest::Client, String)>, i: i64| async move {
        let (http, url) = &*client;
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "add", "arguments": {"a": i, "b": 1}}});
        let reply: Value = http
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&body)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("the POST")
            .json()
            .await
            .expect("a JSON reply");
        let text = &reply["result"]["content"][0]["text"];
        assert_eq!(
            text,
            &json!((i + 1).to_string()),
            "add({i}, 1) answered {reply}"
        );
    };
    measure(connect, call, options).await
}

/// Times `options.sequential` calls on one client, then `options.clients` clients making
/// `options.calls` calls each at once (each connected and warmed up first, untimed).
async fn measure<C, Connect, Connecting, Call, Calling>(
    connect: Connect,
    call: Call,
    options: &Options,
) -> (Sequential, Concurrent)
where
    C: Send + Sync + 'static,
    Connect: Fn() -> Connecting,
    Connecting: Future<Output = C>,
    Call: Fn(Arc<C>, i64) -> Calling + Clone + Send + 'static,
    Calling: Future<Output = ()> + Send,
{
    let client = Arc::new(connect().await);
    for i in 0..options.warmup {
        call(client.clone(), i as i64).await;
    }
    let mut times = Vec::with_capacity(options.sequential);
    for i in 0..options.sequential {
        let start = Instant::now();
        call(client.clone(), i as i64).await;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    drop(client);
    let sequential = summarize(times);

    let mut clients = Vec::with_capacity(options.clients);
    for _ in 0..options.clients {
        let client = Arc::new(connect().await);
        for i in 0..2 {
            call(client.clone(), i).await;
        }
        clients.push(client);
    }
    let calls = options.calls;
    let start = Instant::now();
    let runs = clients.into_iter().map(|client| {
        let call = call.clone();
        tokio::spawn(async move {
            for i in 0..calls {
                call(client.clone(), i as i64).await;
            }
        })
    });
    for run in futures::future::join_all(runs).await {
        run.expect("a client task");
    }
    let seconds = start.elapsed().as_secs_f64();
    let concurrent = Concurrent {
        calls_per_s: (options.clients * calls) as f64 / seconds,
    };
    (sequential, concurrent)
}

fn summarize(mut times: Vec<f64>) -> Sequential {
    times.sort_by(f64::total_cmp);
    let n = times.len().max(1);
    Sequential {
        mean_ms: times.iter().sum::<f64>() / n as f64,
        median_ms: times[times.len() / 2],
        p95_ms: times[(n * 95 / 100).saturating_sub(1).min(times.len() - 1)],
    }
}

fn python_client(python: &str, url: &str, options: &Options) -> (Sequential, Concurrent) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("compare/mcp_http_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(url)
        .args(["--sequential", &options.sequential.to_string()])
        .args(["--clients", &options.clients.to_string()])
        .args(["--calls", &options.calls.to_string()])
        .args(["--warmup", &options.warmup.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .expect("running the Python SDK client");
    assert!(
        output.status.success(),
        "the Python SDK client failed ({})",
        output.status
    );
    let out: Value = serde_json::from_slice(&output.stdout).expect("the Python client's JSON");
    let number = |path: &str| {
        out.pointer(path)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{path} missing from the Python client's output: {out}"))
    };
    (
        Sequential {
            mean_ms: number("/sequential/mean_ms"),
            median_ms: number("/sequential/median_ms"),
            p95_ms: number("/sequential/p95_ms"),
        },
        Concurrent {
            calls_per_s: number("/concurrent/calls_per_s"),
        },
    )
}
