//! A started server is known by a model name only it lists: another process answering on its port
//! is a typed error, not a server that seems ready (no model needed).

use std::time::{Duration, Instant};

use signet_local::{LocalError, LocalServer, ServerCommand, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A process that holds a port and answers every request with 200 and an empty model list, as a
/// server left running (or anything else) would.
async fn squatter() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0; 4096];
                let _ = socket.read(&mut request).await;
                let body = r#"{"object": "list", "data": [{"id": "someone-else"}]}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, handle)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn another_process_on_the_port_is_port_taken_and_the_started_one_is_stopped() {
    let (port, squatter) = squatter().await;
    let pid_file = std::env::temp_dir().join(format!("signet-port-taken-{}", std::process::id()));
    // The "server" never binds (its port is taken); the squatter answers in its place.
    let command = ServerCommand::new("sh")
        .args([
            "-c".to_owned(),
            format!(
                "echo $$ > {}; echo starting; exec sleep 30",
                pid_file.display()
            ),
        ])
        .port(port)
        .expect_model("~signet-0123456789abcdef")
        .ready_timeout(Duration::from_secs(20));
    let started = Instant::now();
    let error = LocalServer::spawn(command).await.unwrap_err();
    match &error {
        LocalError::PortTaken { url, answered, .. } => {
            assert_eq!(url, &format!("http://127.0.0.1:{port}/v1/models"));
            assert!(answered.contains("someone-else"), "{answered}");
        }
        other => panic!("expected PortTaken, got {other:?}"),
    }
    assert!(
        error.to_string().contains("taken by something else"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused at the first answer, not after the ready timeout"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut waited = 0;
    while alive(pid) && waited < 50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    assert!(!alive(pid), "the started process {pid} was stopped");
    std::fs::remove_file(&pid_file).ok();
    squatter.abort();
}

#[tokio::test]
async fn the_server_that_lists_the_expected_model_is_ready() {
    let port = free_port().unwrap();
    let dir = std::env::temp_dir().join(format!("signet-port-mine-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("v1")).unwrap();
    std::fs::write(
        dir.join("v1").join("models"),
        r#"{"data": [{"id": "smollm2", "aliases": ["smollm2", "~signet-42"]}]}"#,
    )
    .unwrap();
    let command = ServerCommand::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args(["--directory".to_owned(), dir.display().to_string()])
        .port(port)
        .expect_model("~signet-42")
        .ready_timeout(Duration::from_secs(20));
    let server = LocalServer::spawn(command).await.unwrap();
    server.stop().await.unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
