//! A mock OpenAI-compatible chat-completions server with a fixed latency per completion, scripted
//! by `workloads::mock_reply`: each ReAct run (Signet's or DSPy's) gets its two tool steps, then
//! `finish`, then the extractor's answer. Any client of `POST /v1/chat/completions` can use it;
//! `GET /stats` counts the requests it answered and rejected, and the CPU time it has used.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};

use crate::workloads::mock_reply;

struct Server {
    latency: Duration,
    answered: AtomicU64,
    rejected: AtomicU64,
}

/// Serves on `addr` — and, with `ports` > 1, on `ports - 1` more ports of the same host — until the
/// process is killed (or, with `until_stdin_closes`, until its standard input closes: how the bench
/// driver makes sure its server never outlives it), after printing `listening on URL [URL..]` (the
/// base URLs, `http://HOST:PORT/v1`) on a line of its own.
pub fn serve(
    addr: SocketAddr,
    ports: usize,
    latency: Duration,
    h2_streams: Option<u32>,
    until_stdin_closes: bool,
) {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let server = Arc::new(Server {
            latency,
            answered: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/stats", get(stats))
            .with_state(server);
        let mut urls = Vec::new();
        for i in 0..ports.max(1) {
            let mut addr = addr;
            if i > 0 && addr.port() != 0 {
                addr.set_port(addr.port() + i as u16);
            }
            let listener = listen(addr);
            urls.push(format!(
                "http://{}/v1",
                listener.local_addr().expect("an address")
            ));
            tokio::spawn(accept(listener, app.clone(), h2_streams));
        }
        println!("listening on {}", urls.join(" "));
        if until_stdin_closes {
            tokio::task::spawn_blocking(|| {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            })
            .await
            .ok();
        } else {
            std::future::pending::<()>().await;
        }
    });
}

/// Serves each connection `listener` accepts with `app`, over HTTP/1.1 or HTTP/2 (h2c with prior
/// knowledge), whichever the client speaks; an HTTP/2 connection carries at most `h2_streams`
/// requests at once (`None`: no limit), and may receive 64 MiB of request bodies before the client
/// waits for a window update.
async fn accept(listener: tokio::net::TcpListener, app: Router, h2_streams: Option<u32>) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // With thousands of requests in flight on one connection, hyper's default connection window
    // (1 MiB) makes the client send their bodies in small DATA frames, which h2 takes for abuse
    // (GOAWAY "too_many_data_frames"): a window of 64 MiB holds 10,000 bodies of 4-6 KiB.
    builder
        .http2()
        .max_concurrent_streams(h2_streams)
        .initial_connection_window_size(64 << 20);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors, say: wait for connections to close rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        };
        // As servers do: a reply is sent when it is written, not held back for more (Nagle).
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        tokio::spawn(async move {
            // A client that goes away mid-request is not the server's failure.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn listen(addr: SocketAddr) -> tokio::net::TcpListener {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .expect("a socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(addr)
        .unwrap_or_else(|e| panic!("cannot bind {addr}: {e}"));
    // A deep accept queue: thousands of clients connect at the same moment (the kernel caps it at
    // net.core.somaxconn).
    socket.listen(16_384).expect("listen")
}

async fn stats(State(server): State<Arc<Server>>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "answered": server.answered.load(Ordering::Relaxed),
            "rejected": server.rejected.load(Ordering::Relaxed),
            "cpu_ms": cpu_ms(),
        }),
    )
}

async fn complete(State(server): State<Arc<Server>>, body: Bytes) -> Response {
    let reply = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|request| Some((reply_to(&request)?, request)));
    let Some((reply, request)) = reply else {
        server.rejected.fetch_add(1, Ordering::Relaxed);
        let error = json!({"error": {
            "message": "signet mock server: not a prompt of the benchmark workloads",
            "type": "invalid_request_error",
        }});
        return json_response(StatusCode::BAD_REQUEST, error);
    };
    tokio::time::sleep(server.latency).await;
    let n = server.answered.fetch_add(1, Ordering::Relaxed);
    let prompt_chars = body.len() as u64;
    let completion_tokens = reply.len() as u64 / 4;
    let prompt_tokens = prompt_chars / 4;
    json_response(
        StatusCode::OK,
        json!({
            "id": format!("chatcmpl-mock-{n}"),
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.get("model").cloned().unwrap_or(json!("mock")),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
                "logprobs": null,
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }),
    )
}

/// The scripted reply to a chat request, from its system message and last user message.
fn reply_to(request: &Value) -> Option<String> {
    let messages = request.get("messages")?.as_array()?;
    let text_of = |role: &str, last: bool| {
        let mut found = messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some(role));
        let message = if last {
            found.next_back()
        } else {
            found.next()
        }?;
        Some(content_text(message.get("content")?))
    };
    mock_reply(&text_of("system", false)?, &text_of("user", true)?)
}

/// A message's text: a string, or the `text` of its parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// CPU time of this process so far (user + system, all threads), from `/proc/self/stat`.
pub fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15, in USER_HZ (100 per second on Linux).
    (ticks(11) + ticks(12)) * 10.0
}
