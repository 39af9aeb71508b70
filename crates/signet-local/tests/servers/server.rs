//! `LocalServer` with stand-in processes (no model needed): ready when it answers, typed errors when
//! it exits or never answers, stopped on `stop` and on drop.

use std::time::Duration;

use signet_local::{LocalError, LocalServer, ServerCommand, free_port};

/// A directory that Python's `http.server` serves with a `v1/models` file, so `GET /v1/models` is 200.
fn models_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("signet-local-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("v1")).unwrap();
    std::fs::write(dir.join("v1").join("models"), r#"{"data": []}"#).unwrap();
    dir
}

fn http_server(port: u16) -> ServerCommand {
    ServerCommand::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args(["--directory".to_owned(), models_dir().display().to_string()])
        .port(port)
        .ready_timeout(Duration::from_secs(20))
}

fn alive(pid: u32) -> bool {
    // A killed child that was reaped has no /proc entry; a zombie shows state Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn a_server_is_ready_when_it_answers_and_stop_ends_it() {
    let port = free_port().unwrap();
    let server = LocalServer::spawn(http_server(port)).await.unwrap();
    assert_eq!(server.base_url(), format!("http://127.0.0.1:{port}/v1"));
    let pid = server.pid().unwrap();
    assert!(alive(pid));
    server.stop().await.unwrap();
    assert!(!alive(pid));
}

#[tokio::test]
async fn dropping_the_server_kills_it() {
    let port = free_port().unwrap();
    let server = LocalServer::spawn(http_server(port)).await.unwrap();
    let pid = server.pid().unwrap();
    drop(server);
    // tokio kills on drop and reaps in the background.
    let mut waited = 0;
    while alive(pid) && waited < 50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    assert!(!alive(pid), "process {pid} still running after drop");
}

#[tokio::test]
async fn a_process_that_exits_is_an_error_with_its_output() {
    let command = ServerCommand::new("sh")
        .args(["-c", "echo 'model file not found' >&2; exit 3"])
        .port(free_port().unwrap());
    let error = LocalServer::spawn(command).await.unwrap_err();
    match &error {
        LocalError::Exited { status, log } => {
            assert!(status.contains('3'), "{status}");
            assert!(log.contains("model file not found"), "{log}");
        }
        other => panic!("expected Exited, got {other:?}"),
    }
    assert!(error.to_string().contains("exited"));
}

#[tokio::test]
async fn the_server_sees_an_allow_listed_environment_and_its_own_variables() {
    // Cargo runs tests with CARGO_* variables set: none is on the allow-list.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let command = ServerCommand::new("sh")
        .args(["-c", "env; exit 3"])
        .env("SERVER_OWN", "kept")
        .port(free_port().unwrap());
    let LocalError::Exited { log, .. } = LocalServer::spawn(command).await.unwrap_err() else {
        panic!("expected Exited");
    };
    assert!(log.contains("SERVER_OWN=kept"), "{log}");
    assert!(log.contains("PATH="), "{log}");
    assert!(
        !log.contains("CARGO_"),
        "the parent's environment leaked: {log}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_stopped() {
    let command = ServerCommand::new("sh")
        .args(["-c", "echo starting; exec sleep 30"])
        .port(free_port().unwrap())
        .ready_timeout(Duration::from_millis(500));
    let error = LocalServer::spawn(command).await.unwrap_err();
    match error {
        LocalError::NotReady { after, log } => {
            assert_eq!(after, Duration::from_millis(500));
            assert!(log.contains("starting"), "{log}");
        }
        other => panic!("expected NotReady, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let command = ServerCommand::new("/nonexistent/llama-server").port(free_port().unwrap());
    let error = LocalServer::spawn(command).await.unwrap_err();
    assert!(
        matches!(&error, LocalError::Spawn { program, .. } if program == "/nonexistent/llama-server"),
        "{error:?}"
    );
}
