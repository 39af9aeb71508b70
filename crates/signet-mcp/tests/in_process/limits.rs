//! Hostile and huge inputs from MCP peers meet limits, not an unbounded amount of work: a server
//! flooding `tools/list_changed` is re-listed a bounded number of times, one that pages
//! `tools/list` (or prompts, resources, resource templates) forever fails the listing with a
//! typed error, and a tool schema that would expand
//! to ~2^40 values is kept with its `$ref`s. A served endpoint refuses foreign browser origins,
//! sessions past its session limit (calls past the call limit: `load.rs`), and requests from other
//! machines when it has no authentication.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use signet::{Tool, ToolError};
use signet_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, Resource, ResourceTemplate, ServerCapabilities, ServerConfig,
};
use signet_mcp::rmcp::service::{RequestContext, RoleServer};
use signet_mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use signet_mcp::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use signet_mcp::rmcp::{ErrorData, ServerHandler};
use signet_mcp::{Error, HttpMode, McpClient, McpClientBuilder, McpServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the hostile test server does.
#[derive(Clone, Copy)]
enum Mode {
    /// `tools/call` of any tool sends 1000 `tools/list_changed` notifications.
    Flood,
    /// Every `tools/list` page has one tool and a next cursor.
    PagesForever,
    /// Tools are listed at once; every page of prompts, resources and resource templates is
    /// empty and has a next cursor.
    OtherListsForever,
    /// The one tool's schema has 40 `$defs`, each referring to the next twice.
    Exploding,
}

#[derive(Clone)]
struct Hostile {
    mode: Mode,
    /// How many `tools/list` requests it answered.
    lists: Arc<AtomicUsize>,
}

/// 40 definitions, each referring to the next twice: a few KB, ~2^40 values once inlined.
fn exploding_schema() -> Map<String, Value> {
    let mut defs = Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"left": next.clone(), "right": next}}),
        );
    }
    defs.insert("D40".into(), json!({"type": "string"}));
    let schema = json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/D0"}},
        "required": ["root"],
        "$defs": Value::Object(defs)
    });
    match schema {
        Value::Object(map) => map,
        _ => unreachable!(),
    }
}

fn plain_tool(name: String) -> signet_mcp::rmcp::model::Tool {
    let schema = json!({"type": "object", "properties": {}});
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    signet_mcp::rmcp::model::Tool::new(name, "A tool.", Arc::new(schema))
}

impl ServerHandler for Hostile {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let n = self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(match self.mode {
            Mode::Flood | Mode::OtherListsForever => {
                ListToolsResult::with_all_items(vec![plain_tool("flood".into())])
            }
            Mode::PagesForever => {
                let page: u64 = request
                    .and_then(|r| r.cursor)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let mut result =
                    ListToolsResult::with_all_items(vec![plain_tool(format!("t{page}_{n}"))]);
                result.next_cursor = Some((page + 1).to_string());
                result
            }
            Mode::Exploding => {
                ListToolsResult::with_all_items(vec![signet_mcp::rmcp::model::Tool::new(
                    "deep",
                    "A tool with a deep schema.",
                    Arc::new(exploding_schema()),
                )])
            }
        })
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let prompts = (0..3)
            .map(|i| Prompt::new(format!("p{i}"), Some("A prompt."), None))
            .collect();
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = Some(next_page(request));
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let resources = (0..3)
            .map(|i| Resource::new(format!("file:///r{i}"), format!("r{i}")))
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = Some(next_page(request));
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let templates = (0..3)
            .map(|i| ResourceTemplate::new(format!("file:///t{i}/{{name}}"), format!("t{i}")))
            .collect();
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        result.next_cursor = Some(next_page(request));
        Ok(result)
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        for _ in 0..1000 {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("sent")]).into())
    }
}

/// The cursor of the page after the one `request` asks for.
fn next_page(request: Option<PaginatedRequestParams>) -> String {
    let page: u64 = request
        .and_then(|r| r.cursor)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (page + 1).to_string()
}

/// Serves `mode` over streamable HTTP with sessions on a free loopback port; returns the URL and
/// the server's count of `tools/list` requests.
async fn serve_hostile(mode: Mode) -> (String, Arc<AtomicUsize>) {
    let lists = Arc::new(AtomicUsize::new(0));
    let handler = Hostile {
        mode,
        lists: lists.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_legacy_session_mode(true),
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, lists)
}

#[tokio::test]
async fn a_flood_of_list_changed_is_answered_by_a_bounded_number_of_listings() {
    let (url, lists) = serve_hostile(Mode::Flood).await;
    let client = McpClient::connect(url).await.unwrap();
    assert_eq!(lists.load(Ordering::SeqCst), 1);
    let changed = client.tools_changed();
    let started = Instant::now();
    client.call_tool("flood", json!({})).await.unwrap();
    // The change is not lost: the tools are listed again.
    tokio::time::timeout(Duration::from_secs(5), changed)
        .await
        .expect("the tools were listed again");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let relists = lists.load(Ordering::SeqCst) - 1;
    // At most one listing per 250 ms interval (and one more for the interval under way).
    let intervals = started.elapsed().as_millis() / 250 + 1;
    assert!(
        (1..=4).contains(&relists) && relists as u128 <= intervals,
        "1000 notifications were answered by {relists} listings"
    );
    assert_eq!(client.tool_names(), ["flood"]);
}

#[tokio::test]
async fn a_server_that_pages_forever_fails_the_listing_at_the_page_limit() {
    let (url, lists) = serve_hostile(Mode::PagesForever).await;
    let started = Instant::now();
    let error = McpClient::builder()
        .startup_timeout(Duration::from_secs(20))
        .connect(url.as_str())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::TooManyPages { limit: 100, .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("past 100 pages")
            && error.to_string().contains("max_list_pages"),
        "{error}"
    );
    assert_eq!(lists.load(Ordering::SeqCst), 100);
    assert!(started.elapsed() < Duration::from_secs(10));

    let error = McpClient::builder()
        .max_list_pages(5)
        .connect(url.as_str())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::TooManyPages { limit: 5, .. }),
        "{error}"
    );

    let error = McpClient::builder()
        .max_tools(20)
        .connect(url.as_str())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::TooManyTools { limit: 20, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("more than 20 tools"), "{error}");
}

/// Lists prompts, resources and resource templates from a server whose listings never end (three
/// items a page) with `builder`; returns each listing's error and how many pages were asked for.
async fn endless_listings(builder: McpClientBuilder) -> (Vec<(&'static str, Error)>, usize) {
    let (url, lists) = serve_hostile(Mode::OtherListsForever).await;
    let client = builder.connect(url.as_str()).await.unwrap();
    let listed = lists.load(Ordering::SeqCst);
    let errors = vec![
        (
            "prompts/list",
            client.prompts().await.map(|_| ()).unwrap_err(),
        ),
        (
            "resources/list",
            client.resources().await.map(|_| ()).unwrap_err(),
        ),
        (
            "resources/templates/list",
            client.resource_templates().await.map(|_| ()).unwrap_err(),
        ),
    ];
    (errors, lists.load(Ordering::SeqCst) - listed)
}

#[tokio::test]
async fn prompts_and_resources_that_page_forever_fail_at_the_page_limit() {
    let (errors, pages) = endless_listings(McpClient::builder().max_list_pages(7)).await;
    for (what, error) in errors {
        assert!(
            matches!(&error, Error::TooManyPages { what: w, limit: 7, .. } if w == what),
            "{what}: {error}"
        );
        let expected = format!("paging {what} past 7 pages");
        assert!(error.to_string().contains(&expected), "{error}");
    }
    assert_eq!(pages, 3 * 7);
}

#[tokio::test]
async fn listings_past_the_item_limit_fail_without_reading_further() {
    // Three items a page: the fourth page would pass 10.
    let (errors, pages) = endless_listings(McpClient::builder().max_list_items(10)).await;
    for (what, error) in errors {
        assert!(
            matches!(&error, Error::TooManyItems { what: w, limit: 10, .. } if w == what),
            "{what}: {error}"
        );
        let expected = format!("more than 10 items in {what}");
        assert!(error.to_string().contains(&expected), "{error}");
    }
    assert_eq!(pages, 3 * 4);
}

#[tokio::test]
async fn an_exploding_tool_schema_is_kept_with_its_refs_and_still_validates() {
    let (url, _) = serve_hostile(Mode::Exploding).await;
    let started = Instant::now();
    let client = McpClient::connect(url).await.unwrap();
    let tool = client.tool("deep").unwrap();
    let schema = tool.args_schema();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // Bounded: the schema as the server wrote it, its definitions kept.
    assert!(schema.to_string().len() < 10_000);
    assert_eq!(schema["properties"]["root"]["$ref"], "#/$defs/D0");
    assert_eq!(schema["$defs"].as_object().unwrap().len(), 41);
    // And still usable: arguments are checked locally through the `$ref`s.
    let error = tool
        .call(json!({"root": {"left": {"right": 5}}}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::InvalidArguments { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("root.left.right"), "{error}");
}

/// Sends a raw MCP `initialize` POST to `addr` (`host:port`) with these extra header lines, and
/// returns the status line and whatever of the body came with the headers.
async fn post_initialize(addr: &str, host: &str, headers: &str) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    while !reply.windows(4).any(|w| w == b"\r\n\r\n") && Instant::now() < deadline {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    // A refusal's short body comes right behind its headers.
    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await
    {
        reply.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&reply).into_owned()
}

#[tokio::test]
async fn a_foreign_browser_origin_is_refused_with_403() {
    let http = McpServer::new().serve_http("127.0.0.1:0").await.unwrap();
    let addr = http.local_addr().to_string();
    let status = |reply: String| reply.lines().next().unwrap_or_default().to_owned();
    let foreign = post_initialize(&addr, &addr, "Origin: https://evil.example\r\n").await;
    assert!(status(foreign.clone()).contains("403"), "{foreign}");
    assert!(foreign.contains("Origin"), "{foreign}");
    let local = post_initialize(&addr, &addr, "Origin: http://localhost:5173\r\n").await;
    assert!(status(local.clone()).contains("200"), "{local}");
    let plain = post_initialize(&addr, &addr, "").await;
    assert!(status(plain.clone()).contains("200"), "{plain}");

    // An allow-list replaces the default.
    let http = McpServer::new()
        .with_allowed_origins(["https://app.example.com:443"])
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let addr = http.local_addr().to_string();
    let allowed = post_initialize(&addr, &addr, "Origin: https://app.example.com\r\n").await;
    assert!(status(allowed.clone()).contains("200"), "{allowed}");
    let local = post_initialize(&addr, &addr, "Origin: http://localhost:5173\r\n").await;
    assert!(status(local.clone()).contains("403"), "{local}");
}

#[tokio::test]
async fn sessions_past_the_session_limit_are_refused() {
    let http = McpServer::new()
        .with_http_mode(HttpMode::Sessions)
        .max_sessions(1)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let first = McpClient::connect(http.url()).await.unwrap();
    let error = McpClient::connect(http.url()).await.unwrap_err();
    assert!(matches!(error, Error::Handshake { .. }), "{error}");
    // On the wire: 503 with Retry-After, not a 500 that reads as a server fault.
    let addr = http
        .url()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let refused = post_initialize(&addr, &addr, "").await;
    assert!(refused.lines().next().unwrap().contains("503"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    assert!(
        refused.contains("1 sessions are open (McpServer::max_sessions); try again later"),
        "{refused}"
    );
    first.close().await.unwrap();
    // The closed session's place is given back.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match McpClient::connect(http.url()).await {
            Ok(_) => break,
            Err(error) => assert!(Instant::now() < deadline, "{error}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unauthenticated_router_reachable_from_other_machines_is_refused() {
    // Bound to every address, and told to answer to a name other machines use.
    let router = McpServer::new()
        .with_allowed_hosts(["0.0.0.0"])
        .http_router("/mcp");
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = router
        .clone()
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let addr = format!("127.0.0.1:{port}");
    let remote = post_initialize(&addr, &format!("0.0.0.0:{port}"), "").await;
    assert!(remote.lines().next().unwrap().contains("403"), "{remote}");
    assert!(remote.contains("without authentication"), "{remote}");
    assert!(remote.contains("allow_unauthenticated_remote"), "{remote}");
    // This machine's own name still works.
    let local = post_initialize(&addr, &format!("127.0.0.1:{port}"), "").await;
    assert!(local.lines().next().unwrap().contains("200"), "{local}");
    // Served without connect info, the router cannot tell who connects: it refuses, whatever
    // host the request names (a header is the sender's to choose).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let addr = format!("127.0.0.1:{port}");
    let unknown = post_initialize(&addr, &format!("127.0.0.1:{port}"), "").await;
    assert!(unknown.lines().next().unwrap().contains("403"), "{unknown}");
    assert!(unknown.contains("unknown address"), "{unknown}");

    // The tower service alone answers only to loopback names too.
    let service = McpServer::new()
        .with_allowed_hosts(["0.0.0.0"])
        .http_service();
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let addr = format!("127.0.0.1:{port}");
    let remote = post_initialize(&addr, &format!("0.0.0.0:{port}"), "").await;
    assert!(remote.lines().next().unwrap().contains("403"), "{remote}");

    // The explicit opt-out, for a proxy in front that authenticates.
    let router = McpServer::new()
        .with_allowed_hosts(["0.0.0.0"])
        .allow_unauthenticated_remote()
        .http_router("/mcp");
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let addr = format!("127.0.0.1:{port}");
    let proxied = post_initialize(&addr, &format!("0.0.0.0:{port}"), "").await;
    assert!(proxied.lines().next().unwrap().contains("200"), "{proxied}");
}
