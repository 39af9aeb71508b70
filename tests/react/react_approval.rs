//! The approval example: a run parks at the confirm tool, and a second HTTP request — served by
//! another server with a freshly built agent — decides and the run goes on.

#[path = "../../examples/react_approval.rs"]
// The example, inside the test module named after it.
#[allow(dead_code, clippy::module_inception)]
mod react_approval;

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use react_approval::{Access, App, RunStore, Teller, agent, protect, router};

/// The token every test server takes.
const TOKEN: &str = "test-token-0123456789abcdef";

/// A server process: its own agent, the shared store directory.
async fn server(dir: &std::path::Path) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let store = RunStore::new(dir.to_owned()).unwrap();
    let app = Arc::new(App {
        agent: agent(Teller, &store.state_key().unwrap()),
        store,
    });
    // The service as `main` serves it.
    let service = protect(router(app), Access::local(TOKEN, address));
    let handle = tokio::spawn(async move {
        axum::serve(listener, service).await.unwrap();
    });
    (format!("http://{address}"), handle)
}

/// POSTs `body` with the server's token and reads the SSE answer as (event, data) pairs; or the
/// status and body when the answer is not a stream.
async fn post(url: &str, body: Value) -> Result<Vec<(String, Value)>, (u16, Value)> {
    post_as(url, body, Some(&format!("Bearer {TOKEN}")), None).await
}

/// [`post`] with this `authorization` header (none if `None`) and this `Host` header (the URL's if
/// `None`).
async fn post_as(
    url: &str,
    body: Value,
    authorization: Option<&str>,
    host: Option<&str>,
) -> Result<Vec<(String, Value)>, (u16, Value)> {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.unwrap();
    if response.headers()["content-type"] != "text/event-stream" {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        return Err((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ));
    }
    Ok(response
        .bytes_stream()
        .eventsource()
        .map(|e| {
            let e = e.unwrap();
            (e.event, serde_json::from_str(&e.data).unwrap())
        })
        .collect()
        .await)
}

fn store_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("signet-approval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Starts a run on one server and returns its run id, checking the parked event.
async fn park(dir: &std::path::Path) -> String {
    let (first, handle) = server(dir).await;
    let events = post(&format!("{first}/runs"), json!({"request": "pay bob 20"}))
        .await
        .unwrap();
    handle.abort();
    let (kind, data) = events.last().unwrap();
    assert_eq!(kind, "suspended", "{events:?}");
    assert_eq!(data["pending"][0]["tool"], "transfer");
    assert_eq!(
        data["pending"][0]["args"],
        json!({"to": "bob", "amount": 20})
    );
    assert!(
        !events.iter().any(|(kind, _)| kind == "tool_call_finished"),
        "the transfer must not run before the decision: {events:?}"
    );
    data["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn approval_arrives_in_a_second_request_to_another_server() {
    let dir = store_dir("approve");
    let run_id = park(&dir).await;
    let (second, handle) = server(&dir).await;
    let url = format!("{second}/runs/{run_id}/decisions");
    let events = post(&url, json!({"step_0": {"decision": "approve"}}))
        .await
        .unwrap();
    let (kind, done) = events.last().unwrap();
    assert_eq!(kind, "done", "{events:?}");
    assert_eq!(done["output"]["receipt"], "sent 20 EUR to bob");
    assert_eq!(done["trajectory"]["steps"][0]["tool_name"], "transfer");
    // A parked run is resumed once.
    let again = post(&url, json!({"step_0": {"decision": "approve"}}))
        .await
        .unwrap_err();
    assert_eq!(again.0, 404);
    assert!(again.1["error"].as_str().unwrap().contains(&run_id));
    handle.abort();
}

#[tokio::test]
async fn a_parked_run_rewritten_on_disk_is_refused_not_run() {
    let dir = store_dir("rewritten");
    let run_id = park(&dir).await;
    // Someone with access to the file changes who gets the money, and how much.
    let path = dir.join(format!("{run_id}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let forged = text.replace("\"bob\"", "\"mallory\"").replace("20", "2000");
    assert_ne!(text, forged, "the parked file names the transfer");
    std::fs::write(&path, forged).unwrap();
    let (second, handle) = server(&dir).await;
    let events = post(
        &format!("{second}/runs/{run_id}/decisions"),
        json!({"step_0": {"decision": "approve"}}),
    )
    .await
    .unwrap();
    let (kind, data) = events.last().unwrap();
    assert_eq!(kind, "failed", "{events:?}");
    assert!(
        data["error"].as_str().unwrap().contains("seal"),
        "the error says the state was changed: {data}"
    );
    assert!(
        !events.iter().any(|(kind, _)| kind == "tool_call_finished"),
        "the forged transfer must not run: {events:?}"
    );
    handle.abort();
}

#[cfg(unix)]
#[tokio::test]
async fn the_store_is_private_and_a_shared_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = store_dir("private");
    let store = RunStore::new(dir.clone()).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    store.state_key().unwrap();
    assert_eq!(mode(&dir.join(".state-key")), 0o600);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shared = RunStore::new(dir.clone())
        .err()
        .expect("a shared directory is refused");
    assert!(shared.to_string().contains("other users"), "{shared}");
}

#[tokio::test]
async fn a_denial_or_an_edit_is_what_the_run_goes_on_with() {
    let dir = store_dir("deny");
    let run_id = park(&dir).await;
    let (server, handle) = server(&dir).await;
    let denial = json!({"step_0": {"decision": "deny", "value": "not today"}});
    let events = post(&format!("{server}/runs/{run_id}/decisions"), denial)
        .await
        .unwrap();
    let (_, done) = events.last().unwrap();
    assert_eq!(
        done["output"]["receipt"],
        "Execution error in transfer: this call needs a person's approval and was denied: not today"
    );

    let run_id = park(&dir).await;
    let edit = json!({"step_0": {"decision": "edit", "value": {"to": "bob", "amount": 5}}});
    let events = post(&format!("{server}/runs/{run_id}/decisions"), edit)
        .await
        .unwrap();
    let (_, done) = events.last().unwrap();
    assert_eq!(done["output"]["receipt"], "sent 5 EUR to bob");
    handle.abort();
}

#[tokio::test]
async fn decisions_that_do_not_fit_fail_the_stream_and_keep_the_run_parked() {
    let dir = store_dir("wrong");
    let run_id = park(&dir).await;
    let (server, handle) = server(&dir).await;
    let events = post(
        &format!("{server}/runs/{run_id}/decisions"),
        json!({"step_7": {"decision": "approve"}}),
    )
    .await
    .unwrap();
    let (kind, data) = events.last().unwrap();
    assert_eq!(kind, "failed");
    assert!(
        data["error"]
            .as_str()
            .unwrap()
            .contains("no decision for pending call `step_0`")
    );
    handle.abort();
}

#[tokio::test]
async fn a_request_without_the_token_is_401_and_starts_nothing() {
    let dir = store_dir("token");
    let (server, handle) = server(&dir).await;
    let start = json!({"request": "pay bob 20"});
    for authorization in [
        None,
        Some("Bearer wrong-token".to_owned()),
        Some(format!("Bearer {TOKEN}x")),
        Some(format!("Basic {TOKEN}")),
        Some("Bearer ".to_owned()),
    ] {
        let (status, body) = post_as(
            &format!("{server}/runs"),
            start.clone(),
            authorization.as_deref(),
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(status, 401, "{authorization:?}: {body}");
    }
    // Nor may a decision be sent without it (the run stays parked and can still be approved).
    let run_id = park(&dir).await;
    let url = format!("{server}/runs/{run_id}/decisions");
    let approve = json!({"step_0": {"decision": "approve"}});
    assert_eq!(
        post_as(&url, approve.clone(), None, None)
            .await
            .unwrap_err()
            .0,
        401
    );
    let events = post(&url, approve).await.unwrap();
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");
    // Only the run started with the token was parked.
    let parked = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(parked, 0);
    handle.abort();
}

#[tokio::test]
async fn a_request_for_a_foreign_host_is_403_even_with_the_token() {
    // What a browser sends after DNS rebinding: the attacker's name, this server's address.
    let dir = store_dir("host");
    let (server, handle) = server(&dir).await;
    let port = server.rsplit(':').next().unwrap().to_owned();
    let bearer = format!("Bearer {TOKEN}");
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_owned(),
        format!("127.0.0.1:{}", port.parse::<u16>().unwrap() + 1),
        "localhost".to_owned(),
    ] {
        let (status, body) = post_as(
            &format!("{server}/runs"),
            json!({"request": "pay bob 20"}),
            Some(&bearer),
            Some(&host),
        )
        .await
        .unwrap_err();
        assert_eq!(status, 403, "{host}: {body}");
    }
    // The server's own names are fine.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let events = post_as(
            &format!("{server}/runs"),
            json!({"request": "pay bob 20"}),
            Some(&bearer),
            Some(&host),
        )
        .await
        .unwrap();
        assert_eq!(events.last().unwrap().0, "suspended", "{host}: {events:?}");
    }
    handle.abort();
}

#[tokio::test]
async fn run_ids_are_128_random_bits() {
    let dir = store_dir("ids");
    let first = park(&dir).await;
    let second = park(&dir).await;
    for id in [&first, &second] {
        assert_eq!(id.len(), 32, "{id}");
        assert!(
            id.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{id}"
        );
    }
    assert_ne!(first, second);
    // Not one counter apart either: they share no long prefix.
    assert_ne!(first[..8], second[..8]);
}
