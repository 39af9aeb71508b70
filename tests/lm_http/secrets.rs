//! Secrets are never printed and never leave for another host: `Debug` of the types that hold an
//! API key, header values or an environment redacts them; `OpenAiLm`'s errors never repeat a
//! secret a server echoed; and `OpenAiLm` follows redirects only within its base URL's origin.
//! (The MCP client's builder and `StdioCommand` are tested beside their code, in `signet-mcp`.)

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{Lm, LmError, LmRequest, Message, OpenAiLm, OpenAiLmBuilder, StreamEvent};
use signet_local::ServerCommand;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockBuilder, MockServer, Request, ResponseTemplate};

const API_KEY: &str = "sk-SECRET-123";
const HEADER_VALUE: &str = "hdr-SECRET-456";
const OTHER_HEADER_VALUE: &str = "gw-SECRET-457";
const ENV_VALUE: &str = "env-SECRET-789";

/// A client of `base` (a server's URI) with the API key and two secret custom headers, and no
/// retries.
fn client(base: &str) -> OpenAiLmBuilder {
    OpenAiLm::builder("test-model")
        .base_url(format!("{base}/v1"))
        .api_key(API_KEY)
        .header("api-key", HEADER_VALUE)
        .header("x-gateway-auth", OTHER_HEADER_VALUE)
        .timeout(Duration::from_secs(10))
        .max_retries(0)
}

/// Whether `text` shows any part of a secret (every secret above has `SECRET` in it, and any
/// piece of at least 6 characters of one counts).
fn leaks(text: &str) -> bool {
    text.contains("SECRET")
        || [API_KEY, HEADER_VALUE, OTHER_HEADER_VALUE, ENV_VALUE]
            .iter()
            .any(|secret| (0..=secret.len() - 6).any(|i| text.contains(&secret[i..i + 6])))
}

fn chat() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

fn ask() -> LmRequest {
    LmRequest::new(vec![Message::user("hi")])
}

fn completion_body() -> Value {
    json!({
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop"
        }]
    })
}

/// The error of a completion and of a stream of the same request.
async fn both_errors(lm: &OpenAiLm) -> [LmError; 2] {
    let completed = lm.complete(&ask()).await.unwrap_err();
    let request = ask();
    let events: Vec<Result<StreamEvent, LmError>> = lm.stream(&request).collect().await;
    let streamed = events
        .into_iter()
        .find_map(Result::err)
        .expect("the stream fails");
    [completed, streamed]
}

/// Every header of `request`, as `name: value` lines.
fn headers_of(request: &Request) -> String {
    request
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("?")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn debug_never_shows_a_secret() {
    let builder = client("http://127.0.0.1:9");
    let lm = builder.clone().build().unwrap();
    let command = ServerCommand::new("/opt/llama-server")
        .args(["--port", "8123"])
        .env("HF_TOKEN", ENV_VALUE)
        .port(8123);
    let shown = [
        format!("{builder:?}"),
        format!("{builder:#?}"),
        format!("{lm:?}"),
        format!("{lm:#?}"),
        format!("{command:?}"),
        format!("{command:#?}"),
    ];
    for shown in &shown {
        assert!(!leaks(shown), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
    // What is not secret is still shown: the header names, the program, its arguments and the
    // variable's name.
    for (i, kept) in [
        (0, "api-key"),
        (0, "x-gateway-auth"),
        (2, "api-key"),
        (2, "x-gateway-auth"),
        (4, "/opt/llama-server"),
        (4, "--port"),
        (4, "HF_TOKEN"),
    ] {
        assert!(shown[i].contains(kept), "{kept} missing from {}", shown[i]);
    }
}

/// A server that answers `status` with a body repeating every header it got (the API key and the
/// custom headers among them), as JSON (`json`) or as plain text.
async fn echoing_server(status: u16, json: bool) -> MockServer {
    let server = MockServer::start().await;
    chat()
        .respond_with(move |request: &Request| {
            let headers = headers_of(request);
            let template = ResponseTemplate::new(status);
            if json {
                template.set_body_json(json!({"error": {
                    "message": format!("invalid credentials; you sent:\n{headers}"),
                    "type": "invalid_request_error",
                    "code": "invalid_api_key"
                }}))
            } else {
                template.set_body_string(format!("denied. Request headers:\n{headers}"))
            }
        })
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn errors_never_repeat_an_echoed_secret() {
    for (status, json) in [
        (401, true),
        (401, false),
        (500, true),
        (500, false),
        (403, true),
    ] {
        let server = echoing_server(status, json).await;
        let lm = client(&server.uri()).build().unwrap();
        for error in both_errors(&lm).await {
            let shown = format!("{error} {error:?}");
            assert!(!leaks(&shown), "HTTP {status}: {shown}");
            // The server's message is kept, with the secrets replaced.
            assert!(shown.contains("[redacted]"), "HTTP {status}: {shown}");
            assert!(shown.contains("api-key"), "HTTP {status}: {shown}");
            match (status, &error) {
                (500, LmError::Server { status: 500, .. }) => {}
                (401 | 403, LmError::Rejected { status: s, .. }) if *s == status => {}
                _ => panic!("HTTP {status} became {error:?}"),
            }
        }
        // The secrets did reach the server: the scrubbing, not their absence, is what was tested.
        let received = server.received_requests().await.unwrap();
        assert!(headers_of(&received[0]).contains(HEADER_VALUE));
    }
}

#[tokio::test]
async fn a_secret_cut_by_the_length_limit_is_still_removed() {
    // Error messages keep the first 2000 bytes of the body: each secret here straddles that cut,
    // so only its first few characters would be kept if it were scrubbed after the cut.
    for secret in [API_KEY, HEADER_VALUE] {
        let server = MockServer::start().await;
        let body = format!("{}{secret} and more", "x".repeat(1993));
        chat()
            .respond_with(ResponseTemplate::new(500).set_body_string(body))
            .mount(&server)
            .await;
        let lm = client(&server.uri()).build().unwrap();
        for error in both_errors(&lm).await {
            let shown = error.to_string();
            assert!(!shown.contains(&secret[..5]), "{shown}");
            assert!(!leaks(&shown), "{shown}");
        }
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_with_a_typed_error() {
    let elsewhere = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(completion_body()))
        .mount(&elsewhere)
        .await;
    let endpoint = MockServer::start().await;
    // Another port of the same host is another origin. The Location's credentials and query are
    // never shown.
    let port = elsewhere.address().port();
    let location =
        format!("http://user:pw-SECRET-000@127.0.0.1:{port}/v1/chat/completions?key=q-SECRET-001");
    chat()
        .respond_with(ResponseTemplate::new(307).insert_header("location", location.as_str()))
        .mount(&endpoint)
        .await;
    let lm = client(&endpoint.uri())
        .retry(signet::lm::RetryPolicy::default().with_initial_backoff(Duration::from_millis(1)))
        .build()
        .unwrap();

    for error in both_errors(&lm).await {
        let LmError::Rejected { status, message } = &error else {
            panic!("expected a rejection, got {error:?}");
        };
        assert_eq!(*status, 307);
        assert!(!error.is_transient());
        let target = format!("http://127.0.0.1:{port}/v1/chat/completions");
        assert!(message.contains(&target), "{message}");
        assert!(message.contains("another origin"), "{message}");
        assert!(message.contains(&endpoint.uri()), "{message}");
        assert!(!message.contains("  "), "{message}");
        let shown = format!("{error} {error:?}");
        assert!(!leaks(&shown) && !shown.contains("pw-"), "{shown}");
    }
    // The other server never got a request (so neither the key nor the custom headers), and the
    // refused redirect was not retried: one request per call.
    assert!(elsewhere.received_requests().await.unwrap().is_empty());
    assert_eq!(endpoint.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_same_origin_307_is_followed_with_the_headers() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/v2/chat/completions"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v2/chat/completions"))
        .and(wiremock::matchers::header("api-key", HEADER_VALUE))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion_body()))
        .expect(1)
        .mount(&server)
        .await;
    let lm = client(&server.uri()).build().unwrap();
    let reply = lm.complete(&ask()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("ok"));
}

#[tokio::test]
async fn a_same_origin_302_is_refused_rather_than_resent_as_a_get() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/v2/chat/completions"))
        .mount(&server)
        .await;
    Mock::given(path("/v2/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion_body()))
        .expect(0)
        .mount(&server)
        .await;
    let lm = client(&server.uri()).build().unwrap();
    let error = lm.complete(&ask()).await.unwrap_err();
    let LmError::Rejected {
        status: 302,
        message,
    } = &error
    else {
        panic!("expected a rejection with status 302, got {error:?}");
    };
    assert!(message.contains("/v2/chat/completions"), "{message}");
    assert!(message.contains("only 307 and 308"), "{message}");
}

#[tokio::test]
async fn a_redirect_loop_is_not_retried() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/v1/chat/completions"))
        .mount(&server)
        .await;
    let lm = client(&server.uri())
        .retry(signet::lm::RetryPolicy::default().with_initial_backoff(Duration::from_millis(1)))
        .build()
        .unwrap();
    let error = lm.complete(&ask()).await.unwrap_err();
    assert!(
        matches!(error, LmError::InvalidResponse { .. }),
        "{error:?}"
    );
    assert!(!error.is_transient());
    assert!(error.to_string().contains("redirect"), "{error}");
    // One attempt: the first request and at most 10 redirects.
    assert!(server.received_requests().await.unwrap().len() <= 11);
}
