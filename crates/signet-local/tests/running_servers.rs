//! `LlamaCpp::serve` records each server it starts in the cache, so that another `serve` from the
//! same cache knows (and warns) that two servers will share the cores; the LM says how many
//! requests the server decodes at once. Run against a stand-in install (no model needed): the
//! cache's "Python" is a script that answers `GET /v1/models` on the port it is given.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use signet::lm::Lm;
use signet_local::{LlamaCpp, XLLAMACPP_VERSION};

/// A cache that looks installed, whose server is a small HTTP server in Python.
fn fake_install(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!(
        "signet-local-running-servers-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let venv = root.join(format!("xllamacpp-{XLLAMACPP_VERSION}"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join(".signet-ready"), XLLAMACPP_VERSION).unwrap();
    let python = venv.join("bin").join("python");
    std::fs::write(
        &python,
        "#!/usr/bin/env python3\n\
         import http.server, sys\n\
         port = int(sys.argv[sys.argv.index('--port') + 1])\n\
         class Models(http.server.BaseHTTPRequestHandler):\n\
         \x20   def do_GET(self):\n\
         \x20       self.send_response(200)\n\
         \x20       self.end_headers()\n\
         \x20       self.wfile.write(b'{\"data\": []}')\n\
         \x20   def log_message(self, *args):\n\
         \x20       pass\n\
         http.server.HTTPServer(('127.0.0.1', port), Models).serve_forever()\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join("models")).unwrap();
    std::fs::write(
        root.join("models").join("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "",
    )
    .unwrap();
    root
}

#[tokio::test]
async fn servers_from_one_cache_are_known_while_they_run() {
    let root = fake_install("two");
    let model = LlamaCpp::smollm2()
        .cache_dir(&root)
        .ready_timeout(Duration::from_secs(30));
    assert_eq!(model.running_servers().unwrap(), Vec::<u32>::new());

    let first = model.serve().await.unwrap();
    assert_eq!(model.running_servers().unwrap(), [first.pid().unwrap()]);
    // The second server is started with a warning that the first one runs.
    let second = model.serve().await.unwrap();
    let mut both = vec![first.pid().unwrap(), second.pid().unwrap()];
    both.sort_unstable();
    assert_eq!(model.running_servers().unwrap(), both);

    first.stop().await.unwrap();
    assert_eq!(
        model.running_servers().unwrap(),
        [second.pid().unwrap()],
        "a stopped server is no longer counted"
    );
    drop(second);
    assert_eq!(model.running_servers().unwrap(), Vec::<u32>::new());
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn the_lm_says_how_many_requests_the_server_decodes_at_once() {
    let root = fake_install("slots");
    let model = LlamaCpp::smollm2()
        .cache_dir(&root)
        .slots(3)
        .ready_timeout(Duration::from_secs(30));
    let server = model.serve().await.unwrap();
    assert_eq!(
        model.lm(&server).unwrap().capabilities().parallel_requests,
        Some(3)
    );
    assert_eq!(
        model
            .openai_lm(&server)
            .unwrap()
            .capabilities()
            .parallel_requests,
        Some(3)
    );
    let default = LlamaCpp::smollm2().cache_dir(&root);
    assert_eq!(
        default
            .lm(&server)
            .unwrap()
            .capabilities()
            .parallel_requests,
        Some(1)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
